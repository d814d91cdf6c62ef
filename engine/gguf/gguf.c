/* GGUF reader: everything is validated once in gguf_open, so the getters can
 * trust offsets and lengths afterwards.
 *
 * Defences against hostile files: every read goes through need() against
 * the mapping size; counts from the header only bound loops, they never size
 * an allocation directly (tables grow as entries are actually parsed, so
 * memory stays proportional to bytes consumed); duplicate detection and
 * lookups use hash tables so a file of a million tiny keys cannot make us
 * quadratic. */
#include "gguf/gguf.h"
#include "gguf/tensor.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_MAX_KEY 65535 /* ggml has no limit; this only stops absurd keys */
#define GGUF_MAX_NAME 256  /* tensor names; ggml itself allows 63 */
#define GGUF_MAX_DIMS 4
/* smallest possible encodings, used to bound header counts by the file size */
#define GGUF_MIN_KV_BYTES 14     /* key len 8 + 1-byte key + type 4 + u8 value */
#define GGUF_MIN_TENSOR_BYTES 33 /* name len 8 + 1-byte name + n_dims 4 + one dim 8 + type 4 + offset 8 */

struct gguf_kv {
    gguf_str key;
    uint32_t type;
    const uint8_t *val; /* scalar value, string header, or first array element */
    uint32_t arr_type;
    uint64_t arr_len;
    gguf_str *strs; /* string arrays: one view per element */
};

/* open-addressing hash from a name to an index; slots hold index + 1 */
struct name_index {
    int64_t *slots;
    size_t mask;
};

struct gguf_ctx {
    char *path;
    const uint8_t *base;
    size_t size;
    bool mapped; /* base came from mmap and must be unmapped */
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    int64_t n_kv;
    struct gguf_kv *kv;
    int64_t n_tensors;
    gguf_tensor *tensors;
    size_t *tensor_at; /* file offset of each tensor's info record (errors) */
    struct name_index kv_index;
    struct name_index tensor_index;
    /* gguf_make_resident's regions (munmap at close) */
    pthread_mutex_t resident_lock;
    struct resident_region {
        void *p;
        size_t len;
    } *resident;
    int n_resident;
};

struct reader {
    const uint8_t *base;
    size_t size;
    size_t pos;
    const char *name;
    char *err;
    size_t errlen;
};

static const size_t vtype_size[GGUF_VTYPE_COUNT] = {
    [GGUF_VTYPE_UINT8] = 1,   [GGUF_VTYPE_INT8] = 1,    [GGUF_VTYPE_UINT16] = 2,
    [GGUF_VTYPE_INT16] = 2,   [GGUF_VTYPE_UINT32] = 4,  [GGUF_VTYPE_INT32] = 4,
    [GGUF_VTYPE_FLOAT32] = 4, [GGUF_VTYPE_BOOL] = 1,    [GGUF_VTYPE_STRING] = 0,
    [GGUF_VTYPE_ARRAY] = 0,   [GGUF_VTYPE_UINT64] = 8,  [GGUF_VTYPE_INT64] = 8,
    [GGUF_VTYPE_FLOAT64] = 8,
};

const char *gguf_vtype_name(enum gguf_vtype t)
{
    static const char *names[GGUF_VTYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return (unsigned)t < GGUF_VTYPE_COUNT ? names[t] : "?";
}

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 4, 5))) static bool fail(struct reader *r, size_t at, const char *field,
                                                        const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_err(r->err, r->errlen, "%s: %s at offset %zu: %s", r->name, field, at, msg);
    return false;
}

static bool need(struct reader *r, size_t n, const char *field)
{
    if (n > r->size - r->pos)
        return fail(r, r->pos, field, "file truncated (need %zu bytes, %zu left)", n, r->size - r->pos);
    return true;
}

static bool rd_u32(struct reader *r, uint32_t *v, const char *field)
{
    if (!need(r, 4, field))
        return false;
    memcpy(v, r->base + r->pos, 4);
    r->pos += 4;
    return true;
}

static bool rd_u64(struct reader *r, uint64_t *v, const char *field)
{
    if (!need(r, 8, field))
        return false;
    memcpy(v, r->base + r->pos, 8);
    r->pos += 8;
    return true;
}

static bool rd_str(struct reader *r, gguf_str *s, const char *field)
{
    size_t at = r->pos;
    uint64_t len;
    if (!rd_u64(r, &len, field))
        return false;
    if (len > r->size - r->pos)
        return fail(r, at, field, "string length %llu runs past the end of the file (%zu bytes left)",
                    (unsigned long long)len, r->size - r->pos);
    s->ptr = (const char *)r->base + r->pos;
    s->len = len;
    r->pos += len;
    return true;
}

