/* Continuous batching (engine_slots.h): the engine thread's loop when
 * engine_params.n_parallel > 1. Each SUBMIT takes a free sequence of the
 * memory (memory/memory_seq.h), preferring the one that holds the longest
 * prefix of its prompt; every step evaluates one batch mixing the slots
 * (memory_seq_decode: the bits of llama_decode on the same batch), then each
 * slot with logits draws its next token with its own sampler and posts a
 * TOKEN event tagged with its req_id. Context shift, step mode, the lens and
 * speculative decoding stay with the single-sequence loop (engine_gen.c). */
#include "engine_slots.h"
#include "engine_internal.h"
#include "memory/memory_seq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the engine's side --------------------------------------------------- */

typedef struct slot {
    int32_t req_id, conv_id; /* req_id 0: free */
    int32_t order;
    int64_t last_used; /* S->next_used when its last request ended */
    sampler *s;
    int32_t *prompt; /* the tokens the sequence must hold before the reply */
    int32_t n_prompt, n_eval;
    int32_t pending; /* the token to evaluate next (generating), -1 none */
    bool generating, stop;
    int32_t n_gen;
    char *gen;
    size_t gen_len, gen_cap, emitted;
    double t_start, t_gen0;
} slot;

struct engine_slots {
    memory_seq ms;
    int32_t n, n_batch, next_order;
    int64_t next_used;
    slot *sl;
    engine_cmd *wait; /* SUBMITs waiting for a free slot, FIFO */
    int32_t n_wait, cap_wait;
    int32_t *tok, *pos, *seq;
    int8_t *out;
    float *logits;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void engine_slots_free(engine *e)
{
    struct engine_slots *S = e->slots;
    if (!S)
        return;
    for (int32_t i = 0; i < S->n; i++) {
        sampler_free(S->sl[i].s);
        free(S->sl[i].prompt);
        free(S->sl[i].gen);
    }
    for (int32_t i = 0; i < S->n_wait; i++)
        engine_cmd_free(&S->wait[i]);
    free(S->wait);
    memory_seq_release(&S->ms);
    free(S->sl);
    free(S->tok);
    free(S->pos);
    free(S->seq);
    free(S->out);
    free(S->logits);
    free(S);
    e->slots = NULL;
}

bool engine_slots_init(engine *e, int32_t n_batch, char *err, size_t errlen)
{
    struct engine_slots *S = calloc(1, sizeof *S);
    if (!S) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    e->slots = S;
    S->n = (int32_t)forward_n_seq(e->f);
    S->n_batch = n_batch;
    S->sl = calloc((size_t)S->n, sizeof *S->sl);
    S->tok = malloc((size_t)n_batch * sizeof *S->tok);
    S->pos = malloc((size_t)n_batch * sizeof *S->pos);
    S->seq = malloc((size_t)n_batch * sizeof *S->seq);
    S->out = malloc((size_t)n_batch);
    S->logits = malloc((size_t)S->n * (size_t)e->n_vocab * sizeof *S->logits);
    if (!S->sl || !S->tok || !S->pos || !S->seq || !S->out || !S->logits) {
        snprintf(err, errlen, "out of memory");
        engine_slots_free(e);
        return false;
    }
    /* the single-sequence loop's progress callback drains commands (a SUBMIT
     * would stop the turn): the slots take theirs between steps */
    memory_set_progress(&e->mem, NULL, NULL);
    if (!memory_seq_init(&S->ms, e->f, err, errlen)) {
        engine_slots_free(e);
        return false;
    }
    for (int32_t i = 0; i < S->n; i++) {
        S->sl[i].s = sampler_build(&e->sp, e->n_vocab);
        if (!S->sl[i].s) {
            snprintf(err, errlen, "out of memory");
            engine_slots_free(e);
            return false;
        }
        sampler_set_tokenizer(S->sl[i].s, e->tok);
    }
    return true;
}

int32_t engine_slots_n(const engine *e)
{
    return e->slots ? e->slots->n : 0;
}

static void slot_ev(engine *e, const slot *s, int32_t i, engine_event *ev, enum engine_event_type type)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->conv_id = s->conv_id;
    ev->req_id = s->req_id;
    ev->n_past = memory_seq_n_past(&e->slots->ms, i);
    ev->n_ctx = e->n_ctx;
}

