/* Several sequences in one forward call: forward_decode cuts a batch of
 * (token, position, sequence) entries into internal batches the way
 * llama.cpp 34af94cd does for a cache with one stream per sequence
 * (llama_kv_cache::init_batch -> llama_batch_allocr::split_equal(n_ubatch,
 * sequential = true)), and runs each through forward_eval_batch with its
 * rows' positions and streams. The cut decides every matmul's batch size
 * and each stream's attention kernel, hence the bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward_internal.h"

bool forward_multi_seq_ok(const model *m, char *err, size_t errlen)
{
    if (model_get_weights(m)->mtp_input) {
        snprintf(err, errlen, "an MTP block (%s) takes one sequence only", model_get_arch(m));
        return false;
    }
    if (model_get_weights(m)->g4assist_input) { /* it reads its target's cache, one token at a time */
        snprintf(err, errlen, "a Gemma 4 assistant (%s) takes one sequence only", model_get_arch(m));
        return false;
    }
    return true;
}

/* The state of split_equal over one batch: which entries are used. */
struct splitter {
    const forward_batch *b;
    int32_t n_seq;
    bool *used;
    int32_t *first; /* per sequence: its entries in batch order are ents[first[s] .. first[s] + count[s]) */
    int32_t *count;
    int32_t *ents;
    int32_t *cur; /* per sequence: entries of it already used */
};

/* llama_batch_allocr::split_equal with sequential = true and one sequence
 * per token: walk the batch for the first unused entry of each sequence,
 * taking a sequence when its id is the last taken + 1 (or it is the first);
 * then take one entry from each taken sequence at a time while every one
 * has entries left and another round fits n_ubatch. Writes the entries,
 * sequence by sequence, to idx; returns their count (0: done) and the
 * number of sequences in *n_stream. */
static int split_next(struct splitter *sp, int32_t n_ubatch, int32_t *idx, int *n_stream)
{
    const forward_batch *b = sp->b;
    int32_t seqs[256];
    int ns = 0;
    int32_t last = -1;
    for (int32_t i = 0; i < b->n; i++) {
        if (sp->used[i])
            continue;
        const int32_t s = b->seq[i];
        bool dup = false;
        for (int k = 0; k < ns; k++)
            dup = dup || seqs[k] == s;
        if (dup || (ns > 0 && s != last + 1))
            continue;
        seqs[ns++] = s;
        last = s;
        if (ns > n_ubatch)
            break;
    }
    *n_stream = ns;
    if (ns == 0)
        return 0;
    int per = 0;
    for (;;) {
        bool can = true;
        for (int k = 0; k < ns; k++)
            can = can && sp->cur[seqs[k]] + per < sp->count[seqs[k]];
        if (!can)
            break;
        per++;
        if ((per + 1) * ns > n_ubatch)
            break;
    }
    int n = 0;
    for (int k = 0; k < ns; k++) {
        const int32_t s = seqs[k];
        for (int j = 0; j < per; j++) {
            const int32_t e = sp->ents[sp->first[s] + sp->cur[s] + j];
            sp->used[e] = true;
            idx[n++] = e;
        }
        sp->cur[s] += per;
    }
    return n;
}

/* Entries valid: tokens in the vocabulary, sequences in [0, n_seq),
 * positions in the stream, each sequence's at consecutive ascending
 * positions. */
static int check_batch(const forward_ctx *f, const forward_batch *b, int32_t *last_pos, char *err,
                       size_t errlen)
{
    if (b->n <= 0) {
        snprintf(err, errlen, "no tokens to evaluate");
        return -1;
    }
    for (uint32_t s = 0; s < f->p.n_seq; s++)
        last_pos[s] = -1;
    for (int32_t i = 0; i < b->n; i++) {
        const int32_t s = b->seq[i], p = b->pos[i], t = b->token[i];
        if (s < 0 || (uint32_t)s >= f->p.n_seq) {
            snprintf(err, errlen, "entry %d: sequence %d is not one of the %u this context holds", i, s,
                     f->p.n_seq);
            return -1;
        }
        if (t < 0 || t >= f->hp.n_vocab) {
            snprintf(err, errlen, "entry %d: token id %d is outside the vocabulary (0..%d)", i, t,
                     f->hp.n_vocab - 1);
            return -1;
        }
        if (p < 0 || (uint32_t)p >= f->p.n_ctx) {
            snprintf(err, errlen,
                     "entry %d: position %d does not fit the context of %u tokens (use a larger -c)", i, p,
                     f->p.n_ctx);
            return -1;
        }
        if (last_pos[s] >= 0 && p != last_pos[s] + 1) {
            snprintf(err, errlen,
                     "entry %d: sequence %d goes from position %d to %d (they must be consecutive)", i, s,
                     last_pos[s], p);
            return -1;
        }
        last_pos[s] = p;
    }
    return 0;
}