static bool str_eq(gguf_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* Prints at most 64 bytes of a name from the file, non-printables as '?'. */
static const char *printable(gguf_str s, char *buf, size_t cap)
{
    size_t n = s.len < 64 ? (size_t)s.len : 64;
    if (n > cap - 4)
        n = cap - 4;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        buf[o++] = c >= 0x20 && c != 0x7f ? (char)c : '?';
    }
    if (n < s.len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

/* ---- name hash ---------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static bool index_init(struct name_index *ix, int64_t n)
{
    size_t cap = 16;
    while (cap < (size_t)n * 2)
        cap *= 2;
    ix->slots = calloc(cap, sizeof *ix->slots);
    ix->mask = cap - 1;
    return ix->slots != NULL;
}

/* Finds name; when absent and insert_idx >= 0, inserts it. Returns the
 * existing index or -1. */
typedef gguf_str (*name_of_fn)(const gguf_ctx *ctx, int64_t i);

static int64_t index_lookup(const gguf_ctx *ctx, const struct name_index *ix, name_of_fn name_of, const char *p,
                            size_t n, int64_t insert_idx)
{
    if (!ix->slots)
        return -1;
    size_t h = (size_t)hash_bytes(p, n) & ix->mask;
    for (;; h = (h + 1) & ix->mask) {
        int64_t s = ix->slots[h];
        if (s == 0) {
            if (insert_idx >= 0)
                ix->slots[h] = insert_idx + 1;
            return -1;
        }
        gguf_str nm = name_of(ctx, s - 1);
        if (nm.len == n && memcmp(nm.ptr, p, n) == 0)
            return s - 1;
    }
}

static gguf_str kv_name(const gguf_ctx *ctx, int64_t i) { return ctx->kv[i].key; }
static gguf_str tensor_name(const gguf_ctx *ctx, int64_t i)
{
    const char *nm = ctx->tensors[i].name; /* set for every parsed tensor */
    return nm ? (gguf_str){nm, strlen(nm)} : (gguf_str){"", 0};
}

/* ---- parsing ------------------------------------------------------------ */

/* Grows *arr (of elem bytes) so index `need_n - 1` is valid; capacity doubles. */
static bool grow(void **arr, size_t *cap, size_t need_n, size_t elem)
{
    if (need_n <= *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need_n)
        nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return false;
    memset((char *)p + *cap * elem, 0, (nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return true;
}

static bool read_kv(struct reader *r, struct gguf_kv *kv, int64_t idx)
{
    char field[128], nb[80];
    snprintf(field, sizeof field, "key/value #%lld", (long long)idx);
    size_t at = r->pos;
    if (!rd_str(r, &kv->key, field))
        return false;
    if (kv->key.len == 0 || kv->key.len > GGUF_MAX_KEY)
        return fail(r, at, field, "key length %llu not in 1..%d", (unsigned long long)kv->key.len,
                    GGUF_MAX_KEY);
    if (memchr(kv->key.ptr, '\0', kv->key.len))
        return fail(r, at, field, "key contains a NUL byte");
    snprintf(field, sizeof field, "key '%s'", printable(kv->key, nb, sizeof nb));
    at = r->pos;
    if (!rd_u32(r, &kv->type, field))
        return false;
    if (kv->type >= GGUF_VTYPE_COUNT)
        return fail(r, at, field, "unknown value type %u", kv->type);
    if (kv->type == GGUF_VTYPE_STRING) {
        kv->val = r->base + r->pos;
        gguf_str s;
        return rd_str(r, &s, field);
    }
    if (kv->type != GGUF_VTYPE_ARRAY) {
        kv->val = r->base + r->pos;
        if (!need(r, vtype_size[kv->type], field))
            return false;
        r->pos += vtype_size[kv->type];
        return true;
    }
    at = r->pos;
    if (!rd_u32(r, &kv->arr_type, field))
        return false;
    if (kv->arr_type >= GGUF_VTYPE_COUNT)
        return fail(r, at, field, "unknown array element type %u", kv->arr_type);
    if (kv->arr_type == GGUF_VTYPE_ARRAY)
        return fail(r, at, field, "nested arrays are not supported");
    at = r->pos;
    if (!rd_u64(r, &kv->arr_len, field))
        return false;
    size_t left = r->size - r->pos;
    size_t min_elem = kv->arr_type == GGUF_VTYPE_STRING ? 8 : vtype_size[kv->arr_type];
    if (kv->arr_len > left / min_elem)
        return fail(r, at, field, "array length %llu of %s does not fit in the %zu bytes left",
                    (unsigned long long)kv->arr_len, gguf_vtype_name(kv->arr_type), left);
    kv->val = r->base + r->pos;
    if (kv->arr_type != GGUF_VTYPE_STRING) {
        r->pos += (size_t)kv->arr_len * vtype_size[kv->arr_type];
        return true;
    }
    /* Validate every string first, then allocate: the views then cost at most
     * twice the bytes the strings really occupy. */
    size_t start = r->pos;
    for (uint64_t j = 0; j < kv->arr_len; j++) {
        size_t el = r->pos;
        uint64_t len;
        if (!rd_u64(r, &len, field))
            return false;
        if (len > r->size - r->pos)
            return fail(r, el, field, "length %llu of string %llu (of %llu) runs past the end of the file",
                        (unsigned long long)len, (unsigned long long)j, (unsigned long long)kv->arr_len);
        r->pos += len;
    }
    kv->strs = malloc((kv->arr_len ? kv->arr_len : 1) * sizeof *kv->strs);
    if (!kv->strs)
        return fail(r, at, field, "out of memory for %llu strings", (unsigned long long)kv->arr_len);
    r->pos = start;
    for (uint64_t j = 0; j < kv->arr_len; j++)
        rd_str(r, &kv->strs[j], field);
    return true;
}

static bool read_tensor(struct reader *r, gguf_tensor *t, int64_t idx)
{
    char field[128], nb[80];
    snprintf(field, sizeof field, "tensor #%lld", (long long)idx);
    size_t at = r->pos;
    gguf_str name;
    if (!rd_str(r, &name, field))
        return false;
    if (name.len == 0 || name.len >= GGUF_MAX_NAME)
        return fail(r, at, field, "name length %llu not in 1..%d", (unsigned long long)name.len,
                    GGUF_MAX_NAME - 1);
    if (memchr(name.ptr, '\0', name.len))
        return fail(r, at, field, "name contains a NUL byte");
    t->name = malloc(name.len + 1);
    if (!t->name)
        return fail(r, at, field, "out of memory");
    memcpy(t->name, name.ptr, name.len);
    t->name[name.len] = '\0';
    snprintf(field, sizeof field, "tensor '%s'", printable(name, nb, sizeof nb));
    at = r->pos;
    if (!rd_u32(r, &t->n_dims, field))
        return false;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return fail(r, at, field, "n_dims %u not in 1..%d", t->n_dims, GGUF_MAX_DIMS);
    int64_t n = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t v;
        at = r->pos;
        if (!rd_u64(r, &v, field))
            return false;
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return fail(r, at, field, "dimension %u is %llu (must be 1..2^63-1)", d, (unsigned long long)v);
        t->ne[d] = (int64_t)v;
        if (__builtin_mul_overflow(n, t->ne[d], &n))
            return fail(r, at, field, "element count overflows int64 at dimension %u", d);
    }
    t->n_elements = n;
    at = r->pos;
    if (!rd_u32(r, &t->type, field))
        return false;
    if (!tensor_type_is_known(t->type))
        return fail(r, at, field, "unknown tensor type %u", t->type);
    int64_t bs = tensor_type_block_size(t->type);
    if (t->ne[0] % bs != 0)
        return fail(r, at, field, "row length %lld is not a multiple of the %s block size %lld",
                    (long long)t->ne[0], tensor_type_name(t->type), (long long)bs);
    size_t row = tensor_row_size(t->type, t->ne[0]);
    int64_t rows = n / t->ne[0];
    if ((uint64_t)rows > SIZE_MAX || __builtin_mul_overflow(row, (size_t)rows, &t->nbytes))
        return fail(r, at, field, "byte size overflows");
    if (!rd_u64(r, &t->offset, field))
        return false;
    return true;
}

/* ---- live mappings -------------------------------------------------------
 * A mapped file that is truncated while in use turns the next read of a
 * vanished page into SIGBUS. The handler (app/signals.c) looks the faulting
 * address up here to name the file, so the table is read without locks:
 * a slot's base is published last and withdrawn first. */
#define GGUF_MAX_MAPPINGS 32
static struct {
    _Atomic(uintptr_t) base;
    size_t size;
    const char *path;
} mappings[GGUF_MAX_MAPPINGS];

#define MAPPING_CLAIMED UINTPTR_MAX /* a slot being filled in */

static void mapping_add(const gguf_ctx *ctx)
{
    for (int i = 0; i < GGUF_MAX_MAPPINGS; i++) {
        uintptr_t free_slot = 0;
        if (!atomic_compare_exchange_strong(&mappings[i].base, &free_slot, MAPPING_CLAIMED))
            continue;
        mappings[i].size = ctx->size;
        mappings[i].path = ctx->path;
        atomic_store(&mappings[i].base, (uintptr_t)ctx->base);
        return;
    }
    /* more open files than slots: a fault in this one goes unnamed */
}

static void mapping_remove(const gguf_ctx *ctx)
{
    for (int i = 0; i < GGUF_MAX_MAPPINGS; i++) {
        uintptr_t mine = (uintptr_t)ctx->base;
        if (atomic_compare_exchange_strong(&mappings[i].base, &mine, 0))
            return;
    }
}

bool gguf_mapping_of(const void *addr, const char **path, size_t *offset)
{
    const uintptr_t a = (uintptr_t)addr;
    for (int i = 0; i < GGUF_MAX_MAPPINGS; i++) {
        const uintptr_t b = atomic_load(&mappings[i].base);
        if (b && b != MAPPING_CLAIMED && a >= b && a - b < mappings[i].size) {
            *path = mappings[i].path;
            *offset = a - b;
            return true;
        }
    }
    return false;
}

static void ctx_free(gguf_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->mapped && ctx->base)
        mapping_remove(ctx);
    for (int64_t i = 0; i < ctx->n_kv; i++)
        free(ctx->kv[i].strs);
    free(ctx->kv);
    for (int64_t i = 0; i < ctx->n_tensors; i++)
        free(ctx->tensors[i].name);
    free(ctx->tensors);
    free(ctx->tensor_at);
    free(ctx->kv_index.slots);
    free(ctx->tensor_index.slots);
    if (ctx->mapped && ctx->base)
        munmap((void *)ctx->base, ctx->size);
    for (int i = 0; i < ctx->n_resident; i++)
        munmap(ctx->resident[i].p, ctx->resident[i].len);
    free(ctx->resident);
    pthread_mutex_destroy(&ctx->resident_lock);
    free(ctx->path);
    free(ctx);
}

void gguf_close(gguf_ctx *ctx) { ctx_free(ctx); }

static bool parse_header(gguf_ctx *ctx, struct reader *r, uint64_t *n_tensors, uint64_t *n_kv)
{
    if (!need(r, 4, "magic"))
        return false;
    if (memcmp(r->base, GGUF_MAGIC, 4) != 0)
        return fail(r, 0, "magic", "not a GGUF file (magic %02x %02x %02x %02x, want 'GGUF')", r->base[0],
                    r->base[1], r->base[2], r->base[3]);
    r->pos = 4;
    if (!rd_u32(r, &ctx->version, "version"))
        return false;
    if (ctx->version == 1)
        return fail(r, 4, "version", "GGUF v1 is not supported (v2 and v3 are; re-convert the model)");
    if (ctx->version != 2 && ctx->version != 3) {
        if (ctx->version != 0 && (ctx->version & 0xffff) == 0)
            return fail(r, 4, "version",
                        "version %u (0x%08x) looks byte-swapped: big-endian GGUF is not supported",
                        ctx->version, ctx->version);
        return fail(r, 4, "version", "unsupported version %u (v2 and v3 are)", ctx->version);
    }
    size_t at = r->pos;
    if (!rd_u64(r, n_tensors, "tensor count"))
        return false;
    if (*n_tensors > (r->size - r->pos) / GGUF_MIN_TENSOR_BYTES)
        return fail(r, at, "tensor count", "%llu tensors cannot fit in a %zu-byte file",
                    (unsigned long long)*n_tensors, r->size);
    at = r->pos;
    if (!rd_u64(r, n_kv, "key/value count"))
        return false;
    if (*n_kv > (r->size - r->pos) / GGUF_MIN_KV_BYTES)
        return fail(r, at, "key/value count", "%llu key/values cannot fit in a %zu-byte file",
                    (unsigned long long)*n_kv, r->size);
    return true;
}

static bool parse_kvs(gguf_ctx *ctx, struct reader *r, uint64_t n_kv)
{
    size_t cap = 0;
    char nb[80];
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < n_kv; i++) {
        size_t at = r->pos;
        if (!grow((void **)&ctx->kv, &cap, i + 1, sizeof *ctx->kv))
            return fail(r, at, "key/value table", "out of memory");
        struct gguf_kv *kv = &ctx->kv[i];
        ctx->n_kv = (int64_t)i + 1;
        if (!read_kv(r, kv, (int64_t)i))
            return false;
        if (str_eq(kv->key, "general.alignment")) {
            uint32_t a;
            if (kv->type != GGUF_VTYPE_UINT32)
                return fail(r, at, "general.alignment", "must be u32, not %s", gguf_vtype_name(kv->type));
            memcpy(&a, kv->val, 4);
            if (a == 0 || (a & (a - 1)) != 0)
                return fail(r, at, "general.alignment", "%u is not a power of two", a);
            ctx->alignment = a;
        }
    }
    if (!index_init(&ctx->kv_index, ctx->n_kv))
        return fail(r, r->pos, "key/value table", "out of memory");
    for (int64_t i = 0; i < ctx->n_kv; i++) {
        gguf_str k = ctx->kv[i].key;
        if (index_lookup(ctx, &ctx->kv_index, kv_name, k.ptr, k.len, i) >= 0)
            return fail(r, (size_t)((const uint8_t *)k.ptr - r->base) - 8, "key/value table",
                        "duplicate key '%s'", printable(k, nb, sizeof nb));
    }
    return true;
}

static bool parse_tensors(gguf_ctx *ctx, struct reader *r, uint64_t n_tensors)
{
    size_t cap = 0, cap_at = 0;
    char nb[80];
    for (uint64_t i = 0; i < n_tensors; i++) {
        size_t at = r->pos;
        if (!grow((void **)&ctx->tensors, &cap, i + 1, sizeof *ctx->tensors) ||
            !grow((void **)&ctx->tensor_at, &cap_at, i + 1, sizeof *ctx->tensor_at))
            return fail(r, at, "tensor table", "out of memory");
        ctx->n_tensors = (int64_t)i + 1;
        ctx->tensor_at[i] = at;
        if (!read_tensor(r, &ctx->tensors[i], (int64_t)i))
            return false;
    }
    if (!index_init(&ctx->tensor_index, ctx->n_tensors))
        return fail(r, r->pos, "tensor table", "out of memory");
    for (int64_t i = 0; i < ctx->n_tensors; i++) {
        gguf_str nm = tensor_name(ctx, i);
        if (index_lookup(ctx, &ctx->tensor_index, tensor_name, nm.ptr, nm.len, i) >= 0)
            return fail(r, ctx->tensor_at[i], "tensor table", "duplicate tensor name '%s'",
                        printable(nm, nb, sizeof nb));
    }
    return true;
}

/* The alignment in memory that reading a tensor in place needs: its widest
 * scalar (F32 values, a Q8_K's float scale, the F16 scales of the other
 * block types). */
static size_t type_align(uint32_t type)
{
    switch (type) {
    case TENSOR_TYPE_F32:
    case TENSOR_TYPE_I32:
    case TENSOR_TYPE_Q8_K: return 4;
    case TENSOR_TYPE_I64:
    case TENSOR_TYPE_F64: return 8;
    case TENSOR_TYPE_I8: return 1;
    default: return 2;
    }
}

/* Tensor data: aligned, laid out back to back in table order (each tensor
 * starts at the padded end of the previous one, as ggml writes them and as
 * llama.cpp requires), and inside the file. */
static bool check_data(gguf_ctx *ctx, struct reader *r)
{
    size_t a = ctx->alignment;
    if (r->pos > SIZE_MAX - a)
        return fail(r, r->pos, "data section", "offset overflows");
    ctx->data_offset = (r->pos + a - 1) / a * a;
    uint64_t expect = 0;
    for (int64_t i = 0; i < ctx->n_tensors; i++) {
        gguf_tensor *t = &ctx->tensors[i];
        /* the offset field is the last 8 bytes of the tensor's info record */
        gguf_str nm = tensor_name(ctx, i);
        size_t at = ctx->tensor_at[i] + 8 + nm.len + 4 + 8 * (size_t)t->n_dims + 4;
        char field[128], nb[80];
        snprintf(field, sizeof field, "tensor '%s' data offset", printable(nm, nb, sizeof nb));
        if (t->offset % a != 0)
            return fail(r, at, field, "%llu is not a multiple of the alignment %zu", (unsigned long long)t->offset,
                        a);
        if (t->offset != expect)
            return fail(r, at, field, "%llu, expected %llu (tensors must be stored back to back in table order)",
                        (unsigned long long)t->offset, (unsigned long long)expect);
        if (ctx->data_offset > r->size || t->offset > r->size - ctx->data_offset ||
            t->nbytes > r->size - ctx->data_offset - t->offset)
            return fail(r, at, field, "bytes %zu..%llu of the file lie past its end (%zu bytes)",
                        ctx->data_offset + (size_t)t->offset,
                        (unsigned long long)ctx->data_offset + t->offset + t->nbytes, r->size);
        t->data = r->base + ctx->data_offset + t->offset;
        /* general.alignment 1 or 2 can put a tensor where its values cannot
         * be read in place (llama.cpp reads them misaligned anyway) */
        const size_t ta = type_align(t->type);
        if ((uintptr_t)t->data % ta != 0)
            return fail(r, at, field, "data at byte %zu is not %zu-byte aligned, as %s values must be",
                        ctx->data_offset + (size_t)t->offset, ta, tensor_type_name(t->type));
        /* cannot overflow: offset + nbytes <= size and a <= 2^31 */
        expect = (t->offset + t->nbytes + a - 1) / a * a;
    }
    return true;
}

static bool parse(gguf_ctx *ctx, struct reader *r)
{
    uint64_t n_tensors = 0, n_kv = 0;
    return parse_header(ctx, r, &n_tensors, &n_kv) && parse_kvs(ctx, r, n_kv) &&
           parse_tensors(ctx, r, n_tensors) && check_data(ctx, r);
}

gguf_ctx *gguf_open_buffer(const void *buf, size_t size, const char *name, char *err, size_t errlen)
{
    if (!name)
        name = "(buffer)";
    if (!buf)
        size = 0;
    gguf_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx || !(ctx->path = strdup(name))) {
        free(ctx);
        set_err(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    pthread_mutex_init(&ctx->resident_lock, NULL);
    ctx->base = buf;
    ctx->size = size;
    struct reader r = {.base = buf, .size = size, .name = ctx->path, .err = err, .errlen = errlen};
    if (!parse(ctx, &r)) {
        ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

gguf_ctx *gguf_open(const char *path, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO must not hang waiting for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if (st.st_size < 8) {
        set_err(err, errlen, "%s: magic at offset 0: file too small to be GGUF (%lld bytes)", path,
                (long long)st.st_size);
        close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > SIZE_MAX) {
        set_err(err, errlen, "%s: file too large to map (%lld bytes)", path, (long long)st.st_size);
        close(fd);
        return NULL;
    }
    /* MAP_PRIVATE: the weights are never written; a private mapping keeps a
     * concurrent writer's changes from showing through as far as the kernel allows. */
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        set_err(err, errlen, "%s: mmap failed: %s", path, strerror(errno));
        return NULL;
    }
    gguf_ctx *ctx = gguf_open_buffer(p, (size_t)st.st_size, path, err, errlen);
    if (!ctx) {
        munmap(p, (size_t)st.st_size);
        return NULL;
    }
    ctx->mapped = true;
    mapping_add(ctx);
    return ctx;
}

/* ---- accessors ---------------------------------------------------------- */

uint32_t gguf_version(const gguf_ctx *ctx) { return ctx->version; }
size_t gguf_file_size(const gguf_ctx *ctx) { return ctx->size; }
size_t gguf_alignment(const gguf_ctx *ctx) { return ctx->alignment; }
size_t gguf_data_offset(const gguf_ctx *ctx) { return ctx->data_offset; }
const char *gguf_path(const gguf_ctx *ctx) { return ctx->path; }
bool gguf_is_mapped(const gguf_ctx *ctx) { return ctx->mapped; }

void gguf_read_ahead(const gguf_ctx *ctx)
{
    if (ctx->mapped && ctx->size > 0)
        posix_madvise((void *)(uintptr_t)ctx->base, ctx->size, POSIX_MADV_WILLNEED);
}
const void *gguf_file_bytes(const gguf_ctx *ctx) { return ctx->base; }

/* ---- resident copies ---------------------------------------------------- */

/* Below this many bytes to move the copy is not worth its time: a small
 * model's page tables fit the caches anyway (a variable for the tests). */
size_t gguf_resident_min = (size_t)64 << 20;
/* bytes copied between two releases of the file's pages */
#define RESIDENT_SLICE ((size_t)8 << 20)

static bool in_file_mapping(const gguf_ctx *ctx, const void *p)
{
    return (const uint8_t *)p >= ctx->base && (const uint8_t *)p < ctx->base + ctx->size;
}

/* The whole pages inside [p, p + n): the file's own pages, which stay in
 * the page cache (and fault back in, should an old pointer read them). */
static void drop_file_pages(const void *p, size_t n)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

bool gguf_make_resident(const gguf_ctx *cctx, const int64_t *idx, int n, size_t min_bytes)
{
    gguf_ctx *ctx = (gguf_ctx *)(uintptr_t)cctx; /* where the bytes live changes, not what they are */
    if (!ctx->mapped || n <= 0)
        return false;
    pthread_mutex_lock(&ctx->resident_lock);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const gguf_tensor *t = idx[i] >= 0 && idx[i] < ctx->n_tensors ? &ctx->tensors[idx[i]] : NULL;
        if (t && in_file_mapping(ctx, t->data))
            total += (t->nbytes + 63) & ~(size_t)63;
    }
    struct resident_region *grown = NULL;
    uint8_t *dst = NULL;
    size_t len = 0;
    if (total > 0 && total >= min_bytes &&
        (grown = realloc(ctx->resident, (size_t)(ctx->n_resident + 1) * sizeof *ctx->resident)) != NULL) {
        ctx->resident = grown;
        /* 2 MB aligned, so that the kernel can back it with huge pages (a
         * few small tensors in 4 KB pages: a huge page would be mostly
         * waste) */
        const bool small = total < ((size_t)1 << 20);
        const size_t align = small ? 4096 : (size_t)2 << 20, want = (total + align - 1) & ~(align - 1);
        uint8_t *p = mmap(NULL, want + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            const size_t head = (align - (uintptr_t)p % align) % align;
            if (head)
                munmap(p, head);
            munmap(p + head + want, align - head);
            dst = p + head;
            len = want;
#ifdef MADV_HUGEPAGE
            if (!small)
                madvise(dst, len, MADV_HUGEPAGE);
#endif
            ctx->resident[ctx->n_resident++] = (struct resident_region){dst, len};
        }
    }
    if (dst) {
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            gguf_tensor *t = idx[i] >= 0 && idx[i] < ctx->n_tensors ? &ctx->tensors[idx[i]] : NULL;
            if (!t || !in_file_mapping(ctx, t->data))
                continue; /* moved already (a listed twice, or an earlier call) */
            const uint8_t *src = t->data;
            for (size_t o = 0; o < t->nbytes; o += RESIDENT_SLICE) {
                const size_t k = t->nbytes - o < RESIDENT_SLICE ? t->nbytes - o : RESIDENT_SLICE;
                memcpy(dst + off + o, src + o, k);
                drop_file_pages(src + o, k);
            }
            /* the copy is whole before any thread can see the pointer */
            __atomic_store_n(&t->data, (const void *)(dst + off), __ATOMIC_RELEASE);
            off += (t->nbytes + 63) & ~(size_t)63;
        }
    }
    pthread_mutex_unlock(&ctx->resident_lock);
    return dst != NULL;
}

int64_t gguf_n_kv(const gguf_ctx *ctx) { return ctx->n_kv; }
int64_t gguf_n_tensors(const gguf_ctx *ctx) { return ctx->n_tensors; }

int64_t gguf_find_key(const gguf_ctx *ctx, const char *key)
{
    return key ? index_lookup(ctx, &ctx->kv_index, kv_name, key, strlen(key), -1) : -1;
}

static const struct gguf_kv *kv_at(const gguf_ctx *ctx, int64_t i)
{
    return i >= 0 && i < ctx->n_kv ? &ctx->kv[i] : NULL;
}

gguf_str gguf_kv_key(const gguf_ctx *ctx, int64_t i)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    return kv ? kv->key : (gguf_str){"", 0};
}

