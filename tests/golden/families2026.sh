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

golden_py() {
    python3 -c "import json,sys
L=[json.loads(l) for l in open(sys.argv[1])]
$2" "$1"
}

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

    g=$G/$m.plain.jsonl
    name="2026 $m: generate --temp 0 reproduces the plain golden's greedy text"
    need "$M/$m.gguf" "$name" && need "$g" "$name" || continue
    ids=$(golden_py "$g" "print(','.join(map(str, L[0]['prompt_tokens'])))")
    n=$(golden_py "$g" "print(len(L[-1]['generated']))")
    "$BIN" generate -m "$M/$m.gguf" --tokens "$ids" --temp 0 -n "$n" -c 512 >"$W/gen.txt" 2>"$W/gen.err"
    rc=$?
    if [ $rc -eq 0 ] && python3 -c "import json,re,sys
want=json.loads(open(sys.argv[1]).read().splitlines()[-1])['text']
got=open(sys.argv[2],'rb').read().decode('utf-8','replace')
f=lambda s: re.sub('\ufffd+','\ufffd',s)
sys.exit(0 if f(want)==f(got) and len(got)>0 else 1)" "$g" "$W/gen.txt"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(head -c 200 "$W/gen.err")"; fi
done

# info_has NAME MODEL PATTERN...: every pattern is a line of `info`
info_has() {
    name=$1 model=$2
    shift 2
    need "$model" "$name" || return 0
    "$BIN" info "$model" >"$W/info.txt" 2>&1 || { not_ok "$name" "info failed"; return 0; }
    for p in "$@"; do
        grep -qE -- "$p" "$W/info.txt" || { not_ok "$name" "missing: $p"; return 0; }
    done
    ok "$name"
}
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
