/* Writes a GGUF v3 model with random weights, so the engine can be
 * benchmarked and exercised on realistically sized models (TinyLlama-1.1B
 * shapes and up) without downloading any:
 *
 *   gguf_random --like SRC.gguf --type TYPE [--dim 2048] [--layers 22] [--heads 32]
 *               [--kv-heads 4] [--ffn 5632] [--ctx N] [--rope-base F] [--eps F]
 *               [--arch llama|qwen2|qwen3|gemma3|phi3] [--head-dim N] [--tied|--untied]
 *               [--qkv-bias|--no-qkv-bias] [--swa N] [--rope-base-swa F]
 *               [--rope-freqs FACTOR] [--rope-low F] [--rope-high F] [--rope-orig-ctx N]
 *               [--longrope ORIG] [--llama-quantize] [--seed 1] [--threads N] OUT.gguf
 *   gguf_random --like MINI-2026.gguf --type TYPE [--set KEY=V[,V...]]... [--layers N]
 *               [--vocab N] [--untied] [--expert-type MXFP4|TYPE] [--dry-run] [--seed 1]
 *               [--threads N] OUT.gguf
 *
 * The tensors and keys of each architecture are those llama.cpp's converter
 * writes: qwen2 Q/K/V biases; qwen3 and gemma3 per-head Q/K norms and a
 * key_length (--head-dim, queries may be wider than --dim); gemma3 post-
 * attention and post-FFN norms and a sliding window (--swa, default 512;
 * local rope base --rope-base-swa, default 10000); phi3 a fused attn_qkv and
 * ffn_up holding gate and up (with --longrope ORIG the long/short factors,
 * attention factor and original context of a LongRoPE file; --swa N writes
 * the sliding_window key its converter writes, which llama.cpp ignores);
 * llama with --rope-freqs F Llama 3.1's rope_freqs.weight (factor F, low
 * --rope-low 1, high --rope-high 4, original context --rope-orig-ctx 8192).
 * --qkv-bias adds Q/K/V biases (attn_qkv.bias for phi3) to any architecture,
 * --no-qkv-bias drops qwen2's. qwen2, qwen3 and gemma3 tie the output to the
 * embeddings unless --untied; llama and phi3 only with --tied.
 *
 * Defaults by --arch (the real families'): rope base 10000 (llama; 500000
 * with --rope-freqs), 1e6 (qwen2, qwen3, gemma3), 10000 (phi3); RMS epsilon
 * 1e-5 (llama), 1e-6 (the others; real Phi-3 says 1e-5: --eps 1e-5); context
 * 2048 (llama; 131072 with --rope-freqs), 32768 (qwen2, gemma3), 40960
 * (qwen3), 4096 (phi3). llama.cpp needs heads x head size = dim for qwen2 and
 * phi3, and so does this tool.
 *
 * TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K MXFP4, or
 * Q4_K_M (attn_v, ffn_down and output Q6_K in every layer, attn_qkv Q5_K,
 * every other 2-D weight Q4_K: simpler than llama-quantize's mix, kept so that
 * the files the reference ran on keep their bytes), one type for every 2-D
 * weight otherwise. A row length that is
 * not a multiple of the block falls back as in llama-quantize: Q4_K to Q5_0,
 * Q5_K to Q5_1, Q6_K to Q8_0, Q2_K and Q3_K to Q4_0, and to F16 when even
 * that does not fit. Norm weights, biases and rope factors are always F32.
 *
 * --llama-quantize writes the file as a download made by convert_hf_to_gguf.py
 * and llama-quantize is. TYPE is then a llama-quantize type: F32 F16 BF16
 * Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S
 * Q5_K_M Q6_K, and each tensor gets the type llama-quantize's
 * llama_tensor_get_type (src/llama-quant.cpp) picks for it from an F16 file:
 * e.g. in Q4_K_M attn_v (or phi3's attn_qkv) and ffn_down Q6_K only in the
 * layers its use_more_bits() picks; the output, or the tied embeddings, Q6_K
 * in every quantized type but Q8_0, and Q8_0 when the row is not whole blocks
 * of the type; then the fallback above. Q8_0 and F16 come out as the
 * converter writes them directly. The tensors are in llama-quantize's order
 * (by layer, then by name) and the keys are the converter's for the family:
 * vocab_size only for llama, no rope.dimension_count for qwen2, qwen3 and
 * gemma3, key/value_length for qwen3, gemma3 and (but phi3) wherever
 * --head-dim is given, phi3's original context and sliding window (default
 * 2047, Phi-3-mini-4k's), and general.quantization_version. The weights are
 * the same values as without it for the same --seed.
 *
 * The tokenizer and all other metadata are copied from SRC (every key except
 * general.architecture, general.name, general.file_type, general.alignment,
 * those of SRC's and the output's architecture, and with --llama-quantize
 * general.quantization_version; each with its exact GGUF type); the
 * hyperparameters are written from the options. The file is streamed tensor
 * by tensor, so memory use stays small whatever the model size. Values
 * depend only on --seed and the shapes, never on --threads. A partial file
 * is removed on failure.
 *
 * The 2026 families (SRC of architecture qwen35, qwen35moe, qwen3moe, gemma4
 * or gpt-oss) have no recipe here: the output copies SRC's own layout (its
 * keys, tensor names and order, and for each output layer the tensors of
 * the first SRC layer of the same kind: DeltaNet or attention for qwen35,
 * sliding or global and own or shared K/V for gemma4), with
 *   --set KEY=V[,V...]  the key ARCH.KEY of SRC (which must have it) set to
 *                       these values, in its type; a list makes a scalar a
 *                       per-layer array; V*N repeats V; a list ending in
 *                       ",..." repeats to block_count (a layer pattern);
 *   --layers N          block_count N, every per-layer array cut to its
 *                       first N values (so --set the whole model, then cut);
 *   --vocab N           the token list padded to N with unused tokens (the
 *                       real vocabulary's embedding and output sizes);
 *   --untied            an output.weight when SRC ties it to the embeddings;
 *   --expert-type T     the experts (*_exps.weight) in T: MXFP4 (this
 *                       tool's quantizer, the reference's rule) or a type of
 *                       --type without a mix; general.file_type 38
 *                       (MOSTLY_MXFP4_MOE) with MXFP4;
 *   --dry-run           no file: one line "tensors N bytes B active A" on
 *                       stdout (A: what a generated token reads: every
 *                       weight but the embeddings' other rows, the experts
 *                       expert_used_count of expert_count; the tied
 *                       embedding whole, as the output), and with
 *                       GGUF_RANDOM_LIST set one line per tensor.
 * Every tensor's shape is a rule over the keys (scaled_dims: the shapes the
 * reference's src/models/{qwen35,qwen35moe,qwen3moe,gemma4,openai-moe}.cpp
 * create), checked against each SRC tensor first: a tensor the rules do not
 * know, or do not size as SRC has it, is refused. TYPE's mix as above
 * (Q4_K_M: Q6_K for attn_v, every ffn_down including the experts' and the
 * shared one's, and the output or tied embeddings; Q5_K for DeltaNet's
 * fused attn_qkv; Q4_K otherwise, with the fallbacks above for rows of 704
 * or 2112); tensors that are F32 in SRC (norms, routers, conv, gemma4's
 * per-layer proj) stay F32.
 *
 * The 2026 families' real shapes, as make bench (tests/bench.sh section 7)
 * writes them from the mini models in ../shared/families2026/models. The GGUF
 * keys are the converter's (conversion/{qwen,gemma,gpt_oss}.py at 34af94cd:
 * ssm.state_size = linear_key_head_dim, ssm.group_count =
 * linear_num_key_heads, ssm.time_step_rank = linear_num_value_heads,
 * ssm.inner_size = linear_value_head_dim x linear_num_value_heads,
 * rope.dimension_count = head_dim x partial_rotary_factor for qwen35;
 * gemma4's key_length the global head, key_length_swa the sliding one,
 * feed_forward_length doubled on the shared-K/V layers with
 * use_double_wide_mlp, head_count_kv an array when global layers have
 * their own count); the layer counts are the reference's model-type
 * tables (src/models/FAMILY.cpp load_arch_hparams: qwen35 24 layers and not
 * 1024 wide = 2B, qwen35moe 40 = 35B-A3B, qwen3moe 48 = 30B-A3B, gpt-oss 24
 * = 20B, gemma4 35 = E2B, 30 = 26B-A4B). The widths are the models'
 * config.json values as I know them (the configs themselves are not in
 * the reference tree); each total was checked against the published
 * parameter count (in brackets), and the doubtful ones are marked (?):
 *   Qwen3.5-2B       2048 wide, 24 layers (every 4th attention), attention
 *                    8 heads (?) / 2 KV of 256 (rope 64 of them), DeltaNet
 *                    16 K heads and 16 V heads (?) of 128, conv 4, FFN
 *                    6144, vocab 248320, tied (?) [1.9B without vision]
 *   Qwen3.5-35B-A3B  2048 wide, 40 layers, attention 16 / 2 KV of 256,
 *                    DeltaNet 16 K / 32 V heads of 128, 256 experts of 512,
 *                    8 used, shared expert 512, vocab 248320, untied
 *                    [34.6B, 3.0B active]
 *   Qwen3-30B-A3B    2048 wide, 48 layers, 32 / 4 KV heads of 128, 128
 *                    experts of 768, 8 used, vocab 151936, untied [30.5B]
 *   gpt-oss-20b      2880 wide, 24 layers (sliding 128 and full
 *                    alternately), 64 / 8 KV heads of 64, 32 experts of
 *                    2880, 4 used, vocab 201088, untied [20.9B, 3.6B active]
 *   Gemma-4-E2B      1536 wide, 35 layers, 8 heads / 1 KV head, sliding
 *                    heads 256, global 512, sliding window 512, 4 sliding
 *                    to 1 global (?), the last 20 layers share K/V (?), FFN
 *                    6144 (12288 on those), per-layer inputs 256, vocab
 *                    262144, tied [1.9B + 2.3B per-layer embeddings]
 *   Gemma-4-26B-A4B  2816 wide, 30 layers, 16 heads, 8 KV heads of 256
 *                    sliding and 2 of 512 global with K as V, window 1024
 *                    (?), 5 sliding to 1 global, dense FFN 2112, 128
 *                    experts of 704, 8 used, vocab 262144, tied [25.2B]
 * (the mini models' other keys stay: rope bases, epsilons, softcapping,
 * gpt-oss's YaRN; the tokenizer is the mini's, padded with --vocab).
 *
 * Real models' shapes (M=../shared/models; --layers 4, or 6 for Gemma so
 * that a global layer is among them, cuts them for tests; add
 * --llama-quantize, with --head-dim 64 for Llama-3.2 and --eps 1e-5 for
 * Phi-3, for a download's exact types and keys):
 *   Llama-3.2-1B  --like $M/llama3-mini-q8_0.gguf --arch llama --dim 2048 --layers 16 --heads 32
 *                 --kv-heads 8 --ffn 8192 --rope-freqs 32 --tied --ctx 131072
 *   Qwen3-0.6B    --like $M/qwen3-mini-q8_0.gguf --arch qwen3 --dim 1024 --layers 28 --heads 16
 *                 --kv-heads 8 --head-dim 128 --ffn 3072 --ctx 40960
 *   Gemma-3-1B    --like $M/gemma3-mini-q8_0.gguf --arch gemma3 --dim 1152 --layers 26 --heads 4
 *                 --kv-heads 1 --head-dim 256 --ffn 6912 --swa 512 --ctx 32768
 *   Phi-3-mini    --like $M/phi3-mini-q8_0.gguf --arch phi3 --dim 3072 --layers 32 --heads 32
 *                 --kv-heads 32 --ffn 8192 --ctx 4096
 *   Qwen2.5-0.5B  --like $M/qwen2-mini-q4_k_m.gguf --arch qwen2 --dim 896 --layers 24 --heads 14
 *                 --kv-heads 2 --ffn 4864 --ctx 32768
 * (the vocabularies are the mini models': 128256, 151669, 32000, 32064 and
 * 50257 tokens.)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/threadpool.h"

#define ALIGN GGUF_DEFAULT_ALIGNMENT

/* ---- failure and output ------------------------------------------------- */

