#!/bin/sh
# `make bench`: throughput (tokens/s) of prompt processing (ppN: N tokens as
# batches) and generation (tgN: N tokens one at a time, "@ dD" with D tokens
# already in the cache), on
#  1. the shared models (small: they sit in the CPU caches), pp128 / tg64;
#  2. real-size shapes written by tests/tools/gguf_random (random weights,
#     2.5-6 GB written once to $BUILD/bench-models): TinyLlama-1.1B and
#     Llama-3.2-1B in Q4_0 and Q4_K_M, and TinyLlama-1.1B Q8_0, with
#     pp512, pp2048, tg64 and tg64 @ d4096, F16 and Q8_0 caches;
#  3. the other families' real-size shapes in Q4_K_M (Qwen3-0.6B,
#     Gemma-3-1B, Phi-3-mini, Qwen2.5-0.5B), the tests of 2 (Phi-3-mini's
#     depth test at 4032, its trained context less the 64 generated);
#  4. with BENCH_LONG=1, pp8192 and tg64 @ d16384 on the shapes of 2;
#  5. OpenBLAS off and on alternately on prompt batches (tests/bench_blas.sh,
#     F16 and Q6_K TinyLlama-1.1B shapes);
#  6. what the TUI costs generation (tests/tui_overhead.sh: the real TUI in
#     tmux against `generate`, alternately, on the TinyLlama-1.1B Q4_0
#     shape of 2; TUI_BENCH_N tokens, 200, in TUI_BENCH_PASSES passes, 3);
#  7. the 2026 families at real width (issue 28): Qwen3.5-2B (whole),
#     Qwen3.5-35B-A3B (4 of 40 layers), Qwen3-30B-A3B (6 of 48), gpt-oss-20b
#     (4 of 24, MXFP4 experts), Gemma-4-E2B (whole), Gemma-4-26B-A4B (6 of
#     30), written by gguf_random from the layouts of
#     $TESTDATA/families2026/models/*-mini-*.gguf: full width, head and
#     expert counts and vocabulary, layers cut where a file would pass ~3 GB
#     (the hyperparameters and their sources: tests/tools/gguf_random.c,
#     "The 2026 families"); pp512, tg64 and tg64 @ d4096, F16 and Q8_0
#     caches, on BENCH_2026_THREADS threads (2). Before each model a line
#     gives its file size and the bytes a generated token reads (weights;
#     experts: expert_used_count of expert_count), the whole model's too,
#     and the generation lines' bandwidth fraction counts those bytes. A
#     family tokscope cannot load yet prints "tokscope bench failed" and
#     llama.cpp's numbers alone. BENCH_2026_PREPARE=1 only writes the files
#     (about 17 GB; 31 minutes on this shared 2-core machine).
#  8. the IQ types (issue 29): the TinyLlama-1.1B shape of 2 in F16 (the
#     file of 5, written once), an importance matrix of random positive
#     values for it (tests/tools/imatrix_random: llama-quantize's legacy
#     .dat format; IQ2_XXS and IQ1_M demand one, the others use it), then
#     the reference's llama-quantize (LLAMA_QUANTIZE, default: next to
#     LLAMA_BENCH) to BENCH_IQ_TYPES (IQ4_XS IQ3_S IQ2_XXS IQ1_M), each
#     written once as $BUILD/bench-models/tinyllama-1.1b-TYPE.gguf; pp512
#     and tg64 with an F16 cache on BENCH_IQ_THREADS threads (2). Before
#     each model a line gives its type mix (tokscope info: llama-quantize
#     keeps some tensors in other types). Where tokscope refuses a type it
#     cannot run yet, "tokscope bench failed" and llama.cpp's numbers
#     alone. BENCH_IQ_PREPARE=1 only writes the files; BENCH_IQ_LAYERS
#     (22) writes a shorter model under other names (a quick trial: the
#     IQ2/IQ1 searches are slow, minutes per type and layer on a loaded
#     2-core machine).
#  9. with BENCH_IK_TABLE=1, issue 36's table against llama.cpp and
#     ik_llama.cpp: TinyLlama-1.1B shape rows (the files of 2 and 8, Q6_K
#     and MXFP4 too) and a 2026 width, pp512, tg64, tg64 @ d4096 and
#     pp512 @ d8192, alternating rounds, a Markdown table at the end
#     (tests/bench_ik.sh runs exactly that).
# In 2 and 3, tests/tools/membw measures the memory read bandwidth with the
# benchmark's threads right before each model and cache type; every
# generation line gives the fraction of it the test achieved: (weights read
# per token + the cache's K and V up to the test's positions) x tokens/s /
# bandwidth.
#
# With LLAMA_BENCH=/path/to/llama-bench, llama-bench runs the same tests on
# the same file right after tokscope, model by model and cache type by cache
# type (alternately), and each line gives tokscope / llama.cpp.
# With IK_BENCH=/path/to/ik_llama.cpp's llama-bench, it runs next, twice
# (-rtr 0 and -rtr 1; its defaults otherwise: flash attention and fused MoE
# on), and each line adds ik's faster result ("rtr" when -rtr 1 won) and
# tokscope / ik. ik's llama-bench has no -d: a generation test at a depth
# runs as its -gp DEPTH,N; a prompt test at a depth as its llama-sweep-bench
# (IK_SWEEP, default next to IK_BENCH; without it, "ik cannot").
#
# ik's two runs a test (-rtr 0 and 1) give it two chances at a moment of
# the host's when memory is fast; BENCH_TRIES=2 gives tokscope and
# llama.cpp two runs a test too, the faster kept (default 1: one run).
#
# Knobs (comma lists where it makes sense): BENCH_REPS (3), BENCH_TRIES (1), BENCH_THREADS
# (all cores), BENCH_CACHE (f16,q8_0), BENCH_PP (512,2048), BENCH_TG (64),
# BENCH_DEPTH (4096, the depth of the extra generation test; 0 for none),
# BENCH_MODELS (a subset of tinyllama-1.1b-q4_0, tinyllama-1.1b-q4_k_m,
# tinyllama-1.1b-q8_0, llama32-1b-q4_0, llama32-1b-q4_k_m, matched as
# prefixes; section 7's names too: qwen35-2b, qwen35moe-35b-a3b,
# qwen3moe-30b-a3b, gptoss-20b, gemma4-e2b, gemma4moe-26b-a4b),
# BENCH_SMALL=0, BENCH_BIG=0, BENCH_FAMILIES=0, BENCH_BLAS=0, BENCH_TUI=0,
# BENCH_2026=0 and BENCH_IQ=0 skip sections 1, 2, 3, 5, 6, 7 and 8;
# BENCH_2026_PREPARE, BENCH_2026_THREADS and BENCH_2026_PP (512) are
# section 7's, BENCH_IQ_TYPES, BENCH_IQ_THREADS, BENCH_IQ_PREPARE,
# BENCH_IQ_LAYERS and LLAMA_QUANTIZE section 8's (its names for
# BENCH_MODELS: tinyllama-1.1b-iq4_xs, ...). BENCH_IK_ROWS (q4_0, q8_0,
# iq4_xs, iq2_xxs, q4_k_m, q5_k_m, q6_k, iq3_s, iq1_m, mxfp4, qwen3moe-30b-a3b, or .gguf
# paths), BENCH_IK_TESTS (pp512,tg64,tg64@d4096,pp512@d8192), BENCH_IK_ROUNDS
# (2), BENCH_IK_THREADS (2) and BENCH_IK_OUT ($BUILD/bench-ik: .jsonl, .md)
# are section 9's. Only section 7, against
# llama.cpp:
#   BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 \
#   BENCH_IQ=0 LLAMA_BENCH=/path/to/llama-bench make bench
# Only section 8 (llama-quantize next to llama-bench):
#   BENCH_SMALL=0 BENCH_BIG=0 BENCH_FAMILIES=0 BENCH_BLAS=0 BENCH_TUI=0 \
#   BENCH_2026=0 LLAMA_BENCH=/work/ref/build/bin/llama-bench make bench
# Not part of `make test`: numbers, not assertions. `sh tests/bench.sh
# --help` prints this.
case "${1:-}" in
-h | --help)
    sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
