#!/bin/sh
# make fuzz: runs each libFuzzer target (built by make in $BUILD/fuzz) for
# FUZZ_TIME seconds, FUZZ_JOBS at a time, under nice; prints per target the
# executions, their rate and the corpus size, and exits non-zero when any
# target crashed (the input is then in $BUILD/fuzz/crashes/; turn it into a
# regression file under tests/fuzz/regress/TARGET/ with its fix).
#
# Seeds: tests/fuzz/corpus/TARGET (committed), tests/fuzz/regress/TARGET
# (inputs that once failed), and seeds made here from the test data: GGUF
# files from tests/tools/gguf_corpus and tiny models of each architecture
# from tests/tools/gguf_random, the tokenizer test strings and the chat
# templates of ../shared (which the project does not copy). The corpus a run
# grows stays in $BUILD/fuzz/corpus/TARGET and is where the next run starts.
B=${BUILD:-build}
T=${FUZZ_TIME:-60}
J=${FUZZ_JOBS:-1}
TD=${TOKSCOPE_TESTDATA:-../shared}
export TOKSCOPE_TESTDATA="$TD"
targets=${*:-gguf tokenizer jinja store ini serve sse}
S=$B/fuzz/seeds
mkdir -p "$B/fuzz/crashes" "$B/fuzz/logs"

seeds_gguf() {
    rm -rf "$S/gguf" && mkdir -p "$S/gguf"
    "$B/tools/gguf_corpus" "$S/gguf.tmp" >/dev/null || return 1
    for f in "$S"/gguf.tmp/*; do [ "$(basename "$f")" = MANIFEST ] || cp "$f" "$S/gguf/corpus-$(basename "$f")"; done
    # tiny models of every architecture with the corpus's 8-token vocabulary:
    # small inputs run fast (real vocabularies are fuzz_tokenizer's)
    g() { name=$1; like=$2; shift 2; "$B/tools/gguf_random" --like "$like" --layers 1 --heads 2 --kv-heads 1 \
        --ctx 64 "$@" "$S/gguf/$name" >/dev/null 2>&1 || echo "fuzz: gguf_random $name failed"; }
    v=$S/gguf.tmp/valid_v3.gguf
    g llama-f32.bin "$v" --arch llama --type F32 --dim 16 --ffn 16
    g llama-f16-freqs.bin "$v" --arch llama --type F16 --dim 16 --ffn 16 --rope-freqs 8 --rope-orig-ctx 16
    g llama-q8_0-tied.bin "$v" --arch llama --type Q8_0 --dim 32 --ffn 32 --tied
    g llama-q4_0-bias.bin "$v" --arch llama --type Q4_0 --dim 32 --ffn 32 --qkv-bias
    g llama-tq1_0.bin "$v" --arch llama --type TQ1_0 --dim 256 --ffn 256
    g llama-tq2_0.bin "$v" --arch llama --type TQ2_0 --dim 256 --ffn 256
    g qwen2-f16.bin "$v" --arch qwen2 --type F16 --dim 16 --ffn 16
    g qwen3-f16.bin "$v" --arch qwen3 --type F16 --dim 16 --ffn 16 --head-dim 16
    g gemma3-f16.bin "$v" --arch gemma3 --type F16 --dim 16 --ffn 16 --swa 4 --layers 2
    g phi3-f16.bin "$v" --arch phi3 --type F16 --dim 16 --ffn 16
    g phi3-longrope.bin "$v" --arch phi3 --type F16 --dim 16 --ffn 16 --longrope 16
    rm -rf "$S/gguf.tmp"
}

seeds_tokenizer() {
    rm -rf "$S/tokenizer" && mkdir -p "$S/tokenizer"
    # the .inp test strings, each for two vocabularies (byte 0) and some flags (byte 1)
    n=0
    for inp in "$TD"/golden/tokenizer/*.inp; do
        [ -f "$inp" ] || continue
        python3 - "$inp" "$S/tokenizer" "$n" <<'PY'
import sys
cases = open(sys.argv[1], 'rb').read().split(b'\n__ggml_vocab_test__\n')
base = int(sys.argv[3])
for i, c in enumerate(cases):
    if not c or len(c) > 2000:
        continue
    for v in (i % 13, (i + 5) % 13):
        flags = (i + v) % 4
        open('%s/inp-%d-%d-%d' % (sys.argv[2], base, i, v), 'wb').write(bytes([v, flags]) + c)
PY
        n=$((n + 1))
    done
}

seeds_jinja() {
    rm -rf "$S/jinja" && mkdir -p "$S/jinja"
    [ -f "$TD/golden/chat/golden.jsonl" ] || return 0
    python3 - "$TD/golden/chat" "$S/jinja" <<'PY'
import json, os, sys
root, out = sys.argv[1], sys.argv[2]
msgs = {}
for line in open(os.path.join(root, 'golden.jsonl')):
    r = json.loads(line)
    msgs.setdefault(r['template'], r['messages'])
first = next(iter(msgs.values()))
for f in sorted(os.listdir(os.path.join(root, 'templates'))):
    name = f[:-6]
    t = open(os.path.join(root, 'templates', f), 'rb').read()
    m = json.dumps(msgs.get(name, first)).encode()
    open(os.path.join(out, name), 'wb').write(t + b'\0' + m + b'\0' + b'{"enable_thinking": false}')
PY
}

run_one() {
    t=$1
    bin=$B/fuzz/fuzz_$t
    log=$B/fuzz/logs/$t.log
    work=$B/fuzz/corpus/$t
    mkdir -p "$work" "$S/$t" "tests/fuzz/corpus/$t" "tests/fuzz/regress/$t"
    dict=""
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # inputs up to 16 KB: every seed fits, and larger ones only slow it down
    maxlen=-max_len=16384
    start=$(date +%s)
    # -timeout: an input that takes this long is a hang; -rss_limit_mb: a
    # runaway allocation is a failure; leaks are failures too (ASan's LSan)
    nice -n 15 "$bin" -max_total_time="$T" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$B/fuzz/crashes/$t-" $dict $maxlen \
        "$work" "$S/$t" "tests/fuzz/corpus/$t" "tests/fuzz/regress/$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    files=$(find "$work" -type f | wc -l)
    rate=$(( ${execs:-0} / (secs > 0 ? secs : 1) ))
    if [ "$rc" -eq 0 ]; then
        printf 'fuzz_%-10s %12s executions in %5d s (%d/s), corpus %d inputs, no crash\n' "$t" "${execs:-?}" "$secs" "$rate" "$files"
    else
        art=$(grep -o "$B/fuzz/crashes/$t-[a-z]*-[0-9a-f]*" "$log" | tail -n 1)
        printf 'fuzz_%-10s FAILED after %s executions (exit %d): %s\n' "$t" "${execs:-?}" "$rc" "${art:-see $log}"
        grep -m 3 -E 'ERROR:|FUZZ_CHECK|runtime error' "$log" | sed 's/^/    /'
        echo "$t" >>"$B/fuzz/failed"
    fi
}

rm -f "$B/fuzz/failed"
for t in $targets; do
    [ -x "$B/fuzz/fuzz_$t" ] || { echo "fuzz: $B/fuzz/fuzz_$t not built"; exit 2; }
    case $t in gguf) seeds_gguf ;; tokenizer) seeds_tokenizer ;; jinja) seeds_jinja ;; esac
done
running=0
for t in $targets; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$J" ]; then wait; running=0; fi
done
wait
[ ! -f "$B/fuzz/failed" ]
