#!/bin/sh
# Quantized KV caches on the 2026 families, against the reference bit for
# bit. Gemma 4's head size differs by layer kind (32 sliding / 64 global in
# the mini, 256 / 512 in the real models): each kind's cache rows are its
# own size, and llama.cpp decides the Walsh-Hadamard rotation from layer 0's
# head size (a sliding layer's) and sizes the K rotation by each cache's own
# heads. tests/golden/reference/kvcache2026/MODEL.CASE.CTK.CTV.jsonl is the
# reference with -ctk CTK -ctv CTV on the chat golden's prompt and its 32
# greedy tokens: CASE obochat one token per call, chat the prompt as one
# batch. Made by llama.cpp 34af94cd's AVX2 build on this project's machine
# (no AVX-512 build was at hand): its one-token kernels for quantized caches
# round as the AVX-512 build's, its batched matmuls and F16 attention do
# not (tests/golden/reference/README.md, kvcache2026/); so these are the
# one-by-one runs and, where the batched run came out the same, that one.
# gemma4-h128 is written by tests/tools/gguf_random from gemma4-mini (heads
# 64 sliding / 128 global: both rotations, of 64 and 128).
. tests/lib.sh
R=tests/golden/reference/kvcache2026
M=$TESTDATA/families2026/models
GEN=${BUILD:-build}/tools/gguf_random

# the generated model: the reference ran on exactly these bytes
H128=$OUT/gemma4-h128.gguf
if need "$M/gemma4-mini-q8_0.gguf" "KV cache: gemma4-h128 written"; then
    if "$GEN" --like "$M/gemma4-mini-q8_0.gguf" --type Q8_0 --seed 7 --set attention.key_length=128 \
        --set attention.value_length=128 --set attention.key_length_swa=64 --set attention.value_length_swa=64 \
        --set rope.dimension_count=128 --set rope.dimension_count_swa=64 "$H128" >"$OUT/gen.log" 2>&1 &&
        [ "$(md5sum "$H128" | cut -d' ' -f1)" = "$(grep ' gemma4-h128.gguf$' "$R/MD5SUMS" | cut -d' ' -f1)" ]; then
        ok "KV cache: gemma4-h128 written, the bytes the reference ran on"
    else
        not_ok "KV cache: gemma4-h128 written, the bytes the reference ran on" "$(tail -n 3 "$OUT/gen.log")"
        rm -f "$H128"
    fi
fi

for golden in "$R"/*.jsonl; do
    base=$(basename "$golden" .jsonl)
    model=${base%%.*}
    rest=${base#*.}
    ctv=${rest##*.}
    rest=${rest%.*}
    ctk=${rest##*.}
    obo=''
    case $base in *.obo*) obo=--one-by-one ;; esac
    name="KV cache $ctk/$ctv: $base (bit-exact)"
    mf=$M/$model.gguf
    [ "$model" = gemma4-h128 ] && mf=$H128
    need "$mf" "$name" || continue
    # shellcheck disable=SC2086
    if "$BIN" compare --top 3 -t 2 -m "$mf" "$golden" -ctk "$ctk" -ctv "$ctv" --max-diff 0.000005 $obo \
        >"$OUT/kv.out" 2>&1; then ok "$name $(tail -n 1 "$OUT/kv.out")"
    else not_ok "$name" "$(tail -n 6 "$OUT/kv.out")"; fi
done

# The per-layer rotation is what makes the bits on gemma4-h128: without it
# (LLAMA_ATTN_ROT_DISABLE=1) the Q8_0 cache is off.
name="KV cache q8_0 on gemma4-h128 without the Hadamard rotation differs from the reference"
if [ -f "$H128" ]; then
    LLAMA_ATTN_ROT_DISABLE=1 "$BIN" compare --top 0 -t 2 -m "$H128" "$R/gemma4-h128.obochat.q8_0.q8_0.jsonl" \
        -ctk q8_0 -ctv q8_0 --one-by-one --max-diff 0.000005 >"$OUT/kv.out" 2>&1
    if [ $? -eq 1 ]; then ok "$name"; else not_ok "$name" "$(tail -n 2 "$OUT/kv.out")"; fi
fi
rm -f "$H128"
