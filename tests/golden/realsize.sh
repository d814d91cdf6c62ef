#!/bin/sh
# Real model sizes. The shared models are small enough to sit in the CPU
# caches; TinyLlama-1.1B's shapes (dim 2048, 32 query / 4 KV heads of 64,
# ffn 5632, 32000 vocab) are not, and they cut the matmuls into many more
# packed groups and thread chunks. tests/tools/gguf_random writes such a
# model with 4 layers and seeded random weights (the tokenizer comes from a
# shared model), and the reference (llama.cpp, see
# tests/golden/reference/README.md) ran a 65-token prompt as one batch
# (tiled attention) and 12 greedy tokens on the same files. Ours must match
# bit for bit, in the native and the variant builds (tests/lib.sh).
. tests/lib.sh
R=tests/golden/reference/realsize
GEN=${BUILD:-build}/tools/gguf_random
SRC=$TESTDATA/models/tiny-spm-q4_0.gguf

for golden in "$R"/*.jsonl; do
    base=$(basename "$golden" .jsonl)   # tl4-TYPE
    type=$(echo "${base#tl4-}" | tr a-z A-Z)
    name="real size (TinyLlama shapes, 4 layers) $type"
    need "$SRC" "$name" || continue
    model=$OUT/$base.gguf
    if ! "$GEN" --like "$SRC" --type "$type" --dim 2048 --layers 4 --heads 32 --kv-heads 4 --ffn 5632 \
        --seed 7 "$model" >"$OUT/gen.log" 2>&1; then
        not_ok "$name: gguf_random" "$(tail -n 3 "$OUT/gen.log")"
        continue
    fi
    # The reference ran on exactly these bytes: a changed generator or
    # weight quantizer must show up as such, not as a logit mismatch.
    want=$(grep " $base.gguf\$" "$R/MD5SUMS" | cut -d' ' -f1)
    got=$(md5sum "$model" | cut -d' ' -f1)
    if [ "$want" != "$got" ]; then
        not_ok "$name: model bytes" "gguf_random wrote md5 $got, the reference ran on $want"
        rm -f "$model"
        continue
    fi
    for bin in "$BIN" $(variants); do
        label=$(build_label "$bin")
        if "$bin" compare --top 3 -m "$model" "$golden" --max-diff 0.000005 >"$OUT/compare.out" 2>&1; then
            ok "$name, $label (bit-exact) $(tail -n 1 "$OUT/compare.out")"
        else
            not_ok "$name, $label (bit-exact)" "$(tail -n 6 "$OUT/compare.out")"
        fi
    done
    rm -f "$model"
done
