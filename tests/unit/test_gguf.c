/* GGUF reader: real files from ../shared open and expose what we need;
 * in-memory malformed buffers are refused with a message naming the field
 * and byte offset (every buffer is an exact-size heap copy, so an
 * over-read shows up under valgrind/ASan); typed getters convert or refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "testutil.h"

/* ---- a tiny GGUF writer --------------------------------------------------- */

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
        assert_non_null(b->p);
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(buf *b, uint16_t v) { put(b, &v, 2); }
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_f32(buf *b, float v) { put(b, &v, 4); }
static void put_f64(buf *b, double v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }
static void pad(buf *b, size_t a)
{
    while (b->n % a)
        put_u8(b, 0);
}
static void hdr(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}
static void key(buf *b, const char *k, uint32_t type) { put_str(b, k); put_u32(b, type); }
static void kv_u32(buf *b, const char *k, uint32_t v) { key(b, k, GGUF_VTYPE_UINT32); put_u32(b, v); }
static void kv_str(buf *b, const char *k, const char *v) { key(b, k, GGUF_VTYPE_STRING); put_str(b, v); }
static void arr(buf *b, const char *k, uint32_t elem, uint64_t n)
{
    key(b, k, GGUF_VTYPE_ARRAY);
    put_u32(b, elem);
    put_u64(b, n);
}
static void tinfo2(buf *b, const char *name, uint64_t ne0, uint64_t ne1, uint32_t type, uint64_t off)
{
    put_str(b, name);
    put_u32(b, 2);
    put_u64(b, ne0);
    put_u64(b, ne1);
    put_u32(b, type);
    put_u64(b, off);
}

/* A valid file: 3 kvs, two tensors (F32 32x2 = 256 bytes, Q8_0 32x1 = 34
 * bytes), data ending exactly at the end of the last tensor. */
static buf valid_file(uint32_t version, uint32_t align)
{
    buf b = {0};
    hdr(&b, version, 2, align ? 3 : 2);
    kv_str(&b, "general.architecture", "llama");
    arr(&b, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, 3);
    put_str(&b, "<unk>");
    put_str(&b, "");
    put_str(&b, "hello");
    if (align)
        kv_u32(&b, "general.alignment", align);
    size_t a = align ? align : 32;
    tinfo2(&b, "a.weight", 32, 2, TENSOR_TYPE_F32, 0);
    tinfo2(&b, "b.weight", 32, 1, TENSOR_TYPE_Q8_0, (256 + a - 1) / a * a);
    pad(&b, a);
    for (int i = 0; i < 64; i++)
        put_f32(&b, (float)i);
    pad(&b, a);
    for (int i = 0; i < 34; i++)
        put_u8(&b, (uint8_t)i);
    return b;
}

/* Opens an exact-size heap copy of the first n bytes of p; on success the
 * copy lives until close_copy(). */
static void *live_copy;

static gguf_ctx *open_copy(const void *p, size_t n, char *err, size_t errlen)
{
    void *c = malloc(n ? n : 1);
    assert_non_null(c);
    memcpy(c, p, n);
    gguf_ctx *g = gguf_open_buffer(c, n, "mem.gguf", err, errlen);
    if (g)
        live_copy = c;
    else
        free(c);
    return g;
}

static void close_copy(gguf_ctx *g)
{
    gguf_close(g);
    free(live_copy);
    live_copy = NULL;
}

/* Asserts b is refused with a message containing `want`, the name and an offset. */
static void expect_fail(buf *b, const char *want)
{
    char err[512] = "";
    gguf_ctx *g = open_copy(b->p, b->n, err, sizeof err);
    if (g)
        fail_msg("expected failure '%s', but it opened", want);
    if (!strstr(err, want))
        fail_msg("error lacks '%s': %s", want, err);
    assert_non_null(strstr(err, "mem.gguf: "));
    assert_non_null(strstr(err, " at offset "));
    free(b->p);
    *b = (buf){0};
}

/* ---- real files -------------------------------------------------------------- */

static void test_open_stories(void **state)
{
    (void)state;
    const char *path = TESTDATA_REQUIRE("models/stories260K.gguf");
    char err[512];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    assert_non_null(g);
    assert_int_equal(gguf_version(g), 3);
    uint32_t n_embd = 0;
    assert_true(gguf_get_u32(g, "llama.embedding_length", &n_embd));
    assert_int_equal(n_embd, 64);
    const gguf_tensor *t = gguf_find_tensor(g, "token_embd.weight");
    assert_non_null(t);
    assert_int_equal(t->ne[0], 64);
    assert_int_equal(t->ne[1], 512);
    assert_int_equal(t->type, TENSOR_TYPE_F32);
    assert_int_equal(t->nbytes, 64 * 512 * 4);
    assert_int_equal(gguf_n_tensors(g), 48);
    int64_t k = gguf_find_key(g, "tokenizer.ggml.tokens");
    assert_true(k >= 0);
    assert_int_equal(gguf_arr_len(g, k), 512);
    gguf_str s = gguf_arr_str(g, k, 1);
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.ptr, "<s>", 3);
    assert_null(gguf_find_tensor(g, "output.weight.nope"));
    gguf_close(g);
}

