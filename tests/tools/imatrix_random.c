/* Writes an importance matrix of random positive values for a model, in the
 * legacy imatrix format that llama-quantize (llama.cpp 34af94cd,
 * common/imatrix-loader.cpp: common_imatrix_load_legacy) still reads, so
 * that `make bench` can quantize its random-weight shapes to the types that
 * demand one (IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M; the others use it when given):
 *
 *   imatrix_random [--seed N] MODEL.gguf OUT.dat
 *
 * One entry per 2-D weight (every tensor named *.weight with two dimensions,
 * the embeddings too: llama-quantize ignores what it does not quantize):
 * its row length of values uniform in [0.05, 2.05) (a sum of squared
 * activations over ncall = 1 call; llama-quantize divides by ncall).
 * Layout, little endian: i32 n_entries; per entry i32 name length, the name
 * (no NUL), i32 ncall, i32 n_values, n_values f32; then i32 chunk count and
 * i32 length + the dataset name ("random"). A random matrix says nothing
 * about a model's activations: the files are for speed, not quality. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static uint64_t rng = 0x494D415452495831ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int wr_i32(FILE *f, int32_t v)
{
    return fwrite(&v, 4, 1, f) == 1 ? 0 : -1;
}

static int is_matrix(const gguf_tensor *t)
{
    const size_t l = strlen(t->name);
    return t->n_dims == 2 && l > 7 && !strcmp(t->name + l - 7, ".weight");
}

int main(int argc, char **argv)
{
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "--seed")) {
        rng ^= strtoull(argv[a + 1], NULL, 10) * 0x9E3779B97F4A7C15ull;
        a += 2;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: imatrix_random [--seed N] MODEL.gguf OUT.dat\n");
        return 2;
    }
    char err[512];
    gguf_ctx *g = gguf_open(argv[a], err, sizeof err);
    if (!g) {
        fprintf(stderr, "imatrix_random: %s\n", err);
        return 1;
    }
    FILE *f = fopen(argv[a + 1], "wb");
    if (!f) {
        perror(argv[a + 1]);
        return 1;
    }
    int32_t n = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++)
        n += is_matrix(gguf_tensor_at(g, i));
    int bad = wr_i32(f, n);
    for (int64_t i = 0; i < gguf_n_tensors(g) && !bad; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (!is_matrix(t))
            continue;
        const int32_t len = (int32_t)strlen(t->name);
        bad |= wr_i32(f, len) || fwrite(t->name, 1, (size_t)len, f) != (size_t)len;
        bad |= wr_i32(f, 1) || wr_i32(f, (int32_t)t->ne[0]);
        for (int64_t j = 0; j < t->ne[0] && !bad; j++) {
            const float v = 0.05f + (float)(next() >> 40) / (float)(1 << 23);
            bad |= fwrite(&v, 4, 1, f) != 1;
        }
    }
    static const char dataset[] = "random";
    bad |= wr_i32(f, 1) || wr_i32(f, (int32_t)strlen(dataset)) ||
           fwrite(dataset, 1, strlen(dataset), f) != strlen(dataset);
    bad |= fclose(f) != 0;
    gguf_close(g);
    if (bad) {
        fprintf(stderr, "imatrix_random: cannot write %s\n", argv[a + 1]);
        return 1;
    }
    printf("imatrix_random: %d entries\n", n);
    return 0;
}
