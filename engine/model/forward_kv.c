/* The KV cache as pieces of bytes, for a snapshot on disk (memory/kv_snapshot.c),
 * and the settings of a forward context that change the numbers it computes. */
#include <string.h>

#include "model/forward_internal.h"

size_t forward_kv_pieces(forward_ctx *f, int32_t n, forward_kv_piece_fn fn, void *user)
{
    return forward_kv_pieces_seq(f, 0, n, fn, user);
}

size_t forward_kv_pieces_seq(forward_ctx *f, int32_t s, int32_t n, forward_kv_piece_fn fn, void *user)
{
    size_t total = 0;
    if (n <= 0 || s < 0 || (uint32_t)s >= (f->p.n_seq ? f->p.n_seq : 1))
        return 0;
    for (uint32_t l = 0; l < f->hp.n_layer; l++) {
        if (f->hp.kv_layer[l] != l || !f->k_cache[l]) /* shared, or recurrent (no cache) */
            continue;
        const size_t kh = forward_k_head(f, l), vh = forward_v_head(f, l);
        for (int h = 0; h < forward_n_kv(f, l); h++) {
            /* head-major: head h's rows [0, n) are one run of bytes */
            uint8_t *k = (uint8_t *)f->k_cache[l] + forward_kv_base(f, l, s, h) * kh;
            uint8_t *v = (uint8_t *)f->v_cache[l] + forward_kv_base(f, l, s, h) * vh;
            if (fn && (!fn(user, k, (size_t)n * kh) || !fn(user, v, (size_t)n * vh)))
                return 0;
            total += (size_t)n * (kh + vh);
        }
    }
    return total;
}

void forward_bits_settings(const forward_ctx *f, forward_bits *out)
{
    memset(out, 0, sizeof *out);
    out->n_ctx = f->p.n_ctx;
    out->n_batch = f->p.n_batch;
    out->n_threads = f->n_threads;
    out->kv_type = (int32_t)f->p.kv_type;
    out->v_type = (int32_t)f->p.v_type;
    out->blas = (int32_t)f->p.blas;
    out->rot_k = f->rot_k;
    out->rot_v = f->rot_v;
}