static void test_open_vocab_only(void **state)
{
    (void)state;
    const char *path = TESTDATA_REQUIRE("golden/tokenizer/ggml-vocab-llama-spm.gguf");
    char err[512];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    assert_int_equal(gguf_n_tensors(g), 0);
    int64_t k = gguf_find_key(g, "tokenizer.ggml.tokens");
    assert_true(k >= 0);
    assert_int_equal(gguf_arr_type(g, k), GGUF_VTYPE_STRING);
    assert_int_equal(gguf_arr_len(g, k), 32000);
    int64_t sc = gguf_find_key(g, "tokenizer.ggml.scores");
    assert_true(sc >= 0);
    assert_int_equal(gguf_arr_type(g, sc), GGUF_VTYPE_FLOAT32);
    gguf_close(g);
}

/* Every prefix of a real file's metadata (and a spread over its data) fails. */
static void test_truncated_stories(void **state)
{
    (void)state;
    const char *path = TESTDATA_REQUIRE("models/stories260K.gguf");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *all = malloc(size);
    assert_non_null(all);
    assert_int_equal(fread(all, 1, size, f), size);
    fclose(f);
    char err[512];
    gguf_ctx *g = gguf_open_buffer(all, size, "stories", err, sizeof err);
    assert_non_null(g);
    size_t data = gguf_data_offset(g), end = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (data + t->offset + t->nbytes > end)
            end = data + t->offset + t->nbytes;
    }
    gguf_close(g);
    size_t n_cuts = 0;
    for (size_t n = 0; n < end; n += n < data + 64 ? 1 : 4093) {
        err[0] = '\0';
        gguf_ctx *h = open_copy(all, n, err, sizeof err);
        if (h)
            fail_msg("prefix of %zu bytes opened", n);
        if (!strstr(err, " at offset "))
            fail_msg("prefix %zu: no offset in '%s'", n, err);
        n_cuts++;
    }
    assert_true(n_cuts > data);
    free(all);
}

/* ---- synthetic valid files ------------------------------------------------------ */

static void test_valid_v2_v3(void **state)
{
    (void)state;
    for (uint32_t v = 2; v <= 3; v++) {
        buf b = valid_file(v, 0);
        char err[512];
        gguf_ctx *g = open_copy(b.p, b.n, err, sizeof err);
        if (!g)
            fail_msg("v%u: %s", v, err);
        const uint8_t *base = live_copy;
        assert_int_equal(gguf_version(g), v);
        assert_int_equal(gguf_alignment(g), 32);
        assert_int_equal(gguf_data_offset(g) % 32, 0);
        assert_int_equal(gguf_n_kv(g), 2);
        assert_int_equal(gguf_n_tensors(g), 2);
        const gguf_tensor *a = gguf_find_tensor(g, "a.weight");
        const gguf_tensor *q = gguf_find_tensor(g, "b.weight");
        assert_non_null(a);
        assert_non_null(q);
        assert_int_equal(a->n_dims, 2);
        assert_int_equal(a->ne[2], 1);
        assert_int_equal(a->n_elements, 64);
        assert_int_equal(a->nbytes, 256);
        assert_int_equal(q->nbytes, 34);
        float x;
        memcpy(&x, (const uint8_t *)a->data + 4 * 63, 4);
        assert_true(x == 63.0f);
        assert_int_equal(((const uint8_t *)q->data)[33], 33);
        assert_ptr_equal((const uint8_t *)q->data + 34, base + gguf_file_size(g)); /* ends at EOF */
        close_copy(g);
        free(b.p);
    }
}

