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
    int32_t n_kv;        /* == n_past */
    int32_t *prompt;     /* tokenized conversation */
    int32_t prompt_cap;
    char *tmpl_force;    /* built-in format forced by params/SET_TEMPLATE, NULL = model's */
    sampler_params sp;   /* current sampling parameters */
    bool stop, quit;
    bool step_ok;        /* step_mode: a STEP arrived */
    bool report_prefill; /* progress callback posts PREFILL events */
    int32_t conv_id;
    int32_t prefill_base; /* tokens of the current prefill before this forward_eval */
    int32_t prefill_total;
    char *gen;           /* reply text of the current turn */
    size_t gen_len, gen_cap, emitted;
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
/* step_mode: blocks until STEP (true) or until the turn is stopped. */
void engine_wait_step(engine *e);
/* SUBMIT: render, tokenize, prefill the new suffix, generate. Posts DONE. */
void engine_run_submit(engine *e, const chat_message *msgs, size_t n, int32_t conv_id);
/* forward_eval progress: PREFILL events, and commands drained between batches. */
bool engine_progress_cb(void *user, int32_t done, int32_t total);
const char *engine_template_label(const engine *e);
void engine_cmd_free(engine_cmd *c);

#endif
