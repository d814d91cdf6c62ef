#!/bin/sh
# The 2026 families (issue 28): qwen3moe, qwen35 (hybrid Gated DeltaNet),
# qwen35moe, gpt-oss (MXFP4 experts), gemma4 dense and MoE, against the
# goldens in ../shared/families2026 (llama.cpp 34af94cd, AVX-512 build):
# - `plain` and `chat`: the prompt as one batch, then one token at a time,
#   bit for bit (6 decimals, --max-diff 5e-6);
# - `story-1by1`: the reference evaluated every token alone: --one-by-one,
#   bit for bit. On MoE files a near-tie in the router may pick other experts
#   one token at a time than batched; each golden is the reference's own run
#   of that kind, so an exact engine matches both;
# - `generate --temp 0` reproduces the plain golden's greedy text;
# - the three 2026 vocabs tokenize as llama.cpp does.
# A family not landed yet has its lines in tests/xfail.txt.
. tests/lib.sh
F=$TESTDATA/families2026
G=$F/golden/logits
M=$F/models
W=$(mktemp -d "$OUT/families2026.XXXXXX") || exit 1
MODELS="qwen3moe-mini-q8_0 qwen35-mini-q8_0 qwen35moe-mini-q8_0 gptoss-mini-mxfp4 gemma4-mini-q8_0 gemma4moe-mini-q8_0"

. tests/lib_families.sh

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

for m in $MODELS; do
    cmp_golden "2026 $m.plain batched (bit-exact)" "$M/$m.gguf" "$G/$m.plain.jsonl" --max-diff 0.000005
    cmp_golden "2026 $m.chat batched (bit-exact)" "$M/$m.gguf" "$G/$m.chat.jsonl" --max-diff 0.000005
    cmp_golden "2026 $m.story-1by1 one token at a time (bit-exact)" "$M/$m.gguf" "$G/$m.story-1by1.jsonl" \
        --one-by-one --max-diff 0.000005

    greedy_text "2026 $m: generate --temp 0 reproduces the plain golden's greedy text" "$M/$m.gguf" \
        "$G/$m.plain.jsonl"
done

info_has "2026 info: qwen3moe experts and router" "$M/qwen3moe-mini-q8_0.gguf" \
    '^  experts +8$' '^  experts used +2$' '^  expert FFN length +64$' \
    '^  experts +8, 2 used per token, each 64 wide, SiLU-gated; Q8_0$' \
    '^  router +softmax, top 2, weights renormalised to sum 1$'
info_has "2026 info: qwen35 hybrid layout, recurrent state, rope sections" "$M/qwen35-mini-q8_0.gguf" \
    '^as tokscope runs it \(qwen35\):' 'rope +neox, 16 of 64 dims, base 1e\+07' \
    '^  rope sections +IMROPE sections 3 3 2 0 ' \
    '^  Gated DeltaNet +6 of 8 layers \(attention: 3 7\), conv 4 over 256 channels, 2 key / 4 value heads of 32$' \
    '^  recurrent state +19456 bytes per DeltaNet layer \(conv 3072, delta rule 16384\), 116736 in all$' \
    '^  attention gate ' 'Q/K/V +separate, per-head Q/K RMS norms' '^  FFN +SiLU-gated$'
info_has "2026 info: qwen35moe hybrid layout with experts" "$M/qwen35moe-mini-q8_0.gguf" \
    '^  Gated DeltaNet +6 of 8 layers \(attention: 3 7\)' '^  experts +8, 2 used per token, each 64 wide' \
    '^  shared expert +128 wide, SiLU-gated, behind a sigmoid gate$'

info_has "2026 info: gpt-oss YaRN, sinks, window and experts" "$M/gptoss-mini-mxfp4.gguf" \
    '^  rope +neox, 32 of 32 dims, base 150000, scaling yarn \(factor 32\)$' \
    '^  YaRN +original context 4096, beta 32/1: pairs up to 4 extrapolate, from 9 on interpolate; cos/sin \* 1\.34657359$' \
    '^  attention sinks +one logit per query head \(attn_sinks\) joins every softmax; output projection with a bias$' \
    '^  sliding window +window 8 on 2 of 4 layers \(global: 1 3\)' \
    '^  experts +8, 2 used per token, each 64 wide, clamped SwiGLU \(swiglu_oai\), with biases; MXFP4$' \
    '^  router +top 2 logits, softmax over them, logits biased$'

# gpt-oss without what the reference requires is refused, naming it
MUTATE="python3 tests/tools/gguf_mutate.py"
if need "$M/gptoss-mini-mxfp4.gguf" "gpt-oss refusals"; then
    $MUTATE "$M/gptoss-mini-mxfp4.gguf" "$W/nosinks.gguf" --drop-tensor blk.2.attn_sinks.weight
    refuses "2026 gpt-oss without its attention sinks is refused" "$W/nosinks.gguf" \
        "tensor 'blk.2.attn_sinks.weight' is missing (required by architecture 'gpt-oss')"
    $MUTATE "$M/gptoss-mini-mxfp4.gguf" "$W/nobias.gguf" --drop-tensor blk.1.ffn_up_exps.bias
    refuses "2026 gpt-oss without its expert biases is refused" "$W/nobias.gguf" \
        "layer 1 lacks gpt-oss's router bias or separate gate/up/down experts with biases"
    $MUTATE "$M/gptoss-mini-mxfp4.gguf" "$W/noout.gguf" --drop-tensor output.weight
    refuses "2026 gpt-oss without output.weight is refused" "$W/noout.gguf" \
        "tensor 'output.weight' is missing (required by architecture 'gpt-oss')"
