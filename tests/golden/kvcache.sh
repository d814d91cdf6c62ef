#!/bin/sh
# KV cache types against the reference, bit for bit: F16 (the default) is
# everywhere else; here Q8_0 and Q4_0 K/V caches, a mixed one, and F32
# (which llama.cpp casts to F16 for flash attention). tests/golden/reference/
# kvcache/MODEL.CASE.CTK.CTV.jsonl: the reference with -ctk CTK -ctv CTV on
# the golden's prompt (or: genN, a 20-token prompt and N greedy tokens;
# oboN, N tokens one per call), n_ctx 512, 2 threads. Quantized caches take
# llama.cpp's Walsh-Hadamard rotation of Q/K and V when the head size is a
# multiple of 64 (smollm, gemma3: 64 and 128), its one-chunk attention
# kernel for every query, and quantize K and V rows as it does.
. tests/lib.sh
R=tests/golden/reference/kvcache
M=$TESTDATA/models
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
    need "$M/$model.gguf" "$name" || continue
    # shellcheck disable=SC2086
    if "$BIN" compare --top 3 -t 2 -m "$M/$model.gguf" "$golden" -ctk "$ctk" -ctv "$ctv" --max-diff 0.000005 $obo \
        >"$OUT/kv.out" 2>&1; then ok "$name $(tail -n 1 "$OUT/kv.out")"
    else not_ok "$name" "$(tail -n 6 "$OUT/kv.out")"; fi
done
# The rotation is what makes the bits: without it (LLAMA_ATTN_ROT_DISABLE=1,
# llama.cpp's own switch) the Q8_0 cache of smollm (heads of 64) is off.
name="KV cache q8_0 without the Hadamard rotation differs from the reference"
if need "$M/smollm-mini-q8_0.gguf" "$name"; then
    LLAMA_ATTN_ROT_DISABLE=1 "$BIN" compare --top 0 -t 2 -m "$M/smollm-mini-q8_0.gguf" \
        "$R/smollm-mini-q8_0.chat.q8_0.q8_0.jsonl" -ctk q8_0 -ctv q8_0 --max-diff 0.000005 >"$OUT/kv.out" 2>&1
    if [ $? -eq 1 ]; then ok "$name"; else not_ok "$name" "$(tail -n 2 "$OUT/kv.out")"; fi
fi
# A cache type the model's head size cannot hold is refused.
if need "$M/stories260K.gguf" "KV cache refusal"; then
    "$BIN" generate -m "$M/stories260K.gguf" -p "Once" -n 2 --cache-type-k q8_0 >"$OUT/kv.out" 2>&1
    if [ $? -eq 1 ] && grep -q 'head size that is a multiple of 32' "$OUT/kv.out"; then
        ok "a q8_0 cache for heads of 8 is refused with the reason"
    else not_ok "a q8_0 cache for heads of 8 is refused with the reason" "$(tail -n 2 "$OUT/kv.out")"; fi
fi