. tests/lib_cpu.sh
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BUILD=${BUILD:-build}
BIN=${BIN:-./tokscope}
case "$BIN" in */*) ;; *) BIN=./$BIN ;; esac
GEN=$BUILD/tools/gguf_random
THREADS=${BENCH_THREADS:-$(nproc)}
REPS=${BENCH_REPS:-3}
TRIES=${BENCH_TRIES:-1}
case "$TRIES" in '' | *[!0-9]* | 0) echo "bench: BENCH_TRIES: a count of runs, not '$TRIES'" >&2; exit 2 ;; esac
CACHES=$(echo "${BENCH_CACHE:-f16,q8_0}" | tr , ' ')
PP=${BENCH_PP:-512,2048}
TG=${BENCH_TG:-64}
DEPTH=${BENCH_DEPTH:-4096}
start=$(date +%s)

# isa_of PROGRAM: the widest vector code PROGRAM (or the libggml it loads)
# holds: "AVX-512" or "AVX2", as the builds being compared were compiled
isa_of() {
    for f in "$1" $(ldd "$1" 2>/dev/null | awk '/libggml/ {print $3}'); do
        objdump -d "$f" 2>/dev/null | grep -q '%zmm' && { echo AVX-512; return; }
    done
    echo AVX2
}
ISA=$(isa_of "$BIN")
# build_of PROGRAM: isa_of a reference program that runs, nothing for one
# unset, missing or left out (`true`); an AVX2 tokscope may be set against
# either build of llama.cpp and of ik
build_of() {
    bo_path=$(command -v "${1:-true}" 2>/dev/null) || return 0
    [ "$(basename "$bo_path")" = true ] || isa_of "$bo_path"
}
LLAMA_ISA=$(build_of "${LLAMA_BENCH:-}") IK_ISA=$(build_of "${IK_BENCH:-}")
compared="${LLAMA_ISA:+; llama.cpp $LLAMA_ISA build}${IK_ISA:+; ik $IK_ISA build}"
TRIES_NOTE=""
[ "$TRIES" -gt 1 ] && TRIES_NOTE="; tokscope and llama.cpp the faster of $TRIES runs a test"
echo "machine: $(cpu_name), $(nproc) cores;" \
    "tokscope $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($ISA build), $THREADS threads, $REPS repetitions$compared$TRIES_NOTE"
BW=0

# measure_bw: the read bandwidth now (GB/s), into BW; run right before
# each real-size model's tests, as a shared machine's bandwidth wanders
measure_bw() {
    BW=$("$BUILD/tools/membw" -t "$THREADS" -m 512 -r 3 2>/dev/null || echo 0)
}

# table TOKSCOPE_JSONL LLAMA_JSONL [IK_JSONL IK_NOTE]: one line per tokscope
# test, with the llama.cpp result and ratio of the same test when there is
# one (llama.cpp's lines alone when tokscope has none), then ik_llama.cpp's
# best ("rtr" when it came with -rtr 1) and tokscope / ik, or IK_NOTE (why
# ik has no number) when IK_BENCH is set. ACTIVE_BYTES, when set, is what a
# generated token reads of the weights (a MoE's used experts), in place of
# tokscope's weight_bytes.
table() {
    python3 -c "
import json, os, sys
bw = float(sys.argv[3]) * 1e9
active = float(sys.argv[4] or 0)
key = lambda d: (d['n_prompt'], d['n_gen'], d['n_depth'], d['n_threads'], d['type_k'], d['type_v'])
ref = {key(d): d for d in map(json.loads, filter(None, sys.argv[2].splitlines()))}
ik = {key(d): d for d in map(json.loads, filter(None, sys.argv[5].splitlines()))}
use_ik, ik_note = sys.argv[6] == '1', sys.argv[7]
ours = list(map(json.loads, filter(None, sys.argv[1].splitlines())))
def ik_col(k, ts):
    if not use_ik:
        return ''
    i = ik.get(k)
    if not i:
        return '   ik ' + (ik_note or 'failed')
    s = '   ik %9.2f%s' % (i['avg_ts'], ' rtr' if i['repack'] else '    ')
    return s + ('  ratio %.2f' % (ts / i['avg_ts']) if ts else '')
for d in ours or ref.values():
    test = ('pp%d' % d['n_prompt'] if d['n_prompt'] else 'tg%d' % d['n_gen']) + (' @ d%d' % d['n_depth'] if d['n_depth'] else '')
    if not ours:
        print('%-28s %-12s %-4s  tokscope -            llama.cpp %9.2f ± %.2f tok/s' % (
            os.path.basename(d['model_filename']), test, d['type_k'], d['avg_ts'], d['stddev_ts']) + ik_col(key(d), 0))
        continue
    line = '%-28s %-12s %-4s %9.2f ± %-6.2f tok/s  RSS %5.0f MiB' % (os.path.basename(d['model_filename']), test,
        d['type_k'], d['avg_ts'], d['stddev_ts'], d['peak_rss_bytes'] / 1048576)
    if d['n_gen'] and bw > 0:
        # per token: every weight (or the active ones), and K and V of the positions before it
        per_tok = (active or d['weight_bytes']) + d['kv_bytes_per_pos'] * (d['n_depth'] + (d['n_gen'] - 1) / 2)
        line += '  %3.0f%% of %.1f GB/s' % (100 * per_tok * d['avg_ts'] / bw, bw / 1e9)
    r = ref.get(key(d))
    if r:
        line += '   llama.cpp %9.2f  ratio %.2f' % (r['avg_ts'], d['avg_ts'] / r['avg_ts'])
    print(line + ik_col(key(d), d['avg_ts']))
if sys.argv[8]:  # section 9 keeps every result
    with open(sys.argv[8], 'a') as f:
        for prog, L in (('tokscope', ours), ('llama.cpp', ref.values()), ('ik', ik.values())):
            for d in L:
                d.update(row=sys.argv[9], prog=prog, bw=bw / 1e9, active=active, round=int(sys.argv[10] or 0),
                         file_bytes=os.path.getsize(d['model_filename']))
                if prog == 'tokscope' and use_ik and key(d) not in ik:
                    d['ik_note'] = ik_note or 'failed'
                f.write(json.dumps(d) + '\n')
" "$1" "$2" "$BW" "${ACTIVE_BYTES:-}" "${3:-}" "$([ -n "${IK_BENCH:-}" ] && echo 1 || echo 0)" "${4:-}" \
        "${BENCH_RESULTS:-}" "${BENCH_ROW:-}" "${BENCH_ROUND:-}"
}

# ik_run MODEL ARGS...: ik_llama.cpp's llama-bench (IK_BENCH) on llama-bench's
# arguments, with -rtr 0 and then -rtr 1 (its other defaults: flash
# attention and fused MoE on), the faster of the two per test as JSON lines
# with llama-bench's keys (repack: which one won), into IK_OUT; IK_NOTE says
# why there is nothing. ik's llama-bench has no -d: "-p 0 -n N -d D" becomes
# its "-gp D,N" (D prompt tokens, untimed, then N generated: tgN @ dD), and
# "-p P -n 0 -d D" a run of its llama-sweep-bench (IK_SWEEP, beside
# IK_BENCH) per repetition: batches of P from position 0 up to D + P, the
# one at position D timed (ppP @ dD; D a multiple of P).
ik_run() {
    m=$1
    shift
    IK_OUT="" IK_NOTE="" ik_p=0 ik_n=0 ik_d=0 ik_rest=""
    if [ ! -x "$IK_BENCH" ]; then
        IK_NOTE="not run: no $IK_BENCH"
        return
    fi
    while [ $# -gt 0 ]; do
        case "$1" in
        -p) ik_p=$2 ;;
        -n) ik_n=$2 ;;
        -d) ik_d=$2 ;;
        *) ik_rest="$ik_rest $1 $2" ;;
        esac
        shift 2
    done
    if [ "$ik_d" != 0 ]; then
        case "$ik_p$ik_n$ik_d" in *,*)
            IK_NOTE="cannot: a depth with lists"
            return
            ;;
        esac
        if [ "$ik_p" != 0 ]; then
            # shellcheck disable=SC2086 # the option list is meant to split
            ik_sweep "$m" "$ik_p" "$ik_d" $ik_rest
            return
        fi
        ik_tests="-p 0 -n 0 -gp $ik_d,$ik_n"
    else
        ik_tests="-p $ik_p -n $ik_n"
    fi
    ik_json=""
    for rtr in 0 1; do
        # shellcheck disable=SC2086 # the option lists are meant to split
        j=$("$IK_BENCH" -m "$m" -r "$REPS" -t "$THREADS" -o json -rtr $rtr $ik_tests $ik_rest 2>/dev/null) ||
            { IK_NOTE="failed (-rtr $rtr)"; j=""; }
        ik_json="$ik_json$j
"
    done
    IK_OUT=$(printf '%s' "$ik_json" | ik_best)
}

# ik_best: llama-bench's JSON arrays (ik's, or ik_sweep's in their shape) on
# stdin as JSON lines (a tg at a depth, ik's tgN@ppD, as n_depth D), the
# faster of each test (best_lines)
ik_best() {
    python3 -c "
import json, re, sys
text, at = sys.stdin.read(), 0
# each run prints one JSON array
while text.find('[', at) >= 0:
    arr, at = json.JSONDecoder().raw_decode(text, text.find('[', at))
    for d in arr:
        g = re.fullmatch(r'tg(\d+)@pp(\d+)', d['test'])
        d['n_depth'] = int(g.group(2)) if g else d.get('n_depth', 0)
        if g:
            d['n_prompt'] = 0
        print(json.dumps({f: d[f] for f in ('model_filename', 'n_prompt', 'n_gen', 'n_depth', 'n_threads', 'type_k',
            'type_v', 'avg_ts', 'stddev_ts', 'repack')}))" | best_lines
}

# ik_sweep MODEL P D ARGS...: ppP @ dD by ik's llama-sweep-bench (IK_SWEEP),
# REPS runs with -rtr 0 and REPS with -rtr 1 (a flag there), into IK_OUT as
# ik_run's; only -ctk and -ctv of ARGS carry over
ik_sweep() {
    m=$1 sw_p=$2 sw_d=$3 sw_k=f16 sw_v=f16
    shift 3
    while [ $# -gt 0 ]; do
        case "$1" in
        -ctk) sw_k=$2 ;;
        -ctv) sw_v=$2 ;;
        esac
        shift 2
    done
    IK_SWEEP=${IK_SWEEP:-$(dirname "$IK_BENCH")/llama-sweep-bench}
    if [ ! -x "$IK_SWEEP" ]; then
        IK_NOTE="cannot: no prompt test at a depth in its llama-bench, and no $IK_SWEEP"
        return
    fi
    if [ $((sw_d % sw_p)) != 0 ]; then
        IK_NOTE="cannot: its llama-sweep-bench steps by $sw_p, depth $sw_d is not a multiple"
        return
    fi
    ik_json=""
    for rtr in "" -rtr; do
        speeds=""
        for _ in $(seq "$REPS"); do
            # shellcheck disable=SC2086 # an empty $rtr is no argument
            s=$("$IK_SWEEP" -m "$m" -c $((sw_d + sw_p)) -ub "$sw_p" -n 1 --sweep-stride $((sw_d / sw_p)) \
                --output-format jsonl -t "$THREADS" -tb "$THREADS" -ctk "$sw_k" -ctv "$sw_v" $rtr \
                --log-file "${TMPDIR:-/tmp}/tokscope-ik-sweep" 2>&1 |
                python3 -c "
import json, sys
for l in sys.stdin:
    if l.startswith('{') and json.loads(l)['n_kv'] == $sw_d:
        print(json.loads(l)['speed_pp'])") || s=""
            [ -n "$s" ] || { IK_NOTE="failed (llama-sweep-bench ${rtr:--rtr 0})"; continue; }
            speeds="$speeds $s"
        done
        [ -n "$speeds" ] || continue
        # shellcheck disable=SC2086 # the list is meant to split
        ik_json="$ik_json$(python3 -c "
import json, statistics, sys
v = [float(x) for x in sys.argv[2:]]
print(json.dumps([{'model_filename': sys.argv[1], 'test': 'pp$sw_p', 'n_prompt': $sw_p, 'n_gen': 0, 'n_depth': $sw_d,
    'n_threads': $THREADS, 'type_k': '$sw_k', 'type_v': '$sw_v', 'avg_ts': statistics.mean(v),
    'stddev_ts': statistics.stdev(v) if len(v) > 1 else 0.0, 'repack': '$rtr' != ''}]))" "$m" $speeds)
"
    done
    IK_OUT=$(printf '%s' "$ik_json" | ik_best)
}

# best_lines: the JSON lines of several runs of the same tests on stdin,
# the faster line of each test, in the first run's order
best_lines() {
    python3 -c "
import json, sys
best, order = {}, []
for line in sys.stdin:
    if not line.startswith('{'):
        continue
    d = json.loads(line)
    k = (d.get('n_prompt'), d.get('n_gen'), d.get('n_depth', 0), d.get('type_k'), d.get('type_v'))
    if k not in best:
        order.append(k)
    if k not in best or d['avg_ts'] > best[k]['avg_ts']:
        best[k] = d
for k in order:
    print(json.dumps(best[k]))"
}

# run ARGS...: tokscope bench with these tests, then llama-bench with the
# same (with LLAMA_BENCH), then ik_llama.cpp's (with IK_BENCH), one table;
# with BENCH_TRIES=N each of the first two runs N times, the faster kept
run() {
    m=$1
    shift
    out="" ref=""
    for _ in $(seq "$TRIES"); do
        o=$("$BIN" bench -m "$m" -r "$REPS" -t "$THREADS" -o jsonl "$@") ||
            { echo "tokscope bench failed on $m $*"; out=""; break; }
        out="$out$o
"
    done
    if [ -n "${LLAMA_BENCH:-}" ]; then
        for _ in $(seq "$TRIES"); do
            o=$("$LLAMA_BENCH" -m "$m" -r "$REPS" -t "$THREADS" -o jsonl "$@" 2>/dev/null) ||
                { echo "llama-bench failed on $m $*"; ref=""; break; }
            ref="$ref$o
"
        done
    fi
    [ "$TRIES" -gt 1 ] && out=$(printf '%s' "$out" | best_lines) && ref=$(printf '%s' "$ref" | best_lines)
    IK_OUT="" IK_NOTE=""
    [ -n "${IK_BENCH:-}" ] && ik_run "$m" "$@"
    table "$out" "$ref" "$IK_OUT" "$IK_NOTE"
}

# long_tests MODEL [CTX]: section 2's tests (or 4's) for each cache type; a
# model trained for CTX positions gets its depth test at CTX - TG at most
# (Phi-3-mini's 4096: tg64 @ d4032)
long_tests() {
    d=$DEPTH
    if [ -n "${2:-}" ] && [ "$d" -gt $(($2 - TG)) ]; then d=$(($2 - TG)); fi
    for c in $CACHES; do
        measure_bw
        if [ "${BENCH_LONG:-0}" = 1 ]; then
            run "$1" -ctk "$c" -ctv "$c" -p 8192 -n 0
            run "$1" -ctk "$c" -ctv "$c" -p 0 -n "$TG" -d 16384
            continue
        fi
        run "$1" -ctk "$c" -ctv "$c" -p "$PP" -n "$TG"
        [ "$d" != 0 ] && run "$1" -ctk "$c" -ctv "$c" -p 0 -n "$TG" -d "$d"
    done
}

# wanted NAME: in BENCH_MODELS (or no BENCH_MODELS)
wanted() {
    [ -z "${BENCH_MODELS:-}" ] && return 0
    for w in $(echo "$BENCH_MODELS" | tr , ' '); do
        case "$1" in "$w"*) return 0 ;; esac
    done
    return 1
}

# 1. the shared models
if [ "${BENCH_SMALL:-1}" != 0 ] && [ "${BENCH_LONG:-0}" != 1 ]; then
    for m in stories260K.gguf stories260K-q8_0.gguf tiny-spm-f16.gguf tiny-spm-q8_0.gguf tiny-spm-q4_0.gguf \
        tiny-spm-q4_k_m.gguf tiny-spm-mix.gguf smollm-mini-q8_0.gguf; do
        f="$TESTDATA/models/$m"
        [ -f "$f" ] || { echo "missing $f"; continue; }
        run "$f" -p 128 -n 64 -ctk f16 -ctv f16
    done
fi

# 2. (and 4.) TinyLlama-1.1B and Llama-3.2-1B shapes
mkdir -p "$BUILD/bench-models"
if [ "${BENCH_BIG:-1}" != 0 ]; then
    while read -r name like type args; do
        wanted "$name" || continue
        src="$TESTDATA/models/$like.gguf"
        [ -f "$src" ] || { echo "missing $src"; continue; }
        f="$BUILD/bench-models/$name.gguf"
        # shellcheck disable=SC2086 # the option list is meant to split
        [ -f "$f" ] || "$GEN" --like "$src" --type "$type" $args "$f" 2>/dev/null ||
            { echo "gguf_random failed for $name"; continue; }
        long_tests "$f"
    done <<'EOF_BIG'
tinyllama-1.1b-q4_0 tiny-spm-q4_0 Q4_0 --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632
tinyllama-1.1b-q4_k_m tiny-spm-q4_0 Q4_K_M --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632
tinyllama-1.1b-q8_0 tiny-spm-q4_0 Q8_0 --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632
llama32-1b-q4_0 llama3-mini-q8_0 Q4_0 --arch llama --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --rope-freqs 32 --tied --ctx 131072
llama32-1b-q4_k_m llama3-mini-q8_0 Q4_K_M --arch llama --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --rope-freqs 32 --tied --ctx 131072
EOF_BIG
fi

# 3. the other families, full depth, Q4_K_M (Gemma's vocabulary is the mini
# model's 32000, not 262144)
if [ "${BENCH_FAMILIES:-1}" != 0 ] && [ "${BENCH_LONG:-0}" != 1 ]; then
    while read -r name like args; do
        wanted "$name" || continue
        src="$TESTDATA/models/$like.gguf"
        [ -f "$src" ] || { echo "missing $src"; continue; }
        f="$BUILD/bench-models/$name-q4_k_m.gguf"
        # shellcheck disable=SC2086 # the option list is meant to split
        [ -f "$f" ] || "$GEN" --like "$src" --type Q4_K_M $args "$f" 2>/dev/null ||
            { echo "gguf_random failed for $name"; continue; }
        # shellcheck disable=SC2086 # the option list is meant to split
        long_tests "$f" "$(echo $args | sed -n 's/.*--ctx \([0-9]*\).*/\1/p')"
    done <<'EOF_SHAPES'