static void gen_append(slot *s, const char *p, size_t n)
{
    if (s->gen_len + n + 1 > s->gen_cap) {
        size_t cap = s->gen_cap ? s->gen_cap : 256;
        while (cap < s->gen_len + n + 1)
            cap *= 2;
        char *g = realloc(s->gen, cap);
        if (!g)
            return;
        s->gen = g;
        s->gen_cap = cap;
    }
    memcpy(s->gen + s->gen_len, p, n);
    s->gen_len += n;
    s->gen[s->gen_len] = 0;
}

/* engine_gen.c's rules (engine_core.c): stop strings, the bytes held back, UTF-8 cuts */
static long find_stop(const slot *s)
{
    return engine_text_find_stop(s->gen, s->gen_len, s->emitted, sampler_get_params(s->s));
}

static size_t stop_holdback(const slot *s)
{
    return engine_text_holdback(s->gen, s->gen_len, s->emitted, sampler_get_params(s->s));
}

static void emit_text(slot *s, engine_event *ev, size_t upto, bool final)
{
    engine_text_emit(s->gen, &s->emitted, ev, upto, final);
}

/* Ends slot i's request: DONE, the slot freed (its sequence keeps its tokens). */
static void slot_done(engine *e, int32_t i, enum engine_done_reason reason, const char *msg)
{
    slot *s = &e->slots->sl[i];
    s->last_used = e->slots->next_used++;
    engine_event ev;
    slot_ev(e, s, i, &ev, ENGINE_EV_DONE);
    ev.reason = reason;
    ev.n_prompt = s->n_eval;
    ev.n_gen = s->n_gen;
    double t = now_s();
    ev.gen_tps = s->generating && t > s->t_gen0 ? s->n_gen / (t - s->t_gen0) : 0;
    ev.prompt_tps = s->t_gen0 > s->t_start ? s->n_eval / (s->t_gen0 - s->t_start) : 0;
    if (msg)
        snprintf(ev.message, sizeof ev.message, "%s", msg);
    emit_text(s, &ev, s->gen_len, true);
    /* the snapshot before the reply's end: a client that saw the end and
     * restarts the server finds it whole */
    engine_kv_save_seq(e, &e->slots->ms, i);
    engine_post(e, &ev);
    free(s->prompt);
    s->prompt = NULL;
    s->req_id = 0;
    s->generating = s->stop = false;
}

static void fail_cmd(engine *e, const engine_cmd *c, enum engine_done_reason reason, const char *msg)
{
    engine_post_error(e, "%s", msg);
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_DONE;
    ev.conv_id = c->conv_id;
    ev.req_id = c->req_id;
    ev.reason = reason;
    ev.n_ctx = e->n_ctx;
    snprintf(ev.message, sizeof ev.message, "%s", msg);
    engine_post(e, &ev);
}

/* A waiting SUBMIT into a free slot: its prompt, the slot
 * engine_slots_choose picks (llama-server's rule), the prefix it shares kept. */
