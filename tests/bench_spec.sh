#!/bin/sh
# Speculative decoding's speed (issue 37, docs/speculative.md): tokscope's
# tg with drafts against its own plain tg and against llama.cpp 34af94cd's
# llama-server with the same draft (1 client, greedy, ignore_eos), on the
# issue's toy pairs, written once into $BUILD/bench-models (~9 GB there,
# ~4.4 GB more while writing; nothing is committed):
#   - "70 %": a TinyLlama-1.1B-shape random model (tests/tools/gguf_random.c,
#     F32) whose blocks past the 2nd write x0.008 into the residual
#     (gguf_scale.py), quantized by llama-quantize to Q4_0 and Q8_0, each
#     drafted by its own first 2 blocks (gguf_cut.py);
#   - "4 %": the same random model unscaled in Q8_0, drafted by its own
#     Q4_0 copy;
#   - "mtp": the toy Qwen3.5 with an MTP block that golden/spec writes
#     (gguf_mtp.py SRC OUT 0 0.1 from the shared qwen35-mini).
# Per round and pair, one after the other: tokscope bench -p 0 -n N plain,
# tokscope bench --spec KIND, llama-server with the drafts (timings from its
# log's 'eval time' line: a random model's reply is not valid UTF-8 and the
# server answers 500, after generating) and llama-server plain. Every line
# says the load (uptime) it ran under. Run from the repository root after
# `make tokscope`:
#   sh tests/bench_spec.sh
# tokscope --spec auto runs too. "tok/verif" is (accepted + V) / V with V =
# drafted / --draft-max, the verifications when each drafts the maximum.
# llama.cpp's two threadpools (target and draft) collapse when the cores
# are shared (0.26 tok/s seen at load 5): run on an idle machine.
# Knobs: BENCH_SPEC_ROUNDS (2), BENCH_SPEC_N (64 tokens), BENCH_SPEC_PAIRS
# (q4_0 q8_0 rand mtp), BENCH_SPEC_DMAX (3), BENCH_SPEC_EXTRA (more tokscope
# options for --spec KIND), BENCH_SPEC_LLAMA (1; 0: tokscope's rows only),
# LLAMA_BIN (../ref/build/bin), THREADS (2).
case "${1:-}" in
-h | --help)
    sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
BUILD=${BUILD:-build}
BIN=${BIN:-./tokscope}
R=${LLAMA_BIN:-../ref/build/bin}
T=${THREADS:-2}
N=${BENCH_SPEC_N:-64}
DMAX=${BENCH_SPEC_DMAX:-3}
ROUNDS=${BENCH_SPEC_ROUNDS:-2}
PAIRS=${BENCH_SPEC_PAIRS:-q4_0 q8_0 rand mtp}
TESTDATA=${TESTDATA:-../shared}
D=$BUILD/bench-models
GEN=$BUILD/tools/gguf_random
make -s BUILD="$BUILD" "$GEN" || exit 1
mkdir -p "$D"

# the files, once
if [ ! -f "$D/spec70-q4_0.gguf" ] || [ ! -f "$D/spec70-q8_0.gguf" ] || [ ! -f "$D/spec-rand-q8_0.gguf" ] ||
    [ ! -f "$D/spec-rand-q4_0.gguf" ]; then
    echo "writing the pairs into $D (minutes)"
    nice -n 10 "$GEN" --like "$TESTDATA/models/tiny-spm-q4_0.gguf" --type F32 --dim 2048 --layers 22 --heads 32 \
        --kv-heads 4 --ffn 5632 --seed 1 "$D/spec-rand-f32.gguf" 2>/dev/null || exit 1
    nice -n 10 python3 tests/tools/gguf_scale.py "$D/spec-rand-f32.gguf" "$D/spec70-f32.gguf" 2 0.008 || exit 1
    for q in q4_0 q8_0; do
        nice -n 10 "$R/llama-quantize" "$D/spec70-f32.gguf" "$D/spec70-$q.gguf" "$(echo $q | tr a-z A-Z)" 2 \
            >/dev/null 2>&1 || exit 1
        python3 tests/tools/gguf_cut.py "$D/spec70-$q.gguf" "$D/spec70-$q-draft2.gguf" 2 || exit 1
        nice -n 10 "$R/llama-quantize" "$D/spec-rand-f32.gguf" "$D/spec-rand-$q.gguf" "$(echo $q | tr a-z A-Z)" 2 \
            >/dev/null 2>&1 || exit 1
    done
    rm -f "$D/spec-rand-f32.gguf" "$D/spec70-f32.gguf"
fi
Q35=$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf
if [ ! -f "$D/qwen35-mtp.gguf" ] && [ -f "$Q35" ]; then
    python3 tests/tools/gguf_mtp.py "$Q35" "$D/qwen35-mtp.gguf" 0 0.1 >/dev/null || exit 1
fi

load() { uptime | sed 's/.*load average: \([0-9.]*\).*/\1/'; }