int forward_decode(forward_ctx *f, const forward_batch *b, float *logits, char *err, size_t errlen)
{
    if (f->w->mtp_input || f->w->g4assist_input) {
        forward_multi_seq_ok(f->m, err, errlen);
        return -1;
    }
    f->rs_snap_n = 0; /* the states forward_rs_keep kept are no longer the last evaluation's */
    const int32_t n = b->n, ns = (int32_t)f->p.n_seq, nv = f->hp.n_vocab;
    /* one block for the splitter and the internal batch's arrays */
    const size_t n_i32 = (size_t)3 * ns + 6 * (size_t)n + (size_t)f->p.n_batch;
    int32_t *mem = malloc(n_i32 * sizeof(int32_t) + (size_t)n);
    if (!mem) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int32_t *first = mem, *count = first + ns, *cur = count + ns;
    int32_t *ents = cur + ns, *idx = ents + n, *tok = idx + n, *pos = tok + n, *seq = pos + n,
            *out_of = seq + n;
    int32_t *out_rows = out_of + n;
    bool *used = (bool *)(out_rows + f->p.n_batch);
    int rc = check_batch(f, b, cur, err, errlen);
    if (rc == 0) {
        memset(count, 0, (size_t)ns * sizeof *count);
        memset(cur, 0, (size_t)ns * sizeof *cur);
        memset(used, 0, (size_t)n);
        for (int32_t i = 0; i < n; i++)
            count[b->seq[i]]++;
        for (int32_t s = 0, at = 0; s < ns; s++) {
            first[s] = at;
            at += count[s];
            count[s] = 0;
        }
        int32_t n_out = 0;
        for (int32_t i = 0; i < n; i++) {
            ents[first[b->seq[i]] + count[b->seq[i]]++] = i;
            const bool want = b->out ? b->out[i] != 0 : i == n - 1;
            out_of[i] = want ? n_out++ : -1; /* its row of logits */
        }
        /* a recurrent state: a sequence that starts at position 0 starts
         * from an empty state (as forward_eval does at start_pos 0) */
        for (int32_t q = 0; q < ns && f->rs; q++)
            if (count[q] > 0 && b->pos[ents[first[q]]] == 0)
                memset(f->rs + (size_t)q * f->rs_bytes, 0, f->rs_bytes);
        if (f->rs && count[0] > 0) { /* stream 0 is forward_eval's too: keep its counter */
            f->rs_pos = b->pos[ents[first[0] + count[0] - 1]] + 1;
            f->rs_nl = f->hp.n_layer;
        }
        struct splitter sp = {b, ns, used, first, count, ents, cur};
        int n_stream, m;
        int32_t done = 0;
        while ((m = split_next(&sp, (int32_t)f->p.n_batch, idx, &n_stream)) > 0) {
            struct fwd_ubatch ub = {pos, seq, n_stream, out_rows, 0};
            for (int r = 0; r < m; r++) {
                tok[r] = b->token[idx[r]];
                pos[r] = b->pos[idx[r]];
                seq[r] = b->seq[idx[r]];
                if (out_of[idx[r]] >= 0)
                    out_rows[ub.n_out++] = r;
            }
            /* the rows come out in the internal batch's order; each is then
             * copied to its entry's place among the batch's outputs */
            float *rows = NULL;
            if (ub.n_out > 0) {
                rows = malloc((size_t)ub.n_out * nv * sizeof(float));
                if (!rows) {
                    snprintf(err, errlen, "out of memory");
                    rc = -1;
                    break;
                }
            }
            f->ub = &ub;
            forward_eval_batch(f, &f->graph, tok, m, pos[0], rows, 0);
            done += m;
            f->ub = NULL;
            for (int k = 0; k < ub.n_out; k++)
                memcpy(logits + (size_t)out_of[idx[out_rows[k]]] * nv, rows + (size_t)k * nv,
                       (size_t)nv * sizeof(float));
            free(rows);
            if (f->progress && !f->progress(f->progress_user, done, n)) {
                snprintf(err, errlen, "evaluation cancelled after %d of %d tokens", done, n);
                rc = -1;
                break;
            }
        }
    }
    free(mem);
    return rc;
}
