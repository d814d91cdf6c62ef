/* tokscope serve: the engine behind an OpenAI-compatible HTTP API.
 *
 * The pieces, one job each:
 *   serve_request.c  a request body (JSON) -> serve_request, validated; every
 *                    refusal names the field (HTTP 400 in OpenAI's error shape)
 *   serve_json.c     response shaping: errors, logprobs entries, streamed
 *                    chunks and whole replies (chat and legacy completions),
 *                    the model list; the reasoning/answer split of a reply
 *   serve_vocab.c    the server's own view of the model file: token pieces,
 *                    control tokens, the chat template's reasoning style
 *   serve_bridge.c   the one engine thread: a FIFO of jobs, one SUBMIT at a
 *                    time, events routed to the job that asked
 *   serve_http.c     libmicrohttpd: routing, methods, bodies, the API key,
 *                    non-streaming replies and the SSE stream
 *   cmd_serve.c      the command line, startup checks, shutdown
 * No HTTP parsing of our own: libmicrohttpd does it; JSON is cJSON's. */
#ifndef TOKSCOPE_SERVE_H
#define TOKSCOPE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat.h"
#include "chat/reasoning.h"
#include "engine.h"
#include "sampler/sampler.h"

struct cJSON;

#define SERVE_MAX_TOP 20           /* top_logprobs a request may ask for (OpenAI's limit) */
#define SERVE_MAX_BODY (8u << 20)  /* request bodies larger than this get 413 */
/* The request's head: serve's own limits answer 414 / 431 in OpenAI's error
 * shape; the library's connection pool holds far more (a head past the pool
 * gets the library's own HTML page: docs/serve.md). */
#define SERVE_MAX_URL (8u << 10)      /* the request target (path and query), bytes */
#define SERVE_MAX_HEADERS (32u << 10) /* all header lines together, bytes */
#define SERVE_POOL (512u << 10)       /* libmicrohttpd's memory per connection (its default: 32 KiB) */
#define SERVE_IDLE_S 15           /* a connection silent this long is closed (its head unfinished, or idle) */
#define SERVE_REQUEST_S 300       /* ... once a completion's head is accepted (its body, its reply) */
#define SERVE_COUNT_ALONE (256u << 10) /* prompts of more bytes are counted one at a time (serve_vocab_count) */
#define SERVE_PIECE_MAX 128        /* bytes of a token's piece kept for its logprobs entry */

/* ---- serve_request.c ---------------------------------------------------- */

/* A logit_bias entry as the request gave it: a token id, or a text that
 * serve_vocab_bias tokenizes (each of its tokens gets the bias). */
typedef struct serve_bias_in {
    int64_t id; /* -1: text */
    char *text;
    float bias;
} serve_bias_in;

/* An element of a completion's prompt given as an array: a token id or a
 * text (serve_vocab_prompt turns them into the one sequence). */
typedef struct serve_prompt_part {
    int64_t id; /* -1: text */
    char *text;
    size_t len; /* text's bytes (a "\u0000" in it is a NUL byte) */
} serve_prompt_part;

typedef struct serve_request {
    bool chat;            /* /v1/chat/completions (else /v1/completions) */
    bool stream;
    bool include_usage;   /* stream_options.include_usage: a last chunk with usage */
    chat_message *msgs;   /* chat: role/content malloc'd; pseudo messages (CHAT_ROLE_VARS,
                             CHAT_ROLE_REASONING) carry template variables and earlier reasoning */
    size_t n_msgs;
    char *prompt;         /* completions: the raw text (no template) */
    size_t prompt_len;    /* its bytes (a "\u0000" in it is a NUL byte); 0: strlen */
    serve_prompt_part *parts; /* completions: the prompt as token ids and texts (NULL: prompt) */
    size_t n_parts;
    bool prompt_ids;      /* prompt holds token ids as text (CHAT_PROMPT_IDS), serve_vocab_prompt's */
    char *model;          /* the name asked for (echoed; any name is served by the one model) */
    sampler_params sp;    /* the defaults, then the request's fields */
    bool logprobs;        /* per-token logprobs wanted */
    int32_t top_logprobs; /* alternatives per token (0..SERVE_MAX_TOP) */
    bool post_sampling;   /* llama-server's post_sampling_probs: logprob fields are the sampler's */
    bool no_reuse;        /* cache_prompt false: nothing of the cached prompt is reused */
    serve_bias_in *bias_in; /* logit_bias in llama-server's order (an object's keys sorted as
                               its std::map holds them); serve_vocab_bias fills sp.bias */
    size_t n_bias_in;
} serve_request;