qwen3-0.6b qwen3-mini-q8_0 --arch qwen3 --dim 1024 --layers 28 --heads 16 --kv-heads 8 --head-dim 128 --ffn 3072 --ctx 40960
gemma3-1b gemma3-mini-q8_0 --arch gemma3 --dim 1152 --layers 26 --heads 4 --kv-heads 1 --head-dim 256 --ffn 6912 --swa 512 --ctx 32768
phi3-mini phi3-mini-q8_0 --arch phi3 --dim 3072 --layers 32 --heads 32 --kv-heads 32 --ffn 8192 --ctx 4096
qwen25-0.5b qwen2-mini-q4_k_m --arch qwen2 --dim 896 --layers 24 --heads 14 --kv-heads 2 --ffn 4864 --ctx 32768
EOF_SHAPES
fi

# 5. OpenBLAS (--blas) off and on, against llama.cpp (tests/bench_blas.sh)
[ "${BENCH_BLAS:-1}" = 0 ] || [ "${BENCH_LONG:-0}" = 1 ] ||
    BUILD=$BUILD BIN=$BIN BENCH_THREADS=$THREADS sh tests/bench_blas.sh

# 6. the TUI against generate (tests/tui_overhead.sh), on the file of 2
[ "${BENCH_TUI:-1}" = 0 ] || [ "${BENCH_LONG:-0}" = 1 ] ||
    BUILD=$BUILD BIN=$BIN BENCH_THREADS=$THREADS TUI_BENCH_PASSES=${TUI_BENCH_PASSES:-3} \
        sh tests/tui_overhead.sh "$BUILD/bench-models/tinyllama-1.1b-q4_0.gguf"
