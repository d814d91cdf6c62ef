/* Writes a corpus of small GGUF files, valid and malformed, for
 * tests/golden/info.sh (and by hand under valgrind):
 *
 *   gguf_corpus OUTDIR
 *
 * Every file is produced here by a tiny GGUF writer; nothing is a
 * hand-edited binary. OUTDIR/MANIFEST lists one file per line:
 *   NAME <TAB> ok
 *   NAME <TAB> fail <TAB> SUBSTRING   (the error message must contain it)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"

/* ---- byte buffer -------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        b->p = realloc(b->p, c);
        if (!b->p) {
            perror("gguf_corpus");
            exit(1);
        }
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }
static void pad(buf *b, size_t a)
{
    while (b->n % a)
        put_u8(b, 0);
}

/* ---- GGUF pieces -------------------------------------------------------- */

static void hdr(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}

static void kv_key(buf *b, const char *k, uint32_t type) { put_str(b, k); put_u32(b, type); }
static void kv_u32(buf *b, const char *k, uint32_t v) { kv_key(b, k, GGUF_VTYPE_UINT32); put_u32(b, v); }
static void kv_f32(buf *b, const char *k, float v) { kv_key(b, k, GGUF_VTYPE_FLOAT32); put(b, &v, 4); }
static void kv_str(buf *b, const char *k, const char *v) { kv_key(b, k, GGUF_VTYPE_STRING); put_str(b, v); }
static void kv_arr_hdr(buf *b, const char *k, uint32_t elem, uint64_t n)
{
    kv_key(b, k, GGUF_VTYPE_ARRAY);
    put_u32(b, elem);
    put_u64(b, n);
}

static void tinfo(buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset)
{
    put_str(b, name);
    put_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        put_u64(b, ne[d]);
    put_u32(b, type);
    put_u64(b, offset);
}

/* Number of kvs written by std_kvs(). */
#define STD_KVS 12
static const char *vocab[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81hello", "a", "b", "", "\xe4\xb8\xad"};
#define N_VOCAB (sizeof vocab / sizeof vocab[0])

/* A plausible tiny llama header: arch, hparams, and a small vocab. */
static void std_kvs(buf *b)
{
    kv_str(b, "general.architecture", "llama");
    kv_str(b, "general.name", "corpus-tiny");
    kv_u32(b, "general.file_type", 0);
    kv_u32(b, "llama.context_length", 64);
    kv_u32(b, "llama.embedding_length", 32);
    kv_u32(b, "llama.block_count", 1);
    kv_u32(b, "llama.attention.head_count", 2);
    kv_f32(b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_str(b, "tokenizer.ggml.model", "llama");
    kv_arr_hdr(b, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, N_VOCAB);
    for (size_t i = 0; i < N_VOCAB; i++)
        put_str(b, vocab[i]);
    kv_arr_hdr(b, "tokenizer.ggml.scores", GGUF_VTYPE_FLOAT32, N_VOCAB);
    for (size_t i = 0; i < N_VOCAB; i++) {
        float s = -(float)i;
        put(b, &s, 4);
    }
    kv_u32(b, "tokenizer.ggml.bos_token_id", 1);
}

/* Tensors of the standard file; data is deterministic filler. */
struct tdesc {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
};
static const struct tdesc std_tensors[] = {
    {"token_embd.weight", 2, {32, N_VOCAB}, TENSOR_TYPE_F32},
    {"blk.0.attn_norm.weight", 1, {32}, TENSOR_TYPE_F32},
    {"blk.0.attn_q.weight", 2, {32, 32}, TENSOR_TYPE_Q8_0},
    {"blk.0.ffn_up.weight", 3, {256, 2, 1}, TENSOR_TYPE_Q4_K},
    {"output_norm.weight", 1, {32}, TENSOR_TYPE_F16},
};
#define N_STD_TENSORS (sizeof std_tensors / sizeof std_tensors[0])

static size_t tbytes(const struct tdesc *t)
{
    size_t rows = 1;
    for (uint32_t d = 1; d < t->n_dims; d++)
        rows *= t->ne[d];
    return tensor_row_size(t->type, (int64_t)t->ne[0]) * rows;
}

/* Writes tensor infos for ts (offsets back to back) then the aligned data
 * section; the file ends right after the last tensor's bytes, so any
 * truncation of it is malformed. */
static void tensors_and_data(buf *b, const struct tdesc *ts, size_t n, size_t align)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        tinfo(b, ts[i].name, ts[i].n_dims, ts[i].ne, ts[i].type, off);
        off = (off + tbytes(&ts[i]) + align - 1) / align * align;
    }
    pad(b, align);
    for (size_t i = 0; i < n; i++) {
        if (i)
            pad(b, align);
        size_t nb = tbytes(&ts[i]);
        for (size_t k = 0; k < nb; k++)
            put_u8(b, (uint8_t)(k * 7 + i));
    }
}