static void test_alignment_64(void **state)
{
    (void)state;
    buf b = valid_file(3, 64);
    char err[512];
    gguf_ctx *g = open_copy(b.p, b.n, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    assert_int_equal(gguf_alignment(g), 64);
    assert_int_equal(gguf_data_offset(g) % 64, 0);
    assert_int_equal(gguf_tensor_at(g, 1)->offset, 256);
    assert_ptr_equal(gguf_tensor_at(g, 0)->data, (const uint8_t *)live_copy + gguf_data_offset(g));
    close_copy(g);
    free(b.p);
}

static void test_zero_tensors_and_empty(void **state)
{
    (void)state;
    buf b = {0};
    hdr(&b, 3, 0, 0);
    char err[512];
    gguf_ctx *g = open_copy(b.p, b.n, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    assert_int_equal(gguf_n_kv(g), 0);
    assert_int_equal(gguf_n_tensors(g), 0);
    assert_int_equal(gguf_find_key(g, "anything"), -1);
    assert_null(gguf_find_tensor(g, "anything"));
    assert_null(gguf_tensor_at(g, 0));
    close_copy(g);
    free(b.p);
}

/* Many keys: lookups and duplicate detection stay correct (hashed). */
static void test_many_keys(void **state)
{
    (void)state;
    enum { N = 20000 };
    for (int dup = 0; dup <= 1; dup++) {
        buf b = {0};
        hdr(&b, 3, 0, N);
        char k[32];
        for (int i = 0; i < N; i++) {
            snprintf(k, sizeof k, "k.%d", dup && i == N - 1 ? 123 : i);
            kv_u32(&b, k, (uint32_t)i * 3);
        }
        if (dup) {
            expect_fail(&b, "duplicate key 'k.123'");
            continue;
        }
        char err[512];
        gguf_ctx *g = open_copy(b.p, b.n, err, sizeof err);
        if (!g)
            fail_msg("%s", err);
        for (int i = 0; i < N; i += 997) {
            snprintf(k, sizeof k, "k.%d", i);
            uint32_t v;
            assert_int_equal(gguf_find_key(g, k), i);
            assert_true(gguf_get_u32(g, k, &v));
            assert_int_equal(v, (uint32_t)i * 3);
        }
        assert_int_equal(gguf_find_key(g, "k.20000"), -1);
        close_copy(g);
        free(b.p);
    }
}

/* ---- malformed buffers -------------------------------------------------------- */

static void test_reject_not_gguf(void **state)
{
    (void)state;
    static const char junk[64] = "this is not a gguf file at all....";
    char err[512];
    gguf_ctx *g = gguf_open_buffer(junk, sizeof junk, "junk", err, sizeof err);
    assert_null(g);
    assert_non_null(strstr(err, "magic"));
    /* no error buffer at all must not crash either */
    assert_null(gguf_open_buffer(junk, sizeof junk, NULL, NULL, 0));
    assert_null(gguf_open_buffer(NULL, 0, NULL, err, sizeof err));
    assert_non_null(strstr(err, "magic"));
}

static void test_open_missing_file(void **state)
{
    (void)state;
    char err[512];
    assert_null(gguf_open("/nonexistent/dir/model.gguf", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/dir/model.gguf: cannot open"));
    assert_null(gguf_open("/", err, sizeof err));
    assert_non_null(strstr(err, "not a regular file"));
}

static void test_reject_header(void **state)
{
    (void)state;
    static const struct {
        uint32_t v;
        const char *want;
    } vers[] = {{0, "unsupported version 0"}, {1, "v1 is not supported"}, {4, "unsupported version 4"},
                {0x03000000u, "byte-swapped"}, {0x02000000u, "byte-swapped"}};
    for (size_t i = 0; i < sizeof vers / sizeof vers[0]; i++) {
        buf b = valid_file(3, 0);
        memcpy(b.p + 4, &vers[i].v, 4);
        expect_fail(&b, vers[i].want);
    }
    buf b = valid_file(3, 0);
    b.p[0] = 'g';
    expect_fail(&b, "magic at offset 0");
    b = valid_file(3, 0);
    memcpy(b.p + 8, &(uint64_t){UINT64_MAX}, 8);
    expect_fail(&b, "tensor count at offset 8");
    b = valid_file(3, 0);
    memcpy(b.p + 16, &(uint64_t){(uint64_t)1 << 40}, 8);
    expect_fail(&b, "key/value count at offset 16");
}

static void test_reject_kvs(void **state)
{
    (void)state;
    buf b = {0};
    hdr(&b, 3, 0, 1);
    put_u64(&b, UINT64_MAX);
    put(&b, "0123456789abcdef", 16);
    expect_fail(&b, "key/value #0 at offset 24: string length");

    hdr(&b, 3, 0, 1);
    kv_str(&b, "general.name", "x");
    b.n -= 1 + 8;
    put_u64(&b, 1000);
    put(&b, "abc", 3);
    expect_fail(&b, "key 'general.name' at offset 48: string length 1000");

    hdr(&b, 3, 0, 1);
    key(&b, "a.b", 13);
    put_u64(&b, 0);
    expect_fail(&b, "key 'a.b' at offset 35: unknown value type 13");

    hdr(&b, 3, 0, 1);
    arr(&b, "a.b", GGUF_VTYPE_ARRAY, 1);
    put_u32(&b, GGUF_VTYPE_UINT8);
    put_u64(&b, 1);
    put_u8(&b, 0);
    expect_fail(&b, "nested arrays");

    hdr(&b, 3, 0, 1);
    arr(&b, "a.b", 77, 1);
    put_u64(&b, 1);
    expect_fail(&b, "unknown array element type 77");

    hdr(&b, 3, 0, 1);
    arr(&b, "a.b", GGUF_VTYPE_UINT32, (uint64_t)1 << 61);
    put_u64(&b, 1);
    put_u64(&b, 1);
    expect_fail(&b, "array length 2305843009213693952");

    hdr(&b, 3, 0, 1);
    arr(&b, "a.b", GGUF_VTYPE_STRING, UINT64_MAX / 8);
    put_str(&b, "x");
    expect_fail(&b, "array length");

    hdr(&b, 3, 0, 1);
    arr(&b, "a.b", GGUF_VTYPE_STRING, 2);
    put_str(&b, "x");
    put_u64(&b, 99);
    put(&b, "short", 5);
    expect_fail(&b, "string 1 (of 2)");

    hdr(&b, 3, 0, 2);
    kv_u32(&b, "a", 1);
    kv_u32(&b, "a", 2);
    expect_fail(&b, "duplicate key 'a'");

    static const uint32_t aligns[] = {0, 3, 48};
    for (size_t i = 0; i < 3; i++) {
        hdr(&b, 3, 0, 1);
        kv_u32(&b, "general.alignment", aligns[i]);
        expect_fail(&b, "general.alignment at offset 24");
    }
    hdr(&b, 3, 0, 1);
    key(&b, "general.alignment", GGUF_VTYPE_INT32);
    put_u32(&b, 32);
    expect_fail(&b, "must be u32, not i32");

    hdr(&b, 3, 0, 1);
    put_u64(&b, 0);
    put_u32(&b, GGUF_VTYPE_UINT8);
    put_u8(&b, 1);
    put_u64(&b, 0); /* padding so the count check passes */
    expect_fail(&b, "key length 0");
}

static void test_reject_tensors(void **state)
{
    (void)state;
    buf b = {0};
    /* n_dims 0 and 5 */
    for (uint32_t nd = 0; nd <= 5; nd += 5) {
        hdr(&b, 3, 1, 0);
        put_str(&b, "t");
        put_u32(&b, nd);
        for (uint32_t d = 0; d < nd; d++)
            put_u64(&b, 1);
        put_u32(&b, 0);
        put_u64(&b, 0);
        put_u64(&b, 0);
        expect_fail(&b, nd ? "n_dims 5" : "n_dims 0");
    }
    static const struct {
        uint64_t ne0, ne1;
        uint32_t type;
        uint64_t off;
        const char *want;
    } cases[] = {
        {32, 0, TENSOR_TYPE_F32, 0, "dimension 1 is 0"},
        {0, 1, TENSOR_TYPE_F32, 0, "dimension 0 is 0"},
        {(uint64_t)1 << 63, 1, TENSOR_TYPE_F32, 0, "dimension 0 is 9223372036854775808"},
        {(uint64_t)1 << 32, (uint64_t)1 << 31, TENSOR_TYPE_F32, 0, "element count overflows"},
        {(uint64_t)1 << 31, (uint64_t)1 << 31, TENSOR_TYPE_F64, 0, "byte size overflows"},
        {33, 1, TENSOR_TYPE_Q8_0, 0, "row length 33 is not a multiple of the Q8_0 block size 32"},
        {128, 1, TENSOR_TYPE_Q6_K, 0, "block size 256"},
        {48, 1, TENSOR_TYPE_MXFP4, 0, "row length 48 is not a multiple of the MXFP4 block size 32"},
        {64, 8, TENSOR_TYPE_MXFP4, 0, "past its end"}, /* 8 rows of 2 blocks of 17 bytes: 272 > 256 */
        {48, 1, TENSOR_TYPE_IQ4_NL, 0, "row length 48 is not a multiple of the IQ4_NL block size 32"},
        {64, 8, TENSOR_TYPE_IQ4_NL, 0, "past its end"}, /* 8 rows of 2 blocks of 18 bytes: 288 > 256 */
        {128, 1, TENSOR_TYPE_IQ4_XS, 0, "row length 128 is not a multiple of the IQ4_XS block size 256"},
        {256, 2, TENSOR_TYPE_IQ4_XS, 0, "past its end"}, /* 2 rows of 136 bytes: 272 > 256 */
        {128, 1, TENSOR_TYPE_IQ2_XS, 0, "row length 128 is not a multiple of the IQ2_XS block size 256"},
        {256, 4, TENSOR_TYPE_IQ2_XXS, 0, "past its end"}, /* 4 blocks of 66 bytes: 264 > 256 */
        {256, 4, TENSOR_TYPE_IQ2_S, 0, "past its end"},   /* 4 x 82 = 328 > 256 */
        {32, 1, 99, 0, "unknown tensor type 99"},
        {32, 1, 5, 0, "unknown tensor type 5"},
        {32, 1, TENSOR_TYPE_F32, 8, "8 is not a multiple of the alignment 32"},
        {32, 1, TENSOR_TYPE_F32, 64, "64, expected 0"},
        {32, 100, TENSOR_TYPE_F32, 0, "past its end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hdr(&b, 3, 1, 0);
        tinfo2(&b, "t.w", cases[i].ne0, cases[i].ne1, cases[i].type, cases[i].off);
        pad(&b, 32);
        for (int k = 0; k < 256; k++)
            put_u8(&b, 0);
        expect_fail(&b, cases[i].want);
    }
    /* names: empty, too long, duplicate */
    hdr(&b, 3, 1, 0);
    tinfo2(&b, "", 32, 1, TENSOR_TYPE_F32, 0);
    pad(&b, 32);
    put(&b, (char[128]){0}, 128);
    expect_fail(&b, "tensor #0 at offset 24: name length 0");
    hdr(&b, 3, 2, 0);
    tinfo2(&b, "same", 32, 1, TENSOR_TYPE_F32, 0);
    tinfo2(&b, "same", 32, 1, TENSOR_TYPE_F32, 128);
    pad(&b, 32);
    put(&b, (char[256]){0}, 256);
    expect_fail(&b, "duplicate tensor name 'same'");
    /* overlapping data */
    hdr(&b, 3, 2, 0);
    tinfo2(&b, "x", 32, 1, TENSOR_TYPE_F32, 0);
    tinfo2(&b, "y", 32, 1, TENSOR_TYPE_F32, 0);
    pad(&b, 32);
    put(&b, (char[256]){0}, 256);
    expect_fail(&b, "tensor 'y' data offset");
}

/* Every prefix of the synthetic file fails; the whole file opens. */
static void test_truncated_every_offset(void **state)
{
    (void)state;
    buf b = valid_file(3, 0);
    char err[512];
    for (size_t n = 0; n < b.n; n++) {
        err[0] = '\0';
        gguf_ctx *g = open_copy(b.p, n, err, sizeof err);
        if (g)
            fail_msg("prefix of %zu of %zu bytes opened", n, b.n);
        if (!strstr(err, " at offset "))
            fail_msg("prefix %zu: '%s'", n, err);
    }
    gguf_ctx *g = open_copy(b.p, b.n, err, sizeof err);
    assert_non_null(g);
    close_copy(g);
    free(b.p);
}

/* ---- typed getters -------------------------------------------------------------- */

/* gguf_make_resident: the listed tensors move out of the file mapping
 * into 64-byte aligned memory with the same bytes; moved ones are not moved
 * again; a caller's buffer, or less than gguf_resident_min, moves nothing;
 * the header stays readable where it was. */
static void test_make_resident(void **state)
{
    (void)state;
    buf b = valid_file(3, 64);
    char path[] = "/tmp/tokscope-resident-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    char err[256];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    assert_non_null(g);
    const uint8_t *file = gguf_file_bytes(g);
    const gguf_tensor *ta = gguf_tensor_at(g, 0), *tb = gguf_tensor_at(g, 1);
    const void *a0 = ta->data, *b0 = tb->data;
    const int64_t both[2] = {0, 1}, again[3] = {1, 1, 0};
    const size_t min = gguf_resident_min;
    gguf_resident_min = 1 << 20; /* 290 bytes: too few to move */
    assert_false(gguf_make_resident(g, both, 2, gguf_resident_min));
    assert_ptr_equal(ta->data, a0);
    gguf_resident_min = 0;
    assert_true(gguf_make_resident(g, &both[1], 1, gguf_resident_min)); /* b only */
    assert_ptr_equal(ta->data, a0);
    assert_true((const uint8_t *)tb->data < file || (const uint8_t *)tb->data >= file + b.n);
    assert_true((uintptr_t)tb->data % 64 == 0);
    assert_memory_equal(tb->data, b.p + ((const uint8_t *)b0 - file), tb->nbytes);
    assert_true(gguf_make_resident(g, again, 3, gguf_resident_min)); /* b is skipped, a moves */
    assert_true((const uint8_t *)ta->data < file || (const uint8_t *)ta->data >= file + b.n);
    assert_memory_equal(ta->data, b.p + ((const uint8_t *)a0 - file), ta->nbytes);
    assert_false(gguf_make_resident(g, both, 2, gguf_resident_min)); /* nothing left in the file */
    assert_memory_equal(gguf_file_bytes(g), b.p, gguf_data_offset(g)); /* the header */
    gguf_close(g);
    unlink(path);
    /* a caller's buffer has no file to move from */
    gguf_ctx *m = open_copy(b.p, b.n, err, sizeof err);
    assert_non_null(m);
    assert_false(gguf_make_resident(m, both, 2, gguf_resident_min));
    close_copy(m);
    gguf_resident_min = min;
    free(b.p);
}

static void test_getters(void **state)
{
    (void)state;
    buf b = {0};
    hdr(&b, 3, 0, 21);
    key(&b, "u8", GGUF_VTYPE_UINT8); put_u8(&b, 250);
    key(&b, "i8n", GGUF_VTYPE_INT8); put_u8(&b, 0xff); /* -1 */
    key(&b, "u16", GGUF_VTYPE_UINT16); put_u16(&b, 65000);
    key(&b, "i16", GGUF_VTYPE_INT16); put_u16(&b, 1234);
    kv_u32(&b, "u32", 4000000000u);
    key(&b, "i32", GGUF_VTYPE_INT32); put_u32(&b, 77);
    key(&b, "i32n", GGUF_VTYPE_INT32); put_u32(&b, (uint32_t)-5);
    key(&b, "u64big", GGUF_VTYPE_UINT64); put_u64(&b, (uint64_t)1 << 40);
    key(&b, "u64max", GGUF_VTYPE_UINT64); put_u64(&b, UINT64_MAX);
    key(&b, "i64n", GGUF_VTYPE_INT64); put_u64(&b, (uint64_t)INT64_MIN);
    key(&b, "f32", GGUF_VTYPE_FLOAT32); put_f32(&b, 1e-5f);
    key(&b, "f64", GGUF_VTYPE_FLOAT64); put_f64(&b, 100000.0);
    key(&b, "bt", GGUF_VTYPE_BOOL); put_u8(&b, 1);
    key(&b, "bf", GGUF_VTYPE_BOOL); put_u8(&b, 0);
    kv_str(&b, "s", "hello\nworld");
    kv_str(&b, "s0", "");
    arr(&b, "as", GGUF_VTYPE_STRING, 3); put_str(&b, "a"); put_str(&b, ""); put_str(&b, "ccc");
    arr(&b, "af", GGUF_VTYPE_FLOAT32, 3); put_f32(&b, -1.5f); put_f32(&b, 0); put_f32(&b, 2.75f);
    arr(&b, "ai", GGUF_VTYPE_INT32, 2); put_u32(&b, (uint32_t)-3); put_u32(&b, 7);
    arr(&b, "au64", GGUF_VTYPE_UINT64, 1); put_u64(&b, UINT64_MAX);
    arr(&b, "ab", GGUF_VTYPE_BOOL, 2); put_u8(&b, 0); put_u8(&b, 1);
    char err[512];
    gguf_ctx *g = open_copy(b.p, b.n, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    uint32_t u = 0;
    int64_t i = 0;
    uint64_t u64 = 0;
    float f = 0;
    bool bl = false;
    /* u32 from other integer types */
    assert_true(gguf_get_u32(g, "u8", &u)); assert_int_equal(u, 250);
    assert_true(gguf_get_u32(g, "u16", &u)); assert_int_equal(u, 65000);
    assert_true(gguf_get_u32(g, "i16", &u)); assert_int_equal(u, 1234);
    assert_true(gguf_get_u32(g, "u32", &u)); assert_int_equal(u, 4000000000u);
    assert_true(gguf_get_u32(g, "i32", &u)); assert_int_equal(u, 77);
    assert_true(gguf_get_u32(g, "bt", &u)); assert_int_equal(u, 1);
    /* refused: negative to unsigned, too big, float, string, array, absent */
    u = 42;
    assert_false(gguf_get_u32(g, "i8n", &u));
    assert_false(gguf_get_u32(g, "i32n", &u));
    assert_false(gguf_get_u32(g, "u64big", &u));
    assert_false(gguf_get_u32(g, "f32", &u));
    assert_false(gguf_get_u32(g, "s", &u));
    assert_false(gguf_get_u32(g, "ai", &u));
    assert_false(gguf_get_u32(g, "absent", &u));
    assert_int_equal(u, 42); /* untouched on failure */
    assert_false(gguf_get_u64(g, "i64n", &u64));
    assert_true(gguf_get_u64(g, "u64max", &u64)); assert_true(u64 == UINT64_MAX);
    assert_true(gguf_get_u64(g, "u64big", &u64)); assert_true(u64 == (uint64_t)1 << 40);
    /* i64 */
    assert_true(gguf_get_i64(g, "i8n", &i)); assert_int_equal(i, -1);
    assert_true(gguf_get_i64(g, "i32n", &i)); assert_int_equal(i, -5);
    assert_true(gguf_get_i64(g, "i64n", &i)); assert_true(i == INT64_MIN);
    assert_true(gguf_get_i64(g, "u32", &i)); assert_int_equal(i, 4000000000LL);
    assert_false(gguf_get_i64(g, "u64max", &i));
    assert_false(gguf_get_i64(g, "f64", &i));
    /* f32 from float, double and integer */
    assert_true(gguf_get_f32(g, "f32", &f)); assert_true(f == 1e-5f);
    assert_true(gguf_get_f32(g, "f64", &f)); assert_true(f == 100000.0f);
    assert_true(gguf_get_f32(g, "i32n", &f)); assert_true(f == -5.0f);
    assert_false(gguf_get_f32(g, "s", &f));
    assert_false(gguf_get_f32(g, "af", &f));
    /* bool */
    assert_true(gguf_get_bool(g, "bt", &bl)); assert_true(bl);
    assert_true(gguf_get_bool(g, "bf", &bl)); assert_false(bl);
    assert_false(gguf_get_bool(g, "s", &bl));
    /* exact integers by index */
    bool neg;
    assert_true(gguf_kv_as_int(g, gguf_find_key(g, "u64max"), &i, &u64, &neg));
    assert_false(neg); assert_true(u64 == UINT64_MAX); assert_true(i == INT64_MAX);
    assert_true(gguf_kv_as_int(g, gguf_find_key(g, "i32n"), &i, &u64, &neg));
    assert_true(neg); assert_int_equal(i, -5);
    assert_false(gguf_kv_as_int(g, gguf_find_key(g, "f32"), &i, &u64, &neg));
    /* strings */
    gguf_str s;
    assert_true(gguf_get_str(g, "s", &s));
    assert_int_equal(s.len, 11);
    assert_memory_equal(s.ptr, "hello\nworld", 11);
    assert_false(gguf_get_str(g, "u8", &s));
    char *d = gguf_get_str_dup(g, "s");
    assert_string_equal(d, "hello\nworld");
    free(d);
    d = gguf_get_str_dup(g, "s0");
    assert_string_equal(d, "");
    free(d);
    assert_null(gguf_get_str_dup(g, "u8"));
    assert_null(gguf_get_str_dup(g, "absent"));
    /* string arrays */
    int64_t k = gguf_find_key(g, "as");
    assert_int_equal(gguf_kv_type(g, k), GGUF_VTYPE_ARRAY);
    assert_int_equal(gguf_arr_type(g, k), GGUF_VTYPE_STRING);
    assert_int_equal(gguf_arr_len(g, k), 3);
    s = gguf_arr_str(g, k, 2);
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.ptr, "ccc", 3);
    assert_int_equal(gguf_arr_str(g, k, 1).len, 0);
    assert_int_equal(gguf_arr_str(g, k, 3).len, 0); /* out of range: empty */
    assert_int_equal(gguf_arr_f64(g, k, 0), 0);     /* wrong element type: 0 */
    /* numeric arrays convert between element types */
    k = gguf_find_key(g, "af");
    assert_true(gguf_arr_f64(g, k, 0) == -1.5);
    assert_true(gguf_arr_f64(g, k, 2) == 2.75);
    assert_int_equal(gguf_arr_i64(g, k, 2), 2);
    assert_int_equal(gguf_arr_u64(g, k, 0), 0);
    assert_int_equal(gguf_arr_str(g, k, 0).len, 0);
    k = gguf_find_key(g, "ai");
    assert_int_equal(gguf_arr_i64(g, k, 0), -3);
    assert_true(gguf_arr_f64(g, k, 1) == 7.0);
    assert_int_equal(gguf_arr_u64(g, k, 0), 0);
    assert_int_equal(gguf_arr_i64(g, k, 2), 0); /* out of range */
    k = gguf_find_key(g, "au64");
    assert_true(gguf_arr_u64(g, k, 0) == UINT64_MAX);
    assert_true(gguf_arr_i64(g, k, 0) == INT64_MAX);
    k = gguf_find_key(g, "ab");
    assert_int_equal(gguf_arr_i64(g, k, 1), 1);
    /* scalars are not arrays; bad indexes are harmless */
    k = gguf_find_key(g, "u8");
    assert_int_equal(gguf_arr_len(g, k), 0);
    assert_int_equal(gguf_arr_type(g, k), GGUF_VTYPE_COUNT);
    assert_int_equal(gguf_arr_len(g, -1), 0);
    assert_int_equal(gguf_arr_len(g, 999), 0);
    assert_int_equal(gguf_kv_key(g, 999).len, 0);
    assert_int_equal(gguf_kv_type(g, -5), GGUF_VTYPE_COUNT);
    double dd;
    assert_false(gguf_kv_as_f64(g, 999, &dd));
    assert_false(gguf_kv_as_str(g, -1, &s));
    assert_int_equal(gguf_find_key(g, NULL), -1);
    /* key views */
    k = gguf_find_key(g, "u16");
    assert_int_equal(k, 2);
    s = gguf_kv_key(g, k);
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.ptr, "u16", 3);
    assert_string_equal(gguf_vtype_name(GGUF_VTYPE_FLOAT32), "f32");
    assert_string_equal(gguf_vtype_name((enum gguf_vtype)99), "?");
    close_copy(g);
    free(b.p);
}

/* Deterministic mutation fuzzing: random byte edits of a valid file either
 * open (and then every accessor stays inside the buffer) or fail with a
 * located message. Run the binary under valgrind to see over-reads. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) { return test_xorshift64(&rng_state); }

static void walk_all(const gguf_ctx *g)
{
    volatile double sink = 0;
    for (int64_t i = 0; i < gguf_n_kv(g); i++) {
        gguf_str k = gguf_kv_key(g, i);
        sink += k.len ? (unsigned char)k.ptr[k.len - 1] : 0;
        double d;
        gguf_str s;
        if (gguf_kv_as_f64(g, i, &d))
            sink += d;
        if (gguf_kv_as_str(g, i, &s) && s.len)
            sink += (unsigned char)s.ptr[s.len - 1];
        for (uint64_t j = 0; j < gguf_arr_len(g, i); j++) {
            s = gguf_arr_str(g, i, j);
            sink += s.len ? (unsigned char)s.ptr[s.len - 1] : 0;
            sink += gguf_arr_f64(g, i, j) + (double)gguf_arr_i64(g, i, j);
        }
    }
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        assert_non_null(gguf_find_tensor(g, t->name));
        if (t->nbytes)
            sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
    }
    (void)sink;
}

static void test_mutation_fuzz(void **state)
{
    (void)state;
    buf b = valid_file(3, 0);
    uint8_t *m = malloc(b.n);
    assert_non_null(m);
    int opened = 0, refused = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(m, b.p, b.n);
        int edits = 1 + (int)(rng() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(rng() % b.n);
            switch (rng() % 4) {
            case 0: m[at] ^= (uint8_t)(1u << (rng() % 8)); break;       /* bit flip */
            case 1: m[at] = (uint8_t)rng(); break;                       /* random byte */
            case 2: m[at] = (uint8_t)(rng() % 2 ? 0xff : 0x00); break;   /* extremes */
            default: m[at] = (uint8_t)(m[at] + (rng() % 2 ? 1 : -1)); break; /* off by one */
            }
        }
        size_t n = rng() % 8 ? b.n : (size_t)(rng() % b.n); /* sometimes truncate too */
        char err[512] = "";
        gguf_ctx *g = open_copy(m, n, err, sizeof err);
        if (g) {
            walk_all(g);
            close_copy(g);
            opened++;
        } else {
            if (!strstr(err, "mem.gguf: ") || !strstr(err, " at offset "))
                fail_msg("iteration %d: unlocated error '%s'", iter, err);
            refused++;
        }
    }
    /* both outcomes must occur, or the mutations test nothing */
    assert_true(opened > 100);
    assert_true(refused > 1000);
    free(m);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_stories),
        cmocka_unit_test(test_open_vocab_only),
        cmocka_unit_test(test_truncated_stories),
        cmocka_unit_test(test_valid_v2_v3),
        cmocka_unit_test(test_alignment_64),
        cmocka_unit_test(test_zero_tensors_and_empty),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_reject_not_gguf),
        cmocka_unit_test(test_open_missing_file),
        cmocka_unit_test(test_reject_header),
        cmocka_unit_test(test_reject_kvs),
        cmocka_unit_test(test_reject_tensors),
        cmocka_unit_test(test_truncated_every_offset),
        cmocka_unit_test(test_getters),
        cmocka_unit_test(test_make_resident),
        cmocka_unit_test(test_mutation_fuzz),
    };
    return cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
}
