#!/bin/sh
# `make bench`: throughput on the shared models (prompt processing and token
# generation, tokens/s), then on models of TinyLlama-1.1B's size, which do
# not fit in the CPU caches, and on real-size shapes of each model family
# (BENCH_BIG=0 skips both). Not part of `make test`: numbers, not assertions.
#
# With LLAMA_BENCH=/path/to/llama-bench, llama.cpp runs the same tests on the
# same file right after tokscope, model by model, and each line gives
# tokscope / llama.cpp. BENCH_PP, BENCH_TG, BENCH_DEPTH (comma lists),
# BENCH_REPS and BENCH_THREADS choose the tests.
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BUILD=${BUILD:-build}
BIN=${BIN:-./tokscope}
case "$BIN" in */*) ;; *) BIN=./$BIN ;; esac
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
PP=${BENCH_PP:-128} TG=${BENCH_TG:-64} REPS=${BENCH_REPS:-3} THREADS=${BENCH_THREADS:-$(nproc)}

# bench_one MODEL: tokscope (its JSONL, as a table), then with LLAMA_BENCH
# llama-bench on the same file and the ratio of each test
bench_one() {
    out=$("$BIN" bench -m "$1" -p "$PP" -n "$TG" -d "${BENCH_DEPTH:-0}" -r "$REPS" -t "$THREADS" -o jsonl) ||
        { echo "tokscope bench failed on $1"; return; }
    ref=""
    if [ -n "${LLAMA_BENCH:-}" ]; then
        ref=$("$LLAMA_BENCH" -m "$1" -p "$PP" -n "$TG" -d "${BENCH_DEPTH:-0}" -r "$REPS" -t "$THREADS" -o jsonl \
            2>/dev/null) || { echo "llama-bench failed on $1"; ref=""; }
    fi
    python3 -c "
import json, os, sys
key = lambda d: (d['n_prompt'], d['n_gen'], d['n_depth'], d['n_threads'])
ref = {key(d): d for d in map(json.loads, filter(None, sys.argv[2].splitlines()))}
for d in map(json.loads, filter(None, sys.argv[1].splitlines())):
    test = ('pp%d' % d['n_prompt'] if d['n_prompt'] else 'tg%d' % d['n_gen']) + (' @ d%d' % d['n_depth'] if d['n_depth'] else '')
    line = '%-28s %-14s %10.2f ± %-8.2f tok/s  RSS %5.0f MiB' % (os.path.basename(d['model_filename']), test,
        d['avg_ts'], d['stddev_ts'], d['peak_rss_bytes'] / 1048576)
    r = ref.get(key(d))
    if r:
        line += '   llama.cpp %10.2f  ratio %.2f' % (r['avg_ts'], d['avg_ts'] / r['avg_ts'])
    print(line)
" "$out" "$ref"
}
for m in stories260K.gguf stories260K-q8_0.gguf tiny-spm-f16.gguf tiny-spm-q8_0.gguf tiny-spm-q4_0.gguf \
         tiny-spm-q4_k_m.gguf tiny-spm-mix.gguf smollm-mini-q8_0.gguf; do
    f="$TESTDATA/models/$m"
    [ -f "$f" ] || { echo "missing $f"; continue; }
    bench_one "$f"
done

# Real size: TinyLlama-1.1B shapes with random weights (tests/tools/gguf_random,
# the tokenizer of tiny-spm), written once to $BUILD/bench-models (2.5 GB).
[ "${BENCH_BIG:-1}" = 0 ] && exit 0
src="$TESTDATA/models/tiny-spm-q4_0.gguf"
[ -f "$src" ] || { echo "missing $src"; exit 0; }
mkdir -p "$BUILD/bench-models"
for t in Q4_0 Q4_K_M Q8_0; do
    f="$BUILD/bench-models/tinyllama-1.1b-$(echo $t | tr A-Z a-z).gguf"
    [ -f "$f" ] || "$BUILD/tools/gguf_random" --like "$src" --type $t --dim 2048 --layers 22 --heads 32 --kv-heads 4 \
        --ffn 5632 "$f" 2>/dev/null || { echo "gguf_random failed for $t"; continue; }
    bench_one "$f"
done

# Real-size shapes of the model families, full depth, Q4_K_M (random
# weights; tokenizer of the family's shared mini model): Llama-3.2-1B,
# Qwen3-0.6B, Gemma-3-1B (its vocabulary is the mini model's 32000, not
# 262144), Phi-3-mini, Qwen2.5-0.5B. Written once (about 4.5 GB).
while read -r name like args; do
    src="$TESTDATA/models/$like.gguf"
    [ -f "$src" ] || { echo "missing $src"; continue; }
    f="$BUILD/bench-models/$name-q4_k_m.gguf"
    # shellcheck disable=SC2086 # the option list is meant to split
    [ -f "$f" ] || "$BUILD/tools/gguf_random" --like "$src" --type Q4_K_M $args "$f" 2>/dev/null ||
        { echo "gguf_random failed for $name"; continue; }
    bench_one "$f"
done <<'EOF_SHAPES'
llama32-1b llama3-mini-q8_0 --arch llama --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --rope-freqs 32 --tied --ctx 131072
qwen3-0.6b qwen3-mini-q8_0 --arch qwen3 --dim 1024 --layers 28 --heads 16 --kv-heads 8 --head-dim 128 --ffn 3072 --ctx 40960
gemma3-1b gemma3-mini-q8_0 --arch gemma3 --dim 1152 --layers 26 --heads 4 --kv-heads 1 --head-dim 256 --ffn 6912 --swa 512 --ctx 32768
phi3-mini phi3-mini-q8_0 --arch phi3 --dim 3072 --layers 32 --heads 32 --kv-heads 32 --ffn 8192 --ctx 4096
qwen25-0.5b qwen2-mini-q4_k_m --arch qwen2 --dim 896 --layers 24 --heads 14 --kv-heads 2 --ffn 4864 --ctx 32768
EOF_SHAPES


# OpenBLAS (--blas) off and on, against llama.cpp (tests/bench_blas.sh)
[ "${BENCH_BLAS:-1}" = 0 ] || BUILD=$BUILD BIN=$BIN sh tests/bench_blas.sh