/* Parses and validates a body. Returns 0, or the HTTP status (400) with a
 * message in err and the offending field in param (may be ""). req is
 * filled only on success (free it with serve_request_free either way). */
int serve_request_parse(serve_request *req, bool chat, const char *body, size_t len, const sampler_params *defaults,
                        char *err, size_t errlen, char *param, size_t paramlen);
void serve_request_free(serve_request *req);

/* ---- serve_vocab.c ------------------------------------------------------ */

typedef struct serve_vocab serve_vocab;

/* Opens the model file for its tokenizer and template (not its weights). */
serve_vocab *serve_vocab_open(const char *path, char *err, size_t errlen);
void serve_vocab_close(serve_vocab *v);
/* The token's piece as a logprobs entry shows it (control tokens' text
 * included); returns the byte count, cut at cap. */
int32_t serve_vocab_piece(const serve_vocab *v, int32_t id, char *buf, int32_t cap);
/* A control token's text (the reasoning splitter needs gpt-oss's), else NULL. */
const char *serve_vocab_control_text(const serve_vocab *v, int32_t id);
enum chat_reasoning_style serve_vocab_reasoning_style(const serve_vocab *v);
/* A floor on the tokens a request's prompt takes, from its length alone
 * (no tokenizing): a token covers at most the vocab's longest piece, and
 * blanks are not counted (a template may trim them). What is above the
 * context by this floor is refused at once, on the connection's thread,
 * without the engine tokenizing megabytes (issue 35 #11). */
int64_t serve_vocab_min_tokens(const serve_vocab *v, const serve_request *req);
/* The prompt's token count as the engine will have it (the one chat prompt
 * function, same template and BOS rule), counted on the caller's thread and
 * stopped once it passes limit: exact up to limit, then some count > limit
 * (chat_prompt_count). -1 with err set when it cannot be rendered. Prompts
 * over SERVE_COUNT_ALONE bytes are counted one at a time (bounded memory). */
int32_t serve_vocab_count(const serve_vocab *v, const serve_request *req, int32_t limit, char *err, size_t errlen);
/* req's logit_bias into req->sp.bias as llama-server takes it: ids as
 * given, texts tokenized (no BOS, specials as text). 400 with err and param
 * when an id is outside the vocabulary or the entries pass SAMPLER_MAX_BIAS
 * (llama-server drops such ids silently; a request is told instead). */
int serve_vocab_bias(const serve_vocab *v, serve_request *req, char *err, size_t errlen);
/* llama-server's workaround for every template but gpt-oss's (one that
 * writes <|channel|>): a "developer" message is a "system" one. */
void serve_vocab_roles(const serve_vocab *v, serve_request *req);
/* The format the engine renders req's prompt with (the SUBMIT's name):
 * completions "raw" (or CHAT_PROMPT_IDS for token ids), chats the model's
 * template (NULL), or chatml for a model without one (llama-server's
 * fallback; the TUI and generate --chat continue such a model's text raw). */
const char *serve_vocab_format(const serve_vocab *v, const serve_request *req);
/* A completion's prompt given as token ids and texts (req->parts) into
 * req->prompt as the ids' text, req->prompt_ids set: texts tokenized as
 * llama-server's tokenize_mixed does (the first element a text: BOS as for a
 * string prompt; special tokens parsed), ids as they are. 400 with err when
 * an id is outside the vocabulary or the sequence is empty. */
int serve_vocab_prompt(const serve_vocab *v, serve_request *req, char *err, size_t errlen);
/* The chat prompt as the engine renders it (a trailing assistant message
 * continued: chat_prompt_render_prefill, *cont_at where that message's part
 * starts, else (size_t)-1), for where the reply starts (inside reasoning or
 * not) and what a whole reply holds; malloc'd, NULL when it cannot be
 * rendered. A NUL in it is written 0x01 (the splitter reads C strings). */
char *serve_vocab_render(const serve_vocab *v, const chat_message *msgs, size_t n, size_t *cont_at);

/* ---- serve_json.c: response shaping ------------------------------------- */

