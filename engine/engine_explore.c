/* Explore mode's helper beside the memory (memory/memory.h): the logit lens
 * of one step. Engine thread only. */
#include "engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the logit lens of one step ---- */

typedef struct lens_job {
    engine *e;
    engine_lens *out;
    int32_t want_row; /* the row of the evaluation that is the step's */
    int32_t token;
} lens_job;

static void lens_layer(void *user, int32_t layer, int32_t row0, int32_t n_rows, const float *logits)
{
    lens_job *j = user;
    const int32_t r = j->want_row - row0;
    if (r < 0 || r >= n_rows || layer < 1 || layer > j->out->n_layer)
        return;
    const int32_t V = j->e->n_vocab;
    const float *l = logits + (size_t)r * V;
    engine_lens_layer *L = &j->out->layer[layer - 1];
    float mx = -INFINITY;
    for (int32_t i = 0; i < V; i++)
        mx = l[i] > mx ? l[i] : mx;
    double sum = 0, wsum = 0;
    for (int32_t i = 0; i < V; i++) {
        const double x = exp((double)l[i] - mx);
        sum += x;
        wsum += x * ((double)l[i] - mx);
    }
    L->entropy = sum > 0 ? (float)(log(sum) - wsum / sum) : 0.0f;
    /* the top candidates by logit (ties: the lower id first), the chosen token's rank */
    int32_t top[ENGINE_LENS_TOP], n = 0, rank = 0;
    const float lc = j->token >= 0 && j->token < V ? l[j->token] : -INFINITY;
    for (int32_t i = 0; i < V; i++) {
        const float li = l[i];
        rank += li > lc || (li == lc && i < j->token);
        if (n < ENGINE_LENS_TOP || l[i] > l[top[n - 1]]) {
            int32_t k = n < ENGINE_LENS_TOP ? n++ : n - 1;
            while (k > 0 && l[top[k - 1]] < l[i]) {
                top[k] = top[k - 1];
                k--;
            }
            top[k] = i;
        }
    }
    L->n_top = n;
    for (int32_t k = 0; k < n; k++) {
        engine_token_candidate *c = &L->top[k];
        c->id = top[k];
        c->logit = l[top[k]];
        c->p_raw = (float)(exp((double)l[top[k]] - mx) / sum);
        c->p_post = 0.0f;
        int32_t w = tokenizer_token_to_piece(j->e->tok, c->id, true, c->text, ENGINE_TEXT_MAX - 1);
        c->text[w < 0 ? 0 : w < ENGINE_TEXT_MAX - 1 ? w : ENGINE_TEXT_MAX - 1] = 0;
    }
    L->chosen_rank = rank;
    L->chosen_logit = lc;
    L->chosen_p = lc > -INFINITY ? (float)(exp((double)lc - mx) / sum) : 0.0f;
}

static void post_lens_error(engine *e, const engine_cmd *c, const char *msg)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_LENS;
    ev.conv_id = c->conv_id;
    ev.req_id = c->req_id;
    ev.index = c->index;
    snprintf(ev.message, sizeof ev.message, "logit lens: %s", msg);
    engine_post(e, &ev);
}

/* The step whose distribution came from evaluating the last token of
 * (rendered messages + c->tokens). Returns false when it has to wait: the
 * cache does not hold its prefix and may_prefill is false. */
static bool lens_run(engine *e, const engine_cmd *c, bool may_prefill)
{
    char err[512] = "";
    if (!e->m) {
        post_lens_error(e, c, "no model loaded");
        return true;
    }
    int32_t np = 0;
    const chat_prompt_src src = engine_prompt_src(e, c->name); /* as the step's turn was sent */
    int32_t *p = chat_prompt_tokenize(&src, c->messages, c->n_messages, &np, NULL, 0, err, sizeof err);
    if (!p) {
        post_lens_error(e, c, err);
        return true;
    }
    const int32_t n = np + c->n_tokens;
    int32_t *seq = realloc(p, ((size_t)n + 1) * sizeof *seq);
    if (!seq) {
        free(p);
        post_lens_error(e, c, "out of memory");
        return true;
    }
    if (c->n_tokens > 0)
        memcpy(seq + np, c->tokens, (size_t)c->n_tokens * sizeof *seq);
    const int32_t q = n - 1; /* the token whose evaluation gave the step's distribution */
    const int32_t common = memory_common(&e->mem, seq, q);
    bool ok = true;
    if (n > e->n_ctx) {
        post_lens_error(e, c, "the conversation does not fit the context");
    } else if (q < 0) {
        post_lens_error(e, c, "nothing to evaluate");
    } else if (common < q && !e->p.no_kv_cache && !may_prefill) {
        ok = false; /* after the turn */
    } else {
        /* only when the cache does not hold the prefix (never while a turn
         * runs): the rest of the cache is kept otherwise */
        int32_t evaluated;
        /* a recurrent model's cache gets the whole prompt, as its own batch, when the step is the
         * reply's first: cut before its last token it would be evaluated otherwise than a fresh run
         * does, and stay so for the turns after (memory_lens borrows the state at q from it) */
        const int32_t upto = memory_is_recurrent(&e->mem) && q < np ? np : q;
        int rc = e->p.no_kv_cache || common == q ? 0
                                                 : memory_ensure(&e->mem, seq, np, upto, &evaluated, err, sizeof err);
        const model_hparams *hp = model_get_hparams(e->m);
        engine_lens *out = rc == 0 ? calloc(1, sizeof *out + hp->n_layer * sizeof out->layer[0]) : NULL;
        float *lg = out ? malloc((size_t)(e->p.no_kv_cache ? n : 1) * e->n_vocab * sizeof *lg) : NULL;
        if (rc == 0 && lg) {
            out->pos = n;
            out->token = c->token;
            out->n_layer = (int32_t)hp->n_layer;
            lens_job job = {e, out, e->p.no_kv_cache ? q : 0, c->token};
            rc = memory_lens(&e->mem, seq, n, lg, lens_layer, &job, err, sizeof err);
        }
        if (rc == 0 && lg) {
            for (int32_t l = 0; l < out->n_layer; l++)
                if (out->layer[l].chosen_rank == 0 && c->token >= 0) {
                    out->first_top = l + 1;
                    break;
                }
            engine_event ev;
            memset(&ev, 0, sizeof ev);
            ev.type = ENGINE_EV_LENS;
            ev.conv_id = c->conv_id;
            ev.req_id = c->req_id;
            ev.index = c->index;
            ev.pos = n;
            ev.lens = out;
            out = NULL;
            engine_post(e, &ev);
        } else {
            post_lens_error(e, c, rc != 0 ? err : "out of memory");
        }
        free(out);
        free(lg);
    }
    free(seq);
    return ok;
}

void engine_lens_queue(engine *e, engine_cmd *c)
{
    if (!queue_push(e->lens_q, c)) {
        post_lens_error(e, c, "out of memory");
        engine_cmd_free(c);
    }
}

void engine_lens_run_pending(engine *e, bool may_prefill)
{
    size_t n = queue_len(e->lens_q);
    for (size_t i = 0; i < n && !e->quit; i++) {
        engine_cmd c;
        if (!queue_pop(e->lens_q, &c))
            break;
        if (lens_run(e, &c, may_prefill) || !queue_push(e->lens_q, &c))
            engine_cmd_free(&c);
    }
}
