#!/bin/sh
# Long contexts against the reference (tests/golden/reference/longctx): a
# TinyLlama-1.1B-shaped model cut to 4 layers (tests/tools/gguf_random,
# Q4_0, seed 7), F16 and Q8_0 caches, 2 threads:
#  - MODEL.p2048.CACHE: a 2048-token prompt in batches of 512 (the tiled
#    kernel over up to 2048 keys, or for Q8_0 the one-chunk kernel for every
#    query), every position's logits, then 16 greedy tokens (split KV);
#  - MODEL.p4100.gen40.CACHE: a 4100-token prompt, only its last logits,
#    then 40 greedy tokens past depth 4096 (the view cut in two).
# Bit for bit, native build; the variant builds (tests/lib.sh) on the
# 2048-token files.
. tests/lib.sh
R=tests/golden/reference/longctx
GEN=${BUILD:-build}/tools/gguf_random
SRC=$TESTDATA/models/tiny-spm-q4_0.gguf
model=$OUT/tl4-q4_0.gguf

if need "$SRC" "long context: model"; then
    if ! "$GEN" --like "$SRC" --type Q4_0 --dim 2048 --layers 4 --heads 32 --kv-heads 4 --ffn 5632 --seed 7 \
        "$model" >"$OUT/gen.log" 2>&1; then
        not_ok "long context: gguf_random" "$(tail -n 3 "$OUT/gen.log")"
    elif [ "$(md5sum <"$model" | cut -d' ' -f1)" != "$(cut -d' ' -f1 "$R/MD5SUMS")" ]; then
        not_ok "long context: model bytes" "gguf_random's output is not the file the reference ran on"
    else
        for golden in "$R"/*.jsonl; do
            base=$(basename "$golden" .jsonl)
            cache=${base##*.}
            case "$base" in *p2048*) ctx=2304 bins="$BIN $(variants)" ;; *) ctx=4352 bins=$BIN ;; esac
            for bin in $bins; do
                [ -x "$bin" ] || continue
                label=$(build_label "$bin")
                name="long context $base ($cache cache), $label (bit-exact)"
                if "$bin" compare --top 3 -m "$model" "$golden" -t 2 -c $ctx -ctk "$cache" -ctv "$cache" \
                    --max-diff 0.000005 >"$OUT/compare.out" 2>&1; then
                    ok "$name $(tail -n 1 "$OUT/compare.out")"
                else
                    not_ok "$name" "$(tail -n 6 "$OUT/compare.out")"
                fi
            done
        done
    fi
    rm -f "$model"
fi
