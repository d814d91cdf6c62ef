/* The engine thread: a pthread that owns the model, the forward context (KV
 * cache), the position counter and the sampler. The UI talks to it only
 * through commands (engine_send) and reads what happened as events
 * (engine_poll). The engine writes a byte to engine_event_fd() whenever it
 * posts an event, so the UI can poll() that fd together with stdin.
 *
 * Conversations are owned by the UI: a submit carries the whole message list.
 * The engine renders it with the chat template, tokenizes it, keeps the
 * longest prefix its KV cache already holds, evaluates only the rest and then
 * generates. Switching conversations, /regen and /edit therefore reuse the
 * cache for whatever prefix is shared.
 *
 * Explore mode rests on the same rule. A submit may carry the first tokens
 * of the reply (a branch from an earlier step: the old reply's tokens up to
 * it, then the alternative); the cache then keeps everything up to that step
 * and only the alternative is new, so going back is O(1): the position
 * counter is set back, no prompt is evaluated again. Step mode stops before
 * every token with its distribution (STEP event) and takes the user's
 * choice; UNDO takes the last token back. The logit lens of a step re-runs
 * that one position through a graph of its own (model/forward.h). */
#ifndef TOKSCOPE_ENGINE_H
#define TOKSCOPE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat.h"
#include "gguf/tensor.h"
#include "kernels/blas.h"
#include "sampler/sampler.h"

#define ENGINE_TEXT_MAX 64   /* bytes of a token's piece carried in an event */
#define ENGINE_MSG_MAX 256

typedef struct engine engine;

typedef struct engine_params {
    const char *model_path;  /* loaded at start (may be NULL: send ENGINE_CMD_LOAD later) */
    uint32_t n_ctx;          /* 0 = min(n_ctx_train, 4096) */
    int32_t n_threads;       /* 0 = all cores */
    bool no_kv_cache;        /* recompute the whole sequence every step (debugging) */
    enum tensor_type cache_type_k, cache_type_v; /* KV cache types: F16 (default), Q8_0, Q4_0, F32 */
    enum blas_mode blas;     /* OpenBLAS for large prompt batches: auto (default), on, off */
    const char *template_name; /* built-in format to force (chat_builtin_known() names, or
                                  "raw": contents back to back); NULL = the model's template,
                                  "raw" for models without one */
    bool context_shift;      /* on overflow drop the oldest half (true) or stop with an error; never
                                on a recurrent model (Qwen3.5): it stops with an error saying so */
    /* Recurrent models: checkpoints of the state (engine/memory/memory.h), to go back to any
     * position: 0 = the defaults (every 256 tokens a reply adds, at most 32, at most 1 GiB) */
    int32_t ckpt_every, ckpt_max;
    uint64_t ckpt_max_bytes;
    bool step_mode;          /* step mode at start (ENGINE_CMD_SET_STEP changes it): before every
                                token the engine posts a STEP event and waits for ENGINE_CMD_STEP
                                or ENGINE_CMD_UNDO (other commands act as usual meanwhile) */
    sampler_params sampling;
    /* Speculative decoding (engine/spec/spec.h): spec_type an enum spec_type (0 = off),
     * draft_max drafts per verification (0 = 3), draft_model the second GGUF of
     * SPEC_DRAFT. Applied at load; step mode turns it off while it is on. */
    int32_t spec_type, draft_max;
    const char *draft_model;
    /* Remote backend (engine/remote/remote.h): with remote_url set, the engine
     * thread is a client of an OpenAI-compatible server (llama-server, vLLM,
     * ollama, tokscope serve) instead of running a model: same commands, same
     * events; what needs a local model (step mode, the lens, undo) is refused. */
    const char *remote_url;     /* "http://host:port" (or with /v1); NULL = local */
    const char *remote_api_key; /* sent as a bearer token only; never printed, logged or saved */
    const char *remote_model;   /* model id to ask for; NULL = the server's first */
    uint64_t kv_max_bytes;      /* SAVE_KV refuses a snapshot larger than this (0 = no cap) */
    int32_t remote_timeout_s;   /* a request with no byte for this long fails (0 = 60) */
    int32_t n_parallel;         /* > 1: that many sequences in the memory, SUBMITs run side by side
                                   (continuous batching, engine_slots.h; serve --parallel): events
                                   carry their req_id, STOP with a req_id stops that one (0: all);
                                   no context shift, step mode, lens or speculative decoding.
                                   0 or 1: one conversation, today's path */
    const char *kv_seq_prefix;  /* n_parallel > 1: after each request its sequence s is kept in
                                   PREFIX.s.kv (memory/kv_snapshot.h); those files together are
                                   capped by kv_max_bytes, the oldest removed first. NULL: none.
                                   Must outlive the engine */
    bool remote_probs_post;     /* llama-server: ask for its post-sampler probabilities
                                   (post_sampling_probs) instead of the raw ones;
                                   ENGINE_CMD_SET_REMOTE_PROBS changes it */
} engine_params;

