/* Reference dumps of IQ block types (tests/golden/reference/iq_dump.c):
 * weight rows, Q8_K activation rows, the reference's dots and dequantized
 * weights, read from tests/unit/data/iq_ref_TYPE.bin (run from the
 * repository root, as tests/run.sh does). Include after <cmocka.h>. */
#ifndef TOKSCOPE_TEST_IQ_REF_H
#define TOKSCOPE_TEST_IQ_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/quant_internal.h"

struct iq_ref {
    uint32_t type, n, rows, cols, n_deq;
    size_t rs, as; /* bytes per weight row, per activation row */
    uint8_t *w, *a;
    float *dots, *deq;
};

static inline void iq_ref_load(struct iq_ref *r, const char *name, enum tensor_type type)
{
    char path[256];
    snprintf(path, sizeof path, "tests/unit/data/iq_ref_%s.bin", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    char magic[8];
    uint32_t h[5];
    assert_int_equal(fread(magic, 1, 8, f), 8);
    assert_memory_equal(magic, "IQREF1\0\0", 8);
    assert_int_equal(fread(h, 4, 5, f), 5);
    r->type = h[0], r->n = h[1], r->rows = h[2], r->cols = h[3], r->n_deq = h[4];
    assert_int_equal(r->type, type);
    r->rs = tensor_row_size(type, r->n);
    r->as = tensor_row_size(TENSOR_TYPE_Q8_K, r->n);
    assert_true(r->rs > 0 && r->as > 0);
    r->w = malloc(r->rs * r->rows);
    r->a = malloc(r->as * r->cols);
    r->dots = malloc(sizeof(float) * r->rows * r->cols);
    r->deq = malloc(sizeof(float) * r->n_deq);
    assert_int_equal(fread(r->w, r->rs, r->rows, f), r->rows);
    assert_int_equal(fread(r->a, r->as, r->cols, f), r->cols);
    assert_int_equal(fread(r->dots, sizeof(float), r->rows * r->cols, f), r->rows * r->cols);
    assert_int_equal(fread(r->deq, sizeof(float), r->n_deq, f), r->n_deq);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
}

static inline void iq_ref_free(struct iq_ref *r)
{
    free(r->w), free(r->a), free(r->dots), free(r->deq);
}

static inline uint32_t iq_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The dot in exact arithmetic (doubles) from dequantized sign * magnitude
 * weights (IQ2/IQ3 style), with the x86 kernels' 8-bit wrap where neg (one
 * flag per weight: its stored sign bit) is given: the sign goes onto the
 * activation, and -(-128) stays -128, so such a product comes out as -w * q
 * instead of w * q. */
static inline double iq_spec_dot(const float *deq, const block_q8_K *y, int64_t n, const uint8_t *neg)
{
    double s = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        double b = 0;
        for (int j = 0; j < QK_K; j++) {
            const double w = deq[i * QK_K + j];
            const int q = y[i].qs[j];
            b += neg && q == -128 && neg[i * QK_K + j] ? -w * q : w * q;
        }
        s += b * y[i].d;
    }
    return s;
}

/* The sum of |terms| of that dot: the scale float rounding errors go by
 * (terms cancel, so the dot's own size says little). */
static inline double iq_spec_mag(const float *deq, const block_q8_K *y, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n / QK_K; i++)
        for (int j = 0; j < QK_K; j++)
            s += fabs((double)deq[i * QK_K + j] * y[i].qs[j] * y[i].d);
    return s;
}

/* |got - want| within float rounding of a sum of terms totalling mag. */
static inline int iq_close(double got, double want, double mag)
{
    return fabs(got - want) <= 1e-6 * mag + 1e-30;
}

#endif

/* A GGUF v3 image with one tensor "t.w" of ne0 x ne1 elements of `type` at
 * offset 0 and 256 data bytes, opened from memory: NULL (and the loader's
 * message in err) when refused. *keep is the buffer to free after
 * gguf_close. Checks that the loader sizes the type's rows right. */
static inline gguf_ctx *iq_gguf_one_tensor(uint32_t type, uint64_t ne0, uint64_t ne1, char *err,
                                           size_t errlen, void **keep)
{
    uint8_t *b = calloc(1, 4096), *p = b;
#define IQ_PUT(v)                                                                                            \
    do {                                                                                                     \
        const __typeof__(v) v_ = (v);                                                                        \
        memcpy(p, &v_, sizeof v_);                                                                           \
        p += sizeof v_;                                                                                      \
    } while (0)
    memcpy(p, "GGUF", 4), p += 4;
    IQ_PUT((uint32_t)3);
    IQ_PUT((uint64_t)1); /* tensors */
    IQ_PUT((uint64_t)0); /* key/values */
    IQ_PUT((uint64_t)3);
    memcpy(p, "t.w", 3), p += 3;
    IQ_PUT((uint32_t)2);
    IQ_PUT(ne0);
    IQ_PUT(ne1);
    IQ_PUT(type);
    IQ_PUT((uint64_t)0);
#undef IQ_PUT
    const size_t size = (((size_t)(p - b) + 31) & ~(size_t)31) + 256;
    gguf_ctx *g = gguf_open_buffer(b, size, "mem.gguf", err, errlen);
    *keep = b;
    return g;
}
