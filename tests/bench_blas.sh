#!/bin/sh
# `make bench`, OpenBLAS part (also alone: sh tests/bench_blas.sh): prompt
# batches of TinyLlama-1.1B shapes whose weights OpenBLAS takes, tokscope
# with --blas off and on alternately, BENCH_BLAS_PASSES passes (default 2),
# each followed by llama.cpp on the same file when LLAMA_BENCH is set. Each
# line gives on / off and tokscope (on) / llama.cpp. BENCH_BLAS_PP (default
# 512), BENCH_BLAS_TYPES (default "F16 Q6_K"), BENCH_REPS and BENCH_THREADS
# choose the tests. The models are written once to $BUILD/bench-models.
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BUILD=${BUILD:-build}
BIN=${BIN:-./tokscope}
case "$BIN" in */*) ;; *) BIN=./$BIN ;; esac
REPS=${BENCH_REPS:-3} THREADS=${BENCH_THREADS:-$(nproc)} PP=${BENCH_BLAS_PP:-512}
src="$TESTDATA/models/tiny-spm-q4_0.gguf"
[ -f "$src" ] || { echo "missing $src"; exit 0; }
mkdir -p "$BUILD/bench-models"
echo "OpenBLAS: $("$BIN" info "$src" | sed -n 's/^  OpenBLAS *[^;]*; //p'), $THREADS threads, pp$PP"
for t in ${BENCH_BLAS_TYPES:-F16 Q6_K}; do
    f="$BUILD/bench-models/tinyllama-1.1b-$(echo "$t" | tr A-Z a-z).gguf"
    [ -f "$f" ] || "$BUILD/tools/gguf_random" --like "$src" --type "$t" --dim 2048 --layers 22 --heads 32 --kv-heads 4 \
        --ffn 5632 "$f" 2>/dev/null || { echo "gguf_random failed for $t"; continue; }
    for pass in $(seq "${BENCH_BLAS_PASSES:-2}"); do
        off=$("$BIN" bench -m "$f" -p "$PP" -n 0 -r "$REPS" -t "$THREADS" --blas off -o jsonl) || { echo "bench failed"; break; }
        on=$("$BIN" bench -m "$f" -p "$PP" -n 0 -r "$REPS" -t "$THREADS" --blas on -o jsonl) || { echo "bench failed"; break; }
        ref=""
        [ -n "${LLAMA_BENCH:-}" ] && ref=$("$LLAMA_BENCH" -m "$f" -p "$PP" -n 0 -r "$REPS" -t "$THREADS" -o jsonl 2>/dev/null)
        python3 -c "
import json, os, sys
off, on = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ref = [json.loads(l) for l in sys.argv[3].splitlines() if l.strip()]
line = '%-28s pp%-4d pass %s  blas off %8.2f  on %8.2f tok/s  on/off %.2f' % (os.path.basename(off['model_filename']),
    off['n_prompt'], sys.argv[4], off['avg_ts'], on['avg_ts'], on['avg_ts'] / off['avg_ts'])
if ref:
    line += '   llama.cpp %8.2f  tokscope/llama.cpp: off %.2f, on %.2f' % (ref[0]['avg_ts'],
        off['avg_ts'] / ref[0]['avg_ts'], on['avg_ts'] / ref[0]['avg_ts'])
print(line)
" "$off" "$on" "$ref" "$pass"
    done
done