static const char *out_path;
static FILE *out;
static uint64_t out_pos; /* bytes written so far, for alignment padding */
static volatile sig_atomic_t out_open;
static volatile sig_atomic_t out_is_file; /* only a regular file is removed, never /dev/... */

/* Removes the partial output so a failed or interrupted run never leaves a
 * truncated model that a later benchmark would pick up. */
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gguf_random: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (out_open) {
        out_open = 0;
        fclose(out);
        if (out_is_file)
            unlink(out_path);
    }
    exit(1);
}

static void on_signal(int sig)
{
    if (out_open && out_is_file)
        unlink(out_path); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void wr(const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, out) != n)
        die("cannot write %s: %s", out_path, strerror(errno));
    out_pos += n;
}
static void wr_u32(uint32_t v)
{
    wr(&v, 4);
}
static void wr_u64(uint64_t v)
{
    wr(&v, 8);
}
static void wr_str(const char *s, uint64_t n)
{
    wr_u64(n);
    wr(s, n);
}
static void wr_pad(void)
{
    static const uint8_t zero[ALIGN];
    wr(zero, (size_t)((ALIGN - out_pos % ALIGN) % ALIGN));
}

static void kv_key(const char *k, enum gguf_vtype t)
{
    wr_str(k, strlen(k));
    wr_u32(t);
}
static void kv_u32(const char *k, uint32_t v)
{
    kv_key(k, GGUF_VTYPE_UINT32);
    wr_u32(v);
}
static void kv_f32(const char *k, float v)
{
    kv_key(k, GGUF_VTYPE_FLOAT32);
    wr(&v, 4);
}
static void kv_str(const char *k, const char *v)
{
    kv_key(k, GGUF_VTYPE_STRING);
    wr_str(v, strlen(v));
}

/* One number of GGUF type t: signed integers from s, unsigned ones and bool
 * from uv, floats from d. Narrowing is exact because the value was read from
 * a field of the same type. */
static void wr_num(enum gguf_vtype t, int64_t s, uint64_t uv, double d)
{
    switch (t) {
    case GGUF_VTYPE_UINT8:
    case GGUF_VTYPE_BOOL: {
        uint8_t v = (uint8_t)uv;
        wr(&v, 1);
        break;
    }
    case GGUF_VTYPE_INT8: {
        int8_t v = (int8_t)s;
        wr(&v, 1);
        break;
    }
    case GGUF_VTYPE_UINT16: {
        uint16_t v = (uint16_t)uv;
        wr(&v, 2);
        break;
    }
    case GGUF_VTYPE_INT16: {
        int16_t v = (int16_t)s;
        wr(&v, 2);
        break;
    }
    case GGUF_VTYPE_UINT32:
        wr_u32((uint32_t)uv);
        break;
    case GGUF_VTYPE_INT32: {
        int32_t v = (int32_t)s;
        wr(&v, 4);
        break;
    }
    case GGUF_VTYPE_UINT64:
        wr_u64(uv);
        break;
    case GGUF_VTYPE_INT64:
        wr(&s, 8);
        break;
    case GGUF_VTYPE_FLOAT32: {
        float v = (float)d;
        wr(&v, 4);
        break;
    }
    case GGUF_VTYPE_FLOAT64:
        wr(&d, 8);
        break;
    default:
        die("internal: wr_num on type %s", gguf_vtype_name(t));
    }
}

/* ---- metadata copied from SRC ------------------------------------------- */

static bool key_is(gguf_str k, const char *s)
{
    return k.len == strlen(s) && memcmp(k.ptr, s, k.len) == 0;
}

static char src_arch[64] = "llama", out_arch[64] = "llama";

static bool has_prefix(gguf_str k, const char *arch)
{
    const size_t n = strlen(arch);
    return k.len > n && memcmp(k.ptr, arch, n) == 0 && k.ptr[n] == '.';
}

static bool exact; /* --llama-quantize */

/* Keys we write ourselves (or that would contradict what we write). */
static bool skip_key(gguf_str k)
{
    return key_is(k, "general.architecture") || key_is(k, "general.name") || key_is(k, "general.file_type") ||
           key_is(k, "general.alignment") || has_prefix(k, "llama") || has_prefix(k, src_arch) ||
           has_prefix(k, out_arch) || (exact && key_is(k, "general.quantization_version"));
}

static bool is_signed(enum gguf_vtype t)
{
    return t == GGUF_VTYPE_INT8 || t == GGUF_VTYPE_INT16 || t == GGUF_VTYPE_INT32 || t == GGUF_VTYPE_INT64;
}

static void copy_kv(const gguf_ctx *g, int64_t i)
{
    gguf_str k = gguf_kv_key(g, i);
    enum gguf_vtype t = gguf_kv_type(g, i);
    wr_str(k.ptr, k.len);
    wr_u32(t);
    if (t == GGUF_VTYPE_STRING) {
        gguf_str s;
        gguf_kv_as_str(g, i, &s);
        wr_str(s.ptr, s.len);
    } else if (t == GGUF_VTYPE_FLOAT32 || t == GGUF_VTYPE_FLOAT64) {
        double d = 0;
        gguf_kv_as_f64(g, i, &d);
        wr_num(t, 0, 0, d);
    } else if (t != GGUF_VTYPE_ARRAY) {
        int64_t iv = 0;
        uint64_t uv = 0;
        bool neg = false;
        gguf_kv_as_int(g, i, &iv, &uv, &neg);
        wr_num(t, neg ? iv : (int64_t)uv, uv, 0);
    } else {
        enum gguf_vtype et = gguf_arr_type(g, i);
        uint64_t n = gguf_arr_len(g, i);
        wr_u32(et);
        wr_u64(n);
        for (uint64_t j = 0; j < n; j++) {
            if (et == GGUF_VTYPE_STRING) {
                gguf_str s = gguf_arr_str(g, i, j);
                wr_str(s.ptr, s.len);
            } else if (et == GGUF_VTYPE_FLOAT32 || et == GGUF_VTYPE_FLOAT64) {
                wr_num(et, 0, 0, gguf_arr_f64(g, i, j));
            } else if (is_signed(et)) {
                wr_num(et, gguf_arr_i64(g, i, j), 0, 0);
            } else {
                wr_num(et, 0, gguf_arr_u64(g, i, j), 0);
            }
        }
    }
}

/* ---- types -------------------------------------------------------------- */

/* A --type: the type of token_embd and most 2-D weights, the type of
 * attn_v, ffn_down and output (Q6_K for Q4_K_M, else the same), and the
 * matching general.file_type (llama.cpp's LLAMA_FTYPE numbers). */
struct qtype {
    const char *name;
    enum tensor_type base, big; /* big: attn_v, ffn_down, output */
    uint32_t ftype;
};

static const struct qtype qtypes[] = {
    {"F32", TENSOR_TYPE_F32, TENSOR_TYPE_F32, 0},
    {"F16", TENSOR_TYPE_F16, TENSOR_TYPE_F16, 1},
    {"BF16", TENSOR_TYPE_BF16, TENSOR_TYPE_BF16, 32},
    {"Q4_0", TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_0, 2},
    {"Q4_1", TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q4_1, 3},
    {"Q5_0", TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_0, 8},
    {"Q5_1", TENSOR_TYPE_Q5_1, TENSOR_TYPE_Q5_1, 9},
    {"Q8_0", TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q8_0, 7},
    {"Q2_K", TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q2_K, 10},
    {"Q3_K", TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q3_K, 11},
    {"Q4_K", TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q4_K, 14},
    {"Q5_K", TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q5_K, 16},
    {"Q6_K", TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q6_K, 18},
    {"TQ1_0", TENSOR_TYPE_TQ1_0, TENSOR_TYPE_TQ1_0, 36},
    {"TQ2_0", TENSOR_TYPE_TQ2_0, TENSOR_TYPE_TQ2_0, 37},
    /* every weight MXFP4, as `llama-quantize --tensor-type attn=mxfp4
     * --tensor-type ffn=mxfp4` can write a dense model (general.file_type
     * MOSTLY_MXFP4_MOE) */
    {"MXFP4", TENSOR_TYPE_MXFP4, TENSOR_TYPE_MXFP4, 38},
    /* Simplified Q4_K_M: llama.cpp gives only some layers' attn_v/ffn_down
     * Q6_K; all of them is close enough in size and speed. */
    {"Q4_K_M", TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q6_K, 15},
};
#define N_QTYPES (sizeof qtypes / sizeof qtypes[0])

/* --llama-quantize: llama-quantize's types (its LLAMA_FTYPE numbers), each
 * with its default block type (llama_ftype_get_default_type); the mix is
 * lq_type's. */
enum ftype {
    FT_F32 = 0,
    FT_F16 = 1,
    FT_Q4_0 = 2,
    FT_Q4_1 = 3,
    FT_Q8_0 = 7,
    FT_Q5_0 = 8,
    FT_Q5_1 = 9,
    FT_Q2_K = 10,
    FT_Q3_K_S = 11,
    FT_Q3_K_M = 12,
    FT_Q3_K_L = 13,
    FT_Q4_K_S = 14,
    FT_Q4_K_M = 15,
    FT_Q5_K_S = 16,
    FT_Q5_K_M = 17,
    FT_Q6_K = 18,
    FT_BF16 = 32,
};

static const struct qtype lqtypes[] = {
    {"F32", TENSOR_TYPE_F32, TENSOR_TYPE_F32, FT_F32},
    {"F16", TENSOR_TYPE_F16, TENSOR_TYPE_F16, FT_F16},
    {"BF16", TENSOR_TYPE_BF16, TENSOR_TYPE_BF16, FT_BF16},
    {"Q4_0", TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_0, FT_Q4_0},
    {"Q4_1", TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q4_1, FT_Q4_1},
    {"Q5_0", TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_0, FT_Q5_0},
    {"Q5_1", TENSOR_TYPE_Q5_1, TENSOR_TYPE_Q5_1, FT_Q5_1},
    {"Q8_0", TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q8_0, FT_Q8_0},
    {"Q2_K", TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q2_K, FT_Q2_K},
    {"Q3_K_S", TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q3_K, FT_Q3_K_S},
    {"Q3_K_M", TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q3_K, FT_Q3_K_M},
    {"Q3_K_L", TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q3_K, FT_Q3_K_L},
    {"Q4_K_S", TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q4_K, FT_Q4_K_S},
    {"Q4_K_M", TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q4_K, FT_Q4_K_M},
    {"Q5_K_S", TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q5_K, FT_Q5_K_S},
    {"Q5_K_M", TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q5_K, FT_Q5_K_M},
    {"Q6_K", TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q6_K, FT_Q6_K},
};
#define N_LQTYPES (sizeof lqtypes / sizeof lqtypes[0])

/* What lq_type needs of the model: llama-quantize reads it from the F16 file
 * it quantizes. */