static buf std_file(uint32_t version)
{
    buf b = {0};
    hdr(&b, version, N_STD_TENSORS, STD_KVS);
    std_kvs(&b);
    tensors_and_data(&b, std_tensors, N_STD_TENSORS, GGUF_DEFAULT_ALIGNMENT);
    return b;
}

/* ---- output ------------------------------------------------------------- */

static const char *outdir;
static FILE *manifest;
static int n_ok, n_fail;

static void emit(const char *name, const void *p, size_t n, const char *expect)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "gguf_corpus: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    if (expect) {
        fprintf(manifest, "%s\tfail\t%s\n", name, expect);
        n_fail++;
    } else {
        fprintf(manifest, "%s\tok\n", name);
        n_ok++;
    }
}

static void emit_buf(const char *name, buf *b, const char *expect)
{
    emit(name, b->p, b->n, expect);
    free(b->p);
    *b = (buf){0};
}

/* A header with one kv holding whatever `body` writes, and no tensors. */
#define ONE_KV(name, expect, ...)                                                                    \
    do {                                                                                             \
        buf b_ = {0};                                                                                \
        hdr(&b_, 3, 0, 1);                                                                           \
        { buf *b = &b_; __VA_ARGS__; }                                                               \
        emit_buf(name, &b_, expect);                                                                 \
    } while (0)

/* A header with the std kvs and one tensor info (+ optional data). */
static void one_tensor(const char *name, const char *tname, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                       uint64_t offset, size_t data_bytes, const char *expect)
{
    buf b = {0};
    hdr(&b, 3, 1, STD_KVS);
    std_kvs(&b);
    tinfo(&b, tname, n_dims, ne, type, offset);
    pad(&b, GGUF_DEFAULT_ALIGNMENT);
    for (size_t i = 0; i < data_bytes; i++)
        put_u8(&b, 0x3c);
    emit_buf(name, &b, expect);
}