# 7. the 2026 families at real width. Columns: file name, mini model of the
# layout, --type, layers kept (- for all), then the real model's
# hyperparameters as gguf_random options (their sources are listed in
# tests/tools/gguf_random.c, "The 2026 families"). Q4_K_M is the tool's
# simplified mix (Q4_K; Q6_K for attn_v, every ffn_down, the output or tied
# embeddings; Q5_K for DeltaNet's fused qkv; the llama-quantize fallbacks
# for rows that are not whole blocks); gpt-oss is Q8_0 with MXFP4 experts,
# as the mini and the released file.
layouts_2026() {
    cat <<'EOF_2026'
qwen35-2b-q4_k_m qwen35-mini-q8_0 Q4_K_M - --vocab 248320 --set embedding_length=2048 --set block_count=24 --set feed_forward_length=6144 --set attention.head_count=8 --set attention.head_count_kv=2 --set attention.key_length=256 --set attention.value_length=256 --set rope.dimension_count=64 --set rope.dimension_sections=11,11,10,0 --set ssm.conv_kernel=4 --set ssm.state_size=128 --set ssm.group_count=16 --set ssm.time_step_rank=16 --set ssm.inner_size=2048 --set full_attention_interval=4
qwen35moe-35b-a3b-q4_k_m qwen35moe-mini-q8_0 Q4_K_M 4 --vocab 248320 --untied --set embedding_length=2048 --set block_count=40 --set feed_forward_length=512 --set attention.head_count=16 --set attention.head_count_kv=2 --set attention.key_length=256 --set attention.value_length=256 --set rope.dimension_count=64 --set rope.dimension_sections=11,11,10,0 --set ssm.conv_kernel=4 --set ssm.state_size=128 --set ssm.group_count=16 --set ssm.time_step_rank=32 --set ssm.inner_size=4096 --set full_attention_interval=4 --set expert_count=256 --set expert_used_count=8 --set expert_feed_forward_length=512 --set expert_shared_feed_forward_length=512
qwen3moe-30b-a3b-q4_k_m qwen3moe-mini-q8_0 Q4_K_M 6 --vocab 151936 --untied --set embedding_length=2048 --set block_count=48 --set feed_forward_length=6144 --set attention.head_count=32 --set attention.head_count_kv=4 --set attention.key_length=128 --set attention.value_length=128 --set rope.dimension_count=128 --set expert_count=128 --set expert_used_count=8 --set expert_feed_forward_length=768
gptoss-20b-mxfp4 gptoss-mini-mxfp4 Q8_0 4 --expert-type MXFP4 --vocab 201088 --set embedding_length=2880 --set block_count=24 --set feed_forward_length=2880 --set attention.head_count=64 --set attention.head_count_kv=8 --set attention.key_length=64 --set attention.value_length=64 --set rope.dimension_count=64 --set expert_count=32 --set expert_used_count=4 --set expert_feed_forward_length=2880 --set attention.sliding_window=128
gemma4-e2b-q4_k_m gemma4-mini-q8_0 Q4_K_M - --vocab 262144 --set embedding_length=1536 --set block_count=35 --set feed_forward_length=6144*15,12288*20 --set attention.head_count=8 --set attention.head_count_kv=1 --set attention.key_length=512 --set attention.value_length=512 --set attention.key_length_swa=256 --set attention.value_length_swa=256 --set rope.dimension_count=512 --set rope.dimension_count_swa=256 --set attention.sliding_window=512 --set attention.sliding_window_pattern=true*4,false,... --set attention.shared_kv_layers=20 --set embedding_length_per_layer_input=256
gemma4moe-26b-a4b-q4_k_m gemma4moe-mini-q8_0 Q4_K_M 6 --vocab 262144 --set embedding_length=2816 --set block_count=30 --set feed_forward_length=2112 --set attention.head_count=16 --set attention.head_count_kv=8*5,2,... --set attention.key_length=512 --set attention.value_length=512 --set attention.key_length_swa=256 --set attention.value_length_swa=256 --set rope.dimension_count=512 --set rope.dimension_count_swa=256 --set attention.sliding_window=1024 --set attention.sliding_window_pattern=true*5,false,... --set expert_count=128 --set expert_used_count=8 --set expert_feed_forward_length=704
EOF_2026
}

