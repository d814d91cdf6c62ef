/* Dumps, for random TQ1_0 / TQ2_0 rows, what the reference's CPU backend
 * computes: each row's dequantization (to_float) and its vec_dot against
 * random activations quantized by the reference's own Q8_K from_float.
 * tests/unit/test_tq.c checks tokscope against the dump (tests/unit/data/).
 *
 *   cc -O1 -I/work/ref/ggml/include tests/golden/reference/tq_dump.c \
 *      -L/work/ref/build/bin -Wl,-rpath,/work/ref/build/bin -lggml-cpu -lggml-base -o /tmp/tq_dump
 *   /tmp/tq_dump 34 tests/unit/data/tq1_0.dump && /tmp/tq_dump 35 tests/unit/data/tq2_0.dump
 *
 * File (little endian): u32 type, u32 n (row length), u32 rows, u32 row
 * bytes, then per row: the weight row, the Q8_K activation row, the dot
 * (f32), the dequantized row (n f32). Weights are random bytes (so every
 * byte value, invalid trit codes included), scales random halves in
 * [2^-8, 2^2), activations uniform in [-1, 1) with an occasional large one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

static uint64_t st = 0x5451445550ull;
static uint64_t rnd(void)
{
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return st;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const enum ggml_type type = (enum ggml_type)atoi(argv[1]);
    const uint32_t n = 512, rows = 4;
    ggml_cpu_init();
    const struct ggml_type_traits *tt = ggml_get_type_traits(type);
    const struct ggml_type_traits_cpu *ct = ggml_get_type_traits_cpu(type);
    const struct ggml_type_traits_cpu *q8 = ggml_get_type_traits_cpu(GGML_TYPE_Q8_K);
    const uint32_t rb = (uint32_t)ggml_row_size(type, n);
    const size_t ab = ggml_row_size(GGML_TYPE_Q8_K, n);
    uint8_t *w = malloc(rb), *a = malloc(ab);
    float *x = malloc(n * sizeof(float)), *dq = malloc(n * sizeof(float));
    FILE *f = fopen(argv[2], "wb");
    if (!f || ct->vec_dot_type != GGML_TYPE_Q8_K)
        return 1;
    const uint32_t hdr[4] = {(uint32_t)type, n, rows, rb};
    fwrite(hdr, 4, 4, f);
    const size_t bs = ggml_type_size(type);
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t i = 0; i < rb; i++)
            w[i] = (uint8_t)rnd();
        for (uint32_t b = 0; b < rb / bs; b++) { /* the fp16 scale is the block's last 2 bytes */
            const float d = ldexpf(1.0f + (float)(rnd() % 1024) / 1024.0f, (int)(rnd() % 10) - 8);
            const ggml_fp16_t h = ggml_fp32_to_fp16(rnd() % 2 ? d : -d);
            memcpy(w + (b + 1) * bs - 2, &h, 2);
        }
        for (uint32_t i = 0; i < n; i++) {
            x[i] = (float)(rnd() % 65536) / 32768.0f - 1.0f;
            if (rnd() % 97 == 0)
                x[i] *= 40.0f;
        }
        q8->from_float(x, a, n);
        float dot = 0.0f;
        ct->vec_dot((int)n, &dot, 0, w, 0, a, 0, 1);
        tt->to_float(w, dq, n);
        fwrite(w, 1, rb, f);
        fwrite(a, 1, ab, f);
        fwrite(&dot, 4, 1, f);
        fwrite(dq, 4, n, f);
    }
    return fclose(f) != 0;
}
