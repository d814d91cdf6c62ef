/* One turn of the engine: the conversation's prompt (chat/chat_prompt.h), reuse the cached
 * prefix, prefill the rest, then sample token by token until end of turn,
 * n_predict, a stop string, a stop command or a full context. */
#include "engine_internal.h"
#include "spec/spec_engine.h"

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
    ev->req_id = e->req_id;
    ev->n_past = e->mem.n_past;
    ev->n_ctx = e->n_ctx;
    ev->n_ckpt = memory_n_ckpt(&e->mem);
    ev->ckpt_bytes = memory_ckpt_bytes(&e->mem);
}

/* Tokens to keep on a context shift: the rendered system prompt (leading
 * system messages) when there is one, else the BOS token. */
static int32_t compute_n_keep(engine *e, const chat_prompt_src *src, const chat_message *msgs, size_t n,
                              const int32_t *prompt, int32_t np)
{
    int32_t base = np > 0 && prompt[0] == tokenizer_bos(e->tok) ? 1 : 0;
    size_t n_sys = 0;
    while (n_sys < n && msgs[n_sys].role && !strcmp(msgs[n_sys].role, "system"))
        n_sys++;
    if (n_sys == 0)
        return base;
    char warn[256], err[256];
    size_t len = 0;
    char *text = chat_prompt_render_n(src, msgs, n_sys, false, warn, sizeof warn, &len, err, sizeof err);
    if (!text)
        return base; /* some templates refuse a system message alone */
    int32_t cap = np + 8;
    int32_t *sys = malloc((size_t)cap * sizeof *sys);
    int32_t keep = base;
    if (sys) {
        bool add_bos = base == 1;
        size_t bl;
        const char *bs = base ? tokenizer_token_str(e->tok, tokenizer_bos(e->tok), &bl) : NULL;
        if (bs && bl && len >= bl && memcmp(text, bs, bl) == 0)
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
    if (e->report_prefill && !e->mem.replaying) { /* a state restored is not the prompt's progress */
        engine_event ev;
        ev_init(e, &ev, ENGINE_EV_PREFILL);
        ev.done = e->mem.eval_base + done;
        ev.total = e->prefill_total;
        engine_post(e, &ev);
    }
    engine_drain(e);
    return !e->stop;
}

/* Drops the oldest half of the tokens after n_keep and re-evaluates the rest
 * from position 0 (memory_shift). Returns the number dropped, 0 if nothing could be, -1 on error. */
static int32_t context_shift(engine *e, int32_t n_keep, char *err, size_t errlen)
{
    bool rp = e->report_prefill;
    e->report_prefill = false;
    int32_t n_discard = 0;
    int rc = memory_shift(&e->mem, n_keep, &n_discard, err, errlen);
    e->report_prefill = rp;
    if (rc != 0)
        return -1;
    if (n_discard == 0)
        return 0;
    const int32_t n = e->mem.n_past;
    e->reply_start -= n_discard; /* the reply's earlier tokens may be gone: undo stops there */
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

/* The stop strings in force: the turn's own when it brought parameters
 * (sampler_get_params), else the engine's. */
static const sampler_params *turn_params(engine *e) { return sampler_get_params(e->s); }

/* Position of the first complete stop string at or after e->emitted, or -1. */
static long find_stop(engine *e) { return engine_text_find_stop(e->gen, e->gen_len, e->emitted, turn_params(e)); }

/* Bytes at the end of the text that could still grow into a stop string. */
static size_t stop_holdback(engine *e)
{
    return engine_text_holdback(e->gen, e->gen_len, e->emitted, turn_params(e));
}

/* Moves up to ENGINE_TEXT_MAX-1 bytes of gen[emitted, upto) into ev->text,
 * cut on a UTF-8 boundary. */
static void emit_text(engine *e, engine_event *ev, size_t upto, bool final)
{
    engine_text_emit(e->gen, &e->emitted, ev, upto, final);
}

void engine_fill_candidates(engine *e, engine_event *ev, const sampler_step *st)
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
    spec_engine_turn_stats(e, &ev.n_drafted, &ev.n_accepted);
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

/* Records where the reply token at pos starts in the reply text and appends
 * its piece (nothing for an end-of-generation token). */
static void reply_push(engine *e, int32_t pos, int32_t tok)
{
    const int32_t i = pos - e->reply_start;
    if (i >= 0 && i >= e->reply_cap) {
        int32_t cap = e->reply_cap ? e->reply_cap : 256;
        while (cap <= i)
            cap *= 2;
        size_t *r = realloc(e->reply_off, (size_t)cap * sizeof *r);
        if (r) {
            e->reply_off = r;
            e->reply_cap = cap;
        }
    }
    if (i >= 0 && i < e->reply_cap)
        e->reply_off[i] = e->gen_len;
    if (tokenizer_is_eog(e->tok, tok))
        return;
    char piece[256];
    int32_t k = tokenizer_token_to_piece(e->tok, tok, false, piece, sizeof piece);
    if (k > (int32_t)sizeof piece)
        k = (int32_t)sizeof piece;
    if (k > 0)
        gen_append(e, piece, (size_t)k);
}

/* Renders, tokenizes, fits and brings the cache to hold the prompt and the
 * reply's forced tokens but the last (a branch); e->mem.logits then hold the
 * next distribution. Everything the cache already holds is kept: a branch
 * from an earlier step only sets the position counter back. Returns false
 * with t->reason set when the turn ends here. */
static bool prefill(engine *e, const engine_cmd *c, int32_t *n_keep, turn *t)
{
    char warn[256] = "", err[512] = "";
    int32_t np = 0;
    const chat_prompt_src src = engine_prompt_src(e, c->name); /* the turn's own template, else the engine's */
    int32_t *seq = chat_prompt_tokenize(&src, c->messages, c->n_messages, &np, warn, sizeof warn, err, sizeof err);
    if (!seq)
        return fail(e, t, err);
    if (np == 0) {
        free(seq);
        return fail(e, t, "the rendered conversation is empty (nothing to evaluate)");
    }
    chat_prompt_log("engine", seq, np);
    const int32_t n_forced = c->n_tokens > 0 ? c->n_tokens - 1 : 0; /* the last one is this turn's first */
    int32_t total = np + n_forced;
    int32_t *grown = realloc(seq, ((size_t)total + 1) * sizeof *seq);
    if (!grown) {
        free(seq);
        return fail(e, t, "out of memory");
    }
    seq = grown;
    if (n_forced > 0)
        memcpy(seq + np, c->tokens, (size_t)n_forced * sizeof *seq);
    for (int32_t i = 0; i < c->n_tokens; i++)
        if (c->tokens[i] < 0 || c->tokens[i] >= e->n_vocab) {
            free(seq);
            return fail(e, t, "a forced token is outside the vocabulary");
        }
    *n_keep = compute_n_keep(e, &src, c->messages, c->n_messages, seq, np);

    if (total >= e->n_ctx) { /* leave room for at least one generated token */
        if (!e->p.context_shift || !memory_can_shift(&e->mem)) {
            char msg[256];
            snprintf(msg, sizeof msg, "the conversation (%d tokens) does not fit the context (%d tokens)%s", (int)total,
                     (int)e->n_ctx,
                     memory_can_shift(&e->mem) ? "" : ", and this model's recurrent layers cannot drop tokens "
                                                      "(no context shift)");
            free(seq);
            fail(e, t, msg);
            t->reason = ENGINE_DONE_CTX_FULL;
            return false;
        }
        int32_t tail = (e->n_ctx - *n_keep) / 2;
        int32_t drop = total - *n_keep - tail;
        memmove(seq + *n_keep, seq + *n_keep + drop, (size_t)tail * sizeof *seq);
        total -= drop;
        np = np - drop > *n_keep ? np - drop : *n_keep;
        engine_event ev;
        ev_init(e, &ev, ENGINE_EV_CONTEXT_SHIFT);
        ev.n_dropped = drop;
        snprintf(ev.message, sizeof ev.message,
                 "conversation longer than the context (%d tokens): dropped %d tokens after the first %d",
                 (int)e->n_ctx, (int)drop, (int)*n_keep);
        engine_post(e, &ev);
    }

    if (c->no_reuse)
        memory_truncate(&e->mem, 0);
    const int32_t common = memory_reuse(&e->mem, seq, total);
    engine_kv_report(e, common);
    engine_event ev;
    ev_init(e, &ev, ENGINE_EV_PREFILL);
    ev.done = 0;
    ev.total = total - common > 0 ? total - common : 1;
    snprintf(ev.message, sizeof ev.message, "%s", warn);
    engine_post(e, &ev);

    double t0 = now_s();
    e->prefill_total = ev.total;
    e->report_prefill = true;
    int32_t evaluated = 0;
    int rc = memory_ensure(&e->mem, seq, np, total, &evaluated, err, sizeof err);
    if (rc == 0 && e->mem.logits_pos != total) {
        /* all of it was cached: the distribution after it from the
         * prompt's saved logits, or its last token evaluated again */
        int32_t again = 0;
        rc = memory_rollback(&e->mem, total, &again, err, sizeof err);
        evaluated += again;
    }
    e->report_prefill = false;
    t->t_prompt = now_s() - t0;
    t->n_prompt = evaluated;
    if (rc != 0) {
        free(seq);
        if (e->stop) {
            t->reason = ENGINE_DONE_STOPPED;
            return false;
        }
        return fail(e, t, err);
    }
    sampler_reset_history(e->s);
    for (int32_t i = 0; i < total; i++)
        sampler_accept(e->s, seq[i]);
    /* the reply so far: the forced tokens' text, of which the UI shows
     * reply_emitted bytes already */
    e->reply_start = e->undo_floor = np;
    e->n_reply = total - np;
    for (int32_t i = np; i < total; i++)
        reply_push(e, i, seq[i]);
    e->emitted = c->reply_emitted > 0 && (size_t)c->reply_emitted < e->gen_len ? (size_t)c->reply_emitted
                 : c->reply_emitted > 0                                     ? e->gen_len
                                                                            : 0;
    free(seq);
    /* the prompt's speed now, not only with DONE: the reply may stream
     * for minutes */
    ev_init(e, &ev, ENGINE_EV_PREFILL);
    ev.done = ev.total = t->n_prompt;
    ev.prompt_tps = prompt_tps(t);
    engine_post(e, &ev);
    return true;
}

/* Step mode, UNDO: the reply's last token goes, the distribution before it
 * comes back (from the prompt's saved logits or one token evaluated again). */
static void undo(engine *e, turn *t)
{
    char err[512] = "";
    const int32_t p = e->mem.n_past - 1;
    if (p < e->undo_floor || p < 1 || e->n_reply <= 0) {
        engine_post_error(e, "nothing to take back: the reply starts here");
        return;
    }
    if (memory_rollback(&e->mem, p, NULL, err, sizeof err) != 0) {
        engine_post_error(e, "undo: %s", err);
        e->stop = true;
        return;
    }
    const int32_t i = p - e->reply_start;
    if (i >= 0 && i < e->reply_cap) {
        e->gen_len = e->reply_off[i];
        if (e->gen)
            e->gen[e->gen_len] = 0;
        if (e->emitted > e->gen_len)
            e->emitted = e->gen_len;
    }
    e->n_reply--;
    if (t->n_gen > 0)
        t->n_gen--;
    sampler_reset_history(e->s);
    for (int32_t k = 0; k < e->mem.n_past; k++)
        sampler_accept(e->s, e->mem.tokens[k]);
    engine_event ev;
    ev_init(e, &ev, ENGINE_EV_UNDO);
    ev.pos = p;
    ev.reply_len = (int32_t)e->emitted;
    engine_post(e, &ev);
}

/* Tokens of text typed to be forced, special tokens parsed. A SentencePiece
 * vocabulary puts a space before a fragment (as llama.cpp tokenizes one);
 * a typed leading space is then that space, not a second one. */
static int32_t *tokenize_typed(engine *e, const char *text, int32_t *n_out)
{
    *n_out = 0;
    for (int pass = 0; pass < 2; pass++) {
        const size_t len = strlen(text);
        int32_t n = tokenizer_encode(e->tok, text, len, false, true, NULL, 0);
        int32_t *v = n > 0 ? malloc((size_t)n * sizeof *v) : NULL;
        if (!v || tokenizer_encode(e->tok, text, len, false, true, v, n) != n) {
            free(v);
            return NULL;
        }
        char buf[1024];
        int32_t d = tokenizer_decode(e->tok, v, n, false, false, buf, (int32_t)sizeof buf);
        if (pass == 0 && text[0] == ' ' && d > 1 && d < (int32_t)sizeof buf && buf[0] == ' ' &&
            (size_t)d == len + 1 && !memcmp(buf + 1, text, len)) {
            free(v);
            text++;
            continue;
        }
        *n_out = n;
        return v;
    }
    return NULL;
}

/* Step mode: posts the distribution and waits for the user. Returns the
 * token to take (>= 0), -1 to ask again (parameters changed, an undo, a bad
 * choice), -2 to let the sampler draw. Forced text fills pending. */
static int32_t step_choice(engine *e, turn *t, int32_t **pending, int32_t *n_pending)
{
    sampler_step st;
    sampler_report(e->s, e->mem.logits, -1, &st);
    engine_event ev;
    ev_init(e, &ev, ENGINE_EV_STEP);
    engine_fill_candidates(e, &ev, &st);
    ev.token = -1;
    ev.pos = e->mem.n_past;
    engine_post(e, &ev);
    engine_wait_step(e);
    if (e->stop)
        return -1;
    if (e->undo_req) {
        e->undo_req = false;
        undo(e, t);
        return -1;
    }
    if (!e->step_ok)
        return e->step_on ? -1 : -2; /* parameters changed: ask again; step mode off: draw */
    e->step_ok = false;
    if (e->step_text) {
        int32_t n = 0;
        int32_t *v = tokenize_typed(e, e->step_text, &n);
        if (v && n > 0) {
            free(*pending);
            *pending = v;
            *n_pending = n;
        } else {
            free(v);
            if (e->step_text[0])
                engine_post_error(e, "cannot tokenize the text to force");
        }
        free(e->step_text);
        e->step_text = NULL;
        return -1; /* the loop takes the pending tokens */
    }
    if (e->step_token >= e->n_vocab) {
        engine_post_error(e, "token %d is outside the vocabulary (0..%d)", e->step_token, e->n_vocab - 1);
        return -1;
    }
    return e->step_token >= 0 ? e->step_token : -2;
}

void engine_run_submit(engine *e, const engine_cmd *c)
{
    turn t;
    memset(&t, 0, sizeof t);
    e->conv_id = c->conv_id;
    e->req_id = c->req_id;
    spec_engine_reset(e);
    e->gen_len = e->emitted = 0;
    if (e->gen)
        e->gen[0] = 0;
    if (!e->m) {
        fail(e, &t, "no model loaded");
        post_done(e, &t);
        return;
    }
    if (c->own_sampling) { /* this turn's parameters, from their seed */
        sampler_params sp = c->sampling;
        if (sp.n_top > SAMPLER_MAX_TOP)
            sp.n_top = SAMPLER_MAX_TOP;
        sampler_set_params(e->s, &sp);
        sampler_reseed(e->s);
        e->turn_own = true;
    }
    int32_t n_keep = 0;
    if (!prefill(e, c, &n_keep, &t)) {
        post_done(e, &t);
        if (e->turn_own) {
            e->turn_own = false;
            sampler_set_params(e->s, &e->sp);
        }
        return;
    }

    char err[512] = "";
    double t0 = now_s();
    int32_t forced = c->n_tokens > 0 ? c->tokens[c->n_tokens - 1] : -1;
    int32_t *pending = NULL, n_pending = 0, i_pending = 0;
    const sampler_params *sp = sampler_get_params(e->s);
    for (;;) {
        engine_drain(e); /* params set now apply to this draw */
        if (e->stop) {
            t.reason = ENGINE_DONE_STOPPED;
            break;
        }
        if (sp->n_predict >= 0 && e->n_reply >= sp->n_predict) {
            t.reason = ENGINE_DONE_LENGTH;
            break;
        }
        sampler_step st;
        int32_t tok = -2;
        bool drawn = false; /* spec: a verification drew it (and accepted it into the sampler) */
        int32_t spec_mark = 0, spec_rejected = -1;
        if (forced >= 0) {
            tok = forced;
            forced = -1;
        } else if (i_pending < n_pending) {
            tok = pending[i_pending++];
        } else if (spec_engine_next(e, &tok, &st, &spec_mark, &spec_rejected)) {
            drawn = true;
        } else if (e->step_on) {
            i_pending = n_pending = 0;
            tok = step_choice(e, &t, &pending, &n_pending);
            if (tok == -1)
                continue;
        }
        if (drawn)
            ;
        else if (tok >= 0)
            sampler_report(e->s, e->mem.logits, tok, &st);
        else
            tok = sampler_sample(e->s, e->mem.logits, &st);
        if (!drawn)
            sampler_accept(e->s, tok);
        t.n_gen++;
        e->n_reply++;

        engine_event ev;
        ev_init(e, &ev, ENGINE_EV_TOKEN);
        engine_fill_candidates(e, &ev, &st);
        ev.token = tok;
        ev.spec_mark = spec_mark;
        ev.spec_rejected = spec_rejected;
        bool finish = false;
        reply_push(e, e->mem.n_past, tok);
        if (tokenizer_is_eog(e->tok, tok)) {
            t.reason = ENGINE_DONE_EOG;
            finish = true;
        } else {
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
        if (!finish && sp->n_predict >= 0 && e->n_reply >= sp->n_predict) {
            t.reason = ENGINE_DONE_LENGTH;
            finish = true;
        }
        if (!finish && e->mem.n_past >= e->n_ctx) {
            if (!e->p.context_shift || !memory_can_shift(&e->mem)) {
                /* a recurrent state cannot lose its oldest tokens: never shifted, said so */
                t.reason = ENGINE_DONE_CTX_FULL;
                snprintf(t.message, sizeof t.message, "context full (%d tokens) and %s", (int)e->n_ctx,
                         memory_can_shift(&e->mem) ? "context shift is off"
                                                   : "this model's recurrent layers cannot drop tokens (no context "
                                                     "shift)");
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
                } else {
                    e->undo_floor = e->mem.n_past;
                }
            }
        }
        ev.pos = e->mem.n_past;
        ev.n_past = e->mem.n_past + 1;
        engine_post(e, &ev);
        if (finish)
            break;

        /* spec: drafts only after a token the sampler drew, none in step mode */
        const bool may_draft = !e->step_on && forced < 0 && i_pending >= n_pending;
        if (spec_engine_push(e, tok, may_draft, err, sizeof err) != 0) {
            if (e->stop) {
                t.reason = ENGINE_DONE_STOPPED;
                break;
            }
            fail(e, &t, err);
            break;
        }
    }
    free(pending);
    t.t_gen = now_s() - t0;
    post_done(e, &t);
    if (e->turn_own) {
        e->turn_own = false;
        sampler_set_params(e->s, &e->sp);
    }
}
