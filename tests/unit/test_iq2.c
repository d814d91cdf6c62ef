/* IQ2_XXS, IQ2_XS and IQ2_S blocks:
 * - against the reference's own outputs (tests/unit/data/iq2_TYPE.bin, made
 *   by tests/golden/reference/iq2/iq2_dump.c from llama.cpp 34af94cd's
 *   dequantize_row_iq2_* and ggml_vec_dot_iq2_*_q8_K, AVX2 and _generic):
 *   dequantization, every dot kernel (installed vec_dot, x86order, dot4,
 *   matvec, the batched matmul, the generic scalar), bit for bit. The dumps'
 *   weight blocks walk every grid index, so each grid entry is checked;
 * - against a decoder written here from the format description (not the
 *   kernels' iq2_groups): values in double, dots as exact integers;
 * - the one integer difference between the orders: an activation byte -128
 *   under a minus sign is +128 in the generic code and stays -128 in the
 *   x86 code (8-bit negation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq2.h"
#include "testutil.h"

/* ---- the reference dumps ---- */

struct dump {
    uint32_t type, nbr, rows, nact, bsize;
    int64_t n; /* elements per row */
    uint8_t *w, *act;
    uint64_t *hash;
    float *y0, *dot_x86, *dot_generic; /* [row * nact + act] */
};

static void *slurp(FILE *f, size_t n)
{
    void *p = malloc(n);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, n, f), n);
    return p;
}