# file_2026 NAME LIKE TYPE LAYERS ARGS...: writes the file of a line of
# layouts_2026 once, into F; ACTIVE is what a generated token reads of its
# weights, ABOUT the line that gives its size and that of the whole model
file_2026() {
    name=$1 like=$2 type=$3 layers=$4
    shift 4
    args=$*
    src="$TESTDATA/families2026/models/$like.gguf"
    [ -f "$src" ] || { echo "missing $src"; return 1; }
    F="$BUILD/bench-models/$name.gguf"
    cut=""
    [ "$layers" = - ] || cut="--layers $layers"
    # shellcheck disable=SC2086 # the option lists are meant to split
    if ! whole=$("$GEN" --like "$src" --type "$type" $args --dry-run 2>/dev/null) ||
        ! this=$("$GEN" --like "$src" --type "$type" $args $cut --dry-run 2>/dev/null); then
        echo "gguf_random refused $name's shape"
        return 1
    fi
    # shellcheck disable=SC2086
    [ -f "$F" ] || "$GEN" --like "$src" --type "$type" $args $cut "$F" 2>/dev/null ||
        { echo "gguf_random failed for $name"; return 1; }
    # "tensors N bytes B active A": the file's, then the whole model's
    # shellcheck disable=SC2086
    set -- $this $whole
    ACTIVE=$6
    total=$(echo "$args" | sed -n 's/.*--set block_count=\([0-9]*\).*/\1/p')
    what="all $total layers"
    [ "$layers" = - ] || what="$layers of $total layers"
    ABOUT="$name: $what; file $(awk "BEGIN{printf \"%.2f GB, a token reads %.3f GB (%.1f%%)\", $4/1e9, $6/1e9, 100*$6/$4}");"
    ABOUT="$ABOUT whole model $(awk "BEGIN{printf \"%.2f GB, %.3f GB (%.1f%%)\", ${10}/1e9, ${12}/1e9, 100*${12}/${10}}")"
}