engine_params engine_default_params(void);

enum engine_cmd_type {
    ENGINE_CMD_LOAD,       /* path */
    ENGINE_CMD_SUBMIT,     /* messages: render, prefill the new suffix, generate */
    ENGINE_CMD_STOP,       /* stop generation after the current token (n_parallel > 1: the request
                              req_id names, 0 all of them) */
    ENGINE_CMD_SET_PARAMS, /* sampling: applied before the next draw */
    ENGINE_CMD_SET_TEMPLATE, /* name: built-in format, or NULL/"" for the model's own */
    ENGINE_CMD_RESET,      /* forget the cache (next submit prefills from position 0) */
    ENGINE_CMD_QUIT,
    ENGINE_CMD_STEP,       /* step mode: the sampler draws; with flag, token is forced instead;
                              with text, its tokens are (one TOKEN event each) */
    ENGINE_CMD_UNDO,       /* step mode, waiting: take back the reply's last token (one position) */
    ENGINE_CMD_SET_STEP,   /* flag: step mode on or off, also in the middle of a turn */
    ENGINE_CMD_LENS,       /* messages + tokens: the logit lens of one step (a LENS event) */
    ENGINE_CMD_SET_REMOTE_PROBS, /* flag: the remote backend asks llama-server for post-sampler
                                    probabilities from the next request on (local engine: ignored) */
    ENGINE_CMD_SET_SPEC,   /* name "spec" (off ngram draft mtp), "draft_max" or "draft_model", text its
                              value: speculative decoding from the next reply (an ERROR if refused) */
    ENGINE_CMD_SAVE_KV,    /* path: a snapshot of the memory (KV cache, recurrent state) there
                              (memory/kv_snapshot.h), once no turn runs; a KV event says how it went */
    ENGINE_CMD_LOAD_KV,    /* path: restore that snapshot when it matches the model and settings
                              (a KV event says whether, and why not) */
};

typedef struct engine_cmd {
    enum engine_cmd_type type;
    char *path;             /* LOAD; owned by the queue after send */
    char *name;             /* SET_TEMPLATE; SUBMIT, LENS: the template this command's prompt is
                               rendered with (a built-in, "raw" or "model"), NULL = the engine's
                               (SET_TEMPLATE's): a branch keeps the template its turn was sent with */
    chat_message *messages; /* SUBMIT: deep-copied by engine_send */
    size_t n_messages;
    int32_t conv_id;        /* SUBMIT, LENS: echoed in events */
    int32_t req_id;         /* SUBMIT, LENS: echoed in events (the UI's name for the request) */
    sampler_params sampling; /* SET_PARAMS; SUBMIT with own_sampling */
    bool own_sampling;      /* SUBMIT: this turn samples with .sampling, reseeded when it sets a
                               seed (compare settings: two turns, two parameter sets) */
    bool no_reuse;          /* SUBMIT: evaluate the whole prompt, none of the cache kept (serve's
                               cache_prompt false: the bits of a fresh start) */
    /* SUBMIT: the reply begins with these tokens, forced rather than sampled
     * (a branch: the old reply's tokens before the step, then the chosen
     * alternative); the last one gets a TOKEN event, the others are context.
     * LENS: the reply's tokens before the step. Deep-copied by engine_send. */
    int32_t *tokens;
    int32_t n_tokens;
    int32_t reply_emitted;  /* SUBMIT with tokens: bytes of their text the UI already shows */
    int32_t token;          /* STEP with flag: force this id; LENS: the step's chosen token */
    char *text;             /* STEP: force the tokens of this text (owned by the queue after send) */
    bool flag;              /* SET_STEP: on; STEP: force token; SET_REMOTE_PROBS: post */
    int32_t index;          /* LENS: echoed in the event; LOAD_KV with n_parallel > 1: the sequence */
} engine_cmd;