enum gguf_vtype gguf_kv_type(const gguf_ctx *ctx, int64_t i)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    return kv ? (enum gguf_vtype)kv->type : GGUF_VTYPE_COUNT;
}

enum gguf_vtype gguf_arr_type(const gguf_ctx *ctx, int64_t i)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    return kv && kv->type == GGUF_VTYPE_ARRAY ? (enum gguf_vtype)kv->arr_type : GGUF_VTYPE_COUNT;
}

uint64_t gguf_arr_len(const gguf_ctx *ctx, int64_t i)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    return kv && kv->type == GGUF_VTYPE_ARRAY ? kv->arr_len : 0;
}

/* Numeric value at p of type t as double, int64 (saturated) and uint64
 * (negatives give 0); *is_neg tells whether the value is below zero.
 * Returns false for non-integers (floats, strings, arrays). */
static bool read_num(const uint8_t *p, uint32_t t, double *d, int64_t *i, uint64_t *u, bool *is_neg)
{
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64; float f32; double f64;
    } v;
    *is_neg = false;
    *d = 0;
    *i = 0;
    *u = 0;
    switch (t) {
    case GGUF_VTYPE_UINT8: case GGUF_VTYPE_BOOL: memcpy(&v.u8, p, 1); *u = v.u8; break;
    case GGUF_VTYPE_UINT16: memcpy(&v.u16, p, 2); *u = v.u16; break;
    case GGUF_VTYPE_UINT32: memcpy(&v.u32, p, 4); *u = v.u32; break;
    case GGUF_VTYPE_UINT64: memcpy(&v.u64, p, 8); *u = v.u64; break;
    case GGUF_VTYPE_INT8: memcpy(&v.i8, p, 1); *i = v.i8; goto sgn; // NOLINT(bugprone-signed-char-misuse): i8 is signed
    case GGUF_VTYPE_INT16: memcpy(&v.i16, p, 2); *i = v.i16; goto sgn;
    case GGUF_VTYPE_INT32: memcpy(&v.i32, p, 4); *i = v.i32; goto sgn;
    case GGUF_VTYPE_INT64: memcpy(&v.i64, p, 8); *i = v.i64; goto sgn;
    case GGUF_VTYPE_FLOAT32: memcpy(&v.f32, p, 4); *d = v.f32; *is_neg = v.f32 < 0; return false;
    case GGUF_VTYPE_FLOAT64: memcpy(&v.f64, p, 8); *d = v.f64; *is_neg = v.f64 < 0; return false;
    default: return false;
    }
    *i = *u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)*u;
    *d = (double)*u;
    return true;
