#!/bin/sh
# Real-size shapes of the model families against the reference, bit for
# bit: Llama-3.2-1B (with Llama 3 rope factors, tied), Qwen3-0.6B (head 128,
# queries wider than dim), Gemma-3-1B (head 256, window 512; 6 layers so a
# global one is among them), Phi-3-mini (fused tensors, head 96) and
# Qwen2.5-0.5B (biases, rows of 896 that are not whole K-quant blocks), cut
# to a few layers, in Q4_K_M, Q8_0 and (Gemma, Qwen) Q4_0. The models are
# written again by tests/tools/gguf_random from tests/golden/reference/
# families/SHAPES (the shared mini model of each family gives the
# tokenizer); MD5SUMS proves they are the bytes the reference ran on.
# NAME.pN: an N-token prompt as one batch, then 12 greedy tokens; p600 on
# Gemma goes past the 512-token window, in two batches of the prompt, and
# decodes past position 512 (split-KV attention within the window).
# NAME.oboN: N prompt tokens one at a time, then 8 greedy tokens.
# phi3-long is a small LongRoPE Phi-3 (original context 512): phi3-long.c512
# runs with its short factors, .c1024 with its long ones. Native and variant
# NAME-dl: the same shapes as a download is typed (--llama-quantize: llama-
# quantize's per-tensor mix, tensor order and keys).
# builds. See tests/golden/reference/README.md.
. tests/lib.sh
R=tests/golden/reference/families
GEN=${BUILD:-build}/tools/gguf_random
W=$(mktemp -d "$OUT/families-real.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

while read -r name like args; do
    for type in q4_k_m q8_0 q4_0; do
        ls "$R/$name-$type".*.jsonl >/dev/null 2>&1 || continue
        label="real size $name $type"
        need "$TESTDATA/models/$like.gguf" "$label" || continue
        model=$W/$name-$type.gguf
        # shellcheck disable=SC2086 # the option list is meant to split
        if ! "$GEN" --like "$TESTDATA/models/$like.gguf" --type "$(echo $type | tr a-z A-Z)" $args --seed 7 "$model" \
            >"$W/gen.log" 2>&1; then
            not_ok "$label: gguf_random" "$(tail -n 3 "$W/gen.log")"
            continue
        fi
        want=$(grep " $name-$type.gguf\$" "$R/MD5SUMS" | cut -d' ' -f1)
        got=$(md5sum "$model" | cut -d' ' -f1)
        if [ "$got" != "$want" ]; then
            not_ok "$label: model bytes" "gguf_random wrote md5 $got, the reference ran on $want"
            rm -f "$model"
            continue
        fi
        for golden in "$R/$name-$type".*.jsonl; do
            case=$(basename "$golden" .jsonl)
            obo=''
            case $case in *.obo*) obo=--one-by-one ;; esac
            # NAME.cN: made with a context of N (Phi-3's factors depend on it)
            ctx=$(echo "$case" | sed -n 's/.*\.c\([0-9]*\)$/\1/p')
            [ -n "$ctx" ] && obo="$obo -c $ctx"
            for bin in "$BIN" $(variants); do
                b=$(build_label "$bin")
                [ "$b" = native ] && b="native build"
                # shellcheck disable=SC2086
                if "$bin" compare --top 3 -t 2 -m "$model" "$golden" --max-diff 0.000005 $obo >"$W/cmp.out" 2>&1; then
                    ok "real size $case, $b (bit-exact) $(tail -n 1 "$W/cmp.out")"
                else
                    not_ok "real size $case, $b (bit-exact)" "$(tail -n 6 "$W/cmp.out")"
                fi
            done
        done
        rm -f "$model"
    done
done <"$R/SHAPES"
