#!/bin/sh
# `make bench`: throughput on the shared models (prompt processing and token
# generation, tokens/s), then on models of TinyLlama-1.1B's size, which do
# not fit in the CPU caches (BENCH_BIG=0 skips them). Not part of
# `make test`: numbers, not assertions.
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BUILD=${BUILD:-build}
BIN=${BIN:-./tokscope}
case "$BIN" in */*) ;; *) BIN=./$BIN ;; esac
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
for m in stories260K.gguf stories260K-q8_0.gguf tiny-spm-f16.gguf tiny-spm-q8_0.gguf tiny-spm-q4_0.gguf \
         tiny-spm-q4_k_m.gguf tiny-spm-mix.gguf smollm-mini-q8_0.gguf; do
    f="$TESTDATA/models/$m"
    [ -f "$f" ] || { echo "missing $f"; continue; }
    "$BIN" bench -m "$f" -p "${BENCH_PP:-128}" -n "${BENCH_TG:-64}" -r "${BENCH_REPS:-3}"
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
    "$BIN" bench -m "$f" -p "${BENCH_PP:-128}" -n "${BENCH_TG:-64}" -r "${BENCH_REPS:-3}"
done
