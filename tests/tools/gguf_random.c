/* Writes a GGUF v3 model with random weights, so the engine can be
 * benchmarked and exercised on realistically sized models (TinyLlama-1.1B
 * shapes and up) without downloading any:
 *
 *   gguf_random --like SRC.gguf --type TYPE [--dim 2048] [--layers 22] [--heads 32]
 *               [--kv-heads 4] [--ffn 5632] [--ctx 2048] [--rope-base 10000]
 *               [--arch llama|qwen2|qwen3|gemma3|phi3] [--head-dim N] [--tied]
 *               [--swa N] [--rope-freqs FACTOR] [--rope-orig-ctx N] [--longrope ORIG]
 *               [--seed 1] [--threads N] OUT.gguf
 *
 * The tensors and keys of each architecture are those llama.cpp's converter
 * writes: qwen2 Q/K/V biases; qwen3 and gemma3 per-head Q/K norms and a
 * key_length (--head-dim, queries may be wider than --dim); gemma3 post-
 * attention and post-FFN norms and a sliding window (--swa, default 512;
 * local rope base 10000); phi3 a fused attn_qkv and ffn_up holding gate and
 * up (with --longrope ORIG the long/short factors, attention factor and
 * original context of a LongRoPE file); llama with --rope-freqs F Llama
 * 3.1's rope_freqs.weight (factor F, low 1, high 4, original context
 * --rope-orig-ctx, default 8192). qwen2, qwen3
 * and gemma3 tie the output to the embeddings, as --tied does for the others.
 *
 * TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K, or
 * Q4_K_M (attn_v, ffn_down and output Q6_K, attn_qkv Q5_K, every other 2-D
 * weight Q4_K; a row length that is not a multiple of 256 falls back as in
 * llama-quantize: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0). Norm weights,
 * biases and rope factors are always F32.
 *
 * The tokenizer and all other metadata are copied from SRC (every key except
 * general.architecture, general.name, general.file_type, general.alignment
 * and those of SRC's and the output's architecture, each with its exact GGUF
 * type); the hyperparameters are written from the options. The file is streamed tensor by tensor, so memory
 * use stays small whatever the model size. Values depend only on --seed and
 * the shapes, never on --threads. A partial file is removed on failure.
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

/* Keys we write ourselves (or that would contradict what we write). */
static bool skip_key(gguf_str k)
{
    return key_is(k, "general.architecture") || key_is(k, "general.name") || key_is(k, "general.file_type") ||
           key_is(k, "general.alignment") || has_prefix(k, "llama") || has_prefix(k, src_arch) ||
           has_prefix(k, out_arch);
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
};

static struct tspec *tensors;
static size_t n_tensors;