sgn:
    *is_neg = *i < 0;
    *u = *is_neg ? 0 : (uint64_t)*i;
    *d = (double)*i;
    return true;
}

static const struct gguf_kv *find(const gguf_ctx *ctx, const char *key) { return kv_at(ctx, gguf_find_key(ctx, key)); }

static bool is_scalar(const struct gguf_kv *kv)
{
    return kv && kv->type != GGUF_VTYPE_STRING && kv->type != GGUF_VTYPE_ARRAY;
}

/* Integer value of key; false for absent keys, strings, arrays and floats. */
static bool get_int(const gguf_ctx *ctx, const char *key, int64_t *i, uint64_t *u, bool *neg)
{
    const struct gguf_kv *kv = find(ctx, key);
    double d;
    return is_scalar(kv) && read_num(kv->val, kv->type, &d, i, u, neg);
}

bool gguf_get_u32(const gguf_ctx *ctx, const char *key, uint32_t *out)
{
    int64_t i; uint64_t u; bool neg;
    if (!get_int(ctx, key, &i, &u, &neg) || neg || u > UINT32_MAX)
        return false;
    *out = (uint32_t)u;
    return true;
}

bool gguf_get_u64(const gguf_ctx *ctx, const char *key, uint64_t *out)
{
    int64_t i; uint64_t u; bool neg;
    if (!get_int(ctx, key, &i, &u, &neg) || neg)
        return false;
    *out = u;
    return true;
}

