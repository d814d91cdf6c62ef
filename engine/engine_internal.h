/* State shared by engine.c (thread, commands, loading) and engine_gen.c
 * (rendering, prefill, generation). Everything below the marked line belongs
 * to the engine thread alone. */
#ifndef TOKSCOPE_ENGINE_INTERNAL_H
#define TOKSCOPE_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "engine.h"
#include "model/forward.h"
#include "model/model.h"
#include "queue.h"
#include "sampler/sampler.h"

struct engine {
    engine_params p; /* model_path/template_name point at the copies below */
    char *model_path, *template_name;
    queue *cmds;     /* engine_cmd from the UI */
    queue *events;   /* engine_event to the UI, with the wake fd */
    queue *deferred; /* commands that arrived mid-generation, run after it */
    queue *lens_q;   /* LENS commands not run yet (run between tokens when the cache allows) */
    pthread_t th;

    /* --- engine thread only --- */
    model *m;
    forward_ctx *f;
    sampler *s;
    const tokenizer *tok;
    int32_t n_vocab;
    int32_t n_ctx;
    float *logits;       /* n_vocab */
    int32_t *kv;         /* tokens whose keys/values sit in the cache, position = index */
    int32_t n_kv;        /* == n_past; lowered only through engine_kv_truncate */
    int32_t logits_pos;  /* the position whose distribution e->logits holds, -1 = none */
    /* The prompt's last logits as its batch computed them (a one-token
     * re-evaluation rounds differently): a branch at the reply's first token,
     * an undo back to it, /regen and the second side of a comparison start
     * from them. Valid while the cache keeps [0, anchor_pos). */
    float *anchor;
    int32_t anchor_pos;  /* -1 = none */
    int32_t *prompt;     /* tokenized conversation */
    int32_t prompt_cap;
    char *tmpl_force;    /* built-in format forced by params/SET_TEMPLATE, NULL = model's */
    sampler_params sp;   /* current sampling parameters */
    bool stop, quit;
    bool step_on;        /* step mode now (params.step_mode, then SET_STEP) */
    bool step_ok;        /* step mode: a STEP arrived (its choice below) */
    int32_t step_token;  /* -1 draw, else force */
    char *step_text;     /* force these tokens (owned) */
    bool undo_req;       /* step mode: an UNDO arrived */
    bool params_changed; /* step mode: a STEP event must be posted again */
    bool evaluating;     /* inside forward_eval: no lens now */
    int32_t req_id;      /* the running SUBMIT's */
    bool turn_own;       /* the running SUBMIT samples with its own parameters */
    bool report_prefill; /* progress callback posts PREFILL events */
    int32_t conv_id;
    int32_t prefill_base; /* tokens of the current prefill before this forward_eval */
    int32_t prefill_total;
    char *gen;           /* reply text of the current turn */
    size_t gen_len, gen_cap, emitted;
    int32_t reply_start; /* position of the reply's first token */
    int32_t undo_floor;  /* undo stops here (the reply's start, or where a context shift left it) */
    int32_t n_reply;     /* tokens of the reply so far (a branch's forced ones included) */
    size_t *reply_off;   /* gen_len before each reply token, by position - reply_start */
    int32_t reply_cap;
};

void engine_post(engine *e, engine_event *ev);
void engine_post_message(engine *e, enum engine_event_type type, const char *msg);
/* An ERROR event with a printf-style message (cut at ENGINE_MSG_MAX). */
#define engine_post_error(e, ...)                                                                              \
    do {                                                                                                       \
        char m_[ENGINE_MSG_MAX];                                                                               \
        if (snprintf(m_, sizeof m_, __VA_ARGS__) < 0)                                                          \
            m_[0] = 0;                                                                                         \
        engine_post_message((e), ENGINE_EV_ERROR, m_);                                                         \
    } while (0)
/* Handles the commands that may arrive between tokens; the others (SUBMIT,
 * LOAD, RESET) stop the current turn and are deferred until after it. */
void engine_drain(engine *e);
/* step mode: blocks until a STEP or UNDO arrives, the turn is stopped, step
 * mode is turned off or the parameters change. */
void engine_wait_step(engine *e);
/* SUBMIT: render, tokenize, prefill the new suffix, generate. Posts DONE. */
void engine_run_submit(engine *e, const engine_cmd *c);

/* ---- engine_explore.c: positions, the prefix, the lens ---- */
/* n_kv = n (the anchor goes when n is below it). Never raises n_kv. */
void engine_kv_truncate(engine *e, int32_t n);
/* Evaluates e->kv[start, n) at positions start.. (the last token's logits
 * land in e->logits, logits_pos = n). no_kv_cache recomputes from 0. */
int engine_eval_kv(engine *e, int32_t start, int32_t n, char *err, size_t errlen);
/* Brings the cache to hold seq[0, upto): keeps the common prefix, evaluates
 * seq[.., np) as one batch (the prompt, saving its logits as the anchor when
 * the batch ends at np) and seq[np, upto) one token at a time, as generation
 * evaluated them. *evaluated gets how many tokens it evaluated. */
int engine_ensure_prefix(engine *e, const int32_t *seq, int32_t np, int32_t upto, int32_t *evaluated, char *err,
                         size_t errlen);
/* Makes e->logits the distribution at position p (1 <= p <= n_kv): n_kv = p,
 * the logits from the anchor or from token p-1 evaluated alone (how
 * generation evaluated it). At most one token of work. */
int engine_rollback(engine *e, int32_t p, char *err, size_t errlen);
/* Renders and tokenizes msgs (malloc'd tokens, *n); NULL with err set.
 * warn (may be NULL) gets a template fallback notice. */
int32_t *engine_tokenize_msgs(engine *e, const chat_message *msgs, size_t n, int32_t *np, char *warn, size_t warnlen,
                              char *err, size_t errlen);
/* Queues a LENS command (takes it over). */
void engine_lens_queue(engine *e, engine_cmd *c);
/* Runs the queued lens requests: all of them when a prefill is allowed,
 * else those whose prefix the cache holds. */
void engine_lens_run_pending(engine *e, bool may_prefill);
/* forward_eval progress: PREFILL events, and commands drained between batches. */
bool engine_progress_cb(void *user, int32_t done, int32_t total);
const char *engine_template_label(const engine *e);
/* The rendered conversation (chat template or raw), malloc'd. */
char *engine_render(engine *e, const chat_message *msgs, size_t n, bool add_gen, char *warn, size_t warnlen,
                    char *err, size_t errlen);
void engine_cmd_free(engine_cmd *c);

#endif
