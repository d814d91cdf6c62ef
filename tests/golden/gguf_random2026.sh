#!/bin/sh
# tests/tools/gguf_random on the 2026 families (qwen35, qwen35moe, qwen3moe,
# gemma4, gpt-oss), whose copies follow the SRC model's own layout:
#  - each shared mini model written again at its own size has the mini's
#    header: every key (tokenizer included) and every tensor's name, shape,
#    type and offset (the shape rules and the layer kinds reproduce it);
#  - the real-width shapes `make bench` writes (section 7 of tests/bench.sh,
#    read from there) have the tensors the real models' configs give:
#    checked on a few tensors each with --dry-run (nothing is written);
#  - options that do not apply are refused.
. tests/lib.sh
GEN=${BUILD:-build}/tools/gguf_random
M=$TESTDATA/families2026/models
W=$(mktemp -d "$OUT/gguf2026.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

# header FILE: the keys and tensor infos, one a line (general.name left out),
# and the size of the data section
header() {
    python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
o = 0
def rd(f):
    global o
    v = struct.unpack_from('<' + f, d, o)[0]
    o += struct.calcsize('<' + f)
    return v
def rs():
    global o
    n = rd('Q')
    o += n
    return d[o - n:o].decode('utf8', 'replace')
F = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}
def rv(t):
    if t == 8:
        return rs()
    if t == 9:
        et = rd('I')
        return (et, [rv(et) for _ in range(rd('Q'))])
    return rd(F[t])
o = 8
nt, nk = rd('Q'), rd('Q')
for _ in range(nk):
    k = rs()
    t = rd('I')
    v = rv(t)
    if k != 'general.name':
        print('kv', k, t, repr(v))
for _ in range(nt):
    n = rs()
    nd = rd('I')
    print('tensor', n, [rd('Q') for _ in range(nd)], 'type', rd('I'), 'offset', rd('Q'))
print('data bytes', len(d) - (o + 31) // 32 * 32)
EOF
}

for mini in qwen35-mini-q8_0 qwen35moe-mini-q8_0 qwen3moe-mini-q8_0 gemma4-mini-q8_0 gemma4moe-mini-q8_0 \
    gptoss-mini-mxfp4; do
    label="gguf_random: $mini at its own size has its header"
    need "$M/$mini.gguf" "$label" || continue
    opts="--type Q8_0"
    case $mini in gptoss*) opts="--type Q8_0 --expert-type MXFP4" ;; esac
    # shellcheck disable=SC2086 # the option list is meant to split
    if ! "$GEN" --like "$M/$mini.gguf" $opts --threads 1 "$W/$mini.gguf" >"$W/gen.log" 2>&1; then
        not_ok "$label" "$(tail -n 2 "$W/gen.log")"
        continue
    fi
    header "$M/$mini.gguf" >"$W/want.txt"
    header "$W/$mini.gguf" >"$W/got.txt"
    if cmp -s "$W/want.txt" "$W/got.txt"; then
        ok "$label"
    else
        not_ok "$label" "$(diff "$W/want.txt" "$W/got.txt" | head -n 4)"
    fi
    rm -f "$W/$mini.gguf"
done

# shape NAME: section 7's line for NAME, as "LIKE TYPE LAYERS ARGS"
shape() {
    sed -n '/<<.EOF_2026/,/^EOF_2026/p' tests/bench.sh | sed -n "s/^$1 //p"
}
# tensors NAME: the tensor list of NAME's file (name ne0 ne1 ne2 type bytes)
tensors() {
    # shellcheck disable=SC2046,SC2086 # the option list is meant to split
    set -- $(shape "$1")
    like=$1 type=$2 layers=$3
    shift 3
    cut=""
    [ "$layers" = - ] || cut="--layers $layers"
    # shellcheck disable=SC2086
    GGUF_RANDOM_LIST=1 "$GEN" --like "$M/$like.gguf" --type "$type" "$@" $cut --dry-run 2>/dev/null
}
# expect NAME WHAT LINES...: each "TENSOR NE0 NE1 NE2 [TYPE]" is in the list,
# each "-TENSOR" is not
expect() {
    name=$1 what=$2
    shift 2
    label="gguf_random: $name shape, $what"
    if [ -z "$(shape "$name")" ]; then
        not_ok "$label" "no line $name in tests/bench.sh section 7"
        return
    fi
    list=$(tensors "$name")
    for e in "$@"; do
        case $e in
        -*) if echo "$list" | grep -q "^${e#-} "; then
            not_ok "$label" "${e#-} is there"
            return
        fi ;;
        *) # shellcheck disable=SC2086 # the fields are meant to split
            set -- $e
            if ! echo "$list" | awk -v n="$1" -v a="$2" -v b="$3" -v c="$4" -v t="${5:-}" \
                '$1 == n && $2 == a && $3 == b && $4 == c && (t == "" || $5 == t) { f = 1 } END { exit !f }'; then
                not_ok "$label" "want $e" "got $(echo "$list" | grep "^$1 " || echo none)"
                return
            fi ;;
        esac
    done
    ok "$label"
}