static void valid_files(void)
{
    buf b = std_file(3);
    emit_buf("valid_v3.gguf", &b, NULL);
    b = std_file(2);
    emit_buf("valid_v2.gguf", &b, NULL);

    /* vocab-only: kvs, no tensors, file ends right after the kvs */
    hdr(&b, 3, 0, STD_KVS);
    std_kvs(&b);
    emit_buf("valid_no_tensors.gguf", &b, NULL);

    /* nothing at all but a header */
    hdr(&b, 3, 0, 0);
    emit_buf("valid_empty.gguf", &b, NULL);

    /* string arrays: empty array, empty strings, UTF-8, a NUL inside a value */
    hdr(&b, 3, 0, 3);
    kv_arr_hdr(&b, "test.empty", GGUF_VTYPE_STRING, 0);
    kv_arr_hdr(&b, "test.strings", GGUF_VTYPE_STRING, 4);
    put_str(&b, "");
    put_str(&b, "caf\xc3\xa9");
    put_str(&b, "line\nbreak");
    put_u64(&b, 3);
    put(&b, "a\0b", 3);
    kv_str(&b, "test.empty_string", "");
    emit_buf("valid_str_array.gguf", &b, NULL);

    /* every scalar type and an array of every element type */
    hdr(&b, 3, 0, 25); /* 12 scalars + alignment + 12 arrays */
    kv_key(&b, "t.u8", GGUF_VTYPE_UINT8); put_u8(&b, 200);
    kv_key(&b, "t.i8", GGUF_VTYPE_INT8); put_u8(&b, 0x80);
    kv_key(&b, "t.u16", GGUF_VTYPE_UINT16); { uint16_t v = 60000; put(&b, &v, 2); }
    kv_key(&b, "t.i16", GGUF_VTYPE_INT16); { int16_t v = -300; put(&b, &v, 2); }
    kv_u32(&b, "t.u32", 4000000000u);
    kv_key(&b, "t.i32", GGUF_VTYPE_INT32); { int32_t v = -7; put(&b, &v, 4); }
    kv_f32(&b, "t.f32", 0.5f);
    kv_key(&b, "t.bool", GGUF_VTYPE_BOOL); put_u8(&b, 1);
    kv_str(&b, "t.string", "hello");
    kv_key(&b, "t.u64", GGUF_VTYPE_UINT64); put_u64(&b, UINT64_MAX);
    kv_key(&b, "t.i64", GGUF_VTYPE_INT64); put_u64(&b, (uint64_t)INT64_MIN);
    kv_key(&b, "t.f64", GGUF_VTYPE_FLOAT64); { double v = -2.25; put(&b, &v, 8); }
    kv_u32(&b, "general.alignment", 64);
    for (uint32_t t = 0; t < GGUF_VTYPE_COUNT; t++) {
        if (t == GGUF_VTYPE_ARRAY)
            continue;
        char k[32];
        snprintf(k, sizeof k, "t.arr_%s", gguf_vtype_name((enum gguf_vtype)t));
        kv_arr_hdr(&b, k, t, 3);
        for (int i = 0; i < 3; i++) {
            if (t == GGUF_VTYPE_STRING) {
                put_str(&b, i == 0 ? "x" : i == 1 ? "yy" : "zzz");
            } else {
                uint8_t v[8] = {0};
                v[0] = (uint8_t)(i + 1);
                if (t == GGUF_VTYPE_FLOAT32) { float f = (float)i + 0.5f; memcpy(v, &f, 4); }
                if (t == GGUF_VTYPE_FLOAT64) { double f = (double)i + 0.25; memcpy(v, &f, 8); }
                static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
                put(&b, v, sz[t]);
            }
        }
    }
    {
        static const struct tdesc ts[] = {{"t.iq4nl", 2, {64, 2}, 20 /* IQ4_NL: not one of the common types */},
                                          {"t.f32", 4, {2, 3, 4, 5}, TENSOR_TYPE_F32}};
        memcpy(b.p + 8, &(uint64_t){2}, 8); /* tensor count lives at offset 8..15 */
        tensors_and_data(&b, ts, 2, 64);
    }
    emit_buf("valid_all_types.gguf", &b, NULL);
}

static void bad_header(void)
{
    buf b = std_file(3);
    memcpy(b.p, "GGUX", 4);
    emit_buf("bad_magic.gguf", &b, "magic");
    b = std_file(3);
    memcpy(b.p, "FUGG", 4);
    emit_buf("bad_magic_reversed.gguf", &b, "magic");
    emit("bad_empty.gguf", "", 0, "magic");
    emit("bad_7_bytes.gguf", "GGUF\3\0\0", 7, "magic");

    static const struct { const char *name; uint32_t v; const char *expect; } vers[] = {
        {"bad_version_0.gguf", 0, "unsupported version 0"},
        {"bad_version_1.gguf", 1, "v1 is not supported"},
        {"bad_version_4.gguf", 4, "unsupported version 4"},
        {"bad_version_swapped.gguf", 0x03000000u, "byte-swapped"},
        {"bad_version_huge.gguf", 0xffffffffu, "unsupported version"},
    };
    for (size_t i = 0; i < sizeof vers / sizeof vers[0]; i++) {
        b = std_file(3);
        memcpy(b.p + 4, &vers[i].v, 4);
        emit_buf(vers[i].name, &b, vers[i].expect);
    }

    static const uint64_t counts[] = {UINT64_MAX, (uint64_t)1 << 62, 1000000};
    for (size_t i = 0; i < 3; i++) {
        char n[64];
        b = std_file(3);
        memcpy(b.p + 8, &counts[i], 8);
        snprintf(n, sizeof n, "bad_tensor_count_%zu.gguf", i);
        emit_buf(n, &b, "tensor count");
        b = std_file(3);
        memcpy(b.p + 16, &counts[i], 8);
        snprintf(n, sizeof n, "bad_kv_count_%zu.gguf", i);
        emit_buf(n, &b, "key/value count");
    }
    /* counts that fit the file but exceed what is there: kv #STD_KVS reads tensor info bytes */
    b = std_file(3);
    memcpy(b.p + 16, &(uint64_t){STD_KVS + 3}, 8);
    emit_buf("bad_kv_count_plus3.gguf", &b, "at offset");
    b = std_file(3);
    memcpy(b.p + 8, &(uint64_t){N_STD_TENSORS + 2}, 8);
    emit_buf("bad_tensor_count_plus2.gguf", &b, "at offset");
}