if [ "${BENCH_2026:-1}" != 0 ] && [ "${BENCH_LONG:-0}" != 1 ]; then
    threads_before=$THREADS
    THREADS=${BENCH_2026_THREADS:-2}
    while read -r name like type layers args; do
        wanted "$name" || continue
        # shellcheck disable=SC2086 # the option list is meant to split
        file_2026 "$name" "$like" "$type" "$layers" $args || continue
        echo "$ABOUT"
        [ "${BENCH_2026_PREPARE:-0}" = 1 ] && continue
        for c in $CACHES; do
            measure_bw
            ACTIVE_BYTES=$ACTIVE
            run "$F" -ctk "$c" -ctv "$c" -p "${BENCH_2026_PP:-512}" -n "$TG"
            [ "$DEPTH" != 0 ] && run "$F" -ctk "$c" -ctv "$c" -p 0 -n "$TG" -d "$DEPTH"
            ACTIVE_BYTES=""
        done
    done <<EOF_LIST
$(layouts_2026)
EOF_LIST
    THREADS=$threads_before
fi

# iq_stem LAYERS: the IQ files' name stem for the TinyLlama-1.1B shape cut
# to LAYERS layers
iq_stem() {
    if [ "$1" = 22 ]; then echo tinyllama-1.1b; else echo "tinyllama-1.1b-l$1"; fi
}

# iq_prepare LAYERS: the F16 TinyLlama-1.1B shape with LAYERS layers and a
# random importance matrix for it, written once (IQ_F16, IQ_IMAT, IQ_STEM),
# and the reference's llama-quantize (QUANT); fails saying why
iq_prepare() {
    QUANT=${LLAMA_QUANTIZE:-}
    [ -z "$QUANT" ] && [ -n "${LLAMA_BENCH:-}" ] && QUANT=$(dirname "$LLAMA_BENCH")/llama-quantize
    IQ_STEM=$(iq_stem "$1")
    src="$TESTDATA/models/tiny-spm-q4_0.gguf"
    IQ_F16="$BUILD/bench-models/$IQ_STEM-f16.gguf"
    IQ_IMAT="$BUILD/bench-models/$IQ_STEM.imatrix.dat"
    if [ -z "$QUANT" ] || [ ! -x "$QUANT" ]; then
        echo "no llama-quantize (LLAMA_QUANTIZE, or LLAMA_BENCH's folder)"
        return 1
    fi
    [ -f "$src" ] || { echo "missing $src"; return 1; }
    if ! { [ -f "$IQ_F16" ] || "$GEN" --like "$src" --type F16 --dim 2048 --layers "$1" --heads 32 --kv-heads 4 \
        --ffn 5632 "$IQ_F16" >/dev/null 2>&1; } ||
        ! { [ -f "$IQ_IMAT" ] || "$BUILD/tools/imatrix_random" "$IQ_F16" "$IQ_IMAT" >/dev/null; }; then
        echo "writing $IQ_F16 or its importance matrix failed"
        return 1
    fi
}