fi

info_has "2026 info: gemma4 head sizes per kind, shared KV layers, per-layer embeddings" "$M/gemma4-mini-q8_0.gguf" \
    '^as tokscope runs it \(gemma4\):' 'head sizes +64 on full layers, 32 on sliding layers \(rope 64 / 32 dims\)' \
    'shared KV +layers 4-7 read the caches of layers 2, 2, 2, 3 \(no K/V of their own\)' \
    'per-layer embeddings +16 per layer \(128 in all\)' 'sliding window +window 8 on 6 of 8 layers \(global: 3 7\)' \
    'softmax scale 1$' 'logit softcapping +30' 'GELU\(tanh\)-gated'
info_has "2026 info: gemma4 MoE KV heads by layer, K = V layer, experts beside the dense FFN" \
    "$M/gemma4moe-mini-q8_0.gguf" 'KV heads by layer +2, 2, 2, 2, 2, 1$' \
    'K = V +on layer 5 \(no attn_v: the K projection is V\)' \
    'MoE layers +6 of 6, the experts beside the dense FFN; router input rms_norm\(x\) / sqrt\(n_embd\)' \
    '^  experts +8, 2 used per token, each 64 wide, GELU\(tanh\)-gated \(gate and up fused\); Q8_0$' \
    '^  router +softmax, top 2, weights renormalised to sum 1$' \
    'head sizes +64 on full layers, 32 on sliding layers'

# what a generated token reads: of the experts (3 tensors of 8 x 4352 bytes a layer), the 2 used
name="2026 bench: qwen3moe's weight_bytes counts the used experts' share only"
if need "$M/qwen3moe-mini-q8_0.gguf" "$name"; then
    "$BIN" bench -m "$M/qwen3moe-mini-q8_0.gguf" -p 0 -n 2 -r 1 -o jsonl >"$W/bench.jsonl" 2>"$W/bench.err"
    if python3 -c "import json,sys
d=json.loads(open(sys.argv[1]).readline())
# the tensors' 568576 bytes (file size less data offset), less 6 of 8 experts in 4 layers x 3 tensors
sys.exit(0 if d['weight_bytes'] == 587520 - 18944 - 4 * 3 * 34816 * 6 // 8 else 1)" "$W/bench.jsonl"; then
        ok "$name"
    else not_ok "$name" "$(head -c 300 "$W/bench.jsonl")" "$(head -c 200 "$W/bench.err")"; fi
fi

# a recurrent state cannot go back to the depth by truncation as a KV cache
# can: bench snapshots it after the fill and restores it before every run
# (the warm-up's token and each repetition start at the depth)
name="2026 bench: a hybrid model at a depth (qwen35moe, -d 40, prompt and generation, 2 repetitions)"
if need "$M/qwen35moe-mini-q8_0.gguf" "$name"; then
    if "$BIN" bench -m "$M/qwen35moe-mini-q8_0.gguf" -p 8 -n 4 -d 0,40 -r 2 -o jsonl >"$W/bench_d.jsonl" 2>"$W/bench_d.err" &&
        python3 -c "import json,sys
L=[json.loads(l) for l in open(sys.argv[1])]
got=sorted((d['n_prompt'],d['n_gen'],d['n_depth']) for d in L if all(t > 0 for t in d['samples_ts']))
sys.exit(0 if got == [(0,4,0),(0,4,40),(8,0,0),(8,0,40)] else 1)" "$W/bench_d.jsonl"; then
        ok "$name"
    else not_ok "$name" "$(head -c 300 "$W/bench_d.jsonl")" "$(head -c 300 "$W/bench_d.err")"; fi
fi

T=$F/golden/tokenizer
for v in qwen35 gpt-4o gemma-4; do
    name="2026 tokenizer ggml-vocab-$v matches llama.cpp"
    need "$T/ggml-vocab-$v.gguf" "$name" || continue
    if "$BIN" tokenize -m "$T/ggml-vocab-$v.gguf" --cases "$T/ggml-vocab-$v.gguf.inp" >"$W/tok.got" 2>"$W/tok.err" &&
        cmp -s "$W/tok.got" "$T/ggml-vocab-$v.gguf.out"; then
        ok "$name"
    else
        not_ok "$name" "$(diff "$W/tok.got" "$T/ggml-vocab-$v.gguf.out" | grep -c '^<') cases differ" \
            "$(head -c 300 "$W/tok.err")"
    fi
done
rm -rf "$W"