static void admit(engine *e, engine_cmd *c)
{
    struct engine_slots *S = e->slots;
    char warn[256] = "", err[512] = "";
    int32_t np = 0;
    const chat_prompt_src src = engine_prompt_src(e, c->name);
    int32_t *toks =
        chat_prompt_tokenize(&src, c->messages, c->n_messages, &np, warn, sizeof warn, err, sizeof err);
    if (!toks) {
        fail_cmd(e, c, ENGINE_DONE_ERROR, err);
        return;
    }
    chat_prompt_log("engine", toks, np); /* as engine_gen.c: what is evaluated (TOKSCOPE_PROMPT_LOG) */
    if (np == 0 || np >= e->n_ctx) {
        char msg[256];
        if (np == 0)
            snprintf(msg, sizeof msg, "the rendered conversation is empty (nothing to evaluate)");
        else
            snprintf(msg, sizeof msg, "the conversation (%d tokens) does not fit the context (%d tokens)",
                     (int)np, (int)e->n_ctx);
        free(toks);
        fail_cmd(e, c, np ? ENGINE_DONE_CTX_FULL : ENGINE_DONE_ERROR, msg);
        return;
    }
    engine_slot_cand *cand = malloc((size_t)S->n * sizeof *cand);
    if (!cand) {
        free(toks);
        fail_cmd(e, c, ENGINE_DONE_ERROR, "out of memory");
        return;
    }
    for (int32_t k = 0; k < S->n; k++) {
        cand[k].busy = S->sl[k].req_id != 0;
        cand[k].held = memory_seq_n_past(&S->ms, k);
        cand[k].common = cand[k].busy ? 0 : memory_seq_common(&S->ms, k, toks, np);
        cand[k].last_used = S->sl[k].last_used;
    }
    int32_t i = engine_slots_choose(cand, S->n, np);
    const int32_t common = i >= 0 ? cand[i].common : 0;
    free(cand);
    if (i < 0) { /* admit runs only with a slot free */
        free(toks);
        fail_cmd(e, c, ENGINE_DONE_ERROR, "no free slot");
        return;
    }
    slot *s = &S->sl[i];
    const bool can_cut = !forward_is_recurrent(e->f);
    int32_t keep = c->no_reuse ? 0 : engine_slots_keep(common, np, memory_seq_n_past(&S->ms, i), can_cut);
    if (!memory_seq_truncate(&S->ms, i, keep)) {
        keep = 0;
        memory_seq_truncate(&S->ms, i, 0);
    }
    s->req_id = c->req_id;
    s->conv_id = c->conv_id;
    s->order = S->next_order++;
    s->prompt = toks;
    s->n_prompt = np;
    s->n_eval = np - keep;
    s->pending = -1;
    s->generating = s->stop = false;
    s->n_gen = 0;
    s->gen_len = s->emitted = 0;
    s->t_start = now_s();
    s->t_gen0 = 0;
    sampler_params sp = c->own_sampling ? c->sampling : e->sp;
    if (sp.n_top > SAMPLER_MAX_TOP)
        sp.n_top = SAMPLER_MAX_TOP;
    sampler_set_params(s->s, &sp);
    sampler_reseed(s->s);
    sampler_reset_history(s->s);
    /* the prompt is the penalties' and DRY's history, as llama-server's
     * slot accepts it (once left out: they saw the reply alone) */
    for (int32_t k = 0; k < s->n_prompt; k++)
        sampler_accept(s->s, s->prompt[k]);
    engine_event ev;
    slot_ev(e, s, i, &ev, ENGINE_EV_PREFILL);
    ev.done = 0;
    ev.total = s->n_eval;
    snprintf(ev.message, sizeof ev.message, "%s", warn);
    engine_post(e, &ev);
}

