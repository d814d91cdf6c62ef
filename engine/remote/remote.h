/* The remote backend: the engine thread as a client of an OpenAI-compatible
 * server. engine_start runs remote_main instead of the local engine's loop
 * when engine_params.remote_url is set; the UI sends the same commands and
 * reads the same events (engine.h), so it never waits on the network.
 *
 * At start (and on LOAD, whose path is a model id) it asks the server what
 * it is (GET /v1/models, then /props for llama-server, /api/version for
 * ollama) and posts LOADED with info.remote_kind, the parameters that kind
 * ignores and its top_logprobs cap. A SUBMIT is one streamed
 * POST /v1/chat/completions (remote_body) read by sse.c; each streamed
 * token becomes a TOKEN event with the server's top candidates, reasoning
 * arrives between <think> and </think> marker tokens (the UI's reasoning
 * splitter folds it). Tokens get ids of the backend's own (an intern table
 * of their texts), so a branch (SUBMIT with tokens) becomes an assistant
 * prefix the server continues. Failures end the turn with DONE: ERROR when
 * nothing came, CUT with the partial reply kept otherwise; the message is
 * one line. HTTP is libcurl's, JSON cJSON's. */
#ifndef TOKSCOPE_REMOTE_H
#define TOKSCOPE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

enum remote_kind {
    REMOTE_UNKNOWN, /* OpenAI-compatible, nothing more known */
    REMOTE_LLAMA,   /* llama.cpp's llama-server */
    REMOTE_VLLM,
    REMOTE_OLLAMA,
    REMOTE_TOKSCOPE, /* tokscope serve */
};

const char *remote_kind_name(enum remote_kind k);
/* The kind from GET /v1/models' body (owned_by), REMOTE_UNKNOWN when it does not say. */
enum remote_kind remote_kind_from_models(const char *json);
/* Space-separated names of the panel's parameters the kind ignores, then
 * of the further samplers (/set mirostat, top_n_sigma, xtc_*, dry_*) it does not take. */
const char *remote_ignored_params(enum remote_kind k);
/* The kind continues a last assistant message (a branch's prefix). */
bool remote_continues(enum remote_kind k);
/* Most top_logprobs the kind gives (OpenAI and vLLM: 20). */
int32_t remote_max_top(enum remote_kind k);

/* The request body of a streamed chat completion: messages, then
 * prefix as a last assistant message to continue (NULL: none), the
 * sampling parameters the kind takes, top_logprobs min(n_top, cap);
 * post_probs (llama-server only): "post_sampling_probs": true, which makes
 * it send the post-sampler probabilities ("prob"/"top_probs") instead of
 * the raw logprobs. Malloc'd JSON, NULL when out of memory. */
char *remote_body(enum remote_kind k, const char *model, const chat_message *msgs, size_t n,
                  const char *prefix, const sampler_params *sp, bool post_probs);

/* One streamed chunk, parsed. */
typedef struct remote_piece {
    const char *text; /* not NUL-terminated */
    size_t len;
    bool has_prob;
    float logprob;
    /* post: the numbers are llama-server's post-sampler probabilities
     * ("prob", "top_probs": post_sampling_probs was asked for), in prob and
     * top[].prob; logprob and top[].logprob are then -INFINITY. One request
     * gets one kind: the raw or the post-sampler numbers, never both. */
    bool post;
    float prob;
    /* tokscope serve's extension fields: the engine's own numbers, raw and
     * after the sampler chain (has_ext: they were there) */
    bool has_ext;
    float logit, p_raw, p_post, entropy_raw, entropy_post;
    int32_t n_top;
    struct {
        char text[ENGINE_TEXT_MAX];
        float logprob;
        float prob;                 /* with post */
        float logit, p_raw, p_post; /* with has_ext */
    } top[SAMPLER_MAX_TOP];
} remote_piece;

typedef struct remote_chunk_cb {
    void *user;
    /* reasoning: the piece is reasoning_content */
    void (*piece)(void *user, const remote_piece *p, bool reasoning);
    void (*finish)(void *user, const char *reason);                                /* finish_reason */
    void (*usage)(void *user, int32_t n_prompt, int32_t n_gen, double prompt_tps); /* -1 / 0: unknown */
    void (*error)(void *user, const char *message);
} remote_chunk_cb;

/* Parses one SSE data payload (a chat.completion.chunk, or an error object)
 * and reports what it holds. False when it is not JSON. */
bool remote_parse_chunk(const char *data, size_t n, const remote_chunk_cb *cb);
/* The message of an error body ({"error":{"message":..}}, {"message":..},
 * {"error":"..."}, or plain text), one line, into out. */
void remote_error_message(const char *body, char *out, size_t cap);

/* engine.c: the thread's body with e->remote set up by remote_init. */
struct engine;
void *remote_main(void *arg);
/* Copies what the backend needs from p (url, key, model). False + err. */
bool remote_init(struct engine *e, const engine_params *p, char *err, size_t errlen);
void remote_free(struct engine *e);

#endif
