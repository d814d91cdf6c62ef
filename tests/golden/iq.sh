#!/bin/sh
# The IQ and TQ block types (issue 29) against ../shared/iq (llama.cpp
# 34af94cd, AVX-512 build): a dim-256 llama model quantized by llama-quantize
# (with an importance matrix) to each type, mixed with the types it picks for
# some tensors.
# - `once`: a prompt as one batch, then greedy tokens one at a time, bit for
#   bit (6 decimals, --max-diff 5e-6);
# - `story-1by1`: the reference evaluated every token alone: --one-by-one,
#   bit for bit;
# - `info` names the file's type and runs it.
# A type not landed yet has its lines in tests/xfail.txt.
. tests/lib.sh
I=$TESTDATA/iq
G=$I/golden/logits
M=$I/models
W=$(mktemp -d "$OUT/iq.XXXXXX") || exit 1
TYPES="iq4_nl iq4_xs iq3_xxs iq3_s iq2_xxs iq2_xs iq2_s iq1_s iq1_m tq1_0 tq2_0"

# cmp_golden NAME MODEL GOLDEN [compare options]
cmp_golden() {
    name=$1 model=$2 golden=$3
    shift 3
    need "$model" "$name" && need "$golden" "$name" || return 0
    if "$BIN" compare --top 5 -m "$model" "$golden" "$@" >"$W/compare.out" 2>&1; then
        ok "$name $(tail -n 1 "$W/compare.out")"
    else
        not_ok "$name" "$(tail -n 9 "$W/compare.out")"
    fi
}

for t in $TYPES; do
    m=iq-mini-$t
    cmp_golden "iq $t: once batched then greedy (bit-exact)" "$M/$m.gguf" "$G/$m.once.jsonl" --max-diff 0.000005
    cmp_golden "iq $t: story-1by1 one token at a time (bit-exact)" "$M/$m.gguf" "$G/$m.story-1by1.jsonl" \
        --one-by-one --max-diff 0.000005
done

# The variant builds (tests/lib.sh: AVX2, AVX-512 without VNNI; make test
# builds them where the CPU can run them) have vec_dot kernels and 4-token
# tiles of their own: the same bits. (These prompts are 5 tokens, under the
# IQ GEMMs' thresholds: unit/test_gemm_iq_avx2 and _skx hold those GEMMs to
# vec_dot's bits.)
for v in $(variants); do
    for t in $TYPES; do
        m=iq-mini-$t
        BIN="$(pwd)/$v" cmp_golden "iq $t: once batched then greedy, $(build_label "$v") (bit-exact)" "$M/$m.gguf" \
            "$G/$m.once.jsonl" --max-diff 0.000005
    done
done
rm -rf "$W"