static struct {
    const struct qtype *qt;
    int64_t n_layer, n_gqa;
    bool tied;     /* no output.weight: token_embd is quantized as the output */
    bool type_70b; /* llama.cpp's LLM_TYPE_70B: attn_v gets more bits */
} lq;

/* llama_tensor_get_type (llama-quant.cpp) for the tensors this tool writes and
 * the types above: the category of the name, the per-ftype rules, then
 * tensor_type_fallback. The attn_v and ffn_down counters of llama-quantize
 * equal the layer, as it visits the tensors layer by layer with one of each
 * per layer. An attn_qkv is "attn_v-like" there and takes attn_v's rule (its
 * own Q5_K rule for Q4_K_M is never reached). */
static enum tensor_type lq_type(const char *name, int64_t ne0, int64_t layer)
{
    const enum tensor_type def = lq.qt->base;
    if (def == TENSOR_TYPE_F32 || def == TENSOR_TYPE_F16 || def == TENSOR_TYPE_BF16)
        return def; /* not a quantized type: no mix, no fallback */
    const uint32_t ft = lq.qt->ftype;
    const int64_t i = layer, n = lq.n_layer;
    const bool more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
    enum tensor_type t = def;
    if (!strcmp(name, "output.weight") || (lq.tied && !strcmp(name, "token_embd.weight"))) {
        if (ne0 % tensor_type_block_size(def) != 0)
            t = TENSOR_TYPE_Q8_0;
        else if (def != TENSOR_TYPE_Q8_0)
            t = TENSOR_TYPE_Q6_K;
    } else if (!strcmp(name, "token_embd.weight")) {
        /* the default type */
    } else if (strstr(name, "attn_qkv.weight") || strstr(name, "attn_v.weight")) {
        if (ft == FT_Q2_K)
            t = lq.n_gqa >= 4 ? TENSOR_TYPE_Q4_K : TENSOR_TYPE_Q3_K;
        else if (ft == FT_Q3_K_M)
            t = i < 2 ? TENSOR_TYPE_Q5_K : TENSOR_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L)
            t = TENSOR_TYPE_Q5_K;
        else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && more_bits)
            t = TENSOR_TYPE_Q6_K;
        else if (ft == FT_Q4_K_S && i < 4)
            t = TENSOR_TYPE_Q5_K;
        if (lq.type_70b && (t == TENSOR_TYPE_Q3_K || t == TENSOR_TYPE_Q4_K))
            t = TENSOR_TYPE_Q5_K;
    } else if (strstr(name, "ffn_down")) {
        if (ft == FT_Q2_K)
            t = TENSOR_TYPE_Q3_K;
        else if (ft == FT_Q3_K_M)
            t = i < n / 16 ? TENSOR_TYPE_Q5_K : TENSOR_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L)
            t = TENSOR_TYPE_Q5_K;
        else if (ft == FT_Q4_K_M) {
            if (more_bits)
                t = TENSOR_TYPE_Q6_K;
        } else if (ft == FT_Q5_K_M && more_bits)
            t = TENSOR_TYPE_Q6_K;
        else if (ft == FT_Q4_K_S && i < n / 8)
            t = TENSOR_TYPE_Q5_K;
    } else if (strstr(name, "attn_output.weight")) {
        if (ft == FT_Q2_K)
            t = TENSOR_TYPE_Q3_K;
        else if (ft == FT_Q3_K_M)
            t = TENSOR_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L)
            t = TENSOR_TYPE_Q5_K;
    }
    return t; /* add_tensor applies tensor_type_fallback */
}

/* ---- tensors ------------------------------------------------------------ */

enum kind { K_NORM, K_WEIGHT, K_EMBD, K_BIAS, K_ROPE };

struct tspec {
    char name[64];
    uint32_t n_dims;
    int64_t ne0, ne1, ne2; /* ne2: the experts of a 3-D tensor, else 1 */
    uint32_t type;         /* enum tensor_type, or TYPE_MXFP4 */
    enum kind kind;
    size_t row_bytes;
    uint64_t offset; /* in the data section */
    uint64_t nbytes;
    size_t seed_index; /* the random values' key: its place in the default order */
    int64_t layer;     /* -1 outside the blocks */
};

static struct tspec *tensors;
static size_t n_tensors;

/* MXFP4 (gpt-oss's experts): ggml type 39, blocks of 32 values stored as
 * one E8M0 scale byte and 16 bytes of 4-bit E2M1 codes (the low nibbles
 * the block's first 16 values, the high ones the last 16). The engine's
 * tensor layer does not know it on this branch, so the tool has its own
 * quantizer, the reference's rule (ggml-quants.c quantize_row_mxfp4_ref):
 * scale exponent floor(log2(amax)) - 2, each value the nearest code. */
#define TYPE_MXFP4 39u
#define MXFP4_BLOCK 32
#define MXFP4_BYTES 17

static const int8_t mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static void mxfp4_quantize_row(const float *x, uint8_t *y, int64_t n)
{
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, x += MXFP4_BLOCK, y += MXFP4_BYTES) {
        float amax = 0.0f;
        for (int j = 0; j < MXFP4_BLOCK; j++)
            if (amax < fabsf(x[j]))
                amax = fabsf(x[j]);
        const uint8_t e = amax > 0.0f ? (uint8_t)(floorf(log2f(amax)) - 2 + 127) : 0;
        /* half of 2^(e - 127): the codes are twice the E2M1 values */
        uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
        float d;
        memcpy(&d, &bits, 4);
        y[0] = e;
        for (int j = 0; j < MXFP4_BLOCK / 2; j++) {
            uint8_t q[2];
            for (int h = 0; h < 2; h++) {
                const float v = x[j + h * MXFP4_BLOCK / 2];
                int best = 0;
                float best_err = fabsf(mxfp4_values[0] * d - v);
                for (int i = 1; i < 16; i++) {
                    const float err = fabsf(mxfp4_values[i] * d - v);
                    if (err < best_err) {
                        best = i;
                        best_err = err;
                    }
                }
                q[h] = (uint8_t)best;
            }
            y[1 + j] = (uint8_t)(q[0] | q[1] << 4);
        }
    }
}

static size_t row_size_any(uint32_t type, int64_t n)
{
    if (type == TYPE_MXFP4)
        return n % MXFP4_BLOCK ? 0 : (size_t)(n / MXFP4_BLOCK) * MXFP4_BYTES;
    return tensor_row_size(type, n);
}

static const char *type_name_any(uint32_t type)
{
    return type == TYPE_MXFP4 ? "MXFP4" : tensor_type_name(type);
}

static void add_tensor(const char *name, int64_t ne0, int64_t ne1, enum tensor_type type, enum kind kind)
{
    struct tspec *t = &tensors[n_tensors];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->seed_index = n_tensors++;
    t->layer = -1;
    sscanf(name, "blk.%" SCNd64 ".", &t->layer);
    t->n_dims = ne1 > 0 ? 2 : 1;
    t->ne0 = ne0;
    t->ne1 = ne1 > 0 ? ne1 : 1;
    t->ne2 = 1;
    t->type = kind == K_NORM || kind == K_BIAS || kind == K_ROPE ? TENSOR_TYPE_F32
              : exact                                            ? lq_type(name, ne0, t->layer)
                                                                 : type;
    if (row_size_any(t->type, ne0) == 0 && t->type != TYPE_MXFP4) {
        /* llama-quantize's tensor_type_fallback for rows that are not whole
         * blocks: to a 32-block type, and to F16 if even that does not fit */
        if (t->type == TENSOR_TYPE_Q4_K)
            t->type = TENSOR_TYPE_Q5_0;
        else if (t->type == TENSOR_TYPE_Q5_K)
            t->type = TENSOR_TYPE_Q5_1;
        else if (t->type == TENSOR_TYPE_Q6_K)
            t->type = TENSOR_TYPE_Q8_0;
        else if (t->type == TENSOR_TYPE_Q2_K || t->type == TENSOR_TYPE_Q3_K)
            t->type = TENSOR_TYPE_Q4_0;
        if (tensor_row_size(t->type, ne0) == 0)
            t->type = TENSOR_TYPE_F16;
    }
    t->kind = kind;
    t->row_bytes = row_size_any(t->type, ne0);
    if (t->row_bytes == 0)
        die("tensor %s: row length %lld is not a multiple of the %s block size %lld; pick other shapes", name,
            (long long)ne0, type_name_any(t->type),
            (long long)(t->type == TYPE_MXFP4 ? MXFP4_BLOCK : tensor_type_block_size(t->type)));
    t->nbytes = (uint64_t)t->row_bytes * (uint64_t)t->ne1;
}

/* llama_model_loader's weight_name_comparer: by layer (the tensors outside
 * the blocks first), then by name. */
static int tensor_order(const void *pa, const void *pb)
{
    const struct tspec *a = pa, *b = pb;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* ---- random values ------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Every row gets its own splitmix64 stream keyed by (seed, tensor, row), so
 * rows can be generated in any order on any number of threads and the file
 * is still the same for a given seed. */
struct rowgen {
    uint64_t s;
};

static struct rowgen rowgen_init(uint64_t seed, size_t tensor, int64_t row)
{
    return (struct rowgen){
        mix64(seed ^ mix64(((uint64_t)tensor << 40) ^ (uint64_t)row ^ 0x5851f42d4c957f2dull))};
}

/* Approximately N(0,1): Irwin-Hall sum of the four 16-bit fields of one
 * splitmix64 output. Bounded at +-3.46 sigma, which is fine for weights, and
 * several times faster than Box-Muller (1e9 values for a 1.1B model). */
static inline float rowgen_normal(struct rowgen *r)
{
    uint64_t z = mix64(r->s += 0x9e3779b97f4a7c15ull);
    uint32_t sum = (uint32_t)(z & 0xffff) + (uint32_t)((z >> 16) & 0xffff) + (uint32_t)((z >> 32) & 0xffff) +
                   (uint32_t)(z >> 48);
    return ((float)sum - 131070.0f) * (1.7320508f / 65536.0f);
}

/* Llama 3.1's rope scaling factors (convert_hf_to_gguf.py's LlamaModel),
 * one per rotated pair. The smooth ones between the two wavelengths are
 * computed in double, as in ../shared's llama3-mini (the converter's torch
 * float32 arithmetic may differ from them in the last bit). */
static float *rope_factors;

static void llama3_rope_factors(int64_t n_rot, double base, double factor, double low, double high, double orig)
{
    rope_factors = malloc((size_t)(n_rot / 2) * sizeof(float));
    if (!rope_factors)
        die("out of memory");
    const double low_wavelen = orig / low, high_wavelen = orig / high;
    for (int64_t i = 0; i < n_rot / 2; i++) {
        /* torch computes the frequencies in float32 */
        const float freq = (float)(1.0 / pow(base, (double)(float)(2 * i) / (double)n_rot));
        const double wavelen = 2 * M_PI / freq;
        double f;
        if (wavelen < high_wavelen)
            f = 1;
        else if (wavelen > low_wavelen)
            f = factor;
        else {
            const double smooth = (orig / wavelen - low) / (high - low);
            f = 1 / ((1 - smooth) / factor + smooth);
        }
        rope_factors[i] = (float)f;
    }
}

/* One batch of rows of one tensor, filled by the thread pool. */
struct job {
    const struct tspec *t;
    size_t t_index;
    int64_t row0;
    uint64_t seed;
    uint8_t *dst;    /* rows * row_bytes */
    float **scratch; /* one row of floats per thread */
};

static void fill_row(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)n_chunks;
    const struct job *j = arg;
    const struct tspec *t = j->t;
    float *x = j->scratch[ith];
    struct rowgen r = rowgen_init(j->seed, j->t_index, j->row0 + chunk);
    /* Norm weights near 1 keep RMSNorm close to the identity; weights with
     * sigma 1/sqrt(row length) keep each matmul output O(1), so activations
     * neither vanish nor blow up through many layers. */
    float scale = t->kind == K_NORM ? 0.1f : t->kind == K_EMBD ? 0.5f : t->kind == K_BIAS ? 0.3f
                                                                     : 1.0f / sqrtf((float)t->ne0);
    float bias = t->kind == K_NORM ? 1.0f : 0.0f;
    for (int64_t i = 0; i < t->ne0; i++)
        x[i] = t->kind == K_ROPE ? rope_factors[i + (strstr(t->name, "_long") ? t->ne0 : 0)]
                                 : bias + scale * rowgen_normal(&r);
    if (t->type == TYPE_MXFP4)
        mxfp4_quantize_row(x, j->dst + (size_t)chunk * t->row_bytes, t->ne0);
    else
        tensor_quantize_row(t->type, x, j->dst + (size_t)chunk * t->row_bytes, t->ne0);
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: gguf_random --like SRC.gguf --type TYPE [--dim 2048] [--layers 22] [--heads 32]\n"
               "                   [--kv-heads 4] [--ffn 5632] [--ctx N] [--rope-base F] [--eps F]\n"
               "                   [--arch llama|qwen2|qwen3|gemma3|phi3] [--head-dim N] [--tied|--untied]\n"
               "                   [--qkv-bias|--no-qkv-bias] [--swa N] [--rope-base-swa F]\n"
               "                   [--rope-freqs FACTOR] [--rope-low F] [--rope-high F] [--rope-orig-ctx N]\n"
               "                   [--longrope ORIG] [--llama-quantize] [--seed 1] [--threads N] OUT.gguf\n"
               "       gguf_random --like MINI-2026.gguf --type TYPE [--set KEY=V[,V...]]... [--layers N]\n"
               "                   [--vocab N] [--untied] [--expert-type MXFP4|TYPE] [--dry-run] OUT.gguf\n"
               "                   (qwen35, qwen35moe, qwen3moe, gemma4 and gpt-oss SRC files)\n"
               "TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q4_K_M MXFP4\n"
               "TYPE with --llama-quantize: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L\n"
               "                            Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K\n"
               "(see the comment at the top of tests/tools/gguf_random.c)\n");
}

