/* The recurrent state of a forward context: what the Gated DeltaNet layers
 * carry from one position to the next (their convolution's last inputs and
 * the delta rule's state matrices), in one block so that a snapshot is one
 * copy. It follows the caller's position counter like the KV cache, but
 * unlike the cache it cannot be rewound by writing rows again: a state at
 * pos has consumed exactly [0, pos), so an evaluation must start there (or
 * at 0, from an empty state). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward_internal.h"

bool forward_rs_alloc(forward_ctx *f)
{
    f->rs_bytes = 0;
    f->rs_pos = 0;
    f->rs_nl = f->hp.n_layer;
    f->rs = NULL;
    for (uint32_t l = 0; l < f->hp.n_layer; l++)
        f->rs_bytes += forward_rs_layer_bytes(&f->hp, l);
    if (f->rs_bytes == 0)
        return true;
    f->rs = calloc(f->p.n_seq ? f->p.n_seq : 1, f->rs_bytes); /* one state per sequence; stream 0 first */
    f->dn_lanes = malloc((size_t)f->p.n_threads * 64 * f->hp.ssm_d_state * sizeof(float));
    return f->rs != NULL && f->dn_lanes != NULL;
}

void forward_rs_free(forward_ctx *f)
{
    free(f->rs_snaps);
    f->rs_snaps = NULL;
    f->rs_keep = f->rs_snap_n = f->rs_snap_cap = 0;
    free(f->rs);
    free(f->dn_lanes);
    f->rs = NULL;
    f->dn_lanes = NULL;
    f->rs_bytes = 0;
}

bool forward_is_recurrent(const forward_ctx *f) { return f->rs_bytes > 0; }

size_t forward_rs_bytes(const forward_ctx *f) { return f->rs_bytes; }

int32_t forward_rs_pos(const forward_ctx *f) { return f->rs_bytes ? f->rs_pos : 0; }

void forward_rs_save(const forward_ctx *f, void *dst)
{
    if (f->rs_bytes)
        memcpy(dst, f->rs, f->rs_bytes);
}

void forward_rs_load(forward_ctx *f, const void *src, int32_t pos)
{
    if (!f->rs_bytes)
        return;
    memcpy(f->rs, src, f->rs_bytes);
    f->rs_pos = pos;
    f->rs_snap_n = 0;
    f->rs_nl = f->hp.n_layer;
}

void forward_rs_save_seq(const forward_ctx *f, int32_t s, void *dst)
{
    if (f->rs_bytes && s >= 0 && (uint32_t)s < (f->p.n_seq ? f->p.n_seq : 1))
        memcpy(dst, (const uint8_t *)f->rs + (size_t)s * f->rs_bytes, f->rs_bytes);
}

void forward_rs_load_seq(forward_ctx *f, int32_t s, const void *src, int32_t pos)
{
    if (!f->rs_bytes || s < 0 || (uint32_t)s >= (f->p.n_seq ? f->p.n_seq : 1))
        return;
    if (s == 0) { /* stream 0 is forward_eval's too: its counter goes with it */
        forward_rs_load(f, src, pos);
        return;
    }
    memcpy((uint8_t *)f->rs + (size_t)s * f->rs_bytes, src, f->rs_bytes);
}

void forward_rs_reset(forward_ctx *f)
{
    if (!f->rs_bytes)
        return;
    memset(f->rs, 0, f->rs_bytes);
    f->rs_pos = 0;
    f->rs_snap_n = 0;
    f->rs_nl = f->hp.n_layer;
}

bool forward_rs_keep(forward_ctx *f, int32_t n)
{
    f->rs_snap_n = 0;
    f->rs_keep = 0;
    if (!f->rs_bytes || n <= 0)
        return true;
    if (f->p.n_seq > 1) /* a state per row of one sequence; forward_decode's rows mix them */
        return false;
    if (n > f->rs_snap_cap) {
        uint8_t *p = realloc(f->rs_snaps, (size_t)n * f->rs_bytes);
        if (!p)
            return false;
        f->rs_snaps = p;
        f->rs_snap_cap = n;
    }
    f->rs_keep = n;
    return true;
}

bool forward_rs_rollback(forward_ctx *f, int32_t i)
{
    if (!f->rs_bytes)
        return true;
    if (i < 0 || i >= f->rs_snap_n || f->rs_nl != f->hp.n_layer)
        return false;
    memcpy(f->rs, f->rs_snaps + (size_t)i * f->rs_bytes, f->rs_bytes);
    f->rs_pos = f->rs_snap_pos + i + 1;
    return true;
}

void forward_rs_snap_begin(forward_ctx *f, int32_t n, int32_t start_pos)
{
    f->rs_snap_on = f->rs_keep > 0 && n <= f->rs_keep;
    f->rs_snap_n = 0;
    f->rs_snap_pos = start_pos;
}

void forward_rs_snap_end(forward_ctx *f, int32_t n)
{
    f->rs_snap_n = f->rs_snap_on ? n : 0;
    f->rs_snap_on = false;
}

int forward_rs_check(forward_ctx *f, uint32_t n_layer, int32_t start_pos, char *err, size_t errlen)
{
    if (!f->rs_bytes)
        return 0;
    if (start_pos == 0) {
        forward_rs_reset(f);
        f->rs_nl = n_layer;
        return 0;
    }
    if (n_layer != f->rs_nl) {
        snprintf(err, errlen,
                 "the recurrent state was advanced by %u of the %u blocks: an evaluation with %u blocks must start "
                 "again at position 0",
                 f->rs_nl, f->hp.n_layer, n_layer);
        return -1;
    }
    if (start_pos != f->rs_pos) {
        snprintf(err, errlen,
                 "the recurrent state holds positions [0, %d): it cannot continue at position %d "
                 "(restore a snapshot taken there, or start again at 0)",
                 f->rs_pos, start_pos);
        return -1;
    }
    return 0;
}