static void bad_kvs(void)
{
    ONE_KV("bad_key_len_past_eof.gguf", "key/value #0", put_u64(b, (uint64_t)1 << 40);
           put(b, "abcdefghijklmnopqrstuvwxyz", 26));
    ONE_KV("bad_key_len_max.gguf", "key/value #0", put_u64(b, UINT64_MAX); put(b, "abcdefgh", 8));
    ONE_KV("bad_key_empty.gguf", "key length 0", put_u64(b, 0); put_u32(b, GGUF_VTYPE_UINT8); put_u8(b, 1);
           put(b, "trailing bytes", 14));
    ONE_KV("bad_key_too_long.gguf", "key length 70000", {
        static char k[70001];
        memset(k, 'k', 70000);
        k[70000] = 0;
        kv_u32(b, k, 1);
    });
    ONE_KV("bad_key_nul.gguf", "NUL", put_u64(b, 3); put(b, "a\0b", 3); put_u32(b, GGUF_VTYPE_UINT8); put_u8(b, 1));
    ONE_KV("bad_string_past_eof.gguf", "key 'general.name'",
           kv_key(b, "general.name", GGUF_VTYPE_STRING); put_u64(b, 1000); put(b, "short", 5));
    ONE_KV("bad_string_len_max.gguf", "string length",
           kv_key(b, "general.name", GGUF_VTYPE_STRING); put_u64(b, UINT64_MAX); put(b, "short", 5));
    ONE_KV("bad_value_truncated.gguf", "key 'x.u64'", kv_key(b, "x.u64", GGUF_VTYPE_UINT64); put_u32(b, 7));
    ONE_KV("bad_value_type_13.gguf", "unknown value type 13", kv_key(b, "x.y", 13); put_u64(b, 0));
    ONE_KV("bad_value_type_huge.gguf", "unknown value type", kv_key(b, "x.y", 0xfffffff0u); put_u64(b, 0));
    ONE_KV("bad_array_elem_type.gguf", "unknown array element type 42", kv_arr_hdr(b, "x.arr", 42, 1); put_u64(b, 0));
    ONE_KV("bad_nested_array.gguf", "nested arrays",
           kv_arr_hdr(b, "x.arr", GGUF_VTYPE_ARRAY, 1); put_u32(b, GGUF_VTYPE_UINT8); put_u64(b, 1); put_u8(b, 1));
    ONE_KV("bad_array_len_huge.gguf", "array length", kv_arr_hdr(b, "x.arr", GGUF_VTYPE_UINT32, (uint64_t)1 << 62);
           put_u32(b, 1); put_u32(b, 2));
    ONE_KV("bad_array_len_max.gguf", "array length", kv_arr_hdr(b, "x.arr", GGUF_VTYPE_UINT8, UINT64_MAX);
           put_u32(b, 1));
    ONE_KV("bad_array_len_past_eof.gguf", "array length", kv_arr_hdr(b, "x.arr", GGUF_VTYPE_FLOAT64, 5);
           put_u64(b, 1); put_u64(b, 2));
    ONE_KV("bad_str_array_len_huge.gguf", "array length",
           kv_arr_hdr(b, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, (uint64_t)1 << 60); put_str(b, "a"));
    ONE_KV("bad_str_array_elem_past_eof.gguf", "string 2 (of 3)",
           kv_arr_hdr(b, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, 3); put_str(b, "a"); put_str(b, "b");
           put_u64(b, 1 << 20); put_str(b, "padding-padding"));
    ONE_KV("bad_alignment_0.gguf", "general.alignment", kv_u32(b, "general.alignment", 0));
    ONE_KV("bad_alignment_3.gguf", "general.alignment", kv_u32(b, "general.alignment", 3));
    ONE_KV("bad_alignment_u64.gguf", "general.alignment",
           kv_key(b, "general.alignment", GGUF_VTYPE_UINT64); put_u64(b, 32));
    ONE_KV("bad_alignment_string.gguf", "general.alignment", kv_str(b, "general.alignment", "32"));

    buf b = {0};
    hdr(&b, 3, 0, 3);
    kv_str(&b, "general.name", "one");
    kv_u32(&b, "general.file_type", 1);
    kv_str(&b, "general.name", "two");
    emit_buf("bad_duplicate_key.gguf", &b, "duplicate key 'general.name'");
}

