/* The HTTP side of tokscope serve, over libmicrohttpd (one thread per
 * connection: a connection may block while its job waits and runs). Routing,
 * methods, the API key, request bodies (bounded), then the reply: whole, or
 * streamed as server-sent events from a content-reader callback. A client
 * that closes its connection is seen while its job waits or streams (the
 * socket's hang-up), and its job is cancelled. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "serve.h"

struct serve_http {
    struct MHD_Daemon *d;
    serve_http_params p;
    char *model_id;
    char *api_key;
    long long created;
    uint16_t port;
};

enum route { R_NONE, R_HEALTH, R_MODELS, R_MODEL, R_CHAT, R_COMPLETIONS };

typedef struct conn_req {
    enum route route;
    bool head_seen;  /* the handler's first call is over */
    size_t uri_len;  /* the request target as sent (path and query) */
    char *body;
    size_t len, cap;
    bool too_big;
} conn_req;

static atomic_uint_fast64_t req_counter;

/* ---- small replies ---------------------------------------------------------- */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *body, const char *ctype)
{
    if (!body)
        body = strdup("{}");
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, char *body)
{
    return send_text(c, status, body, "application/json");
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg, const char *type,
                                  const char *param, const char *code)
{
    return send_json(c, status, serve_error_json(msg, type, param, code));
}