static double parse_positive(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || !isfinite(v))
        die("%s: '%s' is not a positive number", opt, s);
    return v;
}

static int64_t parse_int(const char *opt, const char *s, int64_t lo, int64_t hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die("%s: '%s' is not an integer in [%lld, %lld]", opt, s, (long long)lo, (long long)hi);
    return v;
}

/* The keys ARCH.SUFFIX, gathered before the header that counts them. */
static struct {
    const char *suffix;
    bool is_f32;
    uint32_t u;
    float f;
} arch_kv[32];
static int n_arch_kv;

static void arch_kv_add(const char *suffix, bool is_f32, uint64_t u, double f)
{
    if (n_arch_kv == (int)(sizeof arch_kv / sizeof arch_kv[0]))
        die("internal: too many keys");
    if (!is_f32 && u > UINT32_MAX)
        die("%s %" PRIu64 " does not fit the key's uint32", suffix, u);
    arch_kv[n_arch_kv].suffix = suffix;
    arch_kv[n_arch_kv].is_f32 = is_f32;
    arch_kv[n_arch_kv].u = (uint32_t)u;
    arch_kv[n_arch_kv].f = (float)f;
    n_arch_kv++;
}
#define ARCH_U32(suffix, v) arch_kv_add(suffix, false, (uint64_t)(v), 0)
#define ARCH_F32(suffix, v) arch_kv_add(suffix, true, 0, (double)(v))

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The data section after the header: the tensors' values in batches of
 * rows, then the file is closed (removed on failure). */
static void write_data(const char *path, int64_t threads, uint64_t seed, int64_t layers, const char *type_label,
                       double t0)
{
    /* Data in batches of about 2M floats: big enough to keep the threads
     * busy, small enough that memory stays at a few tens of MB. */
    int64_t max_ne0 = 1;
    size_t max_row_bytes = 0;
    for (size_t i = 0; i < n_tensors; i++) {
        if (tensors[i].row_bytes > max_row_bytes)
            max_row_bytes = tensors[i].row_bytes;
        if (tensors[i].ne0 > max_ne0)
            max_ne0 = tensors[i].ne0;
    }
    const int64_t batch_rows = (1 << 21) / max_ne0 + 1;
    threadpool *tp = threadpool_create((int)threads);
    uint8_t *batch = malloc((size_t)batch_rows * max_row_bytes);
    float **scratch = calloc((size_t)threads, sizeof *scratch);
    if (!tp || !batch || !scratch)
        die("out of memory");
    for (int64_t k = 0; k < threads; k++)
        if (!(scratch[k] = malloc((size_t)max_ne0 * sizeof(float))))
            die("out of memory");

    const uint64_t data_start = out_pos;
    for (size_t i = 0; i < n_tensors; i++) {
        const struct tspec *t = &tensors[i];
        if (out_pos - data_start != t->offset)
            die("internal: %s at data offset %" PRIu64 ", expected %" PRIu64, t->name, out_pos - data_start,
                t->offset);
        const int64_t n_rows = t->ne1 * t->ne2;
        for (int64_t r = 0; r < n_rows; r += batch_rows) {
            int64_t n = n_rows - r < batch_rows ? n_rows - r : batch_rows;
            struct job j = {t, t->seed_index, r, seed, batch, scratch};
            threadpool_run(tp, n, fill_row, &j);
            wr(batch, (size_t)n * t->row_bytes);
        }
        if (i + 1 < n_tensors)
            wr_pad();
        /* Progress after each matrix outside the blocks and each layer. */
        char what[64] = "";
        if (t->layer < 0 && t->n_dims > 1)
            snprintf(what, sizeof what, "%.*s", (int)strcspn(t->name, "."), t->name);
        else if (t->layer >= 0 && (i + 1 == n_tensors || tensors[i + 1].layer != t->layer))
            snprintf(what, sizeof what, "layer %lld/%lld", (long long)t->layer + 1, (long long)layers);
        if (what[0])
            fprintf(stderr, "gguf_random: %-14s %8.1f MiB %6.1f s\n", what, (double)out_pos / 1048576.0,
                    now() - t0);
    }
    if (fflush(out) != 0 || ferror(out))
        die("cannot write %s: %s", path, strerror(errno));
    out_open = 0;
    if (fclose(out) != 0) { /* the last buffered bytes can still fail (NFS, quota) */
        int e = errno;
        if (out_is_file)
            unlink(path);
        fprintf(stderr, "gguf_random: cannot write %s: %s\n", path, strerror(e));
        exit(1);
    }
    fprintf(stderr, "gguf_random: wrote %s: %" PRIu64 " bytes (%.1f MiB), %zu tensors, %s, %.1f s\n", path,
            out_pos, (double)out_pos / 1048576.0, n_tensors, type_label, now() - t0);

    threadpool_free(tp);
    for (int64_t k = 0; k < threads; k++)
        free(scratch[k]);
    free(scratch);
    free(batch);
    free(tensors);
}

/* ---- the 2026 families: SRC's own layout at other sizes ----------------- */

/* For an SRC of a family this tool has no recipe for (qwen35, qwen35moe,
 * qwen3moe, gemma4, gpt-oss: hybrid DeltaNet layers, experts, per-layer
 * embeddings, layers without K/V...), the output copies SRC's layout: its
 * keys (the hyperparameters changed with --set), its tensor names, and for
 * each output layer the tensors of the first SRC layer of the same kind
 * (DeltaNet or attention; sliding or global; own K/V or shared). Each
 * tensor's shape comes from a rule over the hyperparameters (scaled_dims,
 * the sizes the reference's load_arch_tensors gives it), and the rules are
 * checked against every SRC tensor first, so a layout the rules do not
 * describe is refused, never guessed. */

#define MAX_SETS 64
static struct {
    const char *key, *val;
} sets[MAX_SETS];
static int n_sets;
static int64_t vocab_opt; /* --vocab: pad the token list to this many */
static const char *expert_type_name;
static bool dry_run; /* --dry-run: the sizes only, no file */

/* One key of a key set: copied from SRC (src >= 0, num unused for strings)
 * or with numbers of its own (num: n values; a scalar has n = 1). */
struct okv {
    char key[128];
    int64_t src;
    enum gguf_vtype type, etype; /* etype: the elements' type of an array */
    uint64_t n;
    double *num;
    bool changed;
};

struct kvset {
    struct okv *kv;
    int64_t n_kv;
    char arch[64];
    int64_t n_vocab;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q)
        die("out of memory");
    return q;
}

static bool is_num_type(enum gguf_vtype t)
{
    return t != GGUF_VTYPE_STRING && t != GGUF_VTYPE_ARRAY;
}

static void kvset_load(struct kvset *s, const gguf_ctx *g)
{
    s->n_kv = gguf_n_kv(g);
    s->kv = calloc((size_t)s->n_kv, sizeof *s->kv);
    if (!s->kv)
        die("out of memory");
    for (int64_t i = 0; i < s->n_kv; i++) {
        struct okv *o = &s->kv[i];
        gguf_str k = gguf_kv_key(g, i);
        snprintf(o->key, sizeof o->key, "%.*s", (int)k.len, k.ptr);
        o->src = i;
        o->type = gguf_kv_type(g, i);
        if (o->type == GGUF_VTYPE_ARRAY) {
            o->etype = gguf_arr_type(g, i);
            o->n = gguf_arr_len(g, i);
            if (!is_num_type(o->etype) || strncmp(o->key, "tokenizer.", 10) == 0)
                continue; /* copied as it is */
            o->num = malloc((size_t)(o->n ? o->n : 1) * sizeof(double));
            if (!o->num)
                die("out of memory");
            for (uint64_t j = 0; j < o->n; j++)
                o->num[j] = o->etype == GGUF_VTYPE_FLOAT32 || o->etype == GGUF_VTYPE_FLOAT64
                                ? gguf_arr_f64(g, i, j)
                                : (double)gguf_arr_i64(g, i, j);
        } else if (is_num_type(o->type)) {
            o->n = 1;
            o->num = malloc(sizeof(double));
            if (!o->num)
                die("out of memory");
            if (o->type == GGUF_VTYPE_FLOAT32 || o->type == GGUF_VTYPE_FLOAT64) {
                gguf_kv_as_f64(g, i, o->num);
            } else {
                int64_t iv = 0;
                uint64_t uv = 0;
                bool neg = false;
                gguf_kv_as_int(g, i, &iv, &uv, &neg);
                o->num[0] = neg ? (double)iv : (double)uv;
            }
        }
    }
    gguf_str a;
    if (!gguf_get_str(g, "general.architecture", &a))
        die("SRC has no general.architecture");
    snprintf(s->arch, sizeof s->arch, "%.*s", (int)(a.len < 63 ? a.len : 63), a.ptr);
    int64_t t = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (t < 0 || gguf_kv_type(g, t) != GGUF_VTYPE_ARRAY)
        die("SRC has no tokenizer.ggml.tokens array");
    s->n_vocab = (int64_t)gguf_arr_len(g, t);
}

static struct okv *kvset_find(const struct kvset *s, const char *suffix)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", s->arch, suffix);
    for (int64_t i = 0; i < s->n_kv; i++)
        if (!strcmp(s->kv[i].key, key))
            return &s->kv[i];
    return NULL;
}