static void bad_tensors(void)
{
    static const uint64_t ne32x2[] = {32, 2};
    one_tensor("bad_ndims_0.gguf", "t", 0, NULL, TENSOR_TYPE_F32, 0, 0, "n_dims 0");
    static const uint64_t ne5[] = {1, 1, 1, 1, 1};
    one_tensor("bad_ndims_5.gguf", "t", 5, ne5, TENSOR_TYPE_F32, 0, 4, "n_dims 5");
    static const uint64_t ne_zero[] = {32, 0};
    one_tensor("bad_dim_zero.gguf", "t", 2, ne_zero, TENSOR_TYPE_F32, 0, 0, "dimension 1 is 0");
    static const uint64_t ne_neg[] = {(uint64_t)1 << 63, 1};
    one_tensor("bad_dim_negative.gguf", "t", 2, ne_neg, TENSOR_TYPE_F32, 0, 0, "dimension 0 is");
    static const uint64_t ne_ovf[] = {(uint64_t)1 << 32, (uint64_t)1 << 32};
    one_tensor("bad_dims_overflow.gguf", "t", 2, ne_ovf, TENSOR_TYPE_F32, 0, 0, "overflows");
    static const uint64_t ne_ovf4[] = {(uint64_t)1 << 20, (uint64_t)1 << 20, (uint64_t)1 << 20, 8};
    one_tensor("bad_dims_overflow_4d.gguf", "t", 4, ne_ovf4, TENSOR_TYPE_F32, 0, 0, "overflows");
    /* element count fits int64 but bytes do not fit size_t */
    static const uint64_t ne_bytes[] = {(uint64_t)1 << 31, (uint64_t)1 << 31};
    one_tensor("bad_bytes_overflow.gguf", "t", 2, ne_bytes, TENSOR_TYPE_F64, 0, 0, "overflows");
    static const uint64_t ne33[] = {33, 2};
    one_tensor("bad_row_not_block_multiple.gguf", "t", 2, ne33, TENSOR_TYPE_Q8_0, 0, 80, "block size");
    static const uint64_t ne100[] = {100, 1};
    one_tensor("bad_row_not_qk_k_multiple.gguf", "t", 2, ne100, TENSOR_TYPE_Q4_K, 0, 200, "block size");
    one_tensor("bad_tensor_type_99.gguf", "t", 2, ne32x2, 99, 0, 256, "unknown tensor type 99");
    one_tensor("bad_tensor_type_4.gguf", "t", 2, ne32x2, 4, 0, 256, "unknown tensor type 4");
    one_tensor("bad_tensor_type_huge.gguf", "t", 2, ne32x2, 0x80000000u, 0, 256, "unknown tensor type");
    one_tensor("bad_misaligned_offset.gguf", "t", 2, ne32x2, TENSOR_TYPE_F32, 4, 260, "alignment");
    one_tensor("bad_offset_not_zero.gguf", "t", 2, ne32x2, TENSOR_TYPE_F32, 32, 288, "expected 0");
    one_tensor("bad_offset_huge.gguf", "t", 2, ne32x2, TENSOR_TYPE_F32, (uint64_t)1 << 62, 256, "data offset");
    one_tensor("bad_data_past_eof.gguf", "t", 2, ne32x2, TENSOR_TYPE_F32, 0, 255, "past its end");
    static const uint64_t ne_big[] = {32, (uint64_t)1 << 40};
    one_tensor("bad_data_huge.gguf", "t", 2, ne_big, TENSOR_TYPE_F32, 0, 256, "past its end");
    one_tensor("bad_tensor_name_empty.gguf", "", 2, ne32x2, TENSOR_TYPE_F32, 0, 256, "name length 0");
    {
        char nm[300];
        memset(nm, 'n', 299);
        nm[299] = 0;
        one_tensor("bad_tensor_name_long.gguf", nm, 2, ne32x2, TENSOR_TYPE_F32, 0, 256, "name length 299");
    }

    /* name length past the end of the file */
    buf b = {0};
    hdr(&b, 3, 1, 0);
    put_u64(&b, 1 << 20);
    put(&b, "abcdefghijklmnopqrstuvwxyz0123456789", 36);
    emit_buf("bad_tensor_name_past_eof.gguf", &b, "tensor #0");

    /* two tensors: duplicate names; and a gap between them */
    static const struct tdesc dup[] = {{"same", 2, {32, 2}, TENSOR_TYPE_F32}, {"same", 1, {32}, TENSOR_TYPE_F32}};
    hdr(&b, 3, 2, 0);
    tensors_and_data(&b, dup, 2, GGUF_DEFAULT_ALIGNMENT);
    emit_buf("bad_duplicate_tensor.gguf", &b, "duplicate tensor name 'same'");
    hdr(&b, 3, 2, 0);
    tinfo(&b, "a", 2, ne32x2, TENSOR_TYPE_F32, 0);
    tinfo(&b, "b", 2, ne32x2, TENSOR_TYPE_F32, 512); /* expected 256 */
    pad(&b, 32);
    for (int i = 0; i < 1024; i++)
        put_u8(&b, 1);
    emit_buf("bad_offset_gap.gguf", &b, "expected 256");
    hdr(&b, 3, 2, 0);
    tinfo(&b, "a", 2, ne32x2, TENSOR_TYPE_F32, 0);
    tinfo(&b, "b", 2, ne32x2, TENSOR_TYPE_F32, 0); /* overlaps a */
    pad(&b, 32);
    for (int i = 0; i < 512; i++)
        put_u8(&b, 1);
    emit_buf("bad_offset_overlap.gguf", &b, "expected 256");

    /* alignment 64 declared: an offset aligned to 32 only is misaligned */
    hdr(&b, 3, 2, 1);
    kv_u32(&b, "general.alignment", 64);
    static const uint64_t ne8[] = {8};
    tinfo(&b, "a", 1, ne8, TENSOR_TYPE_F32, 0);
    tinfo(&b, "b", 1, ne8, TENSOR_TYPE_F32, 32);
    pad(&b, 64);
    for (int i = 0; i < 128; i++)
        put_u8(&b, 1);
    emit_buf("bad_offset_align64.gguf", &b, "alignment 64");

    /* general.alignment 1 lets a tensor start at an odd byte: an F16 there
     * (1 x 3 values) puts the next tensor, F32, where its floats cannot be
     * read in place (make fuzz: UBSan saw the misaligned loads) */
    hdr(&b, 3, 2, 1);
    kv_u32(&b, "general.alignment", 1);
    static const uint64_t ne3[] = {3}, ne4[] = {4};
    tinfo(&b, "hh", 1, ne3, TENSOR_TYPE_F16, 0); /* data at byte 124 */
    tinfo(&b, "f", 1, ne4, TENSOR_TYPE_F32, 6);
    for (int i = 0; i < 6 + 16; i++)
        put_u8(&b, 0);
    emit_buf("bad_f32_misaligned.gguf", &b, "is not 4-byte aligned");
    hdr(&b, 3, 2, 1);
    kv_u32(&b, "general.alignment", 1);
    static const uint64_t ne1[] = {1}, ne32[] = {32};
    tinfo(&b, "ii", 1, ne1, TENSOR_TYPE_I8, 0); /* data at byte 124 */
    tinfo(&b, "q", 1, ne32, TENSOR_TYPE_Q8_0, 1);
    for (int i = 0; i < 1 + 34; i++)
        put_u8(&b, 0);
    emit_buf("bad_q8_0_misaligned.gguf", &b, "is not 2-byte aligned");
    /* alignment 2: F16 after an odd-sized I8 pair is fine, aligned as needed */
    hdr(&b, 3, 2, 1);
    kv_u32(&b, "general.alignment", 2);
    static const uint64_t ne2[] = {2};
    tinfo(&b, "i", 1, ne2, TENSOR_TYPE_I8, 0);
    tinfo(&b, "h", 1, ne2, TENSOR_TYPE_F16, 2);
    pad(&b, 2);
    for (int i = 0; i < 2 + 4; i++)
        put_u8(&b, 0);
    emit_buf("valid_align2_f16.gguf", &b, NULL);
}