/* Slot i's logits: draw, post the TOKEN, and end the request when it is over. */
static void slot_draw(engine *e, int32_t i, const float *logits)
{
    slot *s = &e->slots->sl[i];
    const sampler_params *sp = sampler_get_params(s->s);
    if (!s->generating) {
        s->generating = true;
        s->t_gen0 = now_s();
        engine_event pe;
        slot_ev(e, s, i, &pe, ENGINE_EV_PREFILL);
        pe.done = pe.total = s->n_eval;
        pe.prompt_tps = s->t_gen0 > s->t_start ? s->n_eval / (s->t_gen0 - s->t_start) : 0;
        engine_post(e, &pe);
    }
    if (s->stop) {
        slot_done(e, i, ENGINE_DONE_STOPPED, NULL);
        return;
    }
    if (sp->n_predict >= 0 && s->n_gen >= sp->n_predict) {
        slot_done(e, i, ENGINE_DONE_LENGTH, NULL);
        return;
    }
    sampler_step st;
    int32_t tok = sampler_sample(s->s, logits, &st);
    sampler_accept(s->s, tok);
    s->n_gen++;
    engine_event ev;
    slot_ev(e, s, i, &ev, ENGINE_EV_TOKEN);
    engine_fill_candidates(e, &ev, &st);
    ev.token = tok;
    ev.pos = memory_seq_n_past(&e->slots->ms, i);
    ev.n_past = ev.pos + 1;
    enum engine_done_reason reason = ENGINE_DONE_ERROR;
    bool finish = false;
    char msg[ENGINE_MSG_MAX] = "";
    if (tokenizer_is_eog(e->tok, tok)) {
        reason = ENGINE_DONE_EOG;
        finish = true;
    } else {
        char piece[256];
        int32_t k = tokenizer_token_to_piece(e->tok, tok, false, piece, sizeof piece);
        if (k > (int32_t)sizeof piece)
            k = (int32_t)sizeof piece;
        if (k > 0)
            gen_append(s, piece, (size_t)k);
        long at = find_stop(s);
        if (at >= 0) {
            s->gen_len = (size_t)at;
            reason = ENGINE_DONE_STOP_STRING;
            finish = true;
            emit_text(s, &ev, s->gen_len, false);
        } else {
            emit_text(s, &ev, s->gen_len - stop_holdback(s), false);
        }
    }
    if (!finish && sp->n_predict >= 0 && s->n_gen >= sp->n_predict) {
        reason = ENGINE_DONE_LENGTH;
        finish = true;
    }
    if (!finish && ev.pos >= e->n_ctx) { /* as engine_gen.c: this token has no room to be evaluated */
        reason = ENGINE_DONE_CTX_FULL;
        snprintf(msg, sizeof msg, "context full (%d tokens) and context shift is off", (int)e->n_ctx);
        finish = true;
    }
    engine_post(e, &ev);
    if (finish)
        slot_done(e, i, reason, msg[0] ? msg : NULL);
    else
        s->pending = tok;
}

/* Commands between steps: SUBMIT waits for a slot, STOP ends one request
 * (req_id) or all (0), QUIT ends everything; the rest act as when idle. */
static void slots_command(engine *e, engine_cmd *c)
{
    struct engine_slots *S = e->slots;
    switch (c->type) {
    case ENGINE_CMD_SUBMIT:
        if (S->n_wait == S->cap_wait) {
            int32_t cap = S->cap_wait ? 2 * S->cap_wait : 8;
            engine_cmd *w = realloc(S->wait, (size_t)cap * sizeof *w);
            if (!w) {
                fail_cmd(e, c, ENGINE_DONE_ERROR, "out of memory");
                break;
            }
            S->wait = w;
            S->cap_wait = cap;
        }
        S->wait[S->n_wait++] = *c;
        memset(c, 0, sizeof *c); /* ownership moved */
        return;
    case ENGINE_CMD_STOP:
        for (int32_t i = 0; i < S->n; i++)
            if (S->sl[i].req_id && (c->req_id == 0 || S->sl[i].req_id == c->req_id))
                S->sl[i].stop = true;
        for (int32_t i = 0; i < S->n_wait; i++)
            if (c->req_id == 0 || S->wait[i].req_id == c->req_id) {
                engine_event ev;
                memset(&ev, 0, sizeof ev);
                ev.type = ENGINE_EV_DONE;
                ev.req_id = S->wait[i].req_id;
                ev.conv_id = S->wait[i].conv_id;
                ev.reason = ENGINE_DONE_STOPPED;
                engine_post(e, &ev);
                engine_cmd_free(&S->wait[i]);
                memmove(S->wait + i, S->wait + i + 1, (size_t)(S->n_wait - i - 1) * sizeof *S->wait);
                S->n_wait--;
                i--;
            }
        break;
    case ENGINE_CMD_QUIT:
        e->quit = true;
        break;
    case ENGINE_CMD_SET_PARAMS:
        engine_apply_params(e, &c->sampling);
        break;
    case ENGINE_CMD_SET_TEMPLATE:
        engine_set_template_name(e, c->name);
        break;
    case ENGINE_CMD_LOAD_KV: /* a free sequence only: a running one's rows are its request's */
        if (c->index >= 0 && c->index < S->n && S->sl[c->index].req_id == 0)
            engine_kv_load_seq(e, &S->ms, c->index, c->path);
        else
            engine_post_error(e, "LOAD_KV: sequence %d is not a free one", (int)c->index);
        break;
    default:
        engine_post_error(e, "not available with --parallel > 1 (one command of the single-sequence engine)");
        break;
    }
    engine_cmd_free(c);
}

