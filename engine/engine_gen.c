/* One turn of the engine: render the conversation, tokenize, reuse the cached
 * prefix, prefill the rest, then sample token by token until end of turn,
 * n_predict, a stop string, a stop command or a full context. */
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void ev_init(engine *e, engine_event *ev, enum engine_event_type type)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->conv_id = e->conv_id;
    ev->n_past = e->n_kv;
    ev->n_ctx = e->n_ctx;
}

/* Tokenizes text into e->prompt (grown as needed); returns the count or -1. */
static int32_t tokenize(engine *e, const char *text, int32_t **out)
{
    const tokenizer *t = e->tok;
    bool add_bos = tokenizer_add_bos(t) && tokenizer_bos(t) >= 0;
    if (add_bos) { /* the template may have written BOS itself */
        size_t bl;
        const char *bs = tokenizer_token_str(t, tokenizer_bos(t), &bl);
        if (bs && bl && strncmp(text, bs, bl) == 0)
            add_bos = false;
    }
    size_t len = strlen(text);
    int32_t n = tokenizer_encode(t, text, len, add_bos, true, e->prompt, e->prompt_cap);
    if (n > e->prompt_cap) {
        int32_t cap = n + 64;
        int32_t *np = realloc(e->prompt, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        e->prompt = np;
        e->prompt_cap = cap;
        n = tokenizer_encode(t, text, len, add_bos, true, e->prompt, e->prompt_cap);
    }
    *out = e->prompt;
    return n;
}

static char *token_text_dup(const tokenizer *t, int32_t id)
{
    if (id < 0)
        return strdup("");
    size_t len = 0;
    const char *s = tokenizer_token_str(t, id, &len);
    char *r = malloc(len + 1);
    if (r) {
        if (s)
            memcpy(r, s, len);
        r[s ? len : 0] = 0;
    }
    return r;
}

/* Renders msgs with the current template. warn receives a fallback notice. */
static char *render(engine *e, const chat_message *msgs, size_t n, bool add_gen, char *warn, size_t warnlen,
                    char *err, size_t errlen)
{
    if (!strcmp(engine_template_label(e), "raw")) { /* the contents back to back: plain completion */
        (void)warn, (void)warnlen, (void)err, (void)errlen, (void)add_gen;
        size_t len = 0;
        for (size_t i = 0; i < n; i++)
            len += msgs[i].content ? strlen(msgs[i].content) : 0;
        char *out = malloc(len + 1), *w = out;
        if (!out) {
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        for (size_t i = 0; i < n; i++)
            if (msgs[i].content)
                w = stpcpy(w, msgs[i].content);
        *w = 0;
        return out;
    }
    const char *tmpl = e->tmpl_force ? NULL : model_get_chat_template(e->m);
    const char *builtin = e->tmpl_force;
    char *bos = token_text_dup(e->tok, tokenizer_bos(e->tok));
    char *eos = token_text_dup(e->tok, tokenizer_eos(e->tok));
    chat_render_params rp = {.bos_token = bos, .eos_token = eos, .add_generation_prompt = add_gen, .date = NULL};
    char *out = chat_render(tmpl, builtin, msgs, n, &rp, warn, warnlen, err, errlen);
    free(bos);
    free(eos);
    return out;
}

/* Tokens to keep on a context shift: the rendered system prompt (leading
 * system messages) when there is one, else the BOS token. */
static int32_t compute_n_keep(engine *e, const chat_message *msgs, size_t n, const int32_t *prompt, int32_t np)
{
    int32_t base = np > 0 && prompt[0] == tokenizer_bos(e->tok) ? 1 : 0;
    size_t n_sys = 0;
    while (n_sys < n && msgs[n_sys].role && !strcmp(msgs[n_sys].role, "system"))
        n_sys++;
    if (n_sys == 0)
        return base;
    char warn[256], err[256];
    char *text = render(e, msgs, n_sys, false, warn, sizeof warn, err, sizeof err);
    if (!text)
        return base; /* some templates refuse a system message alone */
    size_t len = strlen(text);
    int32_t cap = np + 8;
    int32_t *sys = malloc((size_t)cap * sizeof *sys);
    int32_t keep = base;
    if (sys) {
        bool add_bos = base == 1;
        size_t bl;
        const char *bs = base ? tokenizer_token_str(e->tok, tokenizer_bos(e->tok), &bl) : NULL;
        if (bs && bl && strncmp(text, bs, bl) == 0)
            add_bos = false;
        int32_t ns = tokenizer_encode(e->tok, text, len, add_bos, true, sys, cap);
        if (ns > cap)
            ns = cap;
        int32_t i = 0;
        while (i < ns && i < np && sys[i] == prompt[i])
            i++;
        if (i > keep)
            keep = i;
        free(sys);
    }
    free(text);
    if (keep > e->n_ctx / 2) /* a system prompt this long cannot be kept */
        keep = base;
    return keep;
}

bool engine_progress_cb(void *user, int32_t done, int32_t total)
{
    engine *e = user;
    (void)total;
    if (e->report_prefill) {
        engine_event ev;
        ev_init(e, &ev, ENGINE_EV_PREFILL);
        ev.done = e->prefill_base + done;
        ev.total = e->prefill_total;
        engine_post(e, &ev);
    }
    engine_drain(e);
    return !e->stop;
}

/* Evaluates e->kv[start, n) at positions start.. (the last token's logits land
 * in e->logits). no_kv_cache recomputes from 0. */
static int eval_kv(engine *e, int32_t start, int32_t n, char *err, size_t errlen)
{
    if (e->p.no_kv_cache)
        start = 0;
    return forward_eval(e->f, e->kv + start, n - start, start, e->logits, false, err, errlen);
}

/* Drops the oldest half of the tokens after n_keep and re-evaluates the rest
 * from position 0. Returns the number dropped, 0 if nothing could be, -1 on error. */
static int32_t context_shift(engine *e, int32_t n_keep, char *err, size_t errlen)
{
    int32_t n_left = e->n_kv - n_keep;
    int32_t n_discard = n_left / 2;
    if (n_discard <= 0)
        return 0;
    memmove(e->kv + n_keep, e->kv + n_keep + n_discard, (size_t)(n_left - n_discard) * sizeof *e->kv);
    e->n_kv -= n_discard;
    int32_t n = e->n_kv;
    e->n_kv = 0; /* the cache rows are stale until the re-evaluation succeeds */
    bool rp = e->report_prefill;
    e->report_prefill = false;
    int rc = forward_eval(e->f, e->kv, n, 0, e->logits, false, err, errlen);
    e->report_prefill = rp;
    if (rc != 0)
        return -1;
    e->n_kv = n;
    engine_event ev;
    ev_init(e, &ev, ENGINE_EV_CONTEXT_SHIFT);
    ev.n_dropped = n_discard;
    snprintf(ev.message, sizeof ev.message,
             "context full (%d tokens): dropped %d tokens after the first %d, re-evaluated %d", (int)e->n_ctx,
             (int)n_discard, (int)n_keep, (int)n);
    engine_post(e, &ev);
    return n_discard;
}

static void gen_append(engine *e, const char *s, size_t n)
{
    if (e->gen_len + n + 1 > e->gen_cap) {
        size_t cap = e->gen_cap ? e->gen_cap : 256;
        while (cap < e->gen_len + n + 1)
            cap *= 2;
        char *g = realloc(e->gen, cap);
        if (!g)
            return;
        e->gen = g;
        e->gen_cap = cap;
    }
    memcpy(e->gen + e->gen_len, s, n);
    e->gen_len += n;
    e->gen[e->gen_len] = 0;
}

/* Position of the first complete stop string at or after e->emitted, or -1. */
static long find_stop(engine *e)
{
    long best = -1;
    for (int32_t i = 0; i < e->sp.n_stop; i++) {
        const char *st = e->sp.stop[i];
        size_t sl = strlen(st);
        if (!sl || e->gen_len < e->emitted + sl)
            continue;
        const char *hit = memmem(e->gen + e->emitted, e->gen_len - e->emitted, st, sl);
        if (hit && (best < 0 || hit - e->gen < best))
            best = hit - e->gen;
    }
    return best;
}

/* Bytes at the end of the text that could still grow into a stop string. */
static size_t stop_holdback(engine *e)
{
    size_t hold = 0;
    for (int32_t i = 0; i < e->sp.n_stop; i++) {
        const char *st = e->sp.stop[i];
        size_t sl = strlen(st);
        for (size_t k = sl ? sl - 1 : 0; k > hold; k--)
            if (k <= e->gen_len - e->emitted && !memcmp(e->gen + e->gen_len - k, st, k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

/* Moves up to ENGINE_TEXT_MAX-1 bytes of gen[emitted, upto) into ev->text,
 * cut on a UTF-8 boundary. */
static void emit_text(engine *e, engine_event *ev, size_t upto, bool final)
{
    if (upto <= e->emitted)
        return;
    size_t n = upto - e->emitted;
    if (!final)
        n = tokenizer_utf8_complete(e->gen + e->emitted, n);
    if (n > ENGINE_TEXT_MAX - 1) {
        size_t c = tokenizer_utf8_complete(e->gen + e->emitted, ENGINE_TEXT_MAX - 1);
        n = c ? c : ENGINE_TEXT_MAX - 1;
    }
    memcpy(ev->text, e->gen + e->emitted, n);
    ev->text[n] = 0;
    ev->text_len = (int32_t)n;
    e->emitted += n;
}

static void fill_candidates(engine *e, engine_event *ev, const sampler_step *st)
{
    ev->token = st->token;
    ev->logit = st->logit;
    ev->p_raw = st->p_raw;
    ev->p_post = st->p_post;
    ev->entropy_raw = st->entropy_raw;
    ev->entropy_post = st->entropy_post;
    ev->n_top = st->n_top;
    for (int32_t i = 0; i < st->n_top; i++) {
        engine_token_candidate *c = &ev->top[i];
        c->id = st->top[i].id;
        c->logit = st->top[i].logit;
        c->p_raw = st->top[i].p_raw;
        c->p_post = st->top[i].p_post;
        int32_t k = tokenizer_token_to_piece(e->tok, c->id, true, c->text, ENGINE_TEXT_MAX - 1);
        if (k < 0)
            k = 0;
        c->text[k < ENGINE_TEXT_MAX - 1 ? k : ENGINE_TEXT_MAX - 1] = 0;
    }
}

typedef struct turn {
    enum engine_done_reason reason;
    int32_t n_prompt, n_gen;
    double t_prompt, t_gen;
    char message[ENGINE_MSG_MAX];
} turn;

static double prompt_tps(const turn *t)
{
    return t->t_prompt > 0 ? t->n_prompt / t->t_prompt : 0;
}

static void post_done(engine *e, const turn *t)
{
    engine_event ev;
    ev_init(e, &ev, ENGINE_EV_DONE);
    ev.reason = t->reason;
    ev.n_prompt = t->n_prompt;
    ev.n_gen = t->n_gen;
    ev.prompt_tps = prompt_tps(t);
    ev.gen_tps = t->t_gen > 0 ? t->n_gen / t->t_gen : 0;
    snprintf(ev.message, sizeof ev.message, "%s", t->message);
    /* whatever was held back (partial UTF-8 or a partial stop string) */
    emit_text(e, &ev, e->gen_len, true);
    engine_post(e, &ev);
}

static bool fail(engine *e, turn *t, const char *msg)
{
    engine_post_error(e, "%s", msg);
    t->reason = ENGINE_DONE_ERROR;
    size_t l = strnlen(msg, sizeof t->message - 1); /* long messages are cut */
    memcpy(t->message, msg, l);
    t->message[l] = 0;
    return false;
}

/* Renders, tokenizes, fits and prefills; e->logits then hold the next-token
 * distribution. Returns false with t->reason set when the turn ends here. */
static bool prefill(engine *e, const chat_message *msgs, size_t n, int32_t *n_keep, turn *t)
{
    char warn[256] = "", err[512] = "";
    bool add_gen = !(n > 0 && msgs[n - 1].role && !strcmp(msgs[n - 1].role, "assistant"));
    char *text = render(e, msgs, n, add_gen, warn, sizeof warn, err, sizeof err);
    if (!text) {
        char msg[600];
        snprintf(msg, sizeof msg, "chat template (%s): %s", engine_template_label(e), err);
        return fail(e, t, msg);
    }
    int32_t *prompt;
    int32_t np = tokenize(e, text, &prompt);
    free(text);
    if (np < 0)
        return fail(e, t, "tokenizer failed on the rendered conversation");
    if (np == 0)
        return fail(e, t, "the rendered conversation is empty (nothing to evaluate)");
    *n_keep = compute_n_keep(e, msgs, n, prompt, np);

    if (np >= e->n_ctx) { /* leave room for at least one generated token */
        if (!e->p.context_shift) {
            char msg[256];
            snprintf(msg, sizeof msg, "the conversation (%d tokens) does not fit the context (%d tokens)", (int)np,
                     (int)e->n_ctx);
            fail(e, t, msg);
            t->reason = ENGINE_DONE_CTX_FULL;
            return false;
        }
        int32_t tail = (e->n_ctx - *n_keep) / 2;
        int32_t drop = np - *n_keep - tail;
        memmove(prompt + *n_keep, prompt + *n_keep + drop, (size_t)tail * sizeof *prompt);
        np -= drop;
        engine_event ev;
        ev_init(e, &ev, ENGINE_EV_CONTEXT_SHIFT);
        ev.n_dropped = drop;
        snprintf(ev.message, sizeof ev.message,
                 "conversation longer than the context (%d tokens): dropped %d tokens after the first %d",
                 (int)e->n_ctx, (int)drop, (int)*n_keep);
        engine_post(e, &ev);
    }

    int32_t common = 0;
    if (!e->p.no_kv_cache)
        while (common < e->n_kv && common < np && e->kv[common] == prompt[common])
            common++;
    if (common == np) /* everything cached: re-evaluate the last token for its logits */
        common--;
    memcpy(e->kv + common, prompt + common, (size_t)(np - common) * sizeof *prompt);
    e->n_kv = common;

    sampler_reset_history(e->s);
    for (int32_t i = 0; i < np; i++)
        sampler_accept(e->s, prompt[i]);

    engine_event ev;
    ev_init(e, &ev, ENGINE_EV_PREFILL);
    ev.done = 0;
    ev.total = np - common;
    snprintf(ev.message, sizeof ev.message, "%s", warn);
    engine_post(e, &ev);

    double t0 = now_s();
    e->prefill_base = 0;
    e->prefill_total = np - common;
    e->report_prefill = true;
    int rc = eval_kv(e, common, np, err, sizeof err);
    e->report_prefill = false;
    t->t_prompt = now_s() - t0;
    t->n_prompt = np - common;
    if (rc != 0) {
        if (e->stop) {
            t->reason = ENGINE_DONE_STOPPED;
            return false;
        }
        return fail(e, t, err);
    }
    e->n_kv = np;
    /* the prompt's speed now, not only with DONE: the reply may stream
     * for minutes */
    ev_init(e, &ev, ENGINE_EV_PREFILL);
    ev.done = ev.total = t->n_prompt;
    ev.prompt_tps = prompt_tps(t);
    engine_post(e, &ev);
    return true;
}

void engine_run_submit(engine *e, const chat_message *msgs, size_t n, int32_t conv_id)
{
    turn t;
    memset(&t, 0, sizeof t);
    e->conv_id = conv_id;
    e->gen_len = e->emitted = 0;
    if (e->gen)
        e->gen[0] = 0;
    if (!e->m) {
        fail(e, &t, "no model loaded");
        post_done(e, &t);
        return;
    }
    int32_t n_keep = 0;
    if (!prefill(e, msgs, n, &n_keep, &t)) {
        post_done(e, &t);
        return;
    }

    char err[512] = "";
    double t0 = now_s();
    for (;;) {
        engine_drain(e); /* params set now apply to this draw */
        if (e->stop) {
            t.reason = ENGINE_DONE_STOPPED;
            break;
        }
        if (e->sp.n_predict >= 0 && t.n_gen >= e->sp.n_predict) {
            t.reason = ENGINE_DONE_LENGTH;
            break;
        }
        sampler_step st;
        int32_t tok = sampler_sample(e->s, e->logits, &st);
        sampler_accept(e->s, tok);
        t.n_gen++;

        engine_event ev;
        ev_init(e, &ev, ENGINE_EV_TOKEN);
        fill_candidates(e, &ev, &st);
        bool finish = false;
        if (tokenizer_is_eog(e->tok, tok)) {
            t.reason = ENGINE_DONE_EOG;
            finish = true;
        } else {
            char piece[256];
            int32_t k = tokenizer_token_to_piece(e->tok, tok, false, piece, sizeof piece);
            if (k > (int32_t)sizeof piece)
                k = (int32_t)sizeof piece;
            if (k > 0)
                gen_append(e, piece, (size_t)k);
            long at = find_stop(e);
            if (at >= 0) {
                e->gen_len = (size_t)at; /* the stop string is not part of the reply */
                t.reason = ENGINE_DONE_STOP_STRING;
                finish = true;
                emit_text(e, &ev, e->gen_len, false);
            } else {
                emit_text(e, &ev, e->gen_len - stop_holdback(e), false);
            }
        }
        if (!finish && e->sp.n_predict >= 0 && t.n_gen >= e->sp.n_predict) {
            t.reason = ENGINE_DONE_LENGTH;
            finish = true;
        }
        if (!finish && e->n_kv >= e->n_ctx) {
            if (!e->p.context_shift) {
                t.reason = ENGINE_DONE_CTX_FULL;
                snprintf(t.message, sizeof t.message, "context full (%d tokens) and context shift is off",
                         (int)e->n_ctx);
                finish = true;
            } else {
                int32_t d = context_shift(e, n_keep, err, sizeof err);
                if (d <= 0) {
                    t.reason = d < 0 && !e->stop ? ENGINE_DONE_ERROR : e->stop ? ENGINE_DONE_STOPPED
                                                                                : ENGINE_DONE_CTX_FULL;
                    snprintf(t.message, sizeof t.message, "context shift failed: %s",
                             d < 0 ? err : "nothing left to drop");
                    if (t.reason == ENGINE_DONE_ERROR)
                        engine_post_error(e, "%s", t.message);
                    finish = true;
                }
            }
        }
        ev.pos = e->n_kv;
        ev.n_past = e->n_kv + 1;
        engine_post(e, &ev);
        if (finish)
            break;

        e->kv[e->n_kv] = tok;
        if (eval_kv(e, e->n_kv, e->n_kv + 1, err, sizeof err) != 0) {
            if (e->stop) {
                t.reason = ENGINE_DONE_STOPPED;
                break;
            }
            fail(e, &t, err);
            break;
        }
        e->n_kv++;
        if (e->p.step_mode)
            engine_wait_step(e);
    }
    t.t_gen = now_s() - t0;
    post_done(e, &t);
}