enum engine_event_type {
    ENGINE_EV_LOAD_PROGRESS, /* progress 0..1 */
    ENGINE_EV_LOADED,        /* model info filled */
    ENGINE_EV_PREFILL,       /* done / total tokens of the prompt suffix */
    ENGINE_EV_TOKEN,         /* one per sampled token, the end-of-generation token included
                                (its text is empty); pos = where it sits in the sequence */
    ENGINE_EV_DONE,          /* ends every SUBMIT the engine started, whatever happened */
    ENGINE_EV_CONTEXT_SHIFT, /* n_dropped tokens removed, message says what */
    ENGINE_EV_ERROR,         /* message */
    ENGINE_EV_QUIT,
    ENGINE_EV_STEP,          /* step mode: the distribution at pos (top, entropies; token -1), the
                                engine waits for STEP or UNDO */
    ENGINE_EV_UNDO,          /* the token at pos was taken back; reply_len bytes of the reply stay */
    ENGINE_EV_LENS,          /* lens: owned by the receiver (engine_lens_free) */
    ENGINE_EV_KV,            /* a KV snapshot: kv says what happened, message the words for it */
};

/* ENGINE_EV_KV's kinds */
enum engine_kv_kind {
    ENGINE_KV_SAVED,       /* done = tokens, bytes = file size */
    ENGINE_KV_SAVE_FAILED, /* message: why (the session file itself is the UI's, written apart) */
    ENGINE_KV_SAVE_SKIPPED, /* nothing to save: no model, or the cache holds nothing (message: which) */
    ENGINE_KV_RESTORED,    /* done = tokens held now (n_past) */
    ENGINE_KV_NOT_USED,    /* message: why; the conversation is evaluated as without one */
    ENGINE_KV_USED,        /* the first turn after a restore: done = tokens of it kept, total = of it
                              (done < total: the conversation differs from it there, said in message) */
    ENGINE_KV_PRUNED,      /* serve --parallel: a slot's snapshot saved (done, bytes as SAVED) and
                              total older ones removed to stay under kv_max_bytes */
};

enum engine_done_reason {
    ENGINE_DONE_EOG,       /* model ended its turn */
    ENGINE_DONE_LENGTH,    /* n_predict reached */
    ENGINE_DONE_STOPPED,   /* user stop */
    ENGINE_DONE_STOP_STRING,
    ENGINE_DONE_CTX_FULL,
    ENGINE_DONE_ERROR,
    ENGINE_DONE_CUT,       /* remote: the reply was cut (connection lost, server error); text kept */
};

typedef struct engine_model_info {
    char name[128];
    char arch[32];
    char file_type[32];
    char template_name[64]; /* "model" (own Jinja template), the built-in name, or "raw" */
    uint32_t n_ctx, n_ctx_train, n_layer, n_embd;
    int32_t n_vocab;
    uint64_t n_params;
    char cache_types[24]; /* "q8_0/q4_0": K and V cache types */
    uint64_t cache_bytes;  /* the KV cache, all layers */
    char blas[256];        /* forward_blas_describe: "auto: F16 from 256 tokens (155 of 155 matmul weights)" */
    bool recurrent;        /* recurrent layers (Qwen3.5): checkpoints, no context shift */
    uint64_t ckpt_unit_bytes; /* one checkpoint: the recurrent state and one row of logits */
    int32_t ckpt_every, ckpt_max; /* the checkpoint spacing and count cap in force */
    uint64_t ckpt_max_bytes;
    /* remote backend ("" / 0 for a local model) */
    char remote_kind[16];     /* "llama-server" "vllm" "ollama" "tokscope" "openai" */
    char remote_ignored[160]; /* sampler parameters the server ignores, space-separated names */
    int32_t remote_max_top;   /* most candidates per token the server gives (top_logprobs cap) */
    char remote_models[512];  /* the ids GET /v1/models lists, space-separated (cut when long) */
} engine_model_info;

typedef struct engine_token_candidate {
    int32_t id;
    float logit, p_raw, p_post;
    char text[ENGINE_TEXT_MAX]; /* the token's piece, raw bytes, NUL-terminated (may be cut) */
} engine_token_candidate;

/* The logit lens of one step: per block, the head's top candidates on the
 * residual after it, and where the step's chosen token stands there. */
#define ENGINE_LENS_TOP 8
typedef struct engine_lens_layer {
    int32_t n_top;
    engine_token_candidate top[ENGINE_LENS_TOP]; /* by logit; p_raw: softmax of this block's logits */
    int32_t chosen_rank;                         /* the chosen token's rank here (0 = top-1) */
    float chosen_logit, chosen_p;
    float entropy; /* nats, of this block's distribution */
} engine_lens_layer;

