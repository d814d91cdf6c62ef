#!/bin/sh
# Our logits against the reference's (llama.cpp) for every golden file in
# ../shared/golden/logits: `tokscope compare` teacher-forces the golden token
# sequence and exits 1 outside the tolerance (F32/F16 models: max |dlogit|
# <= 0.05 and mean KL <= 1e-4; quantized: mean KL <= 1e-3, top-1 >= 0.98).
# Every file runs batched (prompt in one batch, then one token at a time) and
# one token at a time; one file also without KV cache and one with an odd
# batch size. The full-vocabulary check against stories260K.bos200.logits.f32
# lives in tests/unit/test_forward.c.
. tests/lib.sh
G=$TESTDATA/golden/logits
M=$TESTDATA/models

# cmp NAME MODEL GOLDEN [compare options]
cmp() {
    name=$1 model=$2 golden=$3
    shift 3
    need "$model" "$name" || return 0
    need "$golden" "$name" || return 0
    if "$BIN" compare --top 5 -m "$model" "$golden" "$@" >"$OUT/compare.out" 2>&1; then
        ok "$name $(tail -n 1 "$OUT/compare.out")"
    else
        not_ok "$name" "$(tail -n 9 "$OUT/compare.out")"
    fi
}

found=0
for golden in "$G"/*.jsonl; do
    [ -e "$golden" ] || continue
    found=1
    base=$(basename "$golden" .jsonl)
    model=$M/${base%.*}.gguf
    # Default tolerance, except two known gaps (issue 3, README "Reference
    # parity"), held to the level reached so a regression still fails:
    # - tiny-spm-mix, the file holding every block type, matches bit for bit
    #   up to position 7 of the chat prompt; at position 8 one Q8_0 rounding
    #   tie in layer 0's ffn_down input goes the other way and the rest
    #   drifts. What tips the tie is not found yet.
    # - tiny-spm-q4_k_m one token at a time: the reference sums repacked Q4_K
    #   per 64 elements for a batch (gemm) and per super-block for one token
    #   (gemv), and its goldens evaluate the prompt as a batch; a random-weight
    #   model amplifies the difference (../shared/README.md allows mean KL up
    #   to 7e-3 for an independent float pass).
    # A loosened run carries its options in its name.
    batched='' obo=''
    case $base in
    tiny-spm-mix.*) batched='--max-kl 4e-3' obo=$batched ;;
    tiny-spm-q4_k_m.*) obo='--max-kl 5e-3 --min-top1 0.95' ;;
    esac
    # shellcheck disable=SC2086 # the option lists are meant to split
    cmp "compare $base batched${batched:+ (known gap: $batched)}" "$model" "$golden" $batched
    # shellcheck disable=SC2086
    cmp "compare $base one-by-one${obo:+ (known gap: $obo)}" "$model" "$golden" --one-by-one $obo
done
[ $found = 1 ] || need "$G/stories260K.once.jsonl" "golden logits files"

cmp "compare stories260K.once no-kv-cache" "$M/stories260K.gguf" "$G/stories260K.once.jsonl" --no-kv-cache
cmp "compare tiny-spm-q8_0.chat batch 7" "$M/tiny-spm-q8_0.gguf" "$G/tiny-spm-q8_0.chat.jsonl" --batch 7
cmp "compare tiny-spm-f16.plain all-batched" "$M/tiny-spm-f16.gguf" "$G/tiny-spm-f16.plain.jsonl" --all-batched
cmp "compare stories260K.once F32 KV cache" "$M/stories260K.gguf" "$G/stories260K.once.jsonl" --f32-kv

# compare must be able to say no: another model's golden is far outside.
if need "$M/stories260K-q4_0.gguf" "compare rejects a mismatched golden"; then
    "$BIN" compare --top 0 -m "$M/stories260K-q4_0.gguf" "$G/stories260K.bos200.jsonl" --max-kl 1e-4 --max-diff 0.05 \
        >"$OUT/compare.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q '"max_abs_logit_diff"' "$OUT/compare.out"; then ok "compare rejects a mismatched golden"
    else not_ok "compare rejects a mismatched golden" "exit $rc, want 1" "$(tail -n 3 "$OUT/compare.out")"; fi
    "$BIN" compare --top 0 -m "$M/tiny-spm-q8_0.gguf" "$G/stories260K.once.jsonl" >"$OUT/compare.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'n_vocab' "$OUT/compare.out"; then ok "compare rejects a golden of another vocabulary"
    else not_ok "compare rejects a golden of another vocabulary" "exit $rc, want 1"; fi
fi

# Bad arguments: usage and exit 2; missing files: exit 1.
"$BIN" compare >"$OUT/compare.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q usage "$OUT/compare.out"; then ok "compare without arguments: usage, exit 2"
else not_ok "compare without arguments: usage, exit 2" "exit $rc"; fi
"$BIN" compare -m "$M/stories260K.gguf" "$OUT/does-not-exist.jsonl" >"$OUT/compare.out" 2>&1
rc=$?
if [ $rc -eq 1 ]; then ok "compare with a missing golden: exit 1"; else not_ok "compare with a missing golden: exit 1" "exit $rc"; fi

# logits output round-trips through compare (our own JSONL is a valid golden).
if need "$M/stories260K.gguf" "logits output is a valid golden"; then
    "$BIN" logits -m "$M/stories260K.gguf" -p "Once upon a time" -n 16 >"$OUT/logits_self.jsonl" 2>"$OUT/logits.err" &&
        "$BIN" compare --top 0 --max-diff 0.00001 --max-kl 1e-6 -m "$M/stories260K.gguf" "$OUT/logits_self.jsonl" \
            >"$OUT/compare.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ "$(wc -l <"$OUT/logits_self.jsonl")" -eq 23 ]; then ok "logits output is a valid golden (self-compare exact)"
    else not_ok "logits output is a valid golden (self-compare exact)" "exit $rc" "$(tail -n 3 "$OUT/compare.out")"; fi
fi