/* Hyperparameter ARCH.SUFFIX of layer l (per-layer arrays give element l),
 * def when absent; def < 0: required. */
static double hp(const struct kvset *s, const char *suffix, int64_t l, double def)
{
    const struct okv *o = kvset_find(s, suffix);
    if (!o || !o->num) {
        if (def < 0)
            die("%s.%s is missing (or not a number)", s->arch, suffix);
        return def;
    }
    if (o->type != GGUF_VTYPE_ARRAY)
        return o->num[0];
    const double n_layer = hp(s, "block_count", 0, -1);
    if ((double)o->n != n_layer)
        die("%s.%s has %" PRIu64 " values for %g layers", s->arch, suffix, o->n, n_layer);
    return o->num[l];
}

/* --set SUFFIX=V[,V...]: V*N repeats V N times; 'true'/'false' for bools;
 * a list ending in ",..." is repeated to block_count values (a layer
 * pattern). The key must exist in SRC and keeps its type (one value for a
 * scalar, a list turns a scalar into an array of its type). */
static void kvset_apply(struct kvset *s, const char *suffix, const char *val)
{
    struct okv *o = kvset_find(s, suffix);
    if (!o || !o->num)
        die("--set %s: SRC has no numeric key %s.%s", suffix, s->arch, suffix);
    size_t cap = 16, n = 0;
    double *v = malloc(cap * sizeof *v);
    if (!v)
        die("out of memory");
    char *copy = strdup(val), *save = NULL;
    if (!copy)
        die("out of memory");
    bool cycle = false;
    const size_t len = strlen(copy);
    if (len >= 4 && !strcmp(copy + len - 4, ",...")) {
        cycle = true;
        copy[len - 4] = 0;
    }
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long rep = 1;
        char *star = strchr(tok, '*');
        if (star) {
            *star = 0;
            rep = parse_int("--set", star + 1, 1, 1 << 20);
        }
        double x;
        if (!strcmp(tok, "true") || !strcmp(tok, "false"))
            x = tok[0] == 't';
        else {
            char *end;
            errno = 0;
            x = strtod(tok, &end);
            if (errno || end == tok || *end || !isfinite(x))
                die("--set %s: '%s' is not a number", suffix, tok);
        }
        for (long long r = 0; r < rep; r++) {
            if (n == cap)
                v = xrealloc(v, (cap *= 2) * sizeof *v);
            v[n++] = x;
        }
    }
    free(copy);
    if (n == 0)
        die("--set %s: no value", suffix);
    if (cycle) {
        const size_t period = n, want = (size_t)hp(s, "block_count", 0, -1);
        v = xrealloc(v, (want > n ? want : n) * sizeof *v);
        for (; n < want; n++)
            v[n] = v[n - period];
        n = want;
    }
    if (n > 1 && o->type != GGUF_VTYPE_ARRAY) {
        o->etype = o->type;
        o->type = GGUF_VTYPE_ARRAY;
    }
    free(o->num);
    o->num = v;
    o->n = n;
    o->changed = true;
}

/* --layers N: block_count N, and every per-layer array (as long as the
 * block count before) cut to its first N values */
static void kvset_cut(struct kvset *s, int64_t layers)
{
    struct okv *bc = kvset_find(s, "block_count");
    if (!bc || !bc->num)
        die("SRC has no %s.block_count", s->arch);
    const uint64_t old = (uint64_t)bc->num[0];
    if ((uint64_t)layers > old)
        die("--layers %lld: more than the block_count %" PRIu64 " (--set block_count=N for more)",
            (long long)layers, old);
    for (int64_t i = 0; i < s->n_kv; i++) {
        struct okv *o = &s->kv[i];
        if (o->num && o->type == GGUF_VTYPE_ARRAY && o->n == old && strncmp(o->key, "tokenizer.", 10) != 0) {
            o->n = (uint64_t)layers;
            o->changed = true;
        }
    }
    bc->num[0] = (double)layers;
    bc->changed = true;
}

static bool arch_is(const struct kvset *s, const char *a)
{
    return !strcmp(s->arch, a);
}

/* The kind of layer l: DeltaNet (qwen35: all but every
 * full_attention_interval-th), sliding (gemma4's pattern), without K/V of
 * its own (gemma4's last shared_kv_layers). Layers of one kind have the same
 * tensors. */
static int layer_kind(const struct kvset *s, int64_t l)
{
    int k = 0;
    if (arch_is(s, "qwen35") || arch_is(s, "qwen35moe"))
        k |= (l + 1) % (int64_t)hp(s, "full_attention_interval", 0, 4) != 0;
    if (arch_is(s, "gemma4")) {
        const int64_t n = (int64_t)hp(s, "block_count", 0, -1);
        k |= (hp(s, "attention.sliding_window_pattern", l, 0) != 0) << 1;
        k |= (l >= n - (int64_t)hp(s, "attention.shared_kv_layers", 0, 0)) << 2;
    }
    return k;
}

/* The shape of tensor NAME ("blk.L." stripped: SUFFIX, layer l) under the
 * hyperparameters of s, as the reference's load_arch_tensors creates it
 * (src/models/{qwen35,qwen35moe,qwen3moe,gemma4,openai-moe}.cpp). false:
 * no rule for it. */
static bool scaled_dims(const struct kvset *s, const char *suffix, int64_t l, int64_t ne[3])
{
    const bool q35 = arch_is(s, "qwen35") || arch_is(s, "qwen35moe"), g4 = arch_is(s, "gemma4");
    const int64_t E = (int64_t)hp(s, "embedding_length", 0, -1), V = s->n_vocab;
    const int64_t L = (int64_t)hp(s, "block_count", 0, -1);
    const int64_t li = l < 0 ? 0 : l;
    const int64_t H = (int64_t)hp(s, "attention.head_count", li, -1);
    const int64_t Hkv = (int64_t)hp(s, "attention.head_count_kv", li, (double)H);
    const bool swa = g4 && hp(s, "attention.sliding_window_pattern", li, 0) != 0;
    const int64_t Dk = (int64_t)hp(s, swa ? "attention.key_length_swa" : "attention.key_length", 0, (double)(E / H));
    const int64_t Dv = (int64_t)hp(s, swa ? "attention.value_length_swa" : "attention.value_length", 0, (double)Dk);
    const int64_t F = (int64_t)hp(s, "feed_forward_length", li, 0);
    const int64_t X = (int64_t)hp(s, "expert_count", 0, 0), Fx = (int64_t)hp(s, "expert_feed_forward_length", 0, 0);
    const int64_t Fs = (int64_t)hp(s, "expert_shared_feed_forward_length", 0, 0);
    const int64_t PL = (int64_t)hp(s, "embedding_length_per_layer_input", 0, 0);
    /* gated DeltaNet: K heads (group_count) and V heads (time_step_rank) of
     * state_size each; qkv is both keys, queries and the values */
    const int64_t d_state = (int64_t)hp(s, "ssm.state_size", 0, 0), n_group = (int64_t)hp(s, "ssm.group_count", 0, 0);
    const int64_t dt_rank = (int64_t)hp(s, "ssm.time_step_rank", 0, 0), d_conv = (int64_t)hp(s, "ssm.conv_kernel", 0, 0);
    const int64_t key_dim = d_state * n_group, value_dim = d_state * dt_rank, conv_dim = 2 * key_dim + value_dim;
    ne[0] = ne[1] = ne[2] = 0;
#define IS(x) (!strcmp(suffix, x))
#define SHAPE(a, b, c) (ne[0] = (a), ne[1] = (b), ne[2] = (c), true)
    if (l < 0) {
        if (IS("token_embd.weight") || IS("output.weight"))
            return SHAPE(E, V, 0);
        if (IS("output_norm.weight"))
            return SHAPE(E, 0, 0);
        if (IS("rope_freqs.weight")) /* gemma4's global layers */
            return SHAPE((int64_t)hp(s, "attention.key_length", 0, -1) / 2, 0, 0);
        if (IS("per_layer_token_embd.weight"))
            return SHAPE(PL * L, V, 0);
        if (IS("per_layer_model_proj.weight"))
            return SHAPE(E, PL * L, 0);
        if (IS("per_layer_proj_norm.weight"))
            return SHAPE(PL, 0, 0);
        return false;
    }
    if (IS("attn_norm.weight") || IS("post_attention_norm.weight") || IS("ffn_norm.weight") ||
        IS("post_ffw_norm.weight") || IS("pre_ffw_norm_2.weight") || IS("post_ffw_norm_1.weight") ||
        IS("post_ffw_norm_2.weight") || IS("post_norm.weight") || IS("ffn_gate_inp.scale") ||
        IS("ffn_gate_inp_shexp.weight") || IS("attn_output.bias"))
        return SHAPE(E, 0, 0);
    if (IS("layer_output_scale.weight"))
        return SHAPE(1, 0, 0);
    if (IS("attn_q.weight")) /* qwen35's query projection holds the output gate too */
        return SHAPE(E, Dk * H * (q35 ? 2 : 1), 0);
    if (IS("attn_k.weight"))
        return SHAPE(E, Dk * Hkv, 0);
    if (IS("attn_v.weight"))
        return SHAPE(E, Dv * Hkv, 0);
    if (IS("attn_q.bias"))
        return SHAPE(Dk * H, 0, 0);
    if (IS("attn_k.bias"))
        return SHAPE(Dk * Hkv, 0, 0);
    if (IS("attn_v.bias"))
        return SHAPE(Dv * Hkv, 0, 0);
    if (IS("attn_output.weight"))
        return SHAPE(Dv * H, E, 0);
    if (IS("attn_q_norm.weight") || IS("attn_k_norm.weight"))
        return SHAPE(Dk, 0, 0);
    if (IS("attn_sinks.weight"))
        return SHAPE(H, 0, 0);
    if (IS("attn_qkv.weight"))
        return SHAPE(E, conv_dim, 0);
    if (IS("attn_gate.weight"))
        return SHAPE(E, value_dim, 0);
    if (IS("ssm_conv1d.weight"))
        return SHAPE(d_conv, conv_dim, 0);
    if (IS("ssm_dt.bias") || IS("ssm_a"))
        return SHAPE(dt_rank, 0, 0);
    if (IS("ssm_beta.weight") || IS("ssm_alpha.weight"))
        return SHAPE(E, dt_rank, 0);
    if (IS("ssm_norm.weight"))
        return SHAPE(d_state, 0, 0);
    if (IS("ssm_out.weight"))
        return SHAPE(value_dim, E, 0);
    if (IS("ffn_gate.weight") || IS("ffn_up.weight"))
        return SHAPE(E, F, 0);
    if (IS("ffn_down.weight"))
        return SHAPE(F, E, 0);
    if (IS("ffn_gate_inp.weight"))
        return SHAPE(E, X, 0);
    if (IS("ffn_gate_inp.bias") || IS("ffn_down_exps.scale"))
        return SHAPE(X, 0, 0);
    if (IS("ffn_gate_exps.weight") || IS("ffn_up_exps.weight"))
        return SHAPE(E, Fx, X);
    if (IS("ffn_gate_up_exps.weight"))
        return SHAPE(E, 2 * Fx, X);
    if (IS("ffn_down_exps.weight"))
        return SHAPE(Fx, E, X);
    if (IS("ffn_gate_exps.bias") || IS("ffn_up_exps.bias"))
        return SHAPE(Fx, X, 0);
    if (IS("ffn_down_exps.bias"))
        return SHAPE(E, X, 0);
    if (IS("ffn_gate_shexp.weight") || IS("ffn_up_shexp.weight"))
        return SHAPE(E, Fs, 0);
    if (IS("ffn_down_shexp.weight"))
        return SHAPE(Fs, E, 0);
    if (IS("inp_gate.weight"))
        return SHAPE(E, PL, 0);
    if (IS("proj.weight"))
        return SHAPE(PL, E, 0);
#undef IS
#undef SHAPE
    return false;
}

