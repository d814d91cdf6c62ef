#!/bin/sh
# Our logits against the reference's (llama.cpp) for every golden file in
# ../shared/golden/logits: `tokscope compare` teacher-forces the golden token
# sequence and exits 1 outside the tolerance.
# - Batched (prompt in one batch, then one token at a time, as the reference
#   ran): every file must match bit for bit, i.e. to the 6 decimals the
#   goldens print (--max-diff 5e-6).
# - One token at a time: the issue's tolerance (F32/F16 models: max |dlogit|
#   <= 0.05 and mean KL <= 1e-4; quantized: mean KL <= 1e-3, top-1 >= 0.98),
#   and, where the reference's own one-at-a-time run differs from its batched
#   golden, bit for bit against that run (tests/golden/reference).
# One file also runs without KV cache and one with an odd batch size. The
# full-vocabulary check against stories260K.bos200.logits.f32 lives in
# tests/unit/test_forward.c.
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
    cmp "compare $base batched (bit-exact)" "$model" "$golden" --max-diff 0.000005
    # One token at a time, the reference itself lands outside the issue's
    # quantized tolerance on two random-weight files: its Q4_K kernels sum in
    # a different float order for one token (gemv) than for a batch (gemm),
    # its goldens evaluated the prompt as a batch, and these models amplify a
    # last-bit difference into a different rounding of a later Q8 activation.
    # tokscope matches that run bit for bit (below), so these bounds are the
    # reference's own numbers (issue 3, docs/exactness.md).
    obo=''
    case $base in
    tiny-spm-mix.chat) obo='--max-kl 2.5e-3' ;;
    tiny-spm-q4_k_m.chat) obo='--max-kl 3.5e-3 --min-top1 0.95' ;;
    tiny-spm-q4_k_m.plain) obo='--max-kl 1.5e-3' ;;
    # the same on the families: Q4_K (qwen2), and Gemma's chat prompt of
    # more than 64 tokens, batched through the tiled attention kernel
    # (Q in F32) where one token at a time rounds Q to F16
    gemma3-mini-q8_0.chat) obo='--max-kl 8.5e-3' ;;
    qwen2-mini-q4_k_m.chat) obo='--max-kl 3.5e-2 --min-top1 0.94' ;;
    qwen2-mini-q4_k_m.plain) obo='--max-kl 1.2e-2 --min-top1 0.95' ;;
    esac
    # shellcheck disable=SC2086 # the option list is meant to split
    cmp "compare $base one-by-one${obo:+ (reference's own gap: $obo)}" "$model" "$golden" --one-by-one $obo
done
[ $found = 1 ] || need "$G/stories260K.once.jsonl" "golden logits files"

# Where the reference's own one-token-at-a-time run differs from its batched
# golden, ours one token at a time must equal that run bit for bit.
R=tests/golden/reference
for golden in "$R"/one-by-one/*.jsonl; do
    base=$(basename "$golden" .jsonl)
    cmp "compare $base one-by-one = reference one-by-one (bit-exact)" "$M/${base%.*}.gguf" "$golden" \
        --one-by-one --max-diff 0.000005
done
# Longer runs, where the reference switches attention kernels: a 151-token
# prompt (tiled, 64 queries and more) and generation past position 256 (a KV
# view of 512 split across threads; NAME.tN was made with N threads).
for golden in "$R"/long/*.jsonl; do
    base=$(basename "$golden" .jsonl)
    threads=$(echo "$base" | sed -n 's/.*\.t\([0-9]*\)$/\1/p')
    cmp "compare $base (bit-exact)" "$M/${base%%.*}.gguf" "$golden" --max-diff 0.000005 ${threads:+-t $threads}
done
# Generation mode: the reference asked for the prompt's last logits only,
# so it skipped the other rows' last-layer FFN and ran that layer's FFN for
# one token (one-token kernels). compare runs such a file the same way.
for golden in "$R"/last/*.jsonl; do
    base=$(basename "$golden" .jsonl)
    cmp "compare $base, last logits only (bit-exact)" "$M/${base%%.*}.gguf" "$golden" --max-diff 0.000005
done

# The variant builds (tests/lib.sh: AVX2, AVX-512 without VNNI; make test
# builds them where the CPU can run them) take other kernel paths and must
# give the same bits.
for v in $(variants); do
    for golden in "$G"/*.jsonl; do
        base=$(basename "$golden" .jsonl)
        BIN="$(pwd)/$v" cmp "compare $base batched, $(build_label "$v") (bit-exact)" "$M/${base%.*}.gguf" "$golden" \
            --max-diff 0.000005
    done
    for golden in "$R"/last/*.jsonl; do
        base=$(basename "$golden" .jsonl)
        BIN="$(pwd)/$v" cmp "compare $base, $(build_label "$v") (bit-exact)" "$M/${base%%.*}.gguf" "$golden" \
            --max-diff 0.000005
    done
done

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

# A golden may start at position 0 or at the last prompt position, nowhere else.
printf '%s\n' '{"prompt_tokens":[1,2,3],"n_vocab":512}' \
    '{"pos":1,"token_in":2,"argmax":5,"lse":1.0,"top":[[5,1.0]]}' >"$OUT/bad_first.jsonl"
"$BIN" compare -m "$M/stories260K.gguf" "$OUT/bad_first.jsonl" >"$OUT/compare.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'bad position line (expected pos 0' "$OUT/compare.out"; then
    ok "compare rejects a golden that starts mid-prompt"
else not_ok "compare rejects a golden that starts mid-prompt" "exit $rc" "$(tail -n 2 "$OUT/compare.out")"; fi

# logits --last writes what generation computes: byte for byte the
# reference's generation-mode file (its lines carry the top 10).
for golden in "$R"/last/*.jsonl; do
    base=$(basename "$golden" .jsonl)
    name="logits --last $base = reference, byte for byte"
    need "$M/${base%%.*}.gguf" "$name" || continue
    ids=$(head -n 1 "$golden" | sed 's/.*"prompt_tokens":\[\([0-9,]*\)\].*/\1/')
    n_gen=$(($(wc -l <"$golden") - 2))
    "$BIN" logits -m "$M/${base%%.*}.gguf" --tokens "$ids" --last -n "$n_gen" -k 10 >"$OUT/logits_last.jsonl" \
        2>"$OUT/logits.err"
    if [ $? -eq 0 ] && head -n -1 "$OUT/logits_last.jsonl" | diff -q - "$golden" >/dev/null; then ok "$name"
    else not_ok "$name" "$(head -n -1 "$OUT/logits_last.jsonl" | diff - "$golden" | head -n 4)"; fi
done

# logits output round-trips through compare (our own JSONL is a valid golden).
if need "$M/stories260K.gguf" "logits output is a valid golden"; then
    "$BIN" logits -m "$M/stories260K.gguf" -p "Once upon a time" -n 16 >"$OUT/logits_self.jsonl" 2>"$OUT/logits.err" &&
        "$BIN" compare --top 0 --max-diff 0.00001 --max-kl 1e-6 -m "$M/stories260K.gguf" "$OUT/logits_self.jsonl" \
            >"$OUT/compare.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ "$(wc -l <"$OUT/logits_self.jsonl")" -eq 23 ]; then ok "logits output is a valid golden (self-compare exact)"
    else not_ok "logits output is a valid golden (self-compare exact)" "exit $rc" "$(tail -n 3 "$OUT/compare.out")"; fi
fi
