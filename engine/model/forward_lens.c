/* The logit lens and cut evaluations: the same recipes built into other
 * graphs (forward_graph.c), run by forward_run on the context's buffers
 * and cache. A cut graph stops after n blocks and applies the output norm
 * and head there, as a file cut to n blocks would; the lens graph applies
 * the head after every block and hands each block's logits to a callback.
 * forward_eval runs its own graph and never looks at these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/forward_internal.h"

void forward_lens_free(forward_ctx *f)
{
    if (f->cut)
        fwd_graph_free(f->cut);
    if (f->lens)
        fwd_graph_free(f->lens);
    free(f->cut);
    free(f->lens);
    f->cut = f->lens = NULL;
}

static fwd_graph *graph_get(forward_ctx *f, fwd_graph **slot, uint32_t n_layer, bool lens, char *err,
                            size_t errlen)
{
    fwd_graph *g = *slot;
    if (g && g->n_layer == n_layer)
        return g;
    if (g)
        fwd_graph_free(g);
    else if (!(g = *slot = calloc(1, sizeof *g))) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!fwd_graph_build_ex(g, f->m, f->rot_k, f->rot_v, n_layer, lens)) {
        fwd_graph_free(g);
        free(g);
        *slot = NULL;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return g;
}

int forward_eval_cut(forward_ctx *f, int32_t n_layer, const int32_t *tokens, int32_t n, int32_t start_pos,
                     float *logits, bool all_logits, char *err, size_t errlen)
{
    if (n_layer < 1 || n_layer > (int32_t)f->hp.n_layer) {
        snprintf(err, errlen, "layer %d is outside the model's blocks (1..%u)", n_layer, f->hp.n_layer);
        return -1;
    }
    if (n_layer == (int32_t)f->hp.n_layer)
        return forward_run(f, &f->graph, tokens, n, start_pos, logits, all_logits, err, errlen);
    const fwd_graph *g = graph_get(f, &f->cut, (uint32_t)n_layer, false, err, errlen);
    return g ? forward_run(f, g, tokens, n, start_pos, logits, all_logits, err, errlen) : -1;
}

/* Every layer's and KV head's K and V rows [start_pos, start_pos + n) into
 * buf, or back from it with restore; layers that share another's cache
 * have none of their own. Returns the bytes. */
static size_t cache_rows_copy(forward_ctx *f, int32_t start_pos, int32_t n, uint8_t *buf, bool restore)
{
    const size_t n_ctx = f->p.n_ctx;
    size_t total = 0;
    for (uint32_t l = 0; l < f->hp.n_layer; l++) {
        if (f->hp.kv_layer[l] != l || !f->k_cache[l]) /* shared, or recurrent (no cache) */
            continue;
        const size_t kh = forward_k_head(f, l), vh = forward_v_head(f, l);
        const size_t kb = (size_t)n * kh, vb = (size_t)n * vh;
        for (int h = 0; h < forward_n_kv(f, l); h++) {
            uint8_t *k = (uint8_t *)f->k_cache[l] + (h * n_ctx + (size_t)start_pos) * kh;
            uint8_t *v = (uint8_t *)f->v_cache[l] + (h * n_ctx + (size_t)start_pos) * vh;
            if (buf && restore) {
                memcpy(k, buf + total, kb);
                memcpy(v, buf + total + kb, vb);
            } else if (buf) {
                memcpy(buf + total, k, kb);
                memcpy(buf + total + kb, v, vb);
            }
            total += kb + vb;
        }
    }
    return total;
}

int forward_eval_lens(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start_pos, float *logits,
                      bool keep_cache, forward_lens_fn fn, void *user, char *err, size_t errlen)
{
    const fwd_graph *g = graph_get(f, &f->lens, f->hp.n_layer, true, err, errlen);
    if (!g)
        return -1;
    if (n <= 0 || start_pos < 0 || (int64_t)start_pos + n > (int64_t)f->p.n_ctx) {
        snprintf(err, errlen, "%d tokens at position %d do not fit the context of %u tokens", n, start_pos,
                 f->p.n_ctx);
        return -1;
    }
    /* the rows this evaluation overwrites, every layer's K and V: per KV
     * head, as the cache is head-major (forward_internal.h) */
    uint8_t *saved = NULL;
    const size_t rsb = forward_rs_bytes(f); /* and the recurrent state, whole */
    const int32_t rs_pos = forward_rs_pos(f);
    if (keep_cache) {
        saved = malloc(cache_rows_copy(f, start_pos, n, NULL, false) + rsb);
        if (!saved) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        forward_rs_save(f, saved + cache_rows_copy(f, start_pos, n, saved, false));
    }
    f->lens_fn = fn;
    f->lens_user = user;
    const int rc = forward_run(f, g, tokens, n, start_pos, logits, true, err, errlen);
    f->lens_fn = NULL;
    f->lens_user = NULL;
    if (saved) {
        forward_rs_load(f, saved + cache_rows_copy(f, start_pos, n, saved, true), rs_pos);
        free(saved);
    }
    return rc;
}