typedef struct serve_cand {
    int32_t id;
    float logit, p_raw, p_post;
    char piece[ENGINE_TEXT_MAX];
    int32_t piece_len;
} serve_cand;

/* One generated token, as the bridge hands it on. */
typedef struct serve_token {
    int32_t id;
    bool eog;                    /* end of generation: no text, no logprobs entry */
    const char *control;         /* a control token's text (NULL for others): fed to the splitter */
    char piece[SERVE_PIECE_MAX]; /* the token's own bytes (logprobs "token"/"bytes") */
    int32_t piece_len;
    char text[ENGINE_TEXT_MAX];  /* the bytes it adds to the reply (held-back bytes come later) */
    int32_t text_len;
    float logit, p_raw, p_post, entropy_raw, entropy_post;
    int32_t n_top;
    serve_cand top[SERVE_MAX_TOP];
} serve_token;

/* Turns a reply's tokens into content and reasoning, and logprobs entries.
 * One per request; fed token by token (streaming or not). */
typedef struct serve_out {
    bool chat;
    bool logprobs, post_sampling;
    int32_t top_logprobs;
    bool split;              /* the template marks reasoning: split it off */
    chat_reasoning rs;
    char *text;              /* the reply as fed (all bytes) */
    size_t len, cap;
    size_t done_to;          /* bytes of text already turned into deltas */
    bool answer_started, reasoning_started; /* leading blanks are dropped */
    int32_t n_tokens;        /* non-EOG tokens */
    enum chat_reasoning_style style;
    /* a continued assistant message (prefill): the prompt's text from where
     * that message's part starts, and the prompt before it; a whole reply is
     * read from cont + the reply, as llama-server parses its generation
     * prompt and reply (NULL: none) */
    char *cont, *cont_prompt;
    size_t cont_len;
    /* ... its answer and reasoning, which a stream's first delta carries
     * (llama-server's stream holds them: its parse starts from them) */
    char *pre_content, *pre_reasoning;
    bool pre_sent;
} serve_out;

/* prompt: the rendered chat prompt (NULL: none), cont_at where a continued
 * assistant message's part starts in it ((size_t)-1: none). */
void serve_out_init(serve_out *o, const serve_request *req, enum chat_reasoning_style style, const char *prompt,
                    size_t cont_at);
/* The whole reply's content and reasoning (malloc'd, valid UTF-8; reasoning
 * NULL when the template marks none): the reply's text read as a whole,
 * after a continued message's own text when there is one. */
void serve_out_whole(const serve_out *o, char **content, char **reasoning);
void serve_out_free(serve_out *o);
/* Feeds a token (NULL: the reply ended, with rest = the held-back bytes).
 * Returns the deltas this made: content and reasoning (malloc'd, "" when
 * none) and, when logprobs are on, the token's entry (cJSON, owned by the
 * caller; NULL for EOG or when off). */
void serve_out_feed(serve_out *o, const serve_token *t, const char *rest, size_t rest_len, char **content,
                    char **reasoning, struct cJSON **entry);
/* The chat shape of one logprobs entry (token, logprob, bytes, top_logprobs,
 * and tokscope's fields: id, logit, p_raw, p_post, entropy_raw, entropy_post). */
struct cJSON *serve_logprob_entry(const serve_token *t, int32_t top, bool post_sampling);
/* Valid UTF-8 copy (invalid bytes become U+FFFD), malloc'd. A NUL (a byte
 * token's) stays a NUL: held as 0xFF '0' in the C string, it is printed
 * "\u0000" (only the JSON this file prints knows that). */
char *serve_utf8_clean(const char *s, size_t n);

const char *serve_finish_reason(enum engine_done_reason r);

/* {"error":{"message","type","param","code"}} as a malloc'd string. */
char *serve_error_json(const char *message, const char *type, const char *param, const char *code);

typedef struct serve_reply_meta {
    const char *id;     /* "chatcmpl-..." / "cmpl-..." */
    long long created;
    const char *model;
    int32_t n_cached;   /* usage.prompt_tokens_details.cached_tokens: prompt tokens not evaluated */
    size_t *text_offset; /* a stream's legacy text_offset so far (bytes of the reply sent), moved on
                            by each chunk's entries; NULL: from 0 */
} serve_reply_meta;

/* Streaming: one chunk, "data: {...}\n\n" (malloc'd). entries: an array of
 * logprobs entries (taken over; NULL when none). finish: NULL while going. */