# iq_quantize NAME TYPE [ARGS...]: llama-quantize (with iq_prepare's
# importance matrix and ARGS) writes IQ_F16 in TYPE once, as
# $BUILD/bench-models/NAME.gguf (F)
iq_quantize() {
    name=$1 t=$2
    shift 2
    F="$BUILD/bench-models/$name.gguf"
    [ -f "$F" ] && return 0
    qs=$(date +%s)
    if ! nice "$QUANT" --imatrix "$IQ_IMAT" "$@" "$IQ_F16" "$F.tmp" "$t" "$THREADS" >"$F.log" 2>&1 ||
        ! mv "$F.tmp" "$F"; then
        echo "llama-quantize failed for $name (log: $F.log)"
        rm -f "$F.tmp"
        return 1
    fi
    echo "$name: written by llama-quantize in $(($(date +%s) - qs)) s"
}

# 8. the IQ types on the TinyLlama-1.1B shape, quantized by llama-quantize
# with a random importance matrix
if [ "${BENCH_IQ:-1}" != 0 ] && [ "${BENCH_LONG:-0}" != 1 ]; then
    threads_before=$THREADS
    THREADS=${BENCH_IQ_THREADS:-2}
    if iq_prepare "${BENCH_IQ_LAYERS:-22}" >"$BUILD/bench-models/.iq_prepare" 2>&1; then
        for t in ${BENCH_IQ_TYPES:-IQ4_XS IQ3_S IQ2_XXS IQ1_M}; do
            name=$IQ_STEM-$(echo "$t" | tr A-Z a-z)
            wanted "$name" || continue
            iq_quantize "$name" "$t" || continue
            echo "$name: $("$BIN" info "$F" 2>/dev/null | grep '^type mix' || echo 'tokscope info failed')"
            [ "${BENCH_IQ_PREPARE:-0}" = 1 ] && continue
            run "$F" -ctk f16 -ctv f16 -p 512 -n "$TG"
        done
    else
        echo "IQ types: $(cat "$BUILD/bench-models/.iq_prepare"): section 8 skipped"
    fi
    THREADS=$threads_before
fi
# 9. issue 36's table, with BENCH_IK_TABLE=1 (tests/bench_ik.sh runs it
# alone): tokscope, llama.cpp (LLAMA_BENCH) and ik_llama.cpp (IK_BENCH, best
# of -rtr 0 and 1) on each row of BENCH_IK_ROWS and each test of
# BENCH_IK_TESTS, F16 cache, BENCH_IK_THREADS threads (2), in
# BENCH_IK_ROUNDS rounds (2): each round runs the three programs one after
# the other on each group of tests (pp and tg at depth 0 in one call, each
# depth alone). Rows: q4_0 q8_0 q4_k_m q6_k q5_k_m (gguf_random, the TinyLlama-1.1B
# shape of 2; q5_k_m in llama-quantize's mix), iq4_xs iq3_s iq2_xxs iq1_m (llama-quantize as in 8, at
# BENCH_IQ_LAYERS layers), mxfp4 (llama-quantize Q8_0 with every attention
# and FFN matrix MXFP4: --tensor-type), and a section 7 name (e.g.
# qwen3moe-30b-a3b), or any .gguf file's path. Every result goes to
# BENCH_IK_OUT.jsonl and a Markdown table of them to BENCH_IK_OUT.md
# (BENCH_IK_OUT: $BUILD/bench-ik) and the output: per row
# and test the range over the rounds, tokscope / llama.cpp and tokscope / ik
# (of the means), tokscope's peak RSS beside the file's size, for tg the
# fraction of the read bandwidth tokscope reached, and tokscope / ik of each
# round alone (the runs side by side) with their median.
if [ "${BENCH_IK_TABLE:-0}" = 1 ]; then
    threads_before=$THREADS
    THREADS=${BENCH_IK_THREADS:-2}
    BENCH_RESULTS=${BENCH_IK_OUT:-$BUILD/bench-ik}.jsonl
    : >"$BENCH_RESULTS"
    tests=$(echo "${BENCH_IK_TESTS:-pp512,tg64,tg64@d4096,pp512@d8192}" | tr , ' ')
    # the groups of tests, one call each: "P N D" (llama-bench's -p -n -d)
    # shellcheck disable=SC2086 # the list is meant to split
    groups=$(python3 -c "
import re, sys
flat, deep = {'pp': [], 'tg': []}, []
for t in sys.argv[1:]:
    m = re.fullmatch(r'(pp|tg)(\d+)(?:@d(\d+))?', t)
    if not m:
        sys.exit('bench: BENCH_IK_TESTS: not a test: ' + t)
    if m.group(3):
        deep.append('%s %s %s' % (m.group(2) if m.group(1) == 'pp' else 0, m.group(2) if m.group(1) == 'tg' else 0, m.group(3)))
    else:
        flat[m.group(1)].append(m.group(2))
if flat['pp'] or flat['tg']:
    print(','.join(flat['pp']) or 0, ','.join(flat['tg']) or 0, 0)
for g in deep:
    print(g)" $tests) || exit 2
    for row in $(echo "${BENCH_IK_ROWS:-q4_0,q8_0,iq4_xs,iq2_xxs,q4_k_m,q5_k_m,q6_k,iq3_s,iq1_m,mxfp4,qwen3moe-30b-a3b}" | tr , ' '); do
        F="" ACTIVE_BYTES="" upper=$(echo "$row" | tr '[:lower:]' '[:upper:]')
        case "$row" in
        q4_0 | q8_0 | q4_k_m | q6_k | q5_k_m)
            F="$BUILD/bench-models/tinyllama-1.1b-$row.gguf"
            # Q5_K_M: llama-quantize's own mix (Q5_K, Q6_K for half the
            # attn_v / ffn_down and the output), which gguf_random writes
            # with --llama-quantize; the others its simplified types
            lq=''; [ "$row" = q5_k_m ] && lq=--llama-quantize
            [ -f "$F" ] || "$GEN" --like "$TESTDATA/models/tiny-spm-q4_0.gguf" $lq --type "$upper" --dim 2048 --layers 22 \
                --heads 32 --kv-heads 4 --ffn 5632 "$F" >/dev/null 2>&1 || { echo "gguf_random failed for $row"; continue; }
            ;;
        iq* | mxfp4)
            # a file written before is measured as it is: llama-quantize
            # (iq_prepare) only to write a missing one, so that
            # LLAMA_BENCH=true (llama.cpp left out) still runs these rows
            name=$(iq_stem "${BENCH_IQ_LAYERS:-22}")-$row
            F="$BUILD/bench-models/$name.gguf"
            if [ ! -f "$F" ]; then
                iq_prepare "${BENCH_IQ_LAYERS:-22}" || continue
                if [ "$row" = mxfp4 ]; then
                    iq_quantize "$name" Q8_0 --tensor-type attn=mxfp4 --tensor-type ffn=mxfp4 || continue
                else
                    iq_quantize "$name" "$upper" || continue
                fi
            fi
            ;;
        *.gguf)
            F=$row
            row=$(basename "$row" .gguf)
            ;;
        *)
            line=$(layouts_2026 | grep "^$row")
            [ -n "$line" ] || { echo "bench: BENCH_IK_ROWS: no row $row"; continue; }
            # shellcheck disable=SC2086 # the option list is meant to split
            file_2026 $line || continue
            echo "$ABOUT"
            ACTIVE_BYTES=$ACTIVE
            ;;
        esac
        echo "$row: $(basename "$F"), $(awk "BEGIN{printf \"%.2f\", $(stat -L -c %s "$F")/1e9}") GB;" \
            "$("$BIN" info "$F" 2>/dev/null | grep '^type mix' || echo 'tokscope info failed')"
        measure_bw
        for round in $(seq "${BENCH_IK_ROUNDS:-2}"); do
            echo "$row: round $round"
            echo "$groups" | while read -r p n d; do
                BENCH_ROW=$row BENCH_ROUND=$round run "$F" -ctk f16 -ctv f16 -p "$p" -n "$n" -d "$d"
            done
        done
        ACTIVE_BYTES=""
    done
    python3 - "$BENCH_RESULTS" "$(cpu_name)" \
        "$(git rev-parse --short HEAD 2>/dev/null || echo '?')" "$THREADS" "${BENCH_IK_ROUNDS:-2}" "$REPS" \
        "$ISA" "$LLAMA_ISA" "$IK_ISA" "$TRIES_NOTE" <<'EOF_SUM' |