bool gguf_get_i64(const gguf_ctx *ctx, const char *key, int64_t *out)
{
    int64_t i; uint64_t u; bool neg;
    if (!get_int(ctx, key, &i, &u, &neg))
        return false;
    if (!neg && u > (uint64_t)INT64_MAX)
        return false;
    *out = i;
    return true;
}

bool gguf_get_f32(const gguf_ctx *ctx, const char *key, float *out)
{
    double d;
    if (!gguf_kv_as_f64(ctx, gguf_find_key(ctx, key), &d))
        return false;
    *out = (float)d;
    return true;
}

bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out)
{
    int64_t i; uint64_t u; bool neg;
    if (!get_int(ctx, key, &i, &u, &neg))
        return false;
    *out = neg || u != 0;
    return true;
}

bool gguf_kv_as_f64(const gguf_ctx *ctx, int64_t i, double *out)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    if (!is_scalar(kv))
        return false;
    int64_t iv; uint64_t u; bool neg;
    read_num(kv->val, kv->type, out, &iv, &u, &neg);
    return true;
}

bool gguf_kv_as_int(const gguf_ctx *ctx, int64_t i, int64_t *iv, uint64_t *uv, bool *neg)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    double d;
    return is_scalar(kv) && read_num(kv->val, kv->type, &d, iv, uv, neg);
}

