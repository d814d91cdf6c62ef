/* GGUF v2/v3 reader over a read-only mmap.
 *
 * gguf_open() validates the whole file before returning: header, every
 * key/value (types, string and array lengths against the file size), the
 * tensor table (n_dims <= 4, positive dims, element counts without overflow,
 * known types, data inside the file and aligned). After a successful open no
 * getter can read outside the mapping. Strings in the file are not
 * NUL-terminated; they are returned as (ptr, len) views into the mapping.
 */
#ifndef TOKSCOPE_GGUF_H
#define TOKSCOPE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gguf_vtype {
    GGUF_VTYPE_UINT8 = 0,
    GGUF_VTYPE_INT8 = 1,
    GGUF_VTYPE_UINT16 = 2,
    GGUF_VTYPE_INT16 = 3,
    GGUF_VTYPE_UINT32 = 4,
    GGUF_VTYPE_INT32 = 5,
    GGUF_VTYPE_FLOAT32 = 6,
    GGUF_VTYPE_BOOL = 7,
    GGUF_VTYPE_STRING = 8,
    GGUF_VTYPE_ARRAY = 9,
    GGUF_VTYPE_UINT64 = 10,
    GGUF_VTYPE_INT64 = 11,
    GGUF_VTYPE_FLOAT64 = 12,
    GGUF_VTYPE_COUNT,
};

typedef struct gguf_str {
    const char *ptr; /* into the mapping, not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_tensor {
    char *name;       /* NUL-terminated copy */
    uint32_t n_dims;
    int64_t ne[4];    /* ne[0] is the row length (contiguous dimension); unused dims are 1 */
    uint32_t type;    /* enum tensor_type */
    uint64_t offset;  /* relative to the data section */
    const void *data; /* into the mapping, or a resident copy (gguf_make_resident) */
    size_t nbytes;
    int64_t n_elements;
} gguf_tensor;

/* Matrix i2 of a 3-D weight (a MoE expert) as a 2-D tensor of its own: the
 * kernels that take plain matrices take it as they are. */
static inline gguf_tensor gguf_tensor_matrix(const gguf_tensor *w, int64_t i2)
{
    gguf_tensor v = *w;
    v.nbytes = w->nbytes / (size_t)(w->ne[2] > 0 ? w->ne[2] : 1);
    v.data = (const uint8_t *)w->data + (size_t)i2 * v.nbytes;
    v.ne[2] = 1;
    v.n_dims = 2;
    v.n_elements = w->ne[0] * w->ne[1];
    return v;
}

typedef struct gguf_ctx gguf_ctx;

#define GGUF_DEFAULT_ALIGNMENT 32

/* Opens and validates `path`. On failure returns NULL and writes a message
 * naming the file, the field and the byte offset into err. */
gguf_ctx *gguf_open(const char *path, char *err, size_t errlen);
/* Same over a caller-owned buffer (tests, fuzzing); buf must outlive ctx. */
gguf_ctx *gguf_open_buffer(const void *buf, size_t size, const char *name, char *err, size_t errlen);
void gguf_close(gguf_ctx *ctx);

uint32_t gguf_version(const gguf_ctx *ctx);
size_t gguf_file_size(const gguf_ctx *ctx);
size_t gguf_alignment(const gguf_ctx *ctx);
size_t gguf_data_offset(const gguf_ctx *ctx);
const char *gguf_path(const gguf_ctx *ctx);
/* True when the data is a file mapping (gguf_open), false for a caller's
 * buffer: only a mapping's pages may be dropped and read back from the file. */
bool gguf_is_mapped(const gguf_ctx *ctx);
/* Advises the kernel to read the whole mapped file ahead, in the
 * background (posix_madvise WILLNEED, as llama.cpp's loader does). Advice
 * only; nothing for a caller's buffer. */
void gguf_read_ahead(const gguf_ctx *ctx);
/* The file's bytes (the mapping or the caller's buffer): its header and
 * metadata; a tensor's data may have moved (gguf_make_resident). */