need "$M/qwen35-mini-q8_0.gguf" "gguf_random: the 2026 shapes" || exit 0
# Qwen3.5-2B: 24 layers, DeltaNet 16 K/V heads of 128 (qkv 2*2048 + 2048),
# attention every 4th layer: 8 query heads of 256 with their gate, 2 KV
# heads; tied embeddings of 248320 tokens
expect qwen35-2b-q4_k_m "DeltaNet and gated attention layers" \
    "token_embd.weight 2048 248320 1 Q6_K" "-output.weight" "blk.0.attn_qkv.weight 2048 6144 1 Q5_K" \
    "blk.0.attn_gate.weight 2048 2048 1" "blk.0.ssm_conv1d.weight 4 6144 1 F32" "blk.0.ssm_a 16 1 1" \
    "blk.0.ssm_out.weight 2048 2048 1" "-blk.0.attn_q.weight" "blk.3.attn_q.weight 2048 4096 1" \
    "blk.3.attn_k.weight 2048 512 1" "blk.3.attn_output.weight 2048 2048 1" "-blk.3.attn_qkv.weight" \
    "blk.23.ffn_down.weight 6144 2048 1 Q6_K" "-blk.24.attn_norm.weight"
# Qwen3.5-35B-A3B, 4 of 40 layers: 32 V heads (value 4096), 256 experts of
# 512 and a shared one of 512, its own output
expect qwen35moe-35b-a3b-q4_k_m "experts, shared expert, DeltaNet widths" \
    "output.weight 2048 248320 1 Q6_K" "blk.0.attn_qkv.weight 2048 8192 1" "blk.0.ssm_beta.weight 2048 32 1" \
    "blk.0.ffn_gate_exps.weight 2048 512 256 Q4_K" "blk.0.ffn_down_exps.weight 512 2048 256 Q6_K" \
    "blk.0.ffn_gate_inp.weight 2048 256 1 F32" "blk.0.ffn_up_shexp.weight 2048 512 1" \
    "blk.3.attn_q.weight 2048 8192 1" "blk.3.attn_output.weight 4096 2048 1" "-blk.4.attn_norm.weight"
# Qwen3-30B-A3B, 6 of 48 layers: 32 query / 4 KV heads of 128, 128 experts of 768
expect qwen3moe-30b-a3b-q4_k_m "attention and experts" \
    "output.weight 2048 151936 1" "blk.5.attn_q.weight 2048 4096 1" "blk.5.attn_k.weight 2048 512 1" \
    "blk.5.attn_q_norm.weight 128 1 1" "blk.5.ffn_up_exps.weight 2048 768 128" "-blk.6.attn_norm.weight"
# gpt-oss-20b, 4 of 24 layers: 64 query / 8 KV heads of 64, sinks, biases,
# 32 MXFP4 experts of 2880
expect gptoss-20b-mxfp4 "MXFP4 experts, sinks and biases" \
    "output.weight 2880 201088 1 Q8_0" "blk.0.attn_q.weight 2880 4096 1 Q8_0" "blk.0.attn_q.bias 4096 1 1" \
    "blk.0.attn_sinks.weight 64 1 1" "blk.0.attn_output.weight 4096 2880 1" \
    "blk.3.ffn_gate_exps.weight 2880 2880 32 MXFP4" "blk.3.ffn_down_exps.weight 2880 2880 32 MXFP4" \
    "blk.3.ffn_down_exps.bias 2880 32 1 F32" "blk.3.ffn_gate_inp.bias 32 1 1"
# Gemma-4-E2B: 35 layers, sliding heads of 256 and global of 512 (every 5th
# layer), 1 KV head, the last 20 layers without K/V of their own and twice
# as wide an MLP, per-layer inputs of 256
expect gemma4-e2b-q4_k_m "sliding/global heads, shared K/V, per-layer inputs" \
    "per_layer_token_embd.weight 8960 262144 1" "per_layer_model_proj.weight 1536 8960 1" \
    "rope_freqs.weight 256 1 1" "blk.0.attn_q.weight 1536 2048 1" "blk.0.attn_k.weight 1536 256 1" \
    "blk.4.attn_q.weight 1536 4096 1" "blk.4.attn_k.weight 1536 512 1" "blk.14.ffn_up.weight 1536 6144 1" \
    "blk.13.attn_v.weight 1536 256 1" "blk.14.attn_v.weight 1536 512 1" "-blk.15.attn_k.weight" "blk.15.ffn_up.weight 1536 12288 1" \
    "blk.34.inp_gate.weight 1536 256 1" "blk.34.proj.weight 256 1536 1 F32" "-blk.35.attn_norm.weight"
# Gemma-4-26B-A4B, 6 of 30 layers: 8 KV heads of 256 sliding, 2 of 512
# global with K as V, 128 experts of 704 (rows of 704: Q8_0, not Q6_K)
expect gemma4moe-26b-a4b-q4_k_m "experts and K-as-V global layer" \
    "blk.0.attn_k.weight 2816 2048 1" "blk.0.attn_v.weight 2816 2048 1" "blk.5.attn_k.weight 2816 1024 1" \
    "-blk.5.attn_v.weight" "blk.5.attn_q.weight 2816 8192 1" "blk.5.ffn_gate.weight 2816 2112 1" \
    "blk.5.ffn_gate_up_exps.weight 2816 1408 128 Q4_K" "blk.5.ffn_down_exps.weight 704 2816 128 Q8_0" \
    "-blk.6.attn_norm.weight"

label="gguf_random: a 2026 SRC refuses the recipe options, and keys it does not have"
"$GEN" --like "$M/qwen3moe-mini-q8_0.gguf" --type Q8_0 --dim 128 --dry-run >"$W/r1.log" 2>&1
r1=$?
"$GEN" --like "$M/qwen3moe-mini-q8_0.gguf" --type Q8_0 --set ssm.state_size=8 --dry-run >"$W/r2.log" 2>&1
r2=$?
if [ $r1 -ne 0 ] && grep -q 'qwen3moe model' "$W/r1.log" && [ $r2 -ne 0 ] && grep -q 'no numeric key' "$W/r2.log"; then
    ok "$label"
else
    not_ok "$label" "$(cat "$W/r1.log" "$W/r2.log" | head -n 3)"
fi