/* "blk.L.SUFFIX" -> L and SUFFIX; -1 and the whole name outside the blocks */
static int64_t split_name(const char *name, const char **suffix)
{
    long long l;
    int n = 0;
    if (sscanf(name, "blk.%lld.%n", &l, &n) == 1 && n > 0) {
        *suffix = name + n;
        return l;
    }
    *suffix = name;
    return -1;
}

static void add_scaled(const char *name, const int64_t ne[3], uint32_t src_type, const struct qtype *qt,
                       uint32_t expert_type, bool tied)
{
    const char *suffix;
    split_name(name, &suffix);
    const bool f32 = src_type == TENSOR_TYPE_F32;
    /* gemma4's rope_freqs (1 and 1e30 in a real file) near 1 like a norm */
    const bool normish = strstr(suffix, "norm") || strstr(suffix, ".scale") ||
                         !strcmp(suffix, "layer_output_scale.weight") || !strcmp(suffix, "rope_freqs.weight");
    const bool biasish = strstr(suffix, ".bias") || !strcmp(suffix, "attn_sinks.weight") || !strcmp(suffix, "ssm_a");
    const bool embd = !strcmp(suffix, "token_embd.weight") || !strcmp(suffix, "per_layer_token_embd.weight");
    enum kind kind = normish ? K_NORM : biasish ? K_BIAS : embd ? K_EMBD : K_WEIGHT;
    /* the Q4_K_M-like mix of --type: Q6_K where llama-quantize gives the
     * most bits (attn_v, every ffn_down, the output or tied embeddings),
     * Q5_K for DeltaNet's fused qkv; F32 stays F32 (norms, routers, conv) */
    enum tensor_type type = qt->base;
    if (strstr(suffix, "attn_v.weight") || strstr(suffix, "ffn_down") || !strcmp(suffix, "output.weight") ||
        (tied && !strcmp(suffix, "token_embd.weight")))
        type = qt->big;
    else if (!strcmp(suffix, "attn_qkv.weight") && qt->base == TENSOR_TYPE_Q4_K && qt->big == TENSOR_TYPE_Q6_K)
        type = TENSOR_TYPE_Q5_K;
    add_tensor(name, ne[0], ne[1] > 0 ? ne[1] : 0, f32 ? TENSOR_TYPE_F32 : type, kind);
    struct tspec *t = &tensors[n_tensors - 1];
    if (ne[2] > 0) {
        t->n_dims = 3;
        t->ne2 = ne[2];
        if (!f32 && expert_type && strstr(suffix, "_exps.weight")) {
            t->type = expert_type;
            t->row_bytes = row_size_any(expert_type, t->ne0);
            if (!t->row_bytes)
                die("tensor %s: row length %lld is not whole %s blocks", name, (long long)t->ne0,
                    type_name_any(expert_type));
        }
    }
    t->nbytes = (uint64_t)t->row_bytes * (uint64_t)t->ne1 * (uint64_t)t->ne2;
}

/* Writes one key of the output set: SRC's bytes when unchanged (the token
 * arrays padded to --vocab), else its numbers in its type. */
static void write_okv(const gguf_ctx *g, const struct okv *o, int64_t pad_from)
{
    const bool tok = !strcmp(o->key, "tokenizer.ggml.tokens"), score = !strcmp(o->key, "tokenizer.ggml.scores"),
               ttype = !strcmp(o->key, "tokenizer.ggml.token_type");
    if (!o->changed && !(vocab_opt > pad_from && (tok || score || ttype))) {
        copy_kv(g, o->src);
        return;
    }
    wr_str(o->key, strlen(o->key));
    wr_u32(o->type);
    if (o->type != GGUF_VTYPE_ARRAY) {
        wr_num(o->type, (int64_t)o->num[0], (uint64_t)o->num[0], o->num[0]);
        return;
    }
    wr_u32(o->etype);
    if (o->num) {
        wr_u64(o->n);
        for (uint64_t j = 0; j < o->n; j++)
            wr_num(o->etype, (int64_t)o->num[j], (uint64_t)(o->num[j] < 0 ? 0 : o->num[j]), o->num[j]);
        return;
    }
    /* a token array: SRC's entries, then unused ones up to --vocab */
    wr_u64((uint64_t)vocab_opt);
    for (int64_t j = 0; j < pad_from; j++) {
        if (tok) {
            gguf_str t = gguf_arr_str(g, o->src, (uint64_t)j);
            wr_str(t.ptr, t.len);
        } else if (score)
            wr_num(o->etype, 0, 0, gguf_arr_f64(g, o->src, (uint64_t)j));
        else
            wr_num(o->etype, gguf_arr_i64(g, o->src, (uint64_t)j), (uint64_t)gguf_arr_i64(g, o->src, (uint64_t)j), 0);
    }
    for (int64_t j = pad_from; j < vocab_opt; j++) {
        if (tok) {
            char t[48];
            snprintf(t, sizeof t, "<unused_pad_%lld>", (long long)j);
            wr_str(t, strlen(t));
        } else if (score)
            wr_num(o->etype, 0, 0, 0.0);
        else
            wr_num(o->etype, 5, 5, 0); /* LLAMA_TOKEN_TYPE_UNUSED */
    }
}

static int scaled_main(gguf_ctx *g, const char *like, const char *path, const struct qtype *qt, int64_t layers,
                       bool layers_given, bool untied, int64_t threads, uint64_t seed)
{
    struct kvset src, dst;
    kvset_load(&src, g);
    kvset_load(&dst, g);
    uint32_t expert_type = 0;
    if (expert_type_name) {
        if (!strcmp(expert_type_name, "MXFP4"))
            expert_type = TYPE_MXFP4;
        else {
            for (size_t i = 0; i < N_QTYPES; i++)
                if (!strcmp(qtypes[i].name, expert_type_name) && qtypes[i].base == qtypes[i].big)
                    expert_type = qtypes[i].base;
            if (!expert_type)
                die("unknown --expert-type %s (MXFP4 or a one-type --type)", expert_type_name);
        }
    }
    /* 1. the rules must give every SRC tensor its shape */
    const int64_t src_layers = (int64_t)hp(&src, "block_count", 0, -1);
    bool src_tied = true;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const char *suffix;
        const int64_t l = split_name(t->name, &suffix);
        int64_t ne[3];
        if (!strcmp(t->name, "output.weight"))
            src_tied = false;
        if (l >= src_layers || !scaled_dims(&src, suffix, l, ne))
            die("%s: no shape rule for tensor %s (%s)", like, t->name, src.arch);
        const int64_t want[4] = {ne[0], ne[1] ? ne[1] : 1, ne[2] ? ne[2] : 1, 1};
        if (t->ne[0] != want[0] || t->ne[1] != want[1] || t->ne[2] != want[2] || t->ne[3] != 1)
            die("%s: tensor %s is [%lld, %lld, %lld], the rule gives [%lld, %lld, %lld] from its keys", like,
                t->name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)want[0],
                (long long)want[1], (long long)want[2]);
    }
    /* 2. the output's hyperparameters */
    for (int pass = 0; pass < 2; pass++) /* block_count first: patterns repeat to it */
        for (int i = 0; i < n_sets; i++)
            if ((pass == 0) == !strcmp(sets[i].key, "block_count"))
                kvset_apply(&dst, sets[i].key, sets[i].val);
    if (layers_given)
        kvset_cut(&dst, layers);
    layers = (int64_t)hp(&dst, "block_count", 0, -1);
    if (vocab_opt && vocab_opt < src.n_vocab)
        die("--vocab %lld: SRC already has %lld tokens", (long long)vocab_opt, (long long)src.n_vocab);
    if (vocab_opt)
        dst.n_vocab = vocab_opt;
    const bool tied = untied ? false : src_tied;
    /* 3. the tensors: SRC's outside the blocks, then each layer's from the
     * first SRC layer of its kind */
    size_t cap = (size_t)gguf_n_tensors(g) + 1;
    for (int64_t l = 0; l < layers; l++)
        cap += (size_t)gguf_n_tensors(g);
    tensors = calloc(cap, sizeof *tensors);
    if (!tensors)
        die("out of memory");
    int64_t *tmpl = malloc((size_t)(layers ? layers : 1) * sizeof *tmpl);
    if (!tmpl)
        die("out of memory");
    for (int64_t l = 0; l < layers; l++) {
        tmpl[l] = -1;
        for (int64_t m = 0; m < src_layers && tmpl[l] < 0; m++)
            if (layer_kind(&src, m) == layer_kind(&dst, l))
                tmpl[l] = m;
        if (tmpl[l] < 0)
            die("layer %lld is of a kind (%d) that %s has no layer of", (long long)l, layer_kind(&dst, l), like);
    }
    /* SRC's order: the tensors before its first block, the blocks, then
     * the ones after (output_norm, output) */
    int64_t first_blk = gguf_n_tensors(g);
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const char *suffix;
        if (split_name(gguf_tensor_at(g, i)->name, &suffix) >= 0 && i < first_blk)
            first_blk = i;
    }
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            for (int64_t l = 0; l < layers; l++)
                for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
                    const gguf_tensor *t = gguf_tensor_at(g, i);
                    const char *suffix;
                    if (split_name(t->name, &suffix) != tmpl[l])
                        continue;
                    char name[64];
                    int64_t ne[3];
                    snprintf(name, sizeof name, "blk.%lld.%s", (long long)l, suffix);
                    if (!scaled_dims(&dst, suffix, l, ne))
                        die("internal: no rule for %s", name);
                    add_scaled(name, ne, t->type, qt, expert_type, tied);
                }
            continue;
        }
        for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            const char *suffix;
            if (split_name(t->name, &suffix) >= 0 || (pass == 0) != (i < first_blk))
                continue;
            int64_t ne[3];
            scaled_dims(&dst, suffix, -1, ne);
            add_scaled(t->name, ne, t->type, qt, expert_type, tied);
        }
        if (pass == 2 && !tied && src_tied) {
            const int64_t ne[3] = {(int64_t)hp(&dst, "embedding_length", 0, -1), dst.n_vocab, 0};
            add_scaled("output.weight", ne, TENSOR_TYPE_Q8_0, qt, expert_type, tied);
        }
    }
    uint64_t data_size = 0, active = 0, total = 0;
    const double used = hp(&dst, "expert_used_count", 0, 0), n_exp = hp(&dst, "expert_count", 0, 1);
    for (size_t i = 0; i < n_tensors; i++) {
        struct tspec *t = &tensors[i];
        t->offset = data_size;
        data_size = (data_size + t->nbytes + ALIGN - 1) / ALIGN * ALIGN;
        total += t->nbytes;
        /* read per generated token: every weight but the embeddings (one
         * row each; the tied one is read whole as the output), the experts
         * only used of expert_count */
        if (!strcmp(t->name, "per_layer_token_embd.weight") || (!tied && !strcmp(t->name, "token_embd.weight")))
            active += t->nbytes / (uint64_t)t->ne1;
        else if (t->ne2 > 1)
            active += (uint64_t)((double)t->nbytes * used / n_exp);
        else
            active += t->nbytes;
    }
    fprintf(stderr,
            "gguf_random: %s %lld layers, %lld tokens: %" PRIu64 " bytes of weights, %" PRIu64
            " read per token (%.1f%%)\n",
            src.arch, (long long)layers, (long long)dst.n_vocab, total, active, 100.0 * (double)active / (double)total);
    if (dry_run) {
        printf("tensors %zu bytes %" PRIu64 " active %" PRIu64 "\n", n_tensors, total, active);
        for (size_t i = 0; i < n_tensors; i++) {
            const struct tspec *t = &tensors[i];
            if (getenv("GGUF_RANDOM_LIST"))
                printf("%-36s %6lld %6lld %4lld %-6s %" PRIu64 "\n", t->name, (long long)t->ne0, (long long)t->ne1,
                       (long long)t->ne2, type_name_any(t->type), t->nbytes);
        }
        gguf_close(g);
        return 0;
    }
    /* 4. the file */
    out = fopen(path, "wb");
    if (!out)
        die("cannot create %s: %s", path, strerror(errno));
    out_path = path;
    struct stat st;
    out_is_file = fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);
    out_open = 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    setvbuf(out, NULL, _IOFBF, 1 << 22);
    const double t0 = now();
    char label[64], name[80];
    snprintf(label, sizeof label, "%s%s%s", qt->name, expert_type ? "+experts " : "",
             expert_type ? type_name_any(expert_type) : "");
    snprintf(name, sizeof name, "random-%s", label);
    bool has_name = false, has_ftype = false;
    for (int64_t i = 0; i < dst.n_kv; i++) {
        has_name |= !strcmp(dst.kv[i].key, "general.name");
        has_ftype |= !strcmp(dst.kv[i].key, "general.file_type");
    }
    wr("GGUF", 4);
    wr_u32(3);
    wr_u64(n_tensors);
    wr_u64((uint64_t)dst.n_kv + !has_name + !has_ftype);
    for (int64_t i = 0; i < dst.n_kv; i++) {
        const struct okv *o = &dst.kv[i];
        if (!strcmp(o->key, "general.name"))
            kv_str("general.name", name);
        else if (!strcmp(o->key, "general.file_type"))
            kv_u32("general.file_type", expert_type == TYPE_MXFP4 ? 38 /* MOSTLY_MXFP4_MOE */ : qt->ftype);
        else
            write_okv(g, o, src.n_vocab);
    }
    if (!has_name)
        kv_str("general.name", name);
    if (!has_ftype)
        kv_u32("general.file_type", expert_type == TYPE_MXFP4 ? 38 : qt->ftype);
    for (size_t i = 0; i < n_tensors; i++) {
        const struct tspec *t = &tensors[i];
        wr_str(t->name, strlen(t->name));
        wr_u32(t->n_dims);
        wr_u64((uint64_t)t->ne0);
        if (t->n_dims > 1)
            wr_u64((uint64_t)t->ne1);
        if (t->n_dims > 2)
            wr_u64((uint64_t)t->ne2);
        wr_u32(t->type);
        wr_u64(t->offset);
    }
    wr_pad();
    gguf_close(g);
    write_data(path, threads, seed, layers, label, t0);
    free(tmpl);
    return 0;
}