char *serve_chunk(const serve_reply_meta *m, bool chat, bool first, const char *content, const char *reasoning,
                  struct cJSON *entries, const char *finish);
/* The usage chunk (stream_options.include_usage) and the usage object. */
char *serve_usage_chunk(const serve_reply_meta *m, bool chat, int32_t n_prompt, int32_t n_gen);
/* Non-streaming: the whole reply. entries taken over (NULL when none). */
char *serve_reply(const serve_reply_meta *m, bool chat, const char *content, const char *reasoning,
                  struct cJSON *entries, const char *finish, int32_t n_prompt, int32_t n_gen);
/* GET /v1/models, and GET /v1/models/{id}: the one model object */
/* (the list's model carries the slots: meta.slots_total, meta.slots_busy) */
char *serve_models_json(const char *model_id, long long created, const engine_model_info *info, int32_t slots_total,
                        int32_t slots_busy);
char *serve_model_json(const char *model_id, long long created, const engine_model_info *info);

/* ---- serve_bridge.c ----------------------------------------------------- */

typedef struct serve_bridge serve_bridge;
typedef struct serve_job serve_job;

typedef struct serve_done {
    enum engine_done_reason reason;
    int32_t n_prompt;   /* tokens of the prompt (the whole of it, cached or not) */
    int32_t n_cached;   /* ... of them the cache held (not evaluated) */
    int32_t n_gen;
    char rest[ENGINE_TEXT_MAX]; /* held-back reply bytes the end released */
    int32_t rest_len;
    char message[ENGINE_MSG_MAX]; /* the error, when the turn failed */
} serve_done;

/* Starts the bridge thread over a started engine whose model is loaded.
 * n_slots: requests the engine runs side by side (its n_parallel; 1: one at
 * a time). kv_path (NULL: none; only with one slot): after every request the
 * engine's memory goes there as a KV snapshot (memory/kv_snapshot.h; restored
 * at start by cmd_serve), so a restarted server answers a conversation it
 * held without evaluating it again. */
serve_bridge *serve_bridge_start(engine *e, const serve_vocab *v, int32_t max_queue, int32_t n_slots,
                                 const char *kv_path, char *err,
                                 size_t errlen);
/* Stops every job (their clients get what was made), the thread, the engine. */
void serve_bridge_stop(serve_bridge *b);
/* Frees it once no connection holds a job any more (after serve_http_stop). */
void serve_bridge_free(serve_bridge *b);
/* Queues a request (taken over, also on failure). NULL when the queue is
 * full (503). The job has two owners: the caller and the bridge. */
serve_job *serve_bridge_submit(serve_bridge *b, serve_request *req);
/* Requests waiting (not the running one). */
int32_t serve_bridge_waiting(serve_bridge *b);
/* Slots: how many (*total) and how many run a request now (*busy). */
void serve_bridge_slots(serve_bridge *b, int32_t *total, int32_t *busy);

const serve_request *serve_job_request(const serve_job *j);
/* Readable when the job has news (tokens, its start, its end). */
int serve_job_fd(const serve_job *j);
/* Takes the tokens that arrived since the last call (malloc'd array of n,
 * the caller frees it) and tells whether generation started and ended
 * (then *d is filled). Clears the fd. */
serve_token *serve_job_take(serve_job *j, size_t *n, bool *started, bool *done, serve_done *d);
/* Whether generation started and ended (then *d is filled), without taking
 * tokens. Clears the fd. */
void serve_job_peek(serve_job *j, bool *started, bool *done, serve_done *d);
/* The client is gone: a queued job is dropped, a running one stopped. */
void serve_job_cancel(serve_job *j);
void serve_job_release(serve_job *j);

/* ---- serve_http.c ------------------------------------------------------- */

typedef struct serve_http_params {
    const char *host;          /* numeric address to bind */
    uint16_t port;             /* 0: any free port */
    const char *api_key;       /* NULL: no key asked */
    const char *model_id;      /* what /v1/models names */
    engine_model_info info;
    serve_bridge *bridge;
    const serve_vocab *vocab;
} serve_http_params;

typedef struct serve_http serve_http;

serve_http *serve_http_start(const serve_http_params *p, char *err, size_t errlen);
uint16_t serve_http_port(const serve_http *h);
void serve_http_stop(serve_http *h);

#endif