bool gguf_kv_as_str(const gguf_ctx *ctx, int64_t i, gguf_str *out)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    if (!kv || kv->type != GGUF_VTYPE_STRING)
        return false;
    uint64_t len;
    memcpy(&len, kv->val, 8);
    out->ptr = (const char *)kv->val + 8;
    out->len = len;
    return true;
}

bool gguf_get_str(const gguf_ctx *ctx, const char *key, gguf_str *out)
{
    return gguf_kv_as_str(ctx, gguf_find_key(ctx, key), out);
}

char *gguf_get_str_dup(const gguf_ctx *ctx, const char *key)
{
    gguf_str s;
    if (!gguf_get_str(ctx, key, &s))
        return NULL;
    char *c = malloc(s.len + 1);
    if (!c)
        return NULL;
    memcpy(c, s.ptr, s.len);
    c[s.len] = '\0';
    return c;
}

gguf_str gguf_arr_str(const gguf_ctx *ctx, int64_t i, uint64_t j)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    if (!kv || kv->type != GGUF_VTYPE_ARRAY || kv->arr_type != GGUF_VTYPE_STRING || j >= kv->arr_len)
        return (gguf_str){"", 0};
    return kv->strs[j];
}

static const uint8_t *arr_num(const gguf_ctx *ctx, int64_t i, uint64_t j, uint32_t *type)
{
    const struct gguf_kv *kv = kv_at(ctx, i);
    if (!kv || kv->type != GGUF_VTYPE_ARRAY || kv->arr_type == GGUF_VTYPE_STRING || j >= kv->arr_len)
        return NULL;
    *type = kv->arr_type;
    return kv->val + j * vtype_size[kv->arr_type];
}