/* The standard file cut at every offset up to its data section and at a
 * spread of offsets inside the data. */
/* One tensor of each IQ/TQ type (issue 29), so that every new type's size
 * checks have a seed (the fuzz target starts from these files): two whole
 * rows (valid, whatever the bytes: gguf checks sizes, not values), the same
 * one byte short (past its end), and a row of half a block. */
static void iq_types(void)
{
    static const uint32_t types[] = {16, 17, 18, 19, 20, 21, 22, 23, 29, 34, 35};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const uint32_t t = types[i];
        char lower[16], name[64];
        const char *tn = tensor_type_name(t);
        size_t k = 0;
        for (; tn[k] && k + 1 < sizeof lower; k++)
            lower[k] = (char)(tn[k] >= 'A' && tn[k] <= 'Z' ? tn[k] + 32 : tn[k]);
        lower[k] = 0;
        const uint64_t ne[] = {256, 2}, half[] = {(uint64_t)tensor_type_block_size(t) / 2, 2};
        const size_t bytes = 2 * tensor_row_size(t, 256);
        snprintf(name, sizeof name, "valid_type_%s.gguf", lower);
        one_tensor(name, "blk.0.attn_q.weight", 2, ne, t, 0, bytes, NULL);
        snprintf(name, sizeof name, "bad_type_%s_short.gguf", lower);
        one_tensor(name, "blk.0.attn_q.weight", 2, ne, t, 0, bytes - 1, "past its end");
        snprintf(name, sizeof name, "bad_type_%s_half_block.gguf", lower);
        one_tensor(name, "blk.0.attn_q.weight", 2, half, t, 0, bytes, "block size");
    }
}

