/* State shared by engine.c (thread, command loop, loading), engine_gen.c
 * (prefill, generation), engine_between.c (commands during a turn),
 * engine_explore.c (the lens) and engine_core.c (what they all use); the
 * prompt is chat_prompt_tokenize's (chat/chat_prompt.h), the one every path
 * shares. The calls go one way: engine.c -> gen -> between -> explore ->
 * core, and remote/ -> core. What the forward context holds (tokens, position counter, logits,
 * checkpoints) is the memory's (memory/memory.h). Everything below the
 * marked line belongs to the engine thread alone. */
#ifndef TOKSCOPE_ENGINE_INTERNAL_H
#define TOKSCOPE_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "chat/chat_prompt.h"
#include "engine.h"
#include "memory/memory.h"
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
    struct remote *remote; /* the remote backend's state (remote/remote.h); NULL: local */

    /* --- engine thread only --- */
    model *m;
    forward_ctx *f;
    sampler *s;
    const tokenizer *tok;
    int32_t n_vocab;
    int32_t n_ctx;
    memory mem;          /* the tokens the context holds, n_past, logits (memory/memory.h) */
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
    int32_t req_id;      /* the running SUBMIT's */
    bool turn_own;       /* the running SUBMIT samples with its own parameters */
    bool report_prefill; /* progress callback posts PREFILL events */
    int32_t conv_id;
    int32_t prefill_total;
    char *gen;           /* reply text of the current turn */
    size_t gen_len, gen_cap, emitted;
    int32_t reply_start; /* position of the reply's first token */
    int32_t undo_floor;  /* undo stops here (the reply's start, or where a context shift left it) */
    int32_t n_reply;     /* tokens of the reply so far (a branch's forced ones included) */
    size_t *reply_off;   /* gen_len before each reply token, by position - reply_start */
    int32_t reply_cap;
    struct spec_run *spec; /* speculative decoding (spec/spec_engine.h); NULL: off */
    char *draft_model;     /* the copy e->p.draft_model points at */
    bool spec_dirty;       /* the settings changed: spec_engine_open at the next reply */
    struct kv_stamp *kv_stamp; /* the model's and settings' stamp for snapshots (engine_kv.c), made on first use */
    int32_t kv_restored;   /* tokens a restored snapshot brought, until the next turn reports their use */
    struct engine_slots *slots; /* --parallel N > 1: the slots (engine_slots.c); NULL: one sequence */
};

/* ---- engine_core.c: what every engine file (and remote/) shares; calls none of them ---- */
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
void engine_cmd_free(engine_cmd *c);
/* A built-in format's name, or "raw". */
bool engine_template_known(const char *name);
/* SET_TEMPLATE: the format forced from now on (NULL, "" or "model": the model's own). */
void engine_set_template_name(engine *e, const char *name);
/* SET_PARAMS: the sampling parameters from the next draw on. */
void engine_apply_params(engine *e, const sampler_params *p);
/* Where a command's prompt gets its format (chat/chat_prompt.h): forced (a
 * SUBMIT's or LENS's own template) or, when NULL, the engine's. */
chat_prompt_src engine_prompt_src(const engine *e, const char *forced);

/* A reply's text gen[0, len), of which [0, emitted) went out in events (engine_gen.c's
 * and engine_slots.c's): where the first complete stop string at or after emitted
 * starts (-1: none); how many bytes at the end could still grow into one; and
 * gen[emitted, upto) into ev->text, cut on a UTF-8 boundary unless final, at most
 * ENGINE_TEXT_MAX - 1 bytes (emitted moves on). */
long engine_text_find_stop(const char *gen, size_t len, size_t emitted, const sampler_params *sp);
size_t engine_text_holdback(const char *gen, size_t len, size_t emitted, const sampler_params *sp);
void engine_text_emit(const char *gen, size_t *emitted, engine_event *ev, size_t upto, bool final);

/* ---- engine_explore.c: the lens ---- */
/* Queues a LENS command (takes it over). */
void engine_lens_queue(engine *e, engine_cmd *c);
/* Runs the queued lens requests: all of them when a prefill is allowed,
 * else those whose prefix the cache holds. */
void engine_lens_run_pending(engine *e, bool may_prefill);

/* ---- engine_between.c: commands during a turn ---- */
/* Handles the commands that may arrive between tokens; the others (SUBMIT,
 * LOAD, RESET) stop the current turn and are deferred until after it. */
void engine_drain(engine *e);
/* step mode: blocks until a STEP or UNDO arrives, the turn is stopped, step
 * mode is turned off or the parameters change. */
void engine_wait_step(engine *e);

/* ---- engine_kv.c: snapshots of the memory on disk (memory/kv_snapshot.h) ---- */
void engine_kv_save(engine *e, const char *path);
void engine_kv_load(engine *e, const char *path);
/* The same for sequence s of the slots' memory (ms: theirs): LOAD_KV from
 * path; the save writes params.kv_seq_prefix.s.kv, then removes the oldest
 * of the PREFIX.*.kv files until they fit params.kv_max_bytes. */
struct memory_seq;
void engine_kv_load_seq(engine *e, struct memory_seq *ms, int32_t s, const char *path);
void engine_kv_save_seq(engine *e, const struct memory_seq *ms, int32_t s);
/* A turn's prefill after a restore: how much of it the turn keeps (common of total). */
void engine_kv_report(engine *e, int32_t common);
/* The model or the memory went: the stamp and any restore are forgotten. */
void engine_kv_forget(engine *e);

/* ---- engine_slots.c: continuous batching (params.n_parallel > 1) ---- */
/* After a load with n_seq = n_parallel: the slots over the memory's sequences. */
bool engine_slots_init(engine *e, int32_t n_batch, char *err, size_t errlen);
void engine_slots_free(engine *e);
/* The command loop while slots exist; returns once QUIT arrived. */
void engine_slots_main(engine *e);

/* ---- engine_gen.c: a turn ---- */
/* A TOKEN event's candidates from a sampler step (their pieces). */
void engine_fill_candidates(engine *e, engine_event *ev, const sampler_step *st);
/* SUBMIT: the prompt, prefill the new suffix, generate. Posts DONE. */
void engine_run_submit(engine *e, const engine_cmd *c);
/* forward_eval progress: PREFILL events, and commands drained between batches. */
bool engine_progress_cb(void *user, int32_t done, int32_t total);

#endif