double gguf_arr_f64(const gguf_ctx *ctx, int64_t i, uint64_t j)
{
    uint32_t t;
    const uint8_t *p = arr_num(ctx, i, j, &t);
    double d = 0; int64_t iv; uint64_t u; bool neg;
    if (p)
        read_num(p, t, &d, &iv, &u, &neg);
    return d;
}

int64_t gguf_arr_i64(const gguf_ctx *ctx, int64_t i, uint64_t j)
{
    uint32_t t;
    const uint8_t *p = arr_num(ctx, i, j, &t);
    double d; int64_t iv = 0; uint64_t u; bool neg;
    if (p && !read_num(p, t, &d, &iv, &u, &neg)) /* float elements: truncate, saturating */
        iv = d != d ? 0 : d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
    return iv;
}

uint64_t gguf_arr_u64(const gguf_ctx *ctx, int64_t i, uint64_t j)
{
    uint32_t t;
    const uint8_t *p = arr_num(ctx, i, j, &t);
    double d; int64_t iv; uint64_t u = 0; bool neg;
    if (p && !read_num(p, t, &d, &iv, &u, &neg)) /* float elements: truncate, saturating */
        u = !(d > 0) ? 0 : d >= 1.8e19 ? UINT64_MAX : (uint64_t)d;
    return u;
}

const gguf_tensor *gguf_tensor_at(const gguf_ctx *ctx, int64_t i)
{
    return i >= 0 && i < ctx->n_tensors ? &ctx->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_ctx *ctx, const char *name)
{
    if (!name)
        return NULL;
    return gguf_tensor_at(ctx, index_lookup(ctx, &ctx->tensor_index, tensor_name, name, strlen(name), -1));
}