static void add_tensor(const char *name, int64_t ne0, int64_t ne1, enum tensor_type type, enum kind kind)
{
    struct tspec *t = &tensors[n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = ne1 > 0 ? 2 : 1;
    t->ne0 = ne0;
    t->ne1 = ne1 > 0 ? ne1 : 1;
    t->type = kind == K_NORM || kind == K_BIAS || kind == K_ROPE ? TENSOR_TYPE_F32 : type;
    if (tensor_row_size(t->type, ne0) == 0) {
        /* llama-quantize's fallback for rows that are not whole super-blocks */
        if (t->type == TENSOR_TYPE_Q4_K)
            t->type = TENSOR_TYPE_Q5_0;
        else if (t->type == TENSOR_TYPE_Q5_K)
            t->type = TENSOR_TYPE_Q5_1;
        else if (t->type == TENSOR_TYPE_Q6_K)
            t->type = TENSOR_TYPE_Q8_0;
    }
    t->kind = kind;
    t->row_bytes = tensor_row_size(t->type, ne0);
    if (t->row_bytes == 0)
        die("tensor %s: row length %lld is not a multiple of the %s block size %lld; pick other shapes", name,
            (long long)ne0, tensor_type_name(t->type), (long long)tensor_type_block_size(t->type));
    t->nbytes = (uint64_t)t->row_bytes * (uint64_t)t->ne1;
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
 * one per rotated pair. */
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
               "                   [--kv-heads 4] [--ffn 5632] [--ctx 2048] [--rope-base 10000]\n"
               "                   [--arch llama|qwen2|qwen3|gemma3|phi3] [--head-dim N] [--tied]\n"
               "                   [--swa N] [--rope-freqs FACTOR] [--rope-orig-ctx N] [--longrope ORIG]\n"
               "                   [--seed 1] [--threads N] OUT.gguf\n"
               "TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q4_K_M\n");
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *like = NULL, *type_name = NULL, *path = NULL;
    int64_t dim = 2048, layers = 22, heads = 32, kv_heads = 4, ffn = 5632, ctx = 2048;
    int64_t threads = threadpool_default_threads();
    double rope_base = -1, rope_freqs = 0;
    int64_t head_dim_opt = 0, swa = -1, rope_orig = 8192, longrope = 0;
    bool tied = false;
    uint64_t seed = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--tied")) {
            tied = true;
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
            swa = parse_int(a, v, 0, 1 << 20);
        else if (!strcmp(a, "--longrope"))
            longrope = parse_int(a, v, 2, 1 << 24);
        else if (!strcmp(a, "--rope-orig-ctx"))
            rope_orig = parse_int(a, v, 1, 1 << 24);
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
    for (size_t i = 0; i < N_QTYPES; i++)
        if (!strcmp(qtypes[i].name, type_name))
            qt = &qtypes[i];
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
    if (swa >= 0 && !is_gemma3)
        die("--swa is for --arch gemma3");
    if (longrope && !is_phi3)
        die("--longrope is for --arch phi3");
    if (longrope && longrope >= ctx)
        die("--longrope %lld: the original context must be shorter than --ctx %lld", (long long)longrope,
            (long long)ctx);
    if (is_qwen2 || is_qwen3 || is_gemma3)
        tied = true;
    if (rope_base < 0)
        rope_base = is_qwen2 || is_qwen3 || is_gemma3 ? 1e6 : rope_freqs > 0 ? 500000 : 10000;
    if (is_gemma3 && swa < 0)
        swa = 512;
    if (heads % kv_heads || (!head_dim_opt && dim % heads))
        die("--dim %lld, --heads %lld, --kv-heads %lld: heads must be a multiple of kv-heads, and dim of heads "
            "unless --head-dim gives the head size",
            (long long)dim, (long long)heads, (long long)kv_heads);
    const int64_t head_dim = head_dim_opt ? head_dim_opt : dim / heads, kv_dim = head_dim * kv_heads;
    const int64_t n_q = head_dim * heads;
    if (head_dim % 2)
        die("the head size %lld must be even (RoPE)", (long long)head_dim);
    if (rope_freqs > 0)
        llama3_rope_factors(head_dim, rope_base, rope_freqs, 1, 4, (double)rope_orig);
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
    tensors = calloc((size_t)(4 + 16 * layers), sizeof *tensors);
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
        if (is_qwen2) {
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
    wr("GGUF", 4);
    wr_u32(3);
    wr_u64(n_tensors);
    const bool key_len = is_qwen3 || is_gemma3 || head_dim_opt;
    wr_u64((uint64_t)n_copy + 13 + 2 * key_len + 2 * is_gemma3 + 2 * (longrope > 0));
    kv_str("general.architecture", out_arch);
    for (int64_t i = 0; i < gguf_n_kv(g); i++)
        if (!skip_key(gguf_kv_key(g, i)))
            copy_kv(g, i);
    kv_str("general.name", name);
    kv_u32("general.file_type", qt->ftype);
    char key[128];
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, out_arch), key)
    kv_u32(KEY("context_length"), (uint32_t)ctx);
    kv_u32(KEY("embedding_length"), (uint32_t)dim);
    kv_u32(KEY("block_count"), (uint32_t)layers);
    kv_u32(KEY("feed_forward_length"), (uint32_t)ffn);
    kv_u32(KEY("attention.head_count"), (uint32_t)heads);
    kv_u32(KEY("attention.head_count_kv"), (uint32_t)kv_heads);
    kv_u32(KEY("rope.dimension_count"), (uint32_t)head_dim);
    kv_f32(KEY("rope.freq_base"), (float)rope_base);
    kv_f32(KEY("attention.layer_norm_rms_epsilon"), is_llama ? 1e-5f : 1e-6f);
    kv_u32(KEY("vocab_size"), (uint32_t)n_vocab);
    if (key_len) {
        kv_u32(KEY("attention.key_length"), (uint32_t)head_dim);
        kv_u32(KEY("attention.value_length"), (uint32_t)head_dim);
    }
    if (longrope) { /* as convert_hf_to_gguf.py writes a LongRoPE Phi-3 */
        const double scale = (double)ctx / (double)longrope;
        kv_f32(KEY("rope.scaling.attn_factor"), (float)sqrt(1 + log(scale) / log((double)longrope)));
        kv_u32(KEY("rope.scaling.original_context_length"), (uint32_t)longrope);
    }
    if (is_gemma3) {
        kv_u32(KEY("attention.sliding_window"), (uint32_t)swa);
        kv_f32(KEY("rope.freq_base_swa"), 10000.0f);
    }
#undef KEY
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
    for (size_t i = 0; i < n_tensors; i++)
        if (tensors[i].row_bytes > max_row_bytes)
            max_row_bytes = tensors[i].row_bytes;
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
            struct job j = {t, i, r, seed, batch, scratch};
            threadpool_run(tp, n, fill_row, &j);
            wr(batch, (size_t)n * t->row_bytes);
        }
        if (i + 1 < n_tensors)
            wr_pad();
        /* Progress after the embedding, each layer (its last tensor is
         * ffn_down) and the output. */
        char what[64] = "";
        if (i == 0)
            snprintf(what, sizeof what, "token_embd");
        else if (i + 1 == n_tensors)
            snprintf(what, sizeof what, "output");
        else if (i + 2 < n_tensors && strstr(t->name, ".ffn_down."))
            snprintf(what, sizeof what, "layer %lld/%lld", atoll(t->name + 4) + 1, (long long)layers);
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
