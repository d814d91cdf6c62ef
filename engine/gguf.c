/* GGUF reader: everything is validated once in gguf_open, so the getters can
 * trust offsets and lengths afterwards. */
#include "gguf.h"
#include "tensor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_MAX_NAME 256
#define GGUF_MAX_DIMS 4

struct gguf_kv {
    gguf_str key;
    uint32_t type;
    const uint8_t *val; /* scalar value, string header, or first array element */
    uint32_t arr_type;
    uint64_t arr_len;
    gguf_str *strs; /* string arrays: one view per element */
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

__attribute__((format(printf, 4, 5))) static bool fail(struct reader *r, size_t at, const char *field,
                                                        const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s: %s at offset %zu: %s", r->name, field, at, msg);
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
        return fail(r, at, field, "string length %llu runs past the end of the file",
                    (unsigned long long)len);
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

/* Reads one value of `type` (not an array) and advances. */
static bool skip_scalar(struct reader *r, uint32_t type, const char *field)
{
    if (type == GGUF_VTYPE_STRING) {
        gguf_str s;
        return rd_str(r, &s, field);
    }
    if (!need(r, vtype_size[type], field))
        return false;
    r->pos += vtype_size[type];
    return true;
}

static bool read_kv(struct reader *r, struct gguf_kv *kv, int64_t idx)
{
    char field[96];
    snprintf(field, sizeof field, "key/value #%lld", (long long)idx);
    size_t at = r->pos;
    if (!rd_str(r, &kv->key, field))
        return false;
    if (kv->key.len == 0 || kv->key.len > GGUF_MAX_NAME)
        return fail(r, at, field, "key length %llu out of range", (unsigned long long)kv->key.len);
    snprintf(field, sizeof field, "key '%.*s'", (int)kv->key.len, kv->key.ptr);
    at = r->pos;
    if (!rd_u32(r, &kv->type, field))
        return false;
    if (kv->type >= GGUF_VTYPE_COUNT)
        return fail(r, at, field, "unknown value type %u", kv->type);
    if (kv->type != GGUF_VTYPE_ARRAY) {
        kv->val = r->base + r->pos;
        return skip_scalar(r, kv->type, field);
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
        return fail(r, at, field, "array length %llu does not fit in the file",
                    (unsigned long long)kv->arr_len);
    kv->val = r->base + r->pos;
    if (kv->arr_type != GGUF_VTYPE_STRING) {
        r->pos += (size_t)kv->arr_len * vtype_size[kv->arr_type];
        return true;
    }
    kv->strs = malloc((kv->arr_len ? kv->arr_len : 1) * sizeof *kv->strs);
    if (!kv->strs)
        return fail(r, at, field, "out of memory for %llu strings", (unsigned long long)kv->arr_len);
    for (uint64_t j = 0; j < kv->arr_len; j++)
        if (!rd_str(r, &kv->strs[j], field))
            return false;
    return true;
}

static bool read_tensor(struct reader *r, gguf_tensor *t, int64_t idx)
{
    char field[96];
    snprintf(field, sizeof field, "tensor #%lld", (long long)idx);
    size_t at = r->pos;
    gguf_str name;
    if (!rd_str(r, &name, field))
        return false;
    if (name.len == 0 || name.len >= GGUF_MAX_NAME)
        return fail(r, at, field, "name length %llu out of range", (unsigned long long)name.len);
    t->name = malloc(name.len + 1);
    if (!t->name)
        return fail(r, at, field, "out of memory");
    memcpy(t->name, name.ptr, name.len);
    t->name[name.len] = '\0';
    if (memchr(t->name, '\0', name.len))
        return fail(r, at, field, "name contains a NUL byte");
    snprintf(field, sizeof field, "tensor '%s'", t->name);
    at = r->pos;
    if (!rd_u32(r, &t->n_dims, field))
        return false;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return fail(r, at, field, "n_dims %u not in 1..%d", t->n_dims, GGUF_MAX_DIMS);
    int64_t n = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if ((uint32_t)d >= t->n_dims)
            continue;
        uint64_t v;
        at = r->pos;
        if (!rd_u64(r, &v, field))
            return false;
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return fail(r, at, field, "dimension %d is %llu", d, (unsigned long long)v);
        t->ne[d] = (int64_t)v;
        if (__builtin_mul_overflow(n, t->ne[d], &n))
            return fail(r, at, field, "element count overflows");
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
    if (__builtin_mul_overflow(row, (size_t)rows, &t->nbytes))
        return fail(r, at, field, "byte size overflows");
    if (!rd_u64(r, &t->offset, field))
        return false;
    return true;
}

static void ctx_free(gguf_ctx *ctx)
{
    if (!ctx)
        return;
    for (int64_t i = 0; i < ctx->n_kv; i++)
        free(ctx->kv[i].strs);
    free(ctx->kv);
    for (int64_t i = 0; i < ctx->n_tensors; i++)
        free(ctx->tensors[i].name);
    free(ctx->tensors);
    if (ctx->mapped && ctx->base)
        munmap((void *)ctx->base, ctx->size);
    free(ctx->path);
    free(ctx);
}

void gguf_close(gguf_ctx *ctx) { ctx_free(ctx); }

static bool parse(gguf_ctx *ctx, struct reader *r)
{
    if (!need(r, 4, "magic"))
        return false;
    if (memcmp(r->base, GGUF_MAGIC, 4) != 0)
        return fail(r, 0, "magic", "not a GGUF file (magic %02x %02x %02x %02x)", r->base[0],
                    r->base[1], r->base[2], r->base[3]);
    r->pos = 4;
    if (!rd_u32(r, &ctx->version, "version"))
        return false;
    if (ctx->version == 1)
        return fail(r, 4, "version", "GGUF v1 is not supported (v2 and v3 are)");
    if (ctx->version != 2 && ctx->version != 3) {
        if ((ctx->version & 0xffff) == 0)
            return fail(r, 4, "version", "version %u looks byte-swapped: big-endian GGUF is not supported",
                        ctx->version);
        return fail(r, 4, "version", "unsupported version %u (v2 and v3 are)", ctx->version);
    }
    uint64_t n_tensors, n_kv;
    size_t at = r->pos;
    if (!rd_u64(r, &n_tensors, "tensor count"))
        return false;
    /* every tensor info takes at least 8+1+4+8+4+8 bytes, every kv 8+1+4+1 */
    if (n_tensors > (r->size - r->pos) / 33)
        return fail(r, at, "tensor count", "%llu tensors cannot fit in a %zu-byte file",
                    (unsigned long long)n_tensors, r->size);
    at = r->pos;
    if (!rd_u64(r, &n_kv, "key/value count"))
        return false;
    if (n_kv > (r->size - r->pos) / 14)
        return fail(r, at, "key/value count", "%llu key/values cannot fit in a %zu-byte file",
                    (unsigned long long)n_kv, r->size);

    ctx->kv = calloc(n_kv ? n_kv : 1, sizeof *ctx->kv);
    ctx->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *ctx->tensors);
    if (!ctx->kv || !ctx->tensors)
        return fail(r, at, "header", "out of memory");

    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < n_kv; i++) {
        struct gguf_kv *kv = &ctx->kv[i];
        ctx->n_kv = (int64_t)i + 1;
        at = r->pos;
        if (!read_kv(r, kv, (int64_t)i))
            return false;
        for (uint64_t j = 0; j < i; j++)
            if (ctx->kv[j].key.len == kv->key.len && memcmp(ctx->kv[j].key.ptr, kv->key.ptr, kv->key.len) == 0)
                return fail(r, at, "key/value", "duplicate key '%.*s'", (int)kv->key.len, kv->key.ptr);
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

    for (uint64_t i = 0; i < n_tensors; i++) {
        ctx->n_tensors = (int64_t)i + 1;
        at = r->pos;
        if (!read_tensor(r, &ctx->tensors[i], (int64_t)i))
            return false;
        for (uint64_t j = 0; j < i; j++)
            if (strcmp(ctx->tensors[j].name, ctx->tensors[i].name) == 0)
                return fail(r, at, "tensor table", "duplicate tensor name '%s'", ctx->tensors[i].name);
    }

    size_t a = ctx->alignment;
    ctx->data_offset = (r->pos + a - 1) / a * a;
    if (r->pos > SIZE_MAX - a)
        return fail(r, r->pos, "data section", "offset overflows");
    for (int64_t i = 0; i < ctx->n_tensors; i++) {
        gguf_tensor *t = &ctx->tensors[i];
        char field[96];
        snprintf(field, sizeof field, "tensor '%s' data", t->name);
        if (t->offset % a != 0)
            return fail(r, ctx->data_offset, field, "offset %llu is not aligned to %zu",
                        (unsigned long long)t->offset, a);
        if (ctx->data_offset > r->size || t->offset > r->size - ctx->data_offset ||
            t->nbytes > r->size - ctx->data_offset - t->offset)
            return fail(r, ctx->data_offset, field,
                        "bytes %llu..%llu (+%zu data offset) lie outside the %zu-byte file",
                        (unsigned long long)t->offset, (unsigned long long)(t->offset + t->nbytes),
                        ctx->data_offset, r->size);
        t->data = r->base + ctx->data_offset + t->offset;
    }
    return true;
}

gguf_ctx *gguf_open_buffer(const void *buf, size_t size, const char *name, char *err, size_t errlen)
{
    gguf_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    ctx->path = strdup(name ? name : "(buffer)");
    ctx->base = buf;
    ctx->size = size;
    struct reader r = {.base = buf, .size = size, .name = ctx->path, .err = err, .errlen = errlen};
    if (!ctx->path || !parse(ctx, &r)) {
        ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

gguf_ctx *gguf_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if (st.st_size < 8) {
        snprintf(err, errlen, "%s: magic at offset 0: file too small to be GGUF (%lld bytes)", path,
                 (long long)st.st_size);
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap failed: %s", path, strerror(errno));
        return NULL;
    }
    gguf_ctx *ctx = gguf_open_buffer(p, (size_t)st.st_size, path, err, errlen);
    if (!ctx) {
        munmap(p, (size_t)st.st_size);
        return NULL;
    }
    ctx->mapped = true;
    return ctx;
}

uint32_t gguf_version(const gguf_ctx *ctx) { return ctx->version; }
size_t gguf_file_size(const gguf_ctx *ctx) { return ctx->size; }
size_t gguf_alignment(const gguf_ctx *ctx) { return ctx->alignment; }
size_t gguf_data_offset(const gguf_ctx *ctx) { return ctx->data_offset; }
const char *gguf_path(const gguf_ctx *ctx) { return ctx->path; }
int64_t gguf_n_kv(const gguf_ctx *ctx) { return ctx->n_kv; }
int64_t gguf_n_tensors(const gguf_ctx *ctx) { return ctx->n_tensors; }

int64_t gguf_find_key(const gguf_ctx *ctx, const char *key)
{
    for (int64_t i = 0; i < ctx->n_kv; i++)
        if (str_eq(ctx->kv[i].key, key))
            return i;
    return -1;
}

gguf_str gguf_kv_key(const gguf_ctx *ctx, int64_t i) { return ctx->kv[i].key; }
enum gguf_vtype gguf_kv_type(const gguf_ctx *ctx, int64_t i) { return (enum gguf_vtype)ctx->kv[i].type; }
enum gguf_vtype gguf_arr_type(const gguf_ctx *ctx, int64_t i) { return (enum gguf_vtype)ctx->kv[i].arr_type; }
uint64_t gguf_arr_len(const gguf_ctx *ctx, int64_t i)
{
    return ctx->kv[i].type == GGUF_VTYPE_ARRAY ? ctx->kv[i].arr_len : 0;
}

/* Numeric value at p of type t; *is_int tells whether it is an integer. */
static bool read_num(const uint8_t *p, uint32_t t, double *d, int64_t *i, uint64_t *u, bool *is_signed)
{
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64; float f32; double f64;
    } v;
    *is_signed = true;
    switch (t) {
    case GGUF_VTYPE_UINT8: case GGUF_VTYPE_BOOL:
        memcpy(&v.u8, p, 1); *u = v.u8; *i = v.u8; *d = v.u8; *is_signed = false; return true;
    case GGUF_VTYPE_INT8: memcpy(&v.i8, p, 1); *i = v.i8; *d = v.i8; break;
    case GGUF_VTYPE_UINT16: memcpy(&v.u16, p, 2); *u = v.u16; *i = v.u16; *d = v.u16; *is_signed = false; return true;
    case GGUF_VTYPE_INT16: memcpy(&v.i16, p, 2); *i = v.i16; *d = v.i16; break;
    case GGUF_VTYPE_UINT32: memcpy(&v.u32, p, 4); *u = v.u32; *i = v.u32; *d = v.u32; *is_signed = false; return true;
    case GGUF_VTYPE_INT32: memcpy(&v.i32, p, 4); *i = v.i32; *d = v.i32; break;
    case GGUF_VTYPE_UINT64:
        memcpy(&v.u64, p, 8); *u = v.u64; *i = v.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.u64;
        *d = (double)v.u64; *is_signed = false; return true;
    case GGUF_VTYPE_INT64: memcpy(&v.i64, p, 8); *i = v.i64; *d = (double)v.i64; break;
    case GGUF_VTYPE_FLOAT32: memcpy(&v.f32, p, 4); *d = v.f32; *i = (int64_t)v.f32; *u = 0; return false;
    case GGUF_VTYPE_FLOAT64: memcpy(&v.f64, p, 8); *d = v.f64; *i = (int64_t)v.f64; *u = 0; return false;
    default: *d = 0; *i = 0; *u = 0; return false;
    }
    *u = *i < 0 ? 0 : (uint64_t)*i;
    return true;
}

static const struct gguf_kv *find(const gguf_ctx *ctx, const char *key)
{
    int64_t i = gguf_find_key(ctx, key);
    return i < 0 ? NULL : &ctx->kv[i];
}

static bool get_int(const gguf_ctx *ctx, const char *key, int64_t *i, uint64_t *u, bool *neg)
{
    const struct gguf_kv *kv = find(ctx, key);
    if (!kv || kv->type == GGUF_VTYPE_STRING || kv->type == GGUF_VTYPE_ARRAY)
        return false;
    double d;
    bool is_signed;
    if (!read_num(kv->val, kv->type, &d, i, u, &is_signed))
        return false;
    *neg = is_signed && *i < 0;
    return true;
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
    int64_t i = gguf_find_key(ctx, key);
    double d;
    if (i < 0 || !gguf_kv_as_f64(ctx, i, &d))
        return false;
    *out = (float)d;
    return true;
}

bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out)
{
    int64_t i; uint64_t u; bool neg;
    if (!get_int(ctx, key, &i, &u, &neg))
        return false;
    *out = i != 0;
    return true;
}

bool gguf_kv_as_f64(const gguf_ctx *ctx, int64_t i, double *out)
{
    const struct gguf_kv *kv = &ctx->kv[i];
    if (kv->type == GGUF_VTYPE_STRING || kv->type == GGUF_VTYPE_ARRAY)
        return false;
    int64_t iv; uint64_t u; bool s;
    read_num(kv->val, kv->type, out, &iv, &u, &s);
    return true;
}

bool gguf_kv_as_str(const gguf_ctx *ctx, int64_t i, gguf_str *out)
{
    const struct gguf_kv *kv = &ctx->kv[i];
    if (kv->type != GGUF_VTYPE_STRING)
        return false;
    uint64_t len;
    memcpy(&len, kv->val, 8);
    out->ptr = (const char *)kv->val + 8;
    out->len = len;
    return true;
}

bool gguf_get_str(const gguf_ctx *ctx, const char *key, gguf_str *out)
{
    int64_t i = gguf_find_key(ctx, key);
    return i >= 0 && gguf_kv_as_str(ctx, i, out);
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
    const struct gguf_kv *kv = &ctx->kv[i];
    if (kv->type != GGUF_VTYPE_ARRAY || kv->arr_type != GGUF_VTYPE_STRING || j >= kv->arr_len)
        return (gguf_str){"", 0};
    return kv->strs[j];
}

double gguf_arr_f64(const gguf_ctx *ctx, int64_t i, uint64_t j)
{
    const struct gguf_kv *kv = &ctx->kv[i];
    if (kv->type != GGUF_VTYPE_ARRAY || kv->arr_type == GGUF_VTYPE_STRING || j >= kv->arr_len)
        return 0;
    double d; int64_t iv; uint64_t u; bool s;
    read_num(kv->val + j * vtype_size[kv->arr_type], kv->arr_type, &d, &iv, &u, &s);
    return d;
}

int64_t gguf_arr_i64(const gguf_ctx *ctx, int64_t i, uint64_t j)
{
    const struct gguf_kv *kv = &ctx->kv[i];
    if (kv->type != GGUF_VTYPE_ARRAY || kv->arr_type == GGUF_VTYPE_STRING || j >= kv->arr_len)
        return 0;
    double d; int64_t iv; uint64_t u; bool s;
    read_num(kv->val + j * vtype_size[kv->arr_type], kv->arr_type, &d, &iv, &u, &s);
    return iv;
}

const gguf_tensor *gguf_tensor_at(const gguf_ctx *ctx, int64_t i)
{
    return i >= 0 && i < ctx->n_tensors ? &ctx->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_ctx *ctx, const char *name)
{
    for (int64_t i = 0; i < ctx->n_tensors; i++)
        if (strcmp(ctx->tensors[i].name, name) == 0)
            return &ctx->tensors[i];
    return NULL;
}
