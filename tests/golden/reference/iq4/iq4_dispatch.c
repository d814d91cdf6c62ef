/* Which order the reference's CPU backend really picks for IQ4_NL: runs
 * ggml graphs (llama.cpp 34af94cd's ggml, /work/ref) with the weight in
 * the repack buffer type, as llama.cpp loads weights, and checks every
 * output bit for bit against tokscope's choice (quant_iq4_nl_batch_applies
 * / quant_iq4_nl_batch_matmul, else vec_dot) for: MUL_MAT with 8 rows
 * (repacked) and 12 rows (not a multiple of 8), 1 to 6 tokens; MUL_MAT_ID
 * with 4 experts of 8 and of 12 rows, 2 used per token, 1 to 6 tokens.
 * Prints one line per case and exits 1 on any difference. Build: like
 * iq4_speed.c (README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/quant_iq4.h"

ggml_backend_buffer_type_t _Z35ggml_backend_cpu_repack_buffer_typev(void);

enum { N = 256, NE = 4, NU = 2 };

static uint64_t rng = 0x1234567887654321ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void fill(uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd();
    for (size_t o = 0; o < bytes; o += sizeof(block_iq4_nl)) {
        const ggml_fp16_t h = ggml_fp32_to_fp16((rnd() & 1 ? -1.0f : 1.0f) * (float)(1 + rnd() % 1000) / 32768.0f);
        memcpy(w + o, &h, 2);
    }
}

static int bad;

static void check(const char *what, int rows, int nt, const float *ref, const float *ours, int n)
{
    int diff = 0;
    for (int i = 0; i < n; i++)
        diff += memcmp(&ref[i], &ours[i], 4) != 0;
    printf("%-10s rows %2d tokens %d: %s (%d of %d outputs differ)\n", what, rows, nt, diff ? "DIFFERENT" : "same bits",
           diff, n);
    bad |= diff != 0;
}

/* tokscope's output for one (weight rows, activation row) as forward_matmul
 * / forward_moe compute it. */
static void ours_matmul(const uint8_t *wd, int rows, const uint8_t *act, size_t as, int nt, float *out)
{
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.n_dims = 2, w.ne[0] = N, w.ne[1] = rows, w.ne[2] = w.ne[3] = 1, w.type = TENSOR_TYPE_IQ4_NL, w.data = wd;
    if (quant_iq4_nl_batch_applies(&w, nt))
        quant_iq4_nl_batch_matmul(&w, N, 0, rows, act, as, nt, out, rows);
    else
        for (int t = 0; t < nt; t++)
            tensor_matvec(TENSOR_TYPE_IQ4_NL, N, wd, rows, act + as * t, out + rows * t);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, 2);
    const size_t rs = ggml_row_size(GGML_TYPE_IQ4_NL, N), as = ggml_row_size(GGML_TYPE_Q8_0, N);
    for (int id = 0; id < 2; id++)
        for (int rows = 8; rows <= 12; rows += 4)
            for (int nt = 1; nt <= 6; nt++) {
                const int ne = id ? NE : 1;
                struct ggml_init_params pw = {ggml_tensor_overhead() * 4, NULL, true};
                struct ggml_context *cw = ggml_init(pw), *cx = ggml_init(pw);
                struct ggml_tensor *W = ggml_new_tensor_3d(cw, GGML_TYPE_IQ4_NL, N, rows, ne);
                struct ggml_tensor *X = id ? ggml_new_tensor_3d(cx, GGML_TYPE_F32, N, 1, nt)
                                           : ggml_new_tensor_2d(cx, GGML_TYPE_F32, N, nt);
                struct ggml_tensor *I = ggml_new_tensor_2d(cx, GGML_TYPE_I32, NU, nt);
                /* llama.cpp puts a weight in the repack buffer only where
                 * the repack type supports it (rows a multiple of 8 here) */
                ggml_backend_buffer_t bw = ggml_backend_alloc_ctx_tensors_from_buft(
                    cw, rows % 8 == 0 ? _Z35ggml_backend_cpu_repack_buffer_typev()
                                      : ggml_backend_get_default_buffer_type(be));
                ggml_backend_buffer_t bx = ggml_backend_alloc_ctx_tensors(cx, be);
                uint8_t *wd = malloc(rs * rows * ne);
                fill(wd, rs * rows * ne);
                ggml_backend_tensor_set(W, wd, 0, rs * rows * ne); /* repacks where the reference would */
                float *x = malloc(sizeof(float) * N * nt);
                for (int i = 0; i < N * nt; i++)
                    x[i] = (float)(rnd() % 20001) / 10000.0f - 1.0f;
                ggml_backend_tensor_set(X, x, 0, sizeof(float) * N * nt);
                int32_t ids[NU * 6];
                for (int t = 0; t < nt; t++) {
                    ids[NU * t] = (int32_t)(rnd() % NE);
                    ids[NU * t + 1] = (ids[NU * t] + 1 + (int32_t)(rnd() % (NE - 1))) % NE;
                }
                ggml_backend_tensor_set(I, ids, 0, sizeof(int32_t) * NU * nt);

                struct ggml_init_params pg = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
                struct ggml_context *cg = ggml_init(pg);
                struct ggml_tensor *Y = id ? ggml_mul_mat_id(cg, W, X, I) : ggml_mul_mat(cg, W, X);
                struct ggml_cgraph *g = ggml_new_graph(cg);
                ggml_build_forward_expand(g, Y);
                ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
                ggml_gallocr_alloc_graph(ga, g);
                ggml_backend_graph_compute(be, g);
                const int n_out = id ? rows * NU * nt : rows * nt;
                float *ref = malloc(sizeof(float) * n_out), *ours = malloc(sizeof(float) * n_out);
                ggml_backend_tensor_get(Y, ref, 0, sizeof(float) * n_out);

                uint8_t *a = malloc(as * nt);
                for (int t = 0; t < nt; t++)
                    tensor_quantize_row(TENSOR_TYPE_Q8_0, x + N * t, a + as * t, N);
                if (!id) {
                    ours_matmul(wd, rows, a, as, nt, ours);
                } else { /* forward_moe: each expert's rows, a token at a time */
                    for (int t = 0; t < nt; t++)
                        for (int k = 0; k < NU; k++)
                            ours_matmul(wd + rs * rows * ids[NU * t + k], rows, a + as * t, as, 1,
                                        ours + rows * (NU * t + k));
                }
                check(id ? "mul_mat_id" : "mul_mat", rows, nt, ref, ours, n_out);
                free(a), free(ref), free(ours), free(x), free(wd);
                ggml_gallocr_free(ga);
                ggml_free(cg);
                ggml_backend_buffer_free(bw);
                ggml_backend_buffer_free(bx);
                ggml_free(cw);
                ggml_free(cx);
            }
    ggml_backend_free(be);
    return bad;
}