static enum MHD_Result send_error_hdr(struct MHD_Connection *c, unsigned status, const char *msg, const char *type,
                                      const char *code, const char *hname, const char *hval)
{
    char *body = serve_error_json(msg, type, NULL, code);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(r, hname, hval);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- the peer ------------------------------------------------------------- */

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* Waits for news of the job (or timeout_ms); false when the client is gone.
 * Gone is a reset or a connection shut both ways, not the end of what the
 * client sends: a client may send its request, shut its side (SHUT_WR) and
 * wait for the answer (issue 35 #15). A stream's chunks show soon enough
 * whether anyone reads them (a closed socket answers them with a reset).
 * Before the reply starts, *probe (HTTP/1.1 only) lets the first sight of
 * the client's end send it an interim "100 Continue", which every HTTP/1.1
 * client skips (RFC 9110 15.2) and a closed socket answers with a reset, so
 * a client that went away still stops its job at once. */
static bool wait_job(serve_job *j, int sock, int timeout_ms, bool *probe)
{
    const bool watch_end = probe && *probe;
    struct pollfd pf[2] = {{.fd = serve_job_fd(j), .events = POLLIN},
                           {.fd = sock, .events = watch_end ? POLLRDHUP : 0}};
    int n = poll(pf, sock >= 0 ? 2 : 1, timeout_ms);
    if (n < 0 && errno != EINTR)
        return false;
    if (sock < 0)
        return true;
    if (pf[1].revents & (POLLHUP | POLLERR | POLLNVAL))
        return false;
    if (watch_end && (pf[1].revents & POLLRDHUP)) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        *probe = false; /* once: the end stays readable */
        if (send(sock, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(sizeof cont - 1))
            return false;
    }
    return true;
}

/* ---- a completion ---------------------------------------------------------- */

typedef struct stream {
    serve_http *h;
    serve_job *job;
    int sock;
    serve_out out;
    char id[48];
    bool chat, first, finished, include_usage;
    char *buf; /* SSE bytes not sent yet */
    size_t len, off;
    int32_t n_prompt;
    long long created; /* the request's time */
    size_t text_offset; /* completions' logprobs: the reply's bytes the chunks have carried */
} stream;

static void st_append(stream *s, char *chunk)
{
    if (!chunk)
        return;
    size_t n = strlen(chunk);
    if (s->off == s->len)
        s->off = s->len = 0;
    char *b = realloc(s->buf, s->len + n + 1);
    if (!b) {
        free(chunk);
        return;
    }
    s->buf = b;
    memcpy(s->buf + s->len, chunk, n + 1);
    s->len += n;
    free(chunk);
}

static serve_reply_meta meta_of(const stream *s)
{
    const serve_request *r = serve_job_request(s->job);
    return (serve_reply_meta){s->id, s->created, r->model ? r->model : s->h->model_id, 0, NULL};
}

/* Formats what arrived: one chunk per token (its text and logprobs entry),
 * and the end. */
static void st_pump(stream *s)
{
    size_t n = 0;
    bool started, done;
    serve_done d;
    serve_token *t = serve_job_take(s->job, &n, &started, &done, &d);
    serve_reply_meta m = meta_of(s);
    m.text_offset = &s->text_offset;
    if (s->first && s->chat) {
        /* the role in a chunk of its own, as OpenAI sends it: a client that
         * merges chunks (the SDK's stream()) would count a first token's
         * logprobs twice if they came with the role */
        st_append(s, serve_chunk(&m, true, true, "", "", NULL, NULL));
        s->first = false;
    }
    for (size_t i = 0; i < n; i++) {
        char *content, *reasoning;
        cJSON *entry;
        serve_out_feed(&s->out, &t[i], NULL, 0, &content, &reasoning, &entry);
        if (*content || *reasoning || entry || s->first) {
            cJSON *entries = entry ? cJSON_CreateArray() : NULL;
            if (entries)
                cJSON_AddItemToArray(entries, entry);
            st_append(s, serve_chunk(&m, s->chat, s->first, content, reasoning, entries, NULL));
            s->first = false;
        }
        free(content);
        free(reasoning);
    }
    free(t);
    if (!done)
        return;
    char *content, *reasoning;
    cJSON *entry;
    serve_out_feed(&s->out, NULL, d.rest, (size_t)d.rest_len, &content, &reasoning, &entry);
    if (d.reason == ENGINE_DONE_ERROR) {
        if (*content || *reasoning)
            st_append(s, serve_chunk(&m, s->chat, s->first, content, reasoning, NULL, NULL));
        char *e = serve_error_json(d.message[0] ? d.message : "generation failed", "server_error", NULL, NULL);
        size_t el = e ? strlen(e) : 0;
        char *ev = e ? malloc(el + 9) : NULL;
        if (ev)
            snprintf(ev, el + 9, "data: %s\n\n", e);
        free(e);
        st_append(s, ev);
    } else {
        st_append(s, serve_chunk(&m, s->chat, s->first, content, reasoning, NULL, serve_finish_reason(d.reason)));
        m.n_cached = d.n_cached;
        if (s->include_usage)
            st_append(s, serve_usage_chunk(&m, s->chat, d.n_prompt, s->out.n_tokens));
    }
    free(content);
    free(reasoning);
    st_append(s, strdup("data: [DONE]\n\n"));
    s->finished = true;
}

static ssize_t st_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *s = cls;
    for (;;) {
        if (s->off < s->len) {
            size_t n = s->len - s->off < max ? s->len - s->off : max;
            memcpy(buf, s->buf + s->off, n);
            s->off += n;
            return (ssize_t)n;
        }
        if (s->finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        st_pump(s);
        if (s->off < s->len || s->finished)
            continue;
        if (!wait_job(s->job, s->sock, 1000, NULL)) {
            serve_job_cancel(s->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
}

static void st_free(void *cls)
{
    stream *s = cls;
    serve_job_cancel(s->job); /* a no-op when it ended; stops it when the client went away */
    serve_job_release(s->job);
    serve_out_free(&s->out);
    free(s->buf);
    free(s);
}

static void new_id(char *id, size_t cap, bool chat)
{
    unsigned long long k = atomic_fetch_add(&req_counter, 1) + 1;
    snprintf(id, cap, "%s-%llx%06llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)time(NULL), k);
}

/* The reply of a finished, non-streamed job. */
static enum MHD_Result reply_whole(struct MHD_Connection *c, stream *s)
{
    size_t n = 0;
    bool started, done;
    serve_done d;
    serve_token *t = serve_job_take(s->job, &n, &started, &done, &d);
    cJSON *entries = s->out.logprobs ? cJSON_CreateArray() : NULL;
    char *content, *reasoning;
    cJSON *entry;
    for (size_t i = 0; i < n; i++) {
        serve_out_feed(&s->out, &t[i], NULL, 0, &content, &reasoning, &entry);
        if (entry)
            cJSON_AddItemToArray(entries, entry);
        free(content);
        free(reasoning);
    }
    free(t);
    serve_out_feed(&s->out, NULL, d.rest, (size_t)d.rest_len, &content, &reasoning, &entry);
    free(content);
    free(reasoning);
    if (d.reason == ENGINE_DONE_ERROR) {
        cJSON_Delete(entries);
        return send_error(c, 500, d.message[0] ? d.message : "generation failed", "server_error", NULL, NULL);
    }
    /* the whole reply split at once (a continued message's text first) */
    char *ans = NULL, *rsn = NULL;
    serve_out_whole(&s->out, &ans, &rsn);
    serve_reply_meta m = meta_of(s);
    m.n_cached = d.n_cached;
    char *body = serve_reply(&m, s->chat, ans, rsn, entries, serve_finish_reason(d.reason), d.n_prompt,
                             s->out.n_tokens);
    free(ans);
    free(rsn);
    return send_json(c, 200, body);
}

static enum MHD_Result completion(serve_http *h, struct MHD_Connection *c, conn_req *cr, const char *version)
{
    const bool chat = cr->route == R_CHAT;
    serve_request req;
    char err[512], param[64];
    int rc = serve_request_parse(&req, chat, cr->body ? cr->body : "", cr->len, NULL, err, sizeof err, param,
                                 sizeof param);
    if (!rc && (rc = serve_vocab_bias(h->p.vocab, &req, err, sizeof err)))
        snprintf(param, sizeof param, "logit_bias");
    if (!rc && (rc = serve_vocab_prompt(h->p.vocab, &req, err, sizeof err)))
        snprintf(param, sizeof param, "prompt");
    if (!rc)
        serve_vocab_roles(h->p.vocab, &req);
    /* the request holds what it needs: the body (up to SERVE_MAX_BODY) goes
     * before the prompt is rendered and counted */
    free(cr->body);
    cr->body = NULL;
    cr->len = cr->cap = 0;
    if (rc) {
        serve_request_free(&req);
        return send_error(c, (unsigned)rc, err, "invalid_request_error", param, NULL);
    }
    /* a prompt sure to overflow the context is refused here, not tokenized by the engine */
    const int64_t floor_tokens = serve_vocab_min_tokens(h->p.vocab, &req);
    if (floor_tokens >= (int64_t)h->p.info.n_ctx) {
        serve_request_free(&req);
        snprintf(err, sizeof err,
                 "the %s holds at least %lld tokens, more than the context (%u tokens) holds with room for a reply",
                 chat ? "conversation" : "prompt", (long long)floor_tokens, (unsigned)h->p.info.n_ctx);
        return send_error(c, 400, err, "invalid_request_error", chat ? "messages" : "prompt",
                          "context_length_exceeded");
    }
    /* then the exact count, here on the connection's thread, stopped as soon
     * as it passes the context: the engine tokenizes only prompts that fit
     * (it refuses from n_ctx tokens on: serve runs without context shift) */
    char cerr[512] = "";
    const int32_t n_tokens = serve_vocab_count(h->p.vocab, &req, (int32_t)h->p.info.n_ctx - 1, cerr, sizeof cerr);
    if (n_tokens >= (int32_t)h->p.info.n_ctx) {
        serve_request_free(&req);
        snprintf(err, sizeof err,
                 "the %s takes more than %u tokens: more than the context (%u tokens) holds with room for a reply",
                 chat ? "conversation" : "prompt", (unsigned)h->p.info.n_ctx - 1, (unsigned)h->p.info.n_ctx);
        return send_error(c, 400, err, "invalid_request_error", chat ? "messages" : "prompt",
                          "context_length_exceeded");
    }
    /* n_tokens < 0 (the template failed): the engine says why, as before.
     * A reply gets at most n_ctx - n_tokens tokens, llama-server's stop
     * (`prompt.n_tokens() + 1 >= n_ctx` as each drawn token is counted, the
     * token itself not yet in the cache): the engine alone would draw one
     * more, from the last position's logits, as the TUI and generate do */
    if (n_tokens >= 0) {
        const int32_t room = (int32_t)h->p.info.n_ctx - n_tokens;
        if (req.sp.n_predict < 0 || req.sp.n_predict > room)
            req.sp.n_predict = room;
    }
    const bool streamed = req.stream;
    char *prompt = NULL;
    size_t cont_at = (size_t)-1;
    enum chat_reasoning_style style = chat ? serve_vocab_reasoning_style(h->p.vocab) : CHAT_REASONING_NONE;
    bool continued = false; /* a last assistant message: its text starts a whole reply */
    for (size_t i = req.n_msgs; chat && i > 0; i--)
        if (strcmp(req.msgs[i - 1].role, CHAT_ROLE_VARS) != 0 &&
            strcmp(req.msgs[i - 1].role, CHAT_ROLE_REASONING) != 0) {
            continued = !strcmp(req.msgs[i - 1].role, "assistant");
            break;
        }
    if (style != CHAT_REASONING_NONE || continued) /* where the reply starts; a continued message's text */
        prompt = serve_vocab_render(h->p.vocab, req.msgs, req.n_msgs, &cont_at);
    stream *s = calloc(1, sizeof *s);
    if (!s) {
        free(prompt);
        serve_request_free(&req);
        return send_error(c, 500, "out of memory", "server_error", NULL, NULL);
    }
    serve_out_init(&s->out, &req, style, prompt, cont_at);
    free(prompt);
    s->h = h;
    s->chat = chat;
    s->first = true;
    s->include_usage = req.include_usage;
    s->sock = conn_fd(c);
    s->created = (long long)time(NULL);
    new_id(s->id, sizeof s->id, chat);
    s->job = serve_bridge_submit(h->p.bridge, &req);
    if (!s->job) {
        serve_out_free(&s->out);
        free(s);
        return send_error_hdr(c, 503, "the server is busy: too many requests are waiting; retry later",
                              "server_error", "queue_full", MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    /* wait for the prompt to be in (streams) or the end (whole replies);
     * a client that hangs up meanwhile cancels its job */
    bool started = false, done = false;
    bool probe = !strcmp(version, MHD_HTTP_VERSION_1_1);
    serve_done d;
    for (;;) {
        serve_job_peek(s->job, &started, &done, &d);
        if (done || (started && streamed))
            break;
        if (!wait_job(s->job, s->sock, 1000, &probe)) {
            serve_job_cancel(s->job);
            serve_job_release(s->job);
            serve_out_free(&s->out);
            free(s);
            return MHD_NO;
        }
    }
    if (done && !started) { /* refused before the prompt was in: a proper status */
        const bool ctx = d.reason == ENGINE_DONE_CTX_FULL;
        enum MHD_Result r = send_error(
            c, ctx ? 400 : d.reason == ENGINE_DONE_ERROR ? 500 : 503, d.message[0] ? d.message : "the request was not run",
            ctx ? "invalid_request_error" : "server_error", ctx ? (chat ? "messages" : "prompt") : NULL,
            ctx ? "context_length_exceeded" : NULL);
        serve_job_release(s->job);
        serve_out_free(&s->out);
        free(s);
        return r;
    }
    if (!streamed) {
        enum MHD_Result r = reply_whole(c, s);
        serve_job_release(s->job);
        serve_out_free(&s->out);
        free(s);
        return r;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, st_read, s, st_free);
    if (!resp) {
        st_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result r = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return r;
}

/* ---- routing -------------------------------------------------------------- */

static enum route route_of(const char *url)
{
    if (!strcmp(url, "/health"))
        return R_HEALTH;
    if (!strcmp(url, "/v1/models"))
        return R_MODELS;
    if (!strncmp(url, "/v1/models/", 11) && url[11])
        return R_MODEL;
    if (!strcmp(url, "/v1/chat/completions"))
        return R_CHAT;
    if (!strcmp(url, "/v1/completions"))
        return R_COMPLETIONS;
    return R_NONE;
}

/* Constant time: the key's bytes do not decide how long a refusal takes. */
static bool key_ok(const serve_http *h, struct MHD_Connection *c)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncasecmp(a, "Bearer ", 7) != 0)
        return false;
    a += 7;
    while (*a == ' ')
        a++;
    const size_t la = strlen(a), lk = strlen(h->api_key);
    unsigned diff = la != lk;
    for (size_t i = 0; i < lk; i++)
        diff |= (unsigned char)h->api_key[i] ^ (unsigned char)(i < la ? a[i] : 0);
    return diff == 0;
}

/* A 400 that also ends the connection: after a malformed head the rest of
 * the bytes cannot be trusted to start a request. */
static enum MHD_Result send_bad_head(struct MHD_Connection *c, const char *msg)
{
    return send_error_hdr(c, 400, msg, "invalid_request_error", "bad_request", MHD_HTTP_HEADER_CONNECTION, "close");
}

typedef struct lengths {
    int n;
    bool differ;
    const char *first;
} lengths;

static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    lengths *l = cls;
    if (key && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (l->n++ == 0)
            l->first = value;
        else if (strcmp(value ? value : "", l->first ? l->first : "") != 0)
            l->differ = true;
    }
    return MHD_YES;
}

/* Bytes of the header lines as sent: "Name: value\r\n". */
static enum MHD_Result head_bytes(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    *(size_t *)cls += (key ? strlen(key) : 0) + (value ? strlen(value) : 0) + 4;
    return MHD_YES;
}

/* Called with the request target before the library parses it (and before
 * the headers): the request's state starts here, with the target's length
 * as sent (the handler's url has lost the query). The library then calls
 * completed() for it, whatever becomes of the request. */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)c;
    conn_req *cr = calloc(1, sizeof *cr);
    if (cr)
        cr->uri_len = uri ? strlen(uri) : 0;
    return cr;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    serve_http *h = cls;
    conn_req *cr = *con_cls;
    if (!cr || !cr->head_seen) { /* the headers: everything that needs no body is decided now */
        if (!cr && !(cr = calloc(1, sizeof *cr)))
            return MHD_NO;
        *con_cls = cr;
        cr->head_seen = true;
        cr->route = route_of(url);
        /* serve's own limits on the head, far below the library's (its
         * connection pool, SERVE_POOL), so that they get JSON, not its HTML */
        if (cr->uri_len > SERVE_MAX_URL) {
            char msg[96];
            snprintf(msg, sizeof msg, "the request's URL is longer than %u bytes", SERVE_MAX_URL);
            return send_error_hdr(c, 414, msg, "invalid_request_error", "uri_too_long", MHD_HTTP_HEADER_CONNECTION,
                                  "close");
        }
        size_t head = 0;
        MHD_get_connection_values(c, MHD_HEADER_KIND, head_bytes, &head);
        if (head > SERVE_MAX_HEADERS) {
            char msg[96];
            snprintf(msg, sizeof msg, "the request's headers take more than %u bytes", SERVE_MAX_HEADERS);
            return send_error_hdr(c, 431, msg, "invalid_request_error", "headers_too_large",
                                  MHD_HTTP_HEADER_CONNECTION, "close");
        }
        /* what the library lets through but HTTP/1.1 forbids (RFC 9112 6.3, 3.2):
         * a body length said two ways would leave the rest to be read as
         * another request (request smuggling) */
        lengths l = {0};
        MHD_get_connection_values(c, MHD_HEADER_KIND, count_length, &l);
        if (l.differ)
            return send_bad_head(c, "the request has two different Content-Length headers");
        if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
            !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
            return send_bad_head(c, "an HTTP/1.1 request needs a Host header");
        const bool post = cr->route == R_CHAT || cr->route == R_COMPLETIONS;
        if (cr->route == R_NONE)
            return send_error(c, 404, "unknown path (try /v1/chat/completions, /v1/completions, /v1/models, /health)",
                              "invalid_request_error", NULL, "not_found");
        if (strcmp(method, post ? "POST" : "GET") != 0)
            return send_error_hdr(c, 405, post ? "this path takes POST" : "this path takes GET",
                                  "invalid_request_error", "method_not_allowed", MHD_HTTP_HEADER_ALLOW,
                                  post ? "POST" : "GET");
        if (h->api_key && cr->route != R_HEALTH && !key_ok(h, c))
            return send_error(c, 401, "a valid API key is required (Authorization: Bearer KEY)",
                              "invalid_request_error", NULL, "invalid_api_key");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > SERVE_MAX_BODY)
            cr->too_big = true;
        /* a completion past the key: its body may come slowly, its reply
         * take long; only heads and idle connections get the short timeout */
        if (post)
            MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)SERVE_REQUEST_S);
        return MHD_YES;
    }
    if (*upload_size) { /* the body, bounded */
        if (!cr->too_big && cr->len + *upload_size > SERVE_MAX_BODY)
            cr->too_big = true;
        if (!cr->too_big) {
            if (cr->len + *upload_size + 1 > cr->cap) {
                size_t cap = cr->cap ? cr->cap : 4096;
                while (cap < cr->len + *upload_size + 1)
                    cap *= 2;
                char *b = realloc(cr->body, cap);
                if (!b)
                    return MHD_NO;
                cr->body = b;
                cr->cap = cap;
            }
            memcpy(cr->body + cr->len, upload_data, *upload_size);
            cr->len += *upload_size;
            cr->body[cr->len] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    switch (cr->route) {
    case R_HEALTH: { /* llama-server's slots_idle / slots_processing, and the total */
        int32_t total = 0, busy = 0;
        serve_bridge_slots(h->p.bridge, &total, &busy);
        char body[128];
        snprintf(body, sizeof body, "{\"status\":\"ok\",\"slots_total\":%d,\"slots_idle\":%d,\"slots_processing\":%d}",
                 (int)total, (int)(total - busy), (int)busy);
        return send_json(c, 200, strdup(body));
    }
    case R_MODELS: {
        int32_t total = 0, busy = 0;
        serve_bridge_slots(h->p.bridge, &total, &busy);
        return send_json(c, 200, serve_models_json(h->model_id, h->created, &h->p.info, total, busy));
    }
    case R_MODEL:
        if (strcmp(url + 11, h->model_id) != 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "the model '%.80s' does not exist (this server has '%.60s')", url + 11,
                     h->model_id);
            return send_error(c, 404, msg, "invalid_request_error", "model", "model_not_found");
        }
        return send_json(c, 200, serve_model_json(h->model_id, h->created, &h->p.info));
    case R_CHAT:
    case R_COMPLETIONS:
        if (cr->too_big) {
            char msg[96];
            snprintf(msg, sizeof msg, "the request body is larger than %u bytes", SERVE_MAX_BODY);
            return send_error(c, 413, msg, "invalid_request_error", NULL, "request_too_large");
        }
        return completion(h, c, cr, version);
    case R_NONE:
        break;
    }
    return MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    conn_req *cr = *con_cls;
    if (cr) {
        free(cr->body);
        free(cr);
        *con_cls = NULL;
    }
}

serve_http *serve_http_start(const serve_http_params *p, char *err, size_t errlen)
{
    serve_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->p = *p;
    h->model_id = strdup(p->model_id);
    h->api_key = p->api_key ? strdup(p->api_key) : NULL;
    h->created = (long long)time(NULL);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, p->host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(p->port);
    } else if (inet_pton(AF_INET6, p->host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(p->port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "'%s' is not a numeric IPv4 or IPv6 address", p->host);
        free(h->model_id);
        free(h->api_key);
        free(h);
        return NULL;
    }
    /* A flood of idle connections must not lock everyone out (issue 35 #12):
     * as many connections as descriptors allow (a thread each, idle in
     * poll), one address never more than three quarters of them, and a
     * connection that sends nothing for SERVE_IDLE_S seconds (a head never
     * finished, a keep-alive left open) is closed; a completion whose head
     * passed the key check gets SERVE_REQUEST_S (handler). */
    struct rlimit rl;
    rlim_t fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
    unsigned limit = fds > 4096 + 64 ? 4096u : fds > 128 + 64 ? (unsigned)(fds - 64) : 128u;
    h->d = MHD_start_daemon(flags, p->port, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_URI_LOG_CALLBACK, uri_seen, h,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_POOL, MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, limit / 4 * 3, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)SERVE_IDLE_S, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen on %s port %u: %s", p->host, (unsigned)p->port,
                 errno ? strerror(errno) : "libmicrohttpd refused");
        free(h->model_id);
        free(h->api_key);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : p->port;
    return h;
}

uint16_t serve_http_port(const serve_http *h) { return h->port; }

void serve_http_stop(serve_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h->model_id);
    free(h->api_key);
    free(h);
}