# ts_bench MODEL [SPEC ARGS]: "TOK/S DRAFTED ACCEPTED" of one tokscope bench tg
ts_bench() {
    m=$1
    shift
    # shellcheck disable=SC2086
    "$BIN" bench -m "$m" -p 0 -n "$N" -r 2 -t "$T" -o jsonl "$@" 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    if l.startswith("{"):
        o = json.loads(l)
        print("%.2f %s %s" % (o["avg_ts"], o.get("n_drafted", 0), o.get("n_accepted", 0)))'
}

# ls_run MODEL [SERVER ARGS]: "TOK/S DRAFTED ACCEPTED" of one llama-server
# completion of N tokens from "Once upon a time"
PORT=${BENCH_SPEC_PORT:-18437}
ls_run() {
    m=$1
    shift
    log=$D/bench-spec-server.log
    # shellcheck disable=SC2086
    "$R/llama-server" -m "$m" "$@" -c 4096 -t "$T" -np 1 --port "$PORT" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 240); do
        curl -s "http://127.0.0.1:$PORT/health" 2>/dev/null | grep -q ok && break
        sleep 0.5
    done
    # a warm-up completion, then the timed one
    for _ in 1 2; do
        curl -s -o /dev/null "http://127.0.0.1:$PORT/completion" \
            -d "{\"prompt\": \"Once upon a time\", \"n_predict\": $N, \"temperature\": 0, \"ignore_eos\": true, \"cache_prompt\": false}"
    done
    sleep 0.3
    kill "$pid"
    wait "$pid" 2>/dev/null
    tps=$(grep ' eval time =' "$log" | grep -v 'prompt eval' | tail -n 1 |
        sed 's/.*, *\([0-9.]*\) tokens per second.*/\1/')
    c=$(sed -n 's/.*draft acceptance = [0-9.]* ( *\([0-9]*\) accepted \/ *\([0-9]*\) generated).*/\2 \1/p' "$log" |
        tail -n 1)
    echo "${tps:-?} ${c:-0 0}"
}

# row WHAT TOK/S DRAFTED ACCEPTED PLAIN_TOK/S: one result line
row() {
    awk -v w="$1" -v t="$2" -v d="$3" -v a="$4" -v p="$5" -v l="$(load)" -v n="$DMAX" 'BEGIN {
        acc = d > 0 ? 100 * a / d : 0
        # tokens per verification: each verification drafts up to n and
        # yields its accepted drafts plus one token
        v = d > 0 ? d / n : 0
        tpv = v > 0 ? (a + v) / v : 1
        printf "%-44s %8.2f tok/s  x%.2f of plain  acc %5.1f %% (%d/%d)  ~%.2f tok/verif  load %s\n",
            w, t, (p > 0 ? t / p : 0), acc, a, d, tpv, l }'
}

pair() {
    case $1 in
    q4_0 | q8_0) echo "$D/spec70-$1.gguf draft $D/spec70-$1-draft2.gguf" ;;
    rand) echo "$D/spec-rand-q8_0.gguf draft $D/spec-rand-q4_0.gguf" ;;
    mtp) echo "$D/qwen35-mtp.gguf mtp -" ;;
    esac
}

echo "bench_spec: $T threads, tg$N, --draft-max $DMAX, $ROUNDS rounds; $(nproc) cores; $(uptime)"
r=1
while [ $r -le "$ROUNDS" ]; do
    for p in $PAIRS; do
        # shellcheck disable=SC2046
        set -- $(pair "$p")
        tgt=$1 kind=$2 dr=$3
        [ -f "$tgt" ] || { echo "missing $tgt"; continue; }
        sargs="--spec $kind --draft-max $DMAX"
        largs="--spec-type draft-mtp --spec-draft-n-max $DMAX"
        if [ "$kind" = draft ]; then
            sargs="$sargs -md $dr"
            largs="--spec-type draft-simple -md $dr --spec-draft-n-max $DMAX"
        fi
        # shellcheck disable=SC2046
        set -- $(ts_bench "$tgt")
        tp=$1
        row "round $r $p tokscope plain" "$tp" 0 0 "$tp"
        # shellcheck disable=SC2046,SC2086
        set -- $(ts_bench "$tgt" $sargs ${BENCH_SPEC_EXTRA:-})
        row "round $r $p tokscope --spec $kind" "$1" "$2" "$3" "$tp"
        # shellcheck disable=SC2046,SC2086
        set -- $(ts_bench "$tgt" $(echo "$sargs" | sed "s/--spec $kind/--spec auto/"))
        row "round $r $p tokscope --spec auto" "$1" "$2" "$3" "$tp"
        [ "${BENCH_SPEC_LLAMA:-1}" = 0 ] && continue
        # shellcheck disable=SC2046,SC2086
        set -- $(ls_run "$tgt" $largs)
        row "round $r $p llama-server $kind" "$1" "$2" "$3" "$tp"
        # shellcheck disable=SC2046
        set -- $(ls_run "$tgt")
        row "round $r $p llama-server plain" "$1" "$2" "$3" "$tp"
    done
    r=$((r + 1))
done
