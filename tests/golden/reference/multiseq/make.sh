#!/bin/sh
# Writes MODEL.txt here: llama.cpp 34af94cd's logits for batches that mix
# sequences (multiseq.c; kv_unified = false, 2 threads), replayed bit for bit
# by tests/unit/test_multiseq.c. Run from the repository root:
#   sh tests/golden/reference/multiseq/make.sh
# (REF=/work/ref by default: its include/ and build/bin/libllama.so; the
# AVX-512 build on this machine is the evidence; TESTDATA=../shared).
set -eu
R=${REF:-/work/ref}
T=${TESTDATA:-../shared}
D=tests/golden/reference/multiseq
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cc -O2 -Wall -o "$W/multiseq" "$D/multiseq.c" -I"$R/include" -I"$R/ggml/include" -L"$R/build/bin" \
    -lllama -lggml -lggml-base -Wl,-rpath,"$R/build/bin" -lm
for m in models/stories260K.gguf models/tiny-spm-q4_0.gguf models/llama3-mini-q8_0.gguf \
    models/qwen2-mini-q4_k_m.gguf models/qwen3-mini-q8_0.gguf models/phi3-mini-q8_0.gguf \
    models/gemma3-mini-q8_0.gguf families2026/models/qwen3moe-mini-q8_0.gguf \
    families2026/models/gemma4-mini-q8_0.gguf families2026/models/gptoss-mini-mxfp4.gguf \
    families2026/models/qwen35-mini-q8_0.gguf families2026/models/qwen35moe-mini-q8_0.gguf; do
    n=$(basename "$m" .gguf)
    q=q # quantized caches too, where the heads are whole blocks of 32
    case $n in stories260K) q= ;; esac
    "$W/multiseq" "$T/$m" "$m" $q >"$D/$n.txt" 2>/dev/null
    echo "$n: $(grep -c '^logits' "$D/$n.txt") rows"
done
