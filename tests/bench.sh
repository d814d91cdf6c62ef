#!/bin/sh
# `make bench`: throughput on the shared models (prompt processing and token
# generation, tokens/s). Not part of `make test`: numbers, not assertions.
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BIN=${BIN:-./tokscope}
case "$BIN" in */*) ;; *) BIN=./$BIN ;; esac
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
for m in stories260K.gguf stories260K-q8_0.gguf tiny-spm-f16.gguf tiny-spm-q8_0.gguf tiny-spm-q4_0.gguf \
         tiny-spm-q4_k_m.gguf tiny-spm-mix.gguf smollm-mini-q8_0.gguf; do
    f="$TESTDATA/models/$m"
    [ -f "$f" ] || { echo "missing $f"; continue; }
    "$BIN" bench -m "$f" -p "${BENCH_PP:-128}" -n "${BENCH_TG:-64}" -r "${BENCH_REPS:-3}"
done