/* One step: the batch the plan makes, evaluated, each slot with logits drawn. */
static void slots_step(engine *e)
{
    struct engine_slots *S = e->slots;
    engine_slot_need need[256];
    int32_t take[256];
    for (int32_t i = 0; i < S->n; i++) {
        slot *s = &S->sl[i];
        need[i].busy = s->req_id != 0;
        need[i].order = s->order;
        need[i].n_left = s->generating ? 0 : s->n_prompt - memory_seq_n_past(&S->ms, i);
        if (s->req_id && s->stop) { /* stopped: ended now, nothing more evaluated */
            slot_done(e, i, ENGINE_DONE_STOPPED, NULL);
            need[i].busy = false;
        }
    }
    int32_t nb = engine_slots_plan(need, S->n, S->n_batch, take);
    if (nb == 0)
        return;
    int32_t k = 0;
    for (int32_t i = 0; i < S->n; i++) {
        slot *s = &S->sl[i];
        if (!take[i] || (!s->generating && !s->prompt)) /* the plan takes busy slots only */
            continue;
        const int32_t p0 = memory_seq_n_past(&S->ms, i);
        for (int32_t j = 0; j < take[i]; j++) {
            S->tok[k] = s->generating ? s->pending : s->prompt[p0 + j];
            S->pos[k] = p0 + j;
            S->seq[k] = i;
            /* logits for a generating slot's token and a prompt's last one */
            S->out[k] = (int8_t)(s->generating || p0 + j == s->n_prompt - 1);
            k++;
        }
    }
    if (k == 0)
        return;
    nb = k;
    forward_batch b = {.n = nb, .token = S->tok, .pos = S->pos, .seq = S->seq, .out = S->out};
    char err[512] = "";
    if (memory_seq_decode(&S->ms, &b, S->logits, err, sizeof err) != 0) {
        for (int32_t i = 0; i < S->n; i++)
            if (take[i]) {
                memory_seq_truncate(&S->ms, i, 0);
                slot_done(e, i, ENGINE_DONE_ERROR, err);
            }
        engine_post_error(e, "%s", err);
        return;
    }
    int32_t row = 0;
    for (int32_t j = 0; j < nb; j++) {
        if (!S->out[j])
            continue;
        const int32_t i = S->seq[j];
        slot *s = &S->sl[i];
        if (s->generating)
            s->pending = -1;
        slot_draw(e, i, S->logits + (size_t)row * (size_t)e->n_vocab);
        row++;
    }
}

void engine_slots_main(engine *e)
{
    struct engine_slots *S = e->slots;
    while (!e->quit) {
        bool busy = false;
        for (int32_t i = 0; i < S->n; i++)
            busy |= S->sl[i].req_id != 0;
        engine_cmd c;
        /* idle: wait for a command; running: take what came, then step */
        if (!busy && S->n_wait == 0) {
            if (queue_pop_wait(e->cmds, &c, -1))
                slots_command(e, &c);
        }
        while (queue_pop(e->cmds, &c))
            slots_command(e, &c);
        if (e->quit)
            break;
        for (;;) { /* admit() picks the free sequence holding the longest prefix */
            int32_t n_free = 0;
            for (int32_t i = 0; i < S->n; i++)
                n_free += S->sl[i].req_id == 0;
            if (n_free == 0 || S->n_wait == 0)
                break;
            engine_cmd w = S->wait[0];
            memmove(S->wait, S->wait + 1, (size_t)(S->n_wait - 1) * sizeof *S->wait);
            S->n_wait--;
            admit(e, &w);
            engine_cmd_free(&w);
        }
        slots_step(e);
    }
    for (int32_t i = 0; i < S->n; i++)
        if (S->sl[i].req_id)
            slot_done(e, i, ENGINE_DONE_STOPPED, "the engine is shutting down");
}