static void dump_load(const char *name, uint32_t want_type, struct dump *d)
{
    char path[256];
    snprintf(path, sizeof path, "tests/unit/data/iq2_%s.bin", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    char magic[4];
    uint32_t hdr[4];
    assert_int_equal(fread(magic, 1, 4, f), 4);
    assert_memory_equal(magic, "IQ2D", 4);
    assert_int_equal(fread(hdr, 4, 4, f), 4);
    d->type = hdr[0];
    d->nbr = hdr[1];
    d->rows = hdr[2];
    d->nact = hdr[3];
    assert_int_equal(d->type, want_type);
    assert_int_equal(d->nact, 4);
    d->bsize = (uint32_t)tensor_type_size(d->type);
    d->n = (int64_t)d->nbr * QK_K;
    const size_t nblk = (size_t)d->nbr * d->rows;
    d->w = slurp(f, nblk * d->bsize);
    d->act = slurp(f, (size_t)d->nact * d->nbr * sizeof(block_q8_K));
    d->hash = slurp(f, nblk * 8);
    d->y0 = slurp(f, QK_K * 4);
    d->dot_x86 = slurp(f, (size_t)d->rows * d->nact * 4);
    d->dot_generic = slurp(f, (size_t)d->rows * d->nact * 4);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
}

static void dump_free(struct dump *d)
{
    free(d->w);
    free(d->act);
    free(d->hash);
    free(d->y0);
    free(d->dot_x86);
    free(d->dot_generic);
}

static const void *dump_row(const struct dump *d, uint32_t r) { return d->w + (size_t)r * d->nbr * d->bsize; }
static const void *dump_act(const struct dump *d, uint32_t a)
{
    return d->act + (size_t)a * d->nbr * sizeof(block_q8_K);
}

static uint64_t fnv(const float *y, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint8_t *p = (const uint8_t *)y;
    for (int i = 0; i < 4 * n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void expect_bits(const char *what, uint32_t r, uint32_t a, float got, float want)
{
    if (f2u(got) != f2u(want))
        fail_msg("%s row %u act %u: %.9g (0x%08x), reference %.9g (0x%08x)", what, r, a, (double)got, f2u(got),
                 (double)want, f2u(want));
}

typedef float (*dot_fn)(int64_t, const void *, const void *);

static void check_against_dump(const char *name, enum tensor_type type, dot_fn scalar, dot_fn x86order)
{
    struct dump d;
    dump_load(name, (uint32_t)type, &d);
    const struct quant_kernels *k = quant_kernels_get(type);
    assert_non_null(k);

    /* dequantization: every block (hash of the float bits), block 0 in full */
    float y[QK_K];
    for (uint32_t b = 0; b < d.nbr * d.rows; b++) {
        tensor_dequantize_row(type, d.w + (size_t)b * d.bsize, y, QK_K);
        if (b == 0)
            for (int j = 0; j < QK_K; j++)
                if (f2u(y[j]) != f2u(d.y0[j]))
                    fail_msg("%s dequantize block 0 [%d]: %.9g, reference %.9g", name, j, (double)y[j], (double)d.y0[j]);
        if (fnv(y, QK_K) != d.hash[b])
            fail_msg("%s dequantize block %u differs from the reference", name, b);
    }

    /* one pair at a time */
    for (uint32_t r = 0; r < d.rows; r++)
        for (uint32_t a = 0; a < d.nact; a++) {
            const float want = d.dot_x86[r * d.nact + a];
            expect_bits("vec_dot", r, a, tensor_vec_dot(type, d.n, dump_row(&d, r), dump_act(&d, a)), want);
            expect_bits("x86order", r, a, x86order(d.n, dump_row(&d, r), dump_act(&d, a)), want);
            expect_bits("scalar (generic)", r, a, scalar(d.n, dump_row(&d, r), dump_act(&d, a)),
                        d.dot_generic[r * d.nact + a]);
        }

    /* four activations per row (dot4), every row at once (matvec), and the
     * batched matmul over all rows and activations */
    const void *a4[4] = {dump_act(&d, 0), dump_act(&d, 1), dump_act(&d, 2), dump_act(&d, 3)};
    for (uint32_t r = 0; r < d.rows; r++) {
        if (!k->dot4)
            break;
        float o[4];
        k->dot4(d.n, dump_row(&d, r), a4, o);
        for (uint32_t a = 0; a < 4; a++)
            expect_bits("dot4", r, a, o[a], d.dot_x86[r * d.nact + a]);
    }
    float mv[64], mm[4 * 64];
    for (uint32_t a = 0; a < d.nact; a++) {
        tensor_matvec(type, d.n, d.w, d.rows, dump_act(&d, a), mv);
        for (uint32_t r = 0; r < d.rows; r++)
            expect_bits("matvec", r, a, mv[r], d.dot_x86[r * d.nact + a]);
    }
    for (int n_act = 1; n_act <= 4; n_act++) {
        tensor_matmul(type, d.n, d.w, d.rows, d.act, n_act, (size_t)d.nbr * sizeof(block_q8_K), mm, d.rows);
        for (int a = 0; a < n_act; a++)
            for (uint32_t r = 0; r < d.rows; r++)
                expect_bits("matmul", r, (uint32_t)a, mm[(size_t)a * d.rows + r], d.dot_x86[r * d.nact + (uint32_t)a]);
    }
    dump_free(&d);
}

static void test_reference_iq2_xxs(void **state)
{
    (void)state;
    check_against_dump("xxs", TENSOR_TYPE_IQ2_XXS, quant_dot_iq2_xxs_scalar, quant_dot_iq2_xxs_x86order);
}

static void test_reference_iq2_xs(void **state)
{
    (void)state;
    check_against_dump("xs", TENSOR_TYPE_IQ2_XS, quant_dot_iq2_xs_scalar, quant_dot_iq2_xs_x86order);
}

static void test_reference_iq2_s(void **state)
{
    (void)state;
    check_against_dump("s", TENSOR_TYPE_IQ2_S, quant_dot_iq2_s_scalar, quant_dot_iq2_s_x86order);
}

/* ---- a decoder from the format description ---- */

/* Weight e (0..255) of a block: magnitude (the grid entry's byte e % 8),
 * negative?, and the 4-bit scale of its 16. */
struct weight {
    int mag, neg, scale;
};

static int parity7(unsigned s) { return __builtin_popcount(s & 127) & 1; }

static struct weight spec_weight(enum tensor_type type, const uint8_t *blk, int e)
{
    const int g = e / 8, j = e % 8, sb = e / 32;
    uint64_t entry;
    unsigned signs; /* 8 sign bits of group g */
    struct weight w;
    if (type == TENSOR_TYPE_IQ2_XXS) {
        /* per 32: 4 index bytes, then a u32: 4 x 7 sign bits, scale on top */
        const uint8_t *p = blk + 2 + 8 * sb;
        const uint32_t s32 = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        entry = quant_iq2xxs_grid[p[g % 4]];
        signs = (s32 >> 7 * (g % 4)) & 127;
        signs |= (unsigned)parity7(signs) << 7; /* an even number of minus signs */
        w.scale = (int)(s32 >> 28);
    } else if (type == TENSOR_TYPE_IQ2_XS) {
        const unsigned q = (unsigned)blk[2 + 2 * g] | (unsigned)blk[3 + 2 * g] << 8;
        entry = quant_iq2xs_grid[q & 511];
        signs = q >> 9;
        signs |= (unsigned)parity7(signs) << 7;
        const uint8_t sc = blk[2 + 64 + sb];
        w.scale = e % 32 < 16 ? sc & 15 : sc >> 4;
    } else {
        const unsigned hi = (blk[2 + 64 + sb] >> 2 * (g % 4)) & 3;
        entry = quant_iq2s_grid[blk[2 + g] | hi << 8];
        signs = blk[2 + 32 + g];
        const uint8_t sc = blk[2 + 72 + sb];
        w.scale = e % 32 < 16 ? sc & 15 : sc >> 4;
    }
    w.mag = (int)((entry >> 8 * j) & 255);
    w.neg = (int)((signs >> j) & 1);
    return w;
}

static float h2f(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return tensor_fp16_to_fp32(h);
}

/* Dequantized values within float rounding of d (0.5 + s) / 4 * +-mag, and
 * the generic dot within rounding of the exact sum (d (2s + 1) / 8 times
 * the integer sums), on the dumps' blocks. */
static void check_spec(const char *name, enum tensor_type type, dot_fn scalar, dot_fn x86order)
{
    struct dump d;
    dump_load(name, (uint32_t)type, &d);
    float y[QK_K];
    for (uint32_t b = 0; b < d.nbr * d.rows; b++) {
        const uint8_t *blk = d.w + (size_t)b * d.bsize;
        tensor_dequantize_row(type, blk, y, QK_K);
        const double dd = h2f(blk);
        for (int e = 0; e < QK_K; e++) {
            const struct weight w = spec_weight(type, blk, e);
            const double want = dd * (0.5 + w.scale) * 0.25 * (w.neg ? -w.mag : w.mag);
            if (fabs(y[e] - want) > 1e-6 * fabs(want))
                fail_msg("%s block %u weight %d: %.9g, spec %.9g", name, b, e, (double)y[e], want);
        }
    }
    for (uint32_t r = 0; r < d.rows; r++)
        for (uint32_t a = 0; a < d.nact; a++) {
            const block_q8_K *y8 = dump_act(&d, a);
            double want = 0, size = 0;
            for (uint32_t i = 0; i < d.nbr; i++) {
                const uint8_t *blk = (const uint8_t *)dump_row(&d, r) + (size_t)i * d.bsize;
                long long isum = 0;
                for (int e = 0; e < QK_K; e++) {
                    const struct weight w = spec_weight(type, blk, e);
                    isum += (long long)(2 * w.scale + 1) * (w.neg ? -w.mag : w.mag) * y8[i].qs[e];
                }
                const double t = (double)(h2f(blk) * y8[i].d) * (double)isum / 8;
                want += t;
                size += fabs(t);
            }
            const float got = scalar(d.n, dump_row(&d, r), y8);
            if (fabs(got - want) > 1e-5 * size + 1e-30)
                fail_msg("%s row %u act %u: scalar %.9g, spec %.9g", name, r, a, (double)got, want);
            /* the x86 order adds the same terms another way (the last
             * activation holds -128s, where it differs on purpose) */
            if (a < d.nact - 1 && fabs(x86order(d.n, dump_row(&d, r), y8) - want) > 1e-5 * size + 1e-30)
                fail_msg("%s row %u act %u: x86order %.9g, spec %.9g", name, r, a,
                         (double)x86order(d.n, dump_row(&d, r), y8), want);
        }
    dump_free(&d);
}

static void test_spec_iq2_xxs(void **state)
{
    (void)state;
    check_spec("xxs", TENSOR_TYPE_IQ2_XXS, quant_dot_iq2_xxs_scalar, quant_dot_iq2_xxs_x86order);
}

static void test_spec_iq2_xs(void **state)
{
    (void)state;
    check_spec("xs", TENSOR_TYPE_IQ2_XS, quant_dot_iq2_xs_scalar, quant_dot_iq2_xs_x86order);
}

static void test_spec_iq2_s(void **state)
{
    (void)state;
    check_spec("s", TENSOR_TYPE_IQ2_S, quant_dot_iq2_s_scalar, quant_dot_iq2_s_x86order);
}

/* ---- -128 under a minus sign ---- */

/* One IQ2_S block, every weight +8 but weight 0 negative (its sign byte's
 * bit 0), scale 0 (x1), d = 1; activation: byte 0 is -128, the rest 0, d 1.
 * Generic: (-8) * (-128) = +1024, /8 -> 128. x86: the activation negated in
 * 8 bits stays -128: 8 * -128 = -1024 -> -128. */
static void test_minus_128(void **state)
{
    (void)state;
    block_iq2_s w;
    memset(&w, 0, sizeof w);
    w.d = tensor_fp32_to_fp16(1.0f);
    w.qs[QK_K / 8] = 1; /* group 0's signs: weight 0 negative */
    /* grid index 0 is all 0x08 */
    assert_true(quant_iq2s_grid[0] == 0x0808080808080808ull);
    block_q8_K a;
    memset(&a, 0, sizeof a);
    a.d = 1.0f;
    a.qs[0] = -128;
    assert_true(quant_dot_iq2_s_scalar(QK_K, &w, &a) == 128.0f);
    assert_true(quant_dot_iq2_s_x86order(QK_K, &w, &a) == -128.0f);
    assert_true(tensor_vec_dot(TENSOR_TYPE_IQ2_S, QK_K, &w, &a) == -128.0f);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        enum tensor_type t;
        const char *name;
        size_t size;
    } types[] = {
        {TENSOR_TYPE_IQ2_XXS, "IQ2_XXS", 66},
        {TENSOR_TYPE_IQ2_XS, "IQ2_XS", 74},
        {TENSOR_TYPE_IQ2_S, "IQ2_S", 82},
    };
    for (size_t i = 0; i < 3; i++) {
        assert_true(tensor_type_is_supported(types[i].t));
        assert_string_equal(tensor_type_name(types[i].t), types[i].name);
        assert_int_equal(tensor_type_block_size(types[i].t), 256);
        assert_int_equal(tensor_type_size(types[i].t), types[i].size);
        assert_int_equal(tensor_row_size(types[i].t, 768), 3 * types[i].size);
        assert_int_equal(tensor_row_size(types[i].t, 128), 0); /* not whole blocks */
        assert_int_equal(tensor_dot_type(types[i].t), TENSOR_TYPE_Q8_K);
        assert_non_null(quant_kernels_get(types[i].t));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_reference_iq2_xxs),
        cmocka_unit_test(test_reference_iq2_xs),
        cmocka_unit_test(test_reference_iq2_s),
        cmocka_unit_test(test_spec_iq2_xxs),
        cmocka_unit_test(test_spec_iq2_xs),
        cmocka_unit_test(test_spec_iq2_s),
        cmocka_unit_test(test_minus_128),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