static void truncations(void)
{
    buf b = std_file(3);
    char err[512];
    gguf_ctx *g = gguf_open_buffer(b.p, b.n, "valid_v3", err, sizeof err);
    if (!g) {
        fprintf(stderr, "gguf_corpus: own valid file does not load: %s\n", err);
        exit(1);
    }
    size_t data = gguf_data_offset(g);
    gguf_close(g);
    char name[64];
    for (size_t n = 0; n < data; n++) {
        snprintf(name, sizeof name, "trunc_%05zu.gguf", n);
        emit(name, b.p, n, "at offset");
    }
    for (size_t k = 0; k < 48; k++) {
        size_t n = data + (b.n - data) * k / 48;
        if (k && n == data)
            continue;
        snprintf(name, sizeof name, "trunc_%05zu.gguf", n);
        emit(name, b.p, n, "past its end");
    }
    snprintf(name, sizeof name, "trunc_%05zu.gguf", b.n - 1);
    emit(name, b.p, b.n - 1, "past its end");
    free(b.p);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fprintf(argc == 2 ? stdout : stderr, "usage: gguf_corpus OUTDIR\n"
                                             "writes valid and malformed GGUF files and OUTDIR/MANIFEST\n");
        return argc == 2 ? 0 : 2;
    }
    outdir = argv[1];
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gguf_corpus: cannot create %s: %s\n", outdir, strerror(errno));
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST", outdir);
    manifest = fopen(path, "w");
    if (!manifest) {
        fprintf(stderr, "gguf_corpus: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    valid_files();
    bad_header();
    bad_kvs();
    bad_tensors();
    iq_types();
    truncations();
    if (fclose(manifest) != 0) {
        fprintf(stderr, "gguf_corpus: cannot write %s\n", path);
        return 1;
    }
    printf("gguf_corpus: %d valid and %d malformed files in %s\n", n_ok, n_fail, outdir);
    return 0;
}