int main(int argc, char **argv)
{
    const char *like = NULL, *type_name = NULL, *path = NULL;
    int64_t dim = 2048, layers = 22, heads = 32, kv_heads = 4, ffn = 5632, ctx = 0;
    int64_t threads = threadpool_default_threads();
    double rope_base = -1, rope_freqs = 0, rope_low = 1, rope_high = 4, rope_base_swa = 10000, eps = -1;
    int64_t head_dim_opt = 0, swa = -1, rope_orig = 8192, longrope = 0;
    int tied = -1, qkv_bias = -1; /* -1: the architecture's default */
    uint64_t seed = 1;
    bool layers_given = false, shape_given = false, arch_given = false; /* shape_given: an option of the recipe families */

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--tied") || !strcmp(a, "--untied")) {
            tied = a[2] == 't';
            continue;
        }
        if (!strcmp(a, "--qkv-bias") || !strcmp(a, "--no-qkv-bias")) {
            qkv_bias = a[2] == 'q';
            continue;
        }
        if (!strcmp(a, "--dry-run")) {
            dry_run = true;
            continue;
        }
        if (!strcmp(a, "--llama-quantize")) {
            exact = true;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (path)
                die("more than one output file ('%s' and '%s')", path, a);
            path = a;
            continue;
        }
        if (i + 1 >= argc)
            die("%s needs a value", a);
        const char *v = argv[++i];
        {
            char opt[40];
            snprintf(opt, sizeof opt, " %s ", a);
            shape_given |= strstr(" --dim --heads --kv-heads --ffn --ctx --rope-base --eps --head-dim --swa "
                                  "--rope-base-swa --rope-freqs --rope-low --rope-high --rope-orig-ctx "
                                  "--longrope ",
                                  opt) != NULL;
        }
        if (!strcmp(a, "--like"))
            like = v;
        else if (!strcmp(a, "--type"))
            type_name = v;
        else if (!strcmp(a, "--set")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || n_sets == MAX_SETS)
                die("--set '%s': KEY=VALUE[,VALUE...] expected (at most %d)", v, MAX_SETS);
            char *k = strndup(v, (size_t)(eq - v));
            if (!k)
                die("out of memory");
            sets[n_sets].key = k;
            sets[n_sets++].val = eq + 1;
        } else if (!strcmp(a, "--vocab"))
            vocab_opt = parse_int(a, v, 1, 1 << 24);
        else if (!strcmp(a, "--expert-type"))
            expert_type_name = v;
        else if (!strcmp(a, "--dim"))
            dim = parse_int(a, v, 1, 65536);
        else if (!strcmp(a, "--layers")) {
            layers = parse_int(a, v, 1, 1024);
            layers_given = true;
        }
        else if (!strcmp(a, "--heads"))
            heads = parse_int(a, v, 1, 65536);
        else if (!strcmp(a, "--kv-heads"))
            kv_heads = parse_int(a, v, 1, 65536);
        else if (!strcmp(a, "--ffn"))
            ffn = parse_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--ctx"))
            ctx = parse_int(a, v, 1, UINT32_MAX);
        else if (!strcmp(a, "--seed"))
            seed = (uint64_t)parse_int(a, v, 0, INT64_MAX);
        else if (!strcmp(a, "--threads"))
            threads = parse_int(a, v, 1, 256);
        else if (!strcmp(a, "--arch")) {
            snprintf(out_arch, sizeof out_arch, "%s", v);
            arch_given = true;
        }
        else if (!strcmp(a, "--head-dim"))
            head_dim_opt = parse_int(a, v, 2, 4096);
        else if (!strcmp(a, "--swa"))
            swa = parse_int(a, v, 0, UINT32_MAX);
        else if (!strcmp(a, "--longrope"))
            longrope = parse_int(a, v, 2, 1 << 24);
        else if (!strcmp(a, "--rope-orig-ctx"))
            rope_orig = parse_int(a, v, 1, 1 << 24);
        else if (!strcmp(a, "--rope-low"))
            rope_low = parse_positive(a, v);
        else if (!strcmp(a, "--rope-high"))
            rope_high = parse_positive(a, v);
        else if (!strcmp(a, "--rope-base-swa"))
            rope_base_swa = parse_positive(a, v);
        else if (!strcmp(a, "--eps"))
            eps = parse_positive(a, v);
        else if (!strcmp(a, "--rope-freqs")) {
            char *end;
            rope_freqs = strtod(v, &end);
            if (end == v || *end || !(rope_freqs >= 1))
                die("--rope-freqs: '%s' is not a factor >= 1", v);
        } else if (!strcmp(a, "--rope-base")) {
            char *end;
            rope_base = strtod(v, &end);
            if (end == v || *end || !(rope_base > 0))
                die("--rope-base: '%s' is not a positive number", v);
        } else {
            usage(stderr);
            die("unknown option %s", a);
        }
    }
    if (!like || !type_name || (!path && !dry_run)) {
        usage(stderr);
        die("--like, --type and OUT.gguf are required");
    }
    const struct qtype *qt = NULL;
    const struct qtype *table = exact ? lqtypes : qtypes;
    const size_t n_table = exact ? N_LQTYPES : N_QTYPES;
    for (size_t i = 0; i < n_table; i++)
        if (!strcmp(table[i].name, type_name))
            qt = &table[i];
    if (!qt && exact)
        die("unknown --type %s with --llama-quantize (F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S "
            "Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K)",
            type_name);
    if (!qt)
        die("unknown --type %s (F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q4_K_M MXFP4)",
            type_name);
    {
        /* an SRC of a 2026 family: its own layout at the sizes of --set */
        char err0[512];
        gguf_ctx *g0 = gguf_open(like, err0, sizeof err0);
        if (!g0)
            die("%s", err0);
        gguf_str a0;
        char arch0[64] = "";
        if (gguf_get_str(g0, "general.architecture", &a0))
            snprintf(arch0, sizeof arch0, "%.*s", (int)(a0.len < 63 ? a0.len : 63), a0.ptr);
        if (!strcmp(arch0, "qwen35") || !strcmp(arch0, "qwen35moe") || !strcmp(arch0, "qwen3moe") ||
            !strcmp(arch0, "gemma4") || !strcmp(arch0, "gpt-oss")) {
            if (shape_given || exact || qkv_bias >= 0 || tied > 0 || (arch_given && strcmp(out_arch, arch0)))
                die("%s is a %s model: its copies take --set KEY=VALUE, --layers, --vocab, --untied and "
                    "--expert-type (not --arch, --dim, --heads..., --tied, --qkv-bias or --llama-quantize)",
                    like, arch0);
            return scaled_main(g0, like, path, qt, layers, layers_given, tied == 0, threads, seed);
        }
        gguf_close(g0);
        if (!path)
            die("OUT.gguf is required");
        if (n_sets || vocab_opt || expert_type_name || dry_run)
            die("--set, --vocab, --expert-type and --dry-run are for the 2026 families' SRC files (not %s)", arch0);
    }
    const bool is_llama = !strcmp(out_arch, "llama"), is_qwen2 = !strcmp(out_arch, "qwen2"),
               is_qwen3 = !strcmp(out_arch, "qwen3"), is_gemma3 = !strcmp(out_arch, "gemma3"),
               is_phi3 = !strcmp(out_arch, "phi3");
    if (!is_llama && !is_qwen2 && !is_qwen3 && !is_gemma3 && !is_phi3)
        die("unknown --arch %s (llama qwen2 qwen3 gemma3 phi3)", out_arch);
    if (rope_freqs > 0 && !is_llama)
        die("--rope-freqs is for --arch llama (Llama 3.x)");
    if (!(rope_high > rope_low))
        die("--rope-low %g, --rope-high %g: the low factor must be below the high one", rope_low, rope_high);
    if (swa >= 0 && !is_gemma3 && !is_phi3)
        die("--swa is for --arch gemma3 and phi3");
    if (longrope && !is_phi3)
        die("--longrope is for --arch phi3");
    if (ctx == 0) /* the families' own context lengths */
        ctx = is_qwen2 || is_gemma3 ? 32768
              : is_qwen3            ? 40960
              : is_phi3             ? 4096
              : rope_freqs > 0      ? 131072
                                    : 2048;
    if (longrope && longrope >= ctx)
        die("--longrope %lld: the original context must be shorter than --ctx %lld", (long long)longrope,
            (long long)ctx);
    if (tied < 0)
        tied = is_qwen2 || is_qwen3 || is_gemma3;
    if (qkv_bias < 0)
        qkv_bias = is_qwen2;
    if (rope_base < 0)
        rope_base = is_qwen2 || is_qwen3 || is_gemma3 ? 1e6 : rope_freqs > 0 ? 500000 : 10000;
    if (is_gemma3 && swa < 0)
        swa = 512;
    if (is_phi3 && exact && swa < 0)
        swa = 2047; /* Phi-3-mini-4k's; its converter always writes the key */
    if (eps < 0)
        eps = is_llama ? 1e-5 : 1e-6;
    if (heads % kv_heads || (!head_dim_opt && dim % heads))
        die("--dim %lld, --heads %lld, --kv-heads %lld: heads must be a multiple of kv-heads, and dim of heads "
            "unless --head-dim gives the head size",
            (long long)dim, (long long)heads, (long long)kv_heads);
    const int64_t head_dim = head_dim_opt ? head_dim_opt : dim / heads, kv_dim = head_dim * kv_heads;
    const int64_t n_q = head_dim * heads;
    if (head_dim % 2)
        die("the head size %lld must be even (RoPE)", (long long)head_dim);
    if ((is_qwen2 || is_phi3) && n_q != dim)
        die("--arch %s: llama.cpp needs heads x head size = dim (%lld x %lld != %lld)", out_arch,
            (long long)heads, (long long)head_dim, (long long)dim);
    if (rope_freqs > 0)
        llama3_rope_factors(head_dim, rope_base, rope_freqs, rope_low, rope_high, (double)rope_orig);
    if (longrope) {
        /* Phi-3's long-context factors: short ones near 1, long ones growing
         * to tens for the slow dimensions, like the real files' */
        rope_factors = malloc((size_t)head_dim * sizeof(float));
        if (!rope_factors)
            die("out of memory");
        const int64_t n = head_dim / 2;
        for (int64_t i = 0; i < n; i++) {
            const double x = n > 1 ? (double)i / (double)(n - 1) : 0;
            rope_factors[i] = (float)(1.0 + 0.1 * x);            /* short */
            rope_factors[n + i] = (float)(1.0 + 40.0 * x * x); /* long */
        }
    }
    lq.qt = qt;
    lq.n_layer = layers;
    lq.n_gqa = heads / kv_heads;
    lq.tied = tied;
    /* llama.cpp's model types that change the mix: LLM_TYPE_70B */
    lq.type_70b = layers == 80 && ((is_llama && heads != kv_heads) || is_qwen2);

    char err[512];
    gguf_ctx *g = gguf_open(like, err, sizeof err);
    if (!g)
        die("%s", err);
    int64_t tok_kv = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (tok_kv < 0 || gguf_kv_type(g, tok_kv) != GGUF_VTYPE_ARRAY ||
        gguf_arr_type(g, tok_kv) != GGUF_VTYPE_STRING)
        die("%s has no tokenizer.ggml.tokens string array to take the vocabulary from", like);
    const uint64_t n_vocab64 = gguf_arr_len(g, tok_kv);
    if (n_vocab64 == 0 || n_vocab64 > (1 << 24))
        die("%s: implausible vocabulary size %" PRIu64, like, n_vocab64);
    const int64_t n_vocab = (int64_t)n_vocab64;
    gguf_str sa;
    if (gguf_get_str(g, "general.architecture", &sa))
        snprintf(src_arch, sizeof src_arch, "%.*s", (int)(sa.len < 63 ? sa.len : 63), sa.ptr);

    /* Tensor table first: it validates the shapes against the block sizes
     * before anything is written. */
    tensors = calloc((size_t)(8 + 20 * layers), sizeof *tensors);
    if (!tensors)
        die("out of memory");
    if (rope_freqs > 0)
        add_tensor("rope_freqs.weight", head_dim / 2, 0, TENSOR_TYPE_F32, K_ROPE);
    if (longrope) {
        add_tensor("rope_factors_long.weight", head_dim / 2, 0, TENSOR_TYPE_F32, K_ROPE);
        add_tensor("rope_factors_short.weight", head_dim / 2, 0, TENSOR_TYPE_F32, K_ROPE);
    }
    /* tied: the embedding is the output, quantized as llama-quantize does the output */
    add_tensor("token_embd.weight", dim, n_vocab, tied ? qt->big : qt->base, K_EMBD);
    const enum tensor_type qkv_type = qt->base == TENSOR_TYPE_Q4_K && qt->big == TENSOR_TYPE_Q6_K ? TENSOR_TYPE_Q5_K
                                                                                                : qt->base;
    for (int64_t l = 0; l < layers; l++) {
        char n[64];
#define T(suffix, ne0, ne1, type, kind)                                                                      \
    do {                                                                                                     \
        snprintf(n, sizeof n, "blk.%lld." suffix, (long long)l);                                             \
        add_tensor(n, ne0, ne1, type, kind);                                                                 \
    } while (0)
        T("attn_norm.weight", dim, 0, TENSOR_TYPE_F32, K_NORM);
        if (is_phi3) {
            T("attn_qkv.weight", dim, n_q + 2 * kv_dim, qkv_type, K_WEIGHT);
        } else {
            T("attn_q.weight", dim, n_q, qt->base, K_WEIGHT);
            T("attn_k.weight", dim, kv_dim, qt->base, K_WEIGHT);
            T("attn_v.weight", dim, kv_dim, qt->big, K_WEIGHT);
        }
        if (qkv_bias && is_phi3) {
            T("attn_qkv.bias", n_q + 2 * kv_dim, 0, TENSOR_TYPE_F32, K_BIAS);
        } else if (qkv_bias) {
            T("attn_q.bias", n_q, 0, TENSOR_TYPE_F32, K_BIAS);
            T("attn_k.bias", kv_dim, 0, TENSOR_TYPE_F32, K_BIAS);
            T("attn_v.bias", kv_dim, 0, TENSOR_TYPE_F32, K_BIAS);
        }
        if (is_qwen3 || is_gemma3) {
            T("attn_q_norm.weight", head_dim, 0, TENSOR_TYPE_F32, K_NORM);
            T("attn_k_norm.weight", head_dim, 0, TENSOR_TYPE_F32, K_NORM);
        }
        T("attn_output.weight", n_q, dim, qt->base, K_WEIGHT);
        if (is_gemma3)
            T("post_attention_norm.weight", dim, 0, TENSOR_TYPE_F32, K_NORM);
        T("ffn_norm.weight", dim, 0, TENSOR_TYPE_F32, K_NORM);
        if (!is_phi3)
            T("ffn_gate.weight", dim, ffn, qt->base, K_WEIGHT);
        T("ffn_up.weight", dim, is_phi3 ? 2 * ffn : ffn, qt->base, K_WEIGHT);
        T("ffn_down.weight", ffn, dim, qt->big, K_WEIGHT);
        if (is_gemma3)
            T("post_ffw_norm.weight", dim, 0, TENSOR_TYPE_F32, K_NORM);
#undef T
    }
    add_tensor("output_norm.weight", dim, 0, TENSOR_TYPE_F32, K_NORM);
    if (!tied)
        add_tensor("output.weight", dim, n_vocab, qt->big, K_WEIGHT);
    if (exact) /* llama-quantize writes them in its weights_map's order */
        qsort(tensors, n_tensors, sizeof *tensors, tensor_order);
    uint64_t data_size = 0;
    for (size_t i = 0; i < n_tensors; i++) {
        tensors[i].offset = data_size;
        data_size = (data_size + tensors[i].nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }

    /* Check the copied metadata before creating the file. */
    int64_t n_copy = 0;
    for (int64_t i = 0; i < gguf_n_kv(g); i++) {
        if (skip_key(gguf_kv_key(g, i)))
            continue;
        if (gguf_kv_type(g, i) == GGUF_VTYPE_ARRAY && gguf_arr_type(g, i) == GGUF_VTYPE_ARRAY) {
            gguf_str k = gguf_kv_key(g, i);
            die("%s: key %.*s is a nested array, which this tool does not copy", like, (int)k.len, k.ptr);
        }
        n_copy++;
    }

    out = fopen(path, "wb");
    if (!out)
        die("cannot create %s: %s", path, strerror(errno));
    out_path = path;
    struct stat st;
    out_is_file = fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);
    out_open = 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    setvbuf(out, NULL, _IOFBF, 1 << 22);

    const double t0 = now();
    char name[64];
    snprintf(name, sizeof name, "random-%s", qt->name);
    /* The architecture's keys, in the order the file has them. */
    const bool key_len = is_qwen3 || is_gemma3 || (head_dim_opt && !(exact && is_phi3));
    const bool rope_dims = !exact || is_llama || is_phi3, vocab_size = !exact || is_llama;
    ARCH_U32("context_length", ctx);
    ARCH_U32("embedding_length", dim);
    ARCH_U32("block_count", layers);
    ARCH_U32("feed_forward_length", ffn);
    ARCH_U32("attention.head_count", heads);
    ARCH_U32("attention.head_count_kv", kv_heads);
    if (rope_dims)
        ARCH_U32("rope.dimension_count", head_dim);
    ARCH_F32("rope.freq_base", rope_base);
    ARCH_F32("attention.layer_norm_rms_epsilon", eps);
    if (vocab_size)
        ARCH_U32("vocab_size", n_vocab);
    if (key_len) {
        ARCH_U32("attention.key_length", head_dim);
        ARCH_U32("attention.value_length", head_dim);
    }
    if (longrope) { /* as convert_hf_to_gguf.py writes a LongRoPE Phi-3 */
        const double scale = (double)ctx / (double)longrope;
        ARCH_F32("rope.scaling.attn_factor", sqrt(1 + log(scale) / log((double)longrope)));
        ARCH_U32("rope.scaling.original_context_length", longrope);
    } else if (exact && is_phi3) { /* its converter always writes it */
        ARCH_U32("rope.scaling.original_context_length", ctx);
    }
    if (is_gemma3) {
        ARCH_U32("attention.sliding_window", swa);
        ARCH_F32("rope.freq_base_swa", rope_base_swa);
    }
    if (is_phi3 && swa >= 0)
        ARCH_U32("attention.sliding_window", swa);

    wr("GGUF", 4);
    wr_u32(3);
    wr_u64(n_tensors);
    wr_u64((uint64_t)n_copy + 3 + exact + (uint64_t)n_arch_kv);
    kv_str("general.architecture", out_arch);
    for (int64_t i = 0; i < gguf_n_kv(g); i++)
        if (!skip_key(gguf_kv_key(g, i)))
            copy_kv(g, i);
    kv_str("general.name", name);
    kv_u32("general.file_type", qt->ftype);
    if (exact)
        kv_u32("general.quantization_version", 2); /* GGML_QNT_VERSION */
    for (int k = 0; k < n_arch_kv; k++) {
        char key[128];
        snprintf(key, sizeof key, "%s.%s", out_arch, arch_kv[k].suffix);
        if (arch_kv[k].is_f32)
            kv_f32(key, arch_kv[k].f);
        else
            kv_u32(key, arch_kv[k].u);
    }
    gguf_close(g);

    for (size_t i = 0; i < n_tensors; i++) {
        const struct tspec *t = &tensors[i];
        wr_str(t->name, strlen(t->name));
        wr_u32(t->n_dims);
        wr_u64((uint64_t)t->ne0);
        if (t->n_dims > 1)
            wr_u64((uint64_t)t->ne1);
        if (t->n_dims > 2)
            wr_u64((uint64_t)t->ne2);
        wr_u32(t->type);
        wr_u64(t->offset);
    }
    wr_pad();

    write_data(path, threads, seed, layers, qt->name, t0);
    return 0;
}