const void *gguf_file_bytes(const gguf_ctx *ctx);
/* Moves the data of tensors idx[0..n) out of the file mapping into one
 * anonymous region in 2 MB pages (transparent huge pages, where the kernel
 * grants them) and points the tensors at it; each slice's file pages are
 * dropped as soon as it is copied, so the resident size stays the model's.
 * Generation reads every weight once per token: from a large file's 4 KB
 * pages that took a TLB walk every 4 KB (Gemma-4-26B-A4B's width, 2
 * threads: 34.5 tok/s from the file's pages, 46.6 from huge pages). The
 * bytes do not change, only where they live; tensors already moved are
 * skipped, and below min_bytes in all nothing moves (gguf_resident_min for
 * speed: a small model's page tables sit in the caches). Under 1 MB the
 * region is in 4 KB pages. True when something moved. Thread-safe; an old
 * pointer to a moved tensor still reads its bytes (from the file). */
bool gguf_make_resident(const gguf_ctx *ctx, const int64_t *idx, int n, size_t min_bytes);
/* The bytes below which moving weights for speed is not worth it (64 MB;
 * the tests lower it). */
extern size_t gguf_resident_min;
/* The open file mapping that holds addr: its path and addr's offset in the
 * file. Async-signal-safe, for a SIGBUS handler: a mapped model file that
 * is truncated while in use faults on the pages it lost. */
bool gguf_mapping_of(const void *addr, const char **path, size_t *offset);

/* ---- key/values ---- */
int64_t gguf_n_kv(const gguf_ctx *ctx);
int64_t gguf_find_key(const gguf_ctx *ctx, const char *key); /* -1 when absent */
gguf_str gguf_kv_key(const gguf_ctx *ctx, int64_t i);
enum gguf_vtype gguf_kv_type(const gguf_ctx *ctx, int64_t i);
/* For arrays: element type and count. */
enum gguf_vtype gguf_arr_type(const gguf_ctx *ctx, int64_t i);
uint64_t gguf_arr_len(const gguf_ctx *ctx, int64_t i);

/* Typed scalar getters by key. They return false when the key is absent or
 * its value cannot be represented (a negative value for an unsigned getter,
 * a string for a number). Integer getters accept every integer type and bool. */
bool gguf_get_u32(const gguf_ctx *ctx, const char *key, uint32_t *out);
bool gguf_get_i64(const gguf_ctx *ctx, const char *key, int64_t *out);
bool gguf_get_u64(const gguf_ctx *ctx, const char *key, uint64_t *out);
bool gguf_get_f32(const gguf_ctx *ctx, const char *key, float *out); /* f32, f64 or integer */
bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out);
bool gguf_get_str(const gguf_ctx *ctx, const char *key, gguf_str *out);
/* Malloc'd NUL-terminated copy of a string value, NULL when absent. */
char *gguf_get_str_dup(const gguf_ctx *ctx, const char *key);

/* Scalar value of kv i as a double / string (for printing); arrays give false. */
bool gguf_kv_as_f64(const gguf_ctx *ctx, int64_t i, double *out);
bool gguf_kv_as_str(const gguf_ctx *ctx, int64_t i, gguf_str *out);
/* Exact integer value of kv i (any integer type or bool; false otherwise):
 * negative values in *iv with *neg set, the others in *uv (and *iv when
 * they fit, saturated otherwise). */
bool gguf_kv_as_int(const gguf_ctx *ctx, int64_t i, int64_t *iv, uint64_t *uv, bool *neg);

/* Array element access by kv index; j < gguf_arr_len. Numeric getters convert
 * from any numeric element type (reads are unaligned-safe). */
gguf_str gguf_arr_str(const gguf_ctx *ctx, int64_t i, uint64_t j);
double gguf_arr_f64(const gguf_ctx *ctx, int64_t i, uint64_t j);
int64_t gguf_arr_i64(const gguf_ctx *ctx, int64_t i, uint64_t j);
uint64_t gguf_arr_u64(const gguf_ctx *ctx, int64_t i, uint64_t j); /* negatives give 0 */

/* ---- tensors ---- */
int64_t gguf_n_tensors(const gguf_ctx *ctx);
const gguf_tensor *gguf_tensor_at(const gguf_ctx *ctx, int64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_ctx *ctx, const char *name); /* NULL when absent */

/* Name of a value type ("u32", "string", ...). */
const char *gguf_vtype_name(enum gguf_vtype t);

#endif
