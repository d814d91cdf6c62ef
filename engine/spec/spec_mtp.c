/* mtp drafts: the target's own MTP block (Qwen3.5/3.6 nextn_predict_layers),
 * as llama.cpp 34af94cd's common_speculative_impl_draft_mtp drives it.
 *
 * The block has a KV cache of its own, at the target's positions. Every
 * batch the target evaluates (prompt, single tokens, verifications) is
 * evaluated by the block too ("process"): token x_p at position p paired
 * with the target's hidden state (h_nextn, its output norm) of the token
 * before, the first one with the last row of the previous batch ("pending",
 * zeros at first). Drafting chains the block on itself: the sampled token
 * with pending gives the block's logits (its argmax is the draft; the
 * reference's top-k 10 with p_min 0) and its own h_nextn, which goes with
 * that draft into the next step, one position on. After a verification,
 * pending is the hidden state of the last accepted position.
 *
 * What a rejected draft wrote in the block's cache is overwritten: the
 * next batch starts at the first position past the accepted tokens, and
 * attention never reads a position past the query's. */
#include "spec/spec_hrows.h"
#include "spec/spec_mtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct spec_mtp {
    model *view;
    forward_ctx *f;
    int32_t n_embd, n_vocab;
    spec_hrows hr; /* the last process()'s target rows, pending */
    float *h_in; /* a process() batch's input rows */
    int32_t cap_in;
    float *logits, *h_row; /* one row each */
};

spec_mtp *spec_mtp_create(const model *target, const forward_params *fp, char *err, size_t errlen)
{
    spec_mtp *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->view = model_mtp_view(target, err, errlen);
    if (!s->view) {
        spec_mtp_free(s);
        return NULL;
    }
    char e2[400];
    s->f = forward_build(s->view, fp, e2, sizeof e2);
    if (!s->f) {
        snprintf(err, errlen, "MTP block: %s", e2);
        spec_mtp_free(s);
        return NULL;
    }
    s->n_embd = (int32_t)model_get_hparams(target)->n_embd;
    s->n_vocab = model_get_hparams(target)->n_vocab;
    const bool hr = spec_hrows_init(&s->hr, s->n_embd);
    s->logits = malloc((size_t)s->n_vocab * sizeof *s->logits);
    s->h_row = malloc((size_t)s->n_embd * sizeof *s->h_row);
    if (!hr || !s->logits || !s->h_row) {
        snprintf(err, errlen, "out of memory");
        spec_mtp_free(s);
        return NULL;
    }
    return s;
}

void spec_mtp_free(spec_mtp *s)
{
    if (!s)
        return;
    forward_free(s->f);
    model_free(s->view);
    spec_hrows_free(&s->hr);
    free(s->h_in);
    free(s->logits);
    free(s->h_row);
    free(s);
}

static bool grow(float **p, int32_t *cap, int32_t rows, int32_t width)
{
    if (rows <= *cap)
        return true;
    float *q = realloc(*p, (size_t)rows * (size_t)width * sizeof *q);
    if (!q)
        return false;
    *p = q;
    *cap = rows;
    return true;
}

int spec_mtp_process(spec_mtp *s, const int32_t *tokens, int32_t n, int32_t pos, const float *h, char *err,
                     size_t errlen)
{
    if (n <= 0)
        return 0;
    const size_t E = (size_t)s->n_embd;
    if (!grow(&s->h_in, &s->cap_in, n, s->n_embd)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* the target's rows shifted one to the right, pending first */
    memcpy(s->h_in, s->hr.pending, E * sizeof(float));
    memcpy(s->h_in + E, h, (size_t)(n - 1) * E * sizeof(float));
    if (forward_eval_h(s->f, tokens, s->h_in, n, pos, s->logits, false, NULL, err, errlen) != 0)
        return -1;
    if (!spec_hrows_keep(&s->hr, h, n)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void spec_mtp_accept(spec_mtp *s, int32_t n_accepted)
{
    spec_hrows_accept(&s->hr, n_accepted);
}

int32_t spec_mtp_draft(spec_mtp *s, int32_t last, int32_t n_past, int32_t max, int32_t *out, char *err,
                       size_t errlen)
{
    if (max <= 0 || n_past + max > (int32_t)forward_n_ctx(s->f))
        return 0;
    memcpy(s->h_row, s->hr.pending, (size_t)s->n_embd * sizeof(float));
    int32_t tok = last, nd = 0;
    while (nd < max) {
        /* h_row is both this step's input and (once read) the next one's */
        if (forward_eval_h(s->f, &tok, s->h_row, 1, n_past + nd, s->logits, false, s->h_row, err, errlen) !=
            0)
            return -1;
        tok = spec_argmax(s->logits, s->n_vocab);
        out[nd++] = tok;
    }
    return nd;
}
