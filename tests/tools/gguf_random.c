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
 * TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K, or
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
    int64_t ne0, ne1;
    enum tensor_type type;
    enum kind kind;
    size_t row_bytes;
    uint64_t offset; /* in the data section */
    uint64_t nbytes;
    size_t seed_index; /* the random values' key: its place in the default order */
    int64_t layer;     /* -1 outside the blocks */
};

static struct tspec *tensors;
static size_t n_tensors;

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
    t->type = kind == K_NORM || kind == K_BIAS || kind == K_ROPE ? TENSOR_TYPE_F32
              : exact                                            ? lq_type(name, ne0, t->layer)
                                                                 : type;
    if (tensor_row_size(t->type, ne0) == 0) {
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
    t->row_bytes = tensor_row_size(t->type, ne0);
    if (t->row_bytes == 0)
        die("tensor %s: row length %lld is not a multiple of the %s block size %lld; pick other shapes", name,
            (long long)ne0, tensor_type_name(t->type), (long long)tensor_type_block_size(t->type));
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
               "TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q4_K_M\n"
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

int main(int argc, char **argv)
{
    const char *like = NULL, *type_name = NULL, *path = NULL;
    int64_t dim = 2048, layers = 22, heads = 32, kv_heads = 4, ffn = 5632, ctx = 0;
    int64_t threads = threadpool_default_threads();
    double rope_base = -1, rope_freqs = 0, rope_low = 1, rope_high = 4, rope_base_swa = 10000, eps = -1;
    int64_t head_dim_opt = 0, swa = -1, rope_orig = 8192, longrope = 0;
    int tied = -1, qkv_bias = -1; /* -1: the architecture's default */
    uint64_t seed = 1;

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
        if (!strcmp(a, "--like"))
            like = v;
        else if (!strcmp(a, "--type"))
            type_name = v;
        else if (!strcmp(a, "--dim"))
            dim = parse_int(a, v, 1, 65536);
        else if (!strcmp(a, "--layers"))
            layers = parse_int(a, v, 1, 1024);
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
        else if (!strcmp(a, "--arch"))
            snprintf(out_arch, sizeof out_arch, "%s", v);
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
    if (!like || !type_name || !path) {
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
        die("unknown --type %s (F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q4_K_M)",
            type_name);
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
        wr_u32(t->type);
        wr_u64(t->offset);
    }
    wr_pad();

    /* Data in batches of about 2M floats: big enough to keep the threads
     * busy, small enough that memory stays at a few tens of MB. */
    int64_t max_ne0 = dim > ffn ? dim : ffn;
    if (n_q > max_ne0)
        max_ne0 = n_q;
    size_t max_row_bytes = 0;
    for (size_t i = 0; i < n_tensors; i++) {
        if (tensors[i].row_bytes > max_row_bytes)
            max_row_bytes = tensors[i].row_bytes;
        if (tensors[i].ne0 > max_ne0) /* a fused bias */
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
        for (int64_t r = 0; r < t->ne1; r += batch_rows) {
            int64_t n = t->ne1 - r < batch_rows ? t->ne1 - r : batch_rows;
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
        return 1;
    }
    fprintf(stderr, "gguf_random: wrote %s: %" PRIu64 " bytes (%.1f MiB), %zu tensors, %s, %.1f s\n", path,
            out_pos, (double)out_pos / 1048576.0, n_tensors, qt->name, now() - t0);

    threadpool_free(tp);
    for (int64_t k = 0; k < threads; k++)
        free(scratch[k]);
    free(scratch);
    free(batch);
    free(tensors);
    return 0;
}