typedef struct engine_lens {
    int32_t pos;       /* the step: position of the token chosen there */
    int32_t token;     /* that token */
    int32_t n_layer;
    int32_t first_top; /* first block (1-based) where the chosen token is top-1, 0 = none */
    engine_lens_layer layer[]; /* n_layer: block 1 .. n_layer (the model's own logits) */
} engine_lens;

void engine_lens_free(engine_lens *l);

typedef struct engine_event {
    enum engine_event_type type;
    int32_t conv_id;
    int32_t req_id;             /* the command's req_id (SUBMIT's events, LENS) */
    float progress;             /* LOAD_PROGRESS */
    int32_t done, total;        /* PREFILL */
    /* TOKEN */
    int32_t token, pos;         /* pos: where this token sits in the sequence */
    char text[ENGINE_TEXT_MAX]; /* bytes this token adds to the reply (incomplete UTF-8 and a possible
                                   stop-string start are held back); DONE: the held-back rest, if any */
    int32_t text_len;
    float logit, p_raw, p_post, entropy_raw, entropy_post;
    int32_t n_top;
    engine_token_candidate top[SAMPLER_MAX_TOP];
    /* DONE */
    enum engine_done_reason reason;
    int32_t n_prompt, n_gen;    /* tokens evaluated / generated this turn */
    double prompt_tps, gen_tps; /* DONE; prompt_tps also on the PREFILL event that ends the prompt */
    int32_t n_drafted, n_accepted; /* DONE: speculative decoding's drafts this turn, and how many were accepted */
    int32_t spec_mark;     /* TOKEN: 0 drawn alone, 1 a draft the verification accepted, 2 drawn where
                              the draft spec_rejected was rejected (the probabilities are the target's) */
    int32_t spec_rejected;
    int32_t n_past, n_ctx;      /* DONE, TOKEN, PREFILL, LOADED: position counter and context size */
    int32_t n_ckpt;             /* DONE, TOKEN, PREFILL: recurrent-state checkpoints kept (0: none) */
    uint64_t ckpt_bytes;        /* ... and the bytes they take */
    int32_t n_dropped;          /* CONTEXT_SHIFT */
    int32_t reply_len;          /* UNDO: bytes of the reply text that stay */
    int32_t index;              /* LENS: the command's index */
    int32_t kv;                 /* KV: enum engine_kv_kind */
    uint64_t bytes;             /* KV saved: bytes of the snapshot */
    engine_lens *lens;          /* LENS */
    engine_model_info info;     /* LOADED */
    char message[ENGINE_MSG_MAX]; /* ERROR, CONTEXT_SHIFT, DONE (ERROR/CTX_FULL reason),
                                     PREFILL (first one: template fallback warning, else "") */
} engine_event;

/* Starts the thread (and loads params->model_path if set). NULL + err on failure. */
engine *engine_start(const engine_params *p, char *err, size_t errlen);
/* Queues a command; never blocks on the engine's work. Takes ownership of the
 * strings in cmd and deep-copies messages. */
void engine_send(engine *e, engine_cmd *cmd);
/* Convenience senders. */
void engine_submit(engine *e, int32_t conv_id, const chat_message *msgs, size_t n);
void engine_stop(engine *e);
void engine_set_params(engine *e, const sampler_params *p);
void engine_load(engine *e, const char *path);         /* path is copied */
void engine_set_template(engine *e, const char *name); /* built-in name; NULL, "" or "model": the model's own */
void engine_set_spec(engine *e, const char *name, const char *value); /* ENGINE_CMD_SET_SPEC */
void engine_reset(engine *e);
void engine_save_kv(engine *e, const char *path); /* ENGINE_CMD_SAVE_KV (path copied) */
void engine_load_kv(engine *e, const char *path); /* ENGINE_CMD_LOAD_KV (path copied) */
/* n_parallel > 1: LOAD_KV into sequence seq (a KV event says how it went) */
void engine_load_kv_seq(engine *e, const char *path, int32_t seq);
void engine_step(engine *e);                 /* step mode: the sampler draws */
void engine_step_token(engine *e, int32_t id);  /* step mode: force this token */
void engine_step_text(engine *e, const char *text); /* step mode: force the tokens of text */
void engine_undo(engine *e);
void engine_set_step(engine *e, bool on);
void engine_set_remote_probs(engine *e, bool post); /* --remote, llama-server: raw or post-sampler numbers */
/* Non-blocking: true and fills ev when an event is pending. */
bool engine_poll(engine *e, engine_event *ev);
/* Readable when events are pending (drain it with engine_poll). */
int engine_event_fd(const engine *e);
/* Sends QUIT, stops any generation within one token, joins the thread, frees. */
void engine_shutdown(engine *e);

#endif
