/* mtp drafts on Gemma 4: its separate assistant file (gemma4-assistant),
 * as llama.cpp 34af94cd runs it (common_speculative_impl_draft_mtp with
 * is_mem_shared; src/models/gemma4-assistant.cpp; the assistant's
 * llama_kv_cache_iswa sharing the target's cells, llama-model.cpp).
 *
 * The assistant has no cache: its sliding layers read the target's cache
 * of the target's second-to-last layer, its full layers that of the last
 * one (forward_share_kv), so it never sees what the target has not
 * evaluated, and nothing is to be processed when the target evaluates a
 * batch: only the target's hidden states (h_nextn, its output norm) are
 * kept, and pending is the last one. A draft step evaluates one token at
 * position n_past (the sampled one's, all steps alike: the shared cells
 * hold [0, n_past)) with pending, or with the assistant's own next hidden
 * state (nextn_proj_post of its normed residual) after the first; the
 * argmax of its logits is the draft (the reference's top-k 10 with p_min
 * 0). After a verification, pending is the target's hidden state of the
 * last accepted position. */
#include "spec/spec_g4assist.h"
#include "spec/spec_hrows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct spec_g4a {
    model *file, *view;
    forward_params fp;
    forward_ctx *f; /* on owner's cache */
    const forward_ctx *owner;
    int32_t n_embd, n_vocab; /* the target's hidden size, the vocabulary */
    uint32_t n_layer_tgt;
    spec_hrows hr; /* the last process()'s rows, pending */
    float *logits, *h_row, *h_next;
};

spec_g4a *spec_g4a_create(const model *target, const char *path, const forward_params *fp, char *err,
                          size_t errlen)
{
    spec_g4a *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char e2[512];
    s->file = model_load(path, e2, sizeof e2);
    if (!s->file) {
        snprintf(err, errlen, "assistant: %s", e2);
        goto fail;
    }
    s->view = model_g4assist_view(s->file, target, e2, sizeof e2);
    if (!s->view) {
        snprintf(err, errlen, "assistant %s: %s", path, e2);
        goto fail;
    }
    s->fp = *fp;
    s->n_embd = (int32_t)model_get_hparams(target)->n_embd;
    s->n_vocab = model_get_hparams(target)->n_vocab;
    s->n_layer_tgt = model_get_hparams(target)->n_layer;
    const bool hr = spec_hrows_init(&s->hr, s->n_embd);
    s->logits = malloc((size_t)s->n_vocab * sizeof *s->logits);
    s->h_row = malloc((size_t)s->n_embd * sizeof *s->h_row);
    s->h_next = malloc((size_t)s->n_embd * sizeof *s->h_next);
    if (!hr || !s->logits || !s->h_row || !s->h_next) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    return s;
fail:
    spec_g4a_free(s);
    return NULL;
}

void spec_g4a_free(spec_g4a *s)
{
    if (!s)
        return;
    forward_free(s->f);
    model_free(s->view);
    model_free(s->file);
    spec_hrows_free(&s->hr);
    free(s->logits);
    free(s->h_row);
    free(s->h_next);
    free(s);
}

/* The assistant's context on owner's cache: its settings (cache length and
 * types, threads, batch) are the target's; llama-model.cpp's share: a
 * sliding layer reads target layer n_layer - 2, a full one n_layer - 1. */
static int bind(spec_g4a *s, forward_ctx *owner, char *err, size_t errlen)
{
    if (s->f && s->owner == owner)
        return 0;
    forward_free(s->f);
    s->f = NULL;
    forward_bits b;
    forward_bits_settings(owner, &b);
    forward_params p = s->fp;
    p.n_ctx = b.n_ctx;
    p.n_batch = b.n_batch;
    p.n_threads = b.n_threads;
    p.kv_type = (enum tensor_type)b.kv_type;
    p.v_type = (enum tensor_type)b.v_type;
    char e2[400];
    s->f = forward_build(s->view, &p, e2, sizeof e2);
    if (!s->f) {
        snprintf(err, errlen, "assistant: %s", e2);
        return -1;
    }
    const model_hparams *ha = model_get_hparams(s->view);
    uint32_t src[MODEL_MAX_LAYERS];
    for (uint32_t l = 0; l < ha->n_layer; l++)
        src[l] = s->n_layer_tgt - (ha->swa_layer[l] ? 2 : 1);
    if (forward_share_kv(s->f, owner, src, e2, sizeof e2) != 0) {
        snprintf(err, errlen, "assistant on the target's cache: %s", e2);
        forward_free(s->f);
        s->f = NULL;
        return -1;
    }
    s->owner = owner;
    return 0;
}

int spec_g4a_process(spec_g4a *s, forward_ctx *f, const float *h, int32_t n, char *err, size_t errlen)
{
    if (n <= 0)
        return 0;
    if (bind(s, f, err, errlen) != 0)
        return -1;
    if (!spec_hrows_keep(&s->hr, h, n)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void spec_g4a_accept(spec_g4a *s, int32_t n_accepted)
{
    spec_hrows_accept(&s->hr, n_accepted);
}

int32_t spec_g4a_draft(spec_g4a *s, int32_t last, int32_t n_past, int32_t max, int32_t *out, char *err,
                       size_t errlen)
{
    if (!s->f || max <= 0 || n_past <= 0 || n_past + max > (int32_t)forward_n_ctx(s->f))
        return 0;
    memcpy(s->h_row, s->hr.pending, (size_t)s->n_embd * sizeof(float));
    int32_t tok = last, nd = 0;
    while (nd < max) {
        if (forward_eval_h(s->f, &tok, s->h_row, 1, n_past, s->logits, false, s->h_next, err, errlen) != 0)
            return -1;
        tok = spec_argmax(s->logits, s->n_vocab);
        out[nd++] = tok;
        float *t = s->h_row; /* the next step's input */
        s->h_row = s->h_next;
        s->h_next = t;
    }
    return nd;
}

const float *spec_g4a_logits(const spec_g4a *s) { return s->logits; }