import json, os, statistics, sys
path, cpu, commit, threads, rounds, reps, isa, llama_isa, ik_isa, tries_note = sys.argv[1:]
recs = [json.loads(l) for l in open(path) if l.strip()]
rows, cells = [], {}
for r in recs:
    test = ('pp%d' % r['n_prompt'] if r['n_prompt'] else 'tg%d' % r['n_gen']) + (' @ d%d' % r['n_depth'] if r['n_depth'] else '')
    if r['row'] not in rows:
        rows.append(r['row'])
    cells.setdefault((r['row'], test), []).append(r)
def rng(v):
    lo, hi = min(v), max(v)
    f = '%.0f' if hi >= 100 else '%.1f'
    return f % lo if f % lo == f % hi else (f + '-' + f) % (lo, hi)
print('%s, %s threads, %s rounds of %s repetitions; tokscope %s (%s build)%s%s%s; F16 cache'
      % (cpu, threads, rounds, reps, commit, isa, '; llama.cpp %s build' % llama_isa if llama_isa else '',
         '; ik %s build' % ik_isa if ik_isa else '', tries_note))
print()
print('| file | test | tokscope | llama.cpp | ik best | ÷ llama.cpp | ÷ ik | tokscope peak RSS / file | tg: % of read bandwidth | ÷ ik by round |')
print('|---|---|---|---|---|---|---|---|---|---|')
def by_round(rs):
    # each round's tokscope against the ik run beside it: the host swings
    # between rounds by more than some gaps, a paired ratio does not
    per = []
    for n in sorted({r.get('round', 0) for r in rs}):
        t = [r['avg_ts'] for r in rs if r['prog'] == 'tokscope' and r.get('round', 0) == n]
        k = [r['avg_ts'] for r in rs if r['prog'] == 'ik' and r.get('round', 0) == n]
        if t and k:
            per.append(statistics.mean(t) / statistics.mean(k))
    if not per:
        return '-'
    return ', '.join('%.2f' % x for x in per) + (' (median %.2f)' % statistics.median(per) if len(per) > 1 else '')
for row in rows:
    for (rw, test), rs in cells.items():
        if rw != row:
            continue
        ts = [r['avg_ts'] for r in rs if r['prog'] == 'tokscope']
        lc = [r['avg_ts'] for r in rs if r['prog'] == 'llama.cpp']
        ik = [r for r in rs if r['prog'] == 'ik']
        notes = sorted({r['ik_note'] for r in rs if r['prog'] == 'tokscope' and r.get('ik_note')})
        ikv = [r['avg_ts'] for r in ik]
        rtr = sum(1 for r in ik if r['repack'])
        iks = rng(ikv) + (' (rtr)' if rtr == len(ik) else ' (rtr %d of %d)' % (rtr, len(ik)) if rtr else '') if ik else \
            ('- (' + '; '.join(notes) + ')' if notes else '-')
        ratio = lambda a, b: '%.2f' % (statistics.mean(a) / statistics.mean(b)) if a and b else '-'
        tsr = [r for r in rs if r['prog'] == 'tokscope']
        rss = '%.2f / %.2f GB' % (max(r['peak_rss_bytes'] for r in tsr) / 1e9, tsr[0]['file_bytes'] / 1e9) if tsr else '-'
        bw = '-'
        if tsr and tsr[0]['n_gen'] and tsr[0]['bw'] > 0:
            fr = [((r['active'] or r['weight_bytes']) + r['kv_bytes_per_pos'] * (r['n_depth'] + (r['n_gen'] - 1) / 2))
                  * r['avg_ts'] / (r['bw'] * 1e9) for r in tsr]
            bw = '%.0f%% of %.1f GB/s' % (100 * statistics.mean(fr), tsr[0]['bw'])
        print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (row, test, rng(ts) if ts else '-', rng(lc) if lc else '-',
            iks, ratio(ts, lc), ratio(ts, ikv), rss, bw, by_round(rs)))
EOF_SUM
        tee "${BENCH_IK_OUT:-$BUILD/bench-ik}.md"
    THREADS=$threads_before
fi
echo "bench: $(($(date +%s) - start)) s"
