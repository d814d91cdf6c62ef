/* The engine bridge: connections queue jobs here, one thread feeds them to
 * the engine in arrival order, one SUBMIT at a time (a SUBMIT sent while
 * another runs would end that one: engine.h) or, with n_slots > 1 (the
 * engine's n_parallel), up to n_slots at once, and routes the engine's
 * events to the job that asked (by req_id), as serve_token records. A job whose client went
 * away is dropped from the queue, or stopped when it runs. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "serve.h"

struct serve_job {
    serve_request req;
    int refs;             /* the connection and the bridge */
    int fd;               /* eventfd: news for the connection */
    int32_t req_id;
    serve_job *next;      /* in the bridge's queue */
    bool queued, running, stop_sent;
    /* under the bridge's lock */
    bool cancelled;
    bool started, done, seen_token;
    serve_done d;
    serve_token *toks;
    size_t n_toks, cap_toks;
};

struct serve_bridge {
    engine *e;
    const serve_vocab *v;
    int32_t max_queue;
    pthread_mutex_t mu;
    pthread_t th;
    int wake;             /* eventfd: a job queued or cancelled, or stop */
    bool quit;
    serve_job *head, *tail; /* waiting, FIFO */
    int32_t n_waiting;
    serve_job **run;      /* the ones the engine runs: n_run of n_slots */
    int32_t n_slots, n_run;
    int32_t next_id;
    char *kv_path;        /* the KV snapshot written after every request (NULL: none) */
};

static void kick(int fd)
{
    if (fd < 0)
        return;
    uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof one);
    (void)w;
}

static void job_unref(serve_bridge *b, serve_job *j)
{
    (void)b;
    if (--j->refs > 0)
        return;
    serve_request_free(&j->req);
    free(j->toks);
    close(j->fd);
    free(j);
}

/* ---- the connection's side ---------------------------------------------- */

serve_job *serve_bridge_submit(serve_bridge *b, serve_request *req)
{
    serve_job *j = calloc(1, sizeof *j);
    if (j)
        j->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!j || j->fd < 0) {
        free(j);
        serve_request_free(req);
        return NULL;
    }
    j->req = *req;
    memset(req, 0, sizeof *req);
    j->refs = 2;
    pthread_mutex_lock(&b->mu);
    /* max_queue counts those that wait besides the ones running */
    if (b->quit || b->n_waiting + b->n_run > b->max_queue + b->n_slots - 1) {
        pthread_mutex_unlock(&b->mu);
        serve_request_free(&j->req);
        close(j->fd);
        free(j);
        return NULL;
    }
    j->req_id = ++b->next_id;
    j->queued = true;
    if (b->tail)
        b->tail->next = j;
    else
        b->head = j;
    b->tail = j;
    b->n_waiting++;
    pthread_mutex_unlock(&b->mu);
    kick(b->wake);
    return j;
}

int32_t serve_bridge_waiting(serve_bridge *b)
{
    pthread_mutex_lock(&b->mu);
    int32_t n = b->n_waiting;
    pthread_mutex_unlock(&b->mu);
    return n;
}

void serve_bridge_slots(serve_bridge *b, int32_t *total, int32_t *busy)
{
    pthread_mutex_lock(&b->mu);
    *total = b->n_slots;
    *busy = b->n_run;
    pthread_mutex_unlock(&b->mu);
}

/* The bridge of a job: jobs do not point back; one bridge per process. */
static serve_bridge *the_bridge;

const serve_request *serve_job_request(const serve_job *j) { return &j->req; }

int serve_job_fd(const serve_job *j) { return j->fd; }

serve_token *serve_job_take(serve_job *j, size_t *n, bool *started, bool *done, serve_done *d)
{
    serve_bridge *b = the_bridge;
    uint64_t x;
    ssize_t r = read(j->fd, &x, sizeof x); /* cleared before looking: news after this kicks again */
    (void)r;
    pthread_mutex_lock(&b->mu);
    serve_token *t = j->toks;
    *n = j->n_toks;
    j->toks = NULL;
    j->n_toks = j->cap_toks = 0;
    *started = j->started;
    *done = j->done;
    if (j->done && d)
        *d = j->d;
    pthread_mutex_unlock(&b->mu);
    return t;
}

void serve_job_peek(serve_job *j, bool *started, bool *done, serve_done *d)
{
    serve_bridge *b = the_bridge;
    uint64_t x;
    ssize_t r = read(j->fd, &x, sizeof x);
    (void)r;
    pthread_mutex_lock(&b->mu);
    *started = j->started;
    *done = j->done;
    if (j->done && d)
        *d = j->d;
    pthread_mutex_unlock(&b->mu);
}

void serve_job_cancel(serve_job *j)
{
    serve_bridge *b = the_bridge;
    pthread_mutex_lock(&b->mu);
    j->cancelled = true;
    pthread_mutex_unlock(&b->mu);
    kick(b->wake);
}

void serve_job_release(serve_job *j)
{
    serve_bridge *b = the_bridge;
    pthread_mutex_lock(&b->mu);
    job_unref(b, j);
    pthread_mutex_unlock(&b->mu);
}

/* ---- the bridge thread ---------------------------------------------------- */

/* Ends a job that never ran or whose engine turn is over (under the lock). */
static void job_finish(serve_bridge *b, serve_job *j, enum engine_done_reason reason, const char *msg)
{
    if (!j->done) {
        j->done = true;
        j->d.reason = reason;
        if (msg)
            snprintf(j->d.message, sizeof j->d.message, "%s", msg);
    }
    kick(j->fd);
    job_unref(b, j);
}

/* Under the lock: drops cancelled jobs from the queue. */
static void drop_cancelled(serve_bridge *b)
{
    serve_job **pp = &b->head, *prev = NULL;
    while (*pp) {
        serve_job *j = *pp;
        if (j->cancelled) {
            *pp = j->next;
            if (b->tail == j)
                b->tail = prev;
            b->n_waiting--;
            j->queued = false;
            fprintf(stderr, "tokscope serve: #%d dropped from the queue (client gone)\n", (int)j->req_id);
            job_finish(b, j, ENGINE_DONE_STOPPED, NULL);
            continue;
        }
        prev = j;
        pp = &j->next;
    }
}

/* Under the lock: the next job goes to the engine. */
static void start_next(serve_bridge *b)
{
    serve_job *j = b->head;
    if (!j || b->n_run >= b->n_slots)
        return;
    b->head = j->next;
    if (!b->head)
        b->tail = NULL;
    b->n_waiting--;
    j->queued = false;
    j->running = true;
    b->run[b->n_run++] = j;
    const serve_request *r = &j->req;
    /* completions take the prompt as it is: the raw format (or its token
     * ids), no template; chat requests the model's template (serve_vocab_format) */
    chat_message one = {"user", r->prompt, r->prompt_len};
    const char *fmt = serve_vocab_format(b->v, r);
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT,
                    .name = fmt ? strdup(fmt) : NULL,
                    .messages = r->chat ? r->msgs : &one,
                    .n_messages = r->chat ? r->n_msgs : 1,
                    .req_id = j->req_id,
                    .sampling = r->sp,
                    .own_sampling = true,
                    .no_reuse = r->no_reuse};
    engine_send(b->e, &c);
}

static void push_token(serve_bridge *b, serve_job *j, const engine_event *ev)
{
    if (j->n_toks == j->cap_toks) {
        size_t cap = j->cap_toks ? 2 * j->cap_toks : 8;
        serve_token *t = realloc(j->toks, cap * sizeof *t);
        if (!t)
            return;
        j->toks = t;
        j->cap_toks = cap;
    }
    serve_token *t = &j->toks[j->n_toks++];
    memset(t, 0, offsetof(serve_token, top));
    t->id = ev->token;
    t->eog = false; /* set from the engine's DONE: the end-of-generation token is the turn's last */
    t->control = serve_vocab_control_text(b->v, ev->token);
    t->piece_len = serve_vocab_piece(b->v, ev->token, t->piece, (int32_t)sizeof t->piece);
    memcpy(t->text, ev->text, (size_t)ev->text_len);
    t->text_len = ev->text_len;
    t->logit = ev->logit;
    t->p_raw = ev->p_raw;
    t->p_post = ev->p_post;
    t->entropy_raw = ev->entropy_raw;
    t->entropy_post = ev->entropy_post;
    const int32_t want = j->req.top_logprobs;
    t->n_top = ev->n_top < want ? ev->n_top : want;
    for (int32_t i = 0; i < t->n_top; i++) {
        serve_cand *c = &t->top[i];
        c->id = ev->top[i].id;
        c->logit = ev->top[i].logit;
        c->p_raw = ev->top[i].p_raw;
        c->p_post = ev->top[i].p_post;
        c->piece_len = (int32_t)strnlen(ev->top[i].text, ENGINE_TEXT_MAX - 1);
        memcpy(c->piece, ev->top[i].text, (size_t)c->piece_len);
    }
}

static const char *reason_name(enum engine_done_reason r)
{
    static const char *const names[] = {"end of turn", "length", "stopped", "stop string", "context full", "error"};
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

/* One line per request on stderr: what ran, how it ended. */
static void log_done(const serve_job *j, const engine_event *ev)
{
    fprintf(stderr, "tokscope serve: #%d %s: prompt %d tokens (%d evaluated), %d generated, %.1f tok/s; %s%s%s%s\n",
            (int)j->req_id, j->req.chat ? "chat" : "completion", (int)j->d.n_prompt, (int)ev->n_prompt,
            (int)ev->n_gen, ev->gen_tps, reason_name(ev->reason), j->cancelled ? " (client gone)" : "",
            j->d.message[0] ? ": " : "", j->d.message);
}

/* The KV snapshot's news: restores, and what went wrong (a save that
 * worked is not worth a line per request). */
static void log_kv(const engine_event *ev)
{
    if (ev->kv == ENGINE_KV_SAVED || ev->kv == ENGINE_KV_SAVE_SKIPPED)
        return;
    fprintf(stderr, "tokscope serve: %s\n", ev->message);
}

static void on_event(serve_bridge *b, const engine_event *ev)
{
    if (ev->type == ENGINE_EV_KV) {
        log_kv(ev);
        return;
    }
    int32_t k = 0;
    while (k < b->n_run && b->run[k]->req_id != ev->req_id)
        k++;
    if (k == b->n_run)
        return; /* LOAD, QUIT, or a turn already given up */
    serve_job *j = b->run[k];
    switch (ev->type) {
    case ENGINE_EV_PREFILL:
        if (ev->done == ev->total) /* the prompt is in (the first PREFILL has done 0, total >= 1) */
            j->started = true;
        break;
    case ENGINE_EV_TOKEN:
        if (!j->seen_token) { /* the reply's first token sits right after the whole prompt */
            j->seen_token = true;
            j->d.n_prompt = ev->pos;
        }
        j->started = true;
        push_token(b, j, ev);
        break;
    case ENGINE_EV_ERROR:
        snprintf(j->d.message, sizeof j->d.message, "%s", ev->message);
        break;
    case ENGINE_EV_DONE: {
        j->d.reason = ev->reason;
        if (!j->seen_token) /* no reply token: the position counter is the prompt's end, if it got in */
            j->d.n_prompt = j->started ? ev->n_past : 0;
        j->d.n_cached = j->d.n_prompt > ev->n_prompt ? j->d.n_prompt - ev->n_prompt : 0;
        j->d.n_gen = ev->n_gen;
        memcpy(j->d.rest, ev->text, (size_t)ev->text_len);
        j->d.rest_len = ev->text_len;
        if (ev->message[0])
            snprintf(j->d.message, sizeof j->d.message, "%s", ev->message);
        /* the end-of-generation token closes the turn: it has no text and
         * no place in the reply's logprobs */
        if (ev->reason == ENGINE_DONE_EOG && j->n_toks > 0)
            j->toks[j->n_toks - 1].eog = true;
        b->run[k] = b->run[--b->n_run];
        j->running = false; /* started stays false when the prompt never got in (too long, an error) */
        log_done(j, ev);
        job_finish(b, j, ev->reason, NULL);
        if (b->kv_path) /* queued before the next SUBMIT: written between the two turns */
            engine_save_kv(b->e, b->kv_path);
        return;
    }
    default:
        return;
    }
    kick(j->fd);
}

static void *bridge_main(void *arg)
{
    serve_bridge *b = arg;
    struct pollfd pf[2] = {{.fd = b->wake, .events = POLLIN}, {.fd = engine_event_fd(b->e), .events = POLLIN}};
    engine_event *ev = malloc(sizeof *ev);
    for (;;) {
        int pr = poll(pf, 2, -1);
        if (pr < 0 && errno != EINTR)
            break;
        if (pf[0].revents & POLLIN) {
            uint64_t x;
            ssize_t r = read(b->wake, &x, sizeof x);
            (void)r;
        }
        pthread_mutex_lock(&b->mu);
        while (ev && engine_poll(b->e, ev))
            on_event(b, ev);
        if (b->quit) {
            pthread_mutex_unlock(&b->mu);
            break;
        }
        drop_cancelled(b);
        for (int32_t k = 0; k < b->n_run; k++) {
            serve_job *j = b->run[k];
            if (!j->cancelled || j->stop_sent)
                continue;
            if (b->n_slots == 1) {
                engine_stop(b->e);
            } else { /* the engine runs several: stop this one */
                engine_cmd c = {.type = ENGINE_CMD_STOP, .req_id = j->req_id};
                engine_send(b->e, &c);
            }
            j->stop_sent = true;
        }
        while (b->head && b->n_run < b->n_slots)
            start_next(b);
        pthread_mutex_unlock(&b->mu);
    }
    free(ev);
    return NULL;
}

serve_bridge *serve_bridge_start(engine *e, const serve_vocab *v, int32_t max_queue, int32_t n_slots,
                                 const char *kv_path, char *err, size_t errlen)
{
    serve_bridge *b = calloc(1, sizeof *b);
    if (b && (!(b->run = calloc((size_t)(n_slots > 1 ? n_slots : 1), sizeof(serve_job *))) ||
              (kv_path && !(b->kv_path = strdup(kv_path))))) {
        free(b->run);
        free(b);
        b = NULL;
    }
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->n_slots = n_slots > 1 ? n_slots : 1;
    b->e = e;
    b->v = v;
    b->max_queue = max_queue;
    b->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&b->mu, NULL);
    if (b->wake < 0 || pthread_create(&b->th, NULL, bridge_main, b) != 0) {
        snprintf(err, errlen, "cannot start the engine bridge: %s", strerror(errno));
        if (b->wake >= 0)
            close(b->wake);
        pthread_mutex_destroy(&b->mu);
        free(b->run);
        free(b->kv_path);
        free(b);
        return NULL;
    }
    the_bridge = b;
    return b;
}

void serve_bridge_stop(serve_bridge *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->quit = true;
    pthread_mutex_unlock(&b->mu);
    kick(b->wake);
    pthread_join(b->th, NULL);
    /* the engine stops within a token; jobs left get their end */
    pthread_mutex_lock(&b->mu);
    while (b->head) {
        serve_job *j = b->head;
        b->head = j->next;
        job_finish(b, j, ENGINE_DONE_ERROR, "the server is shutting down");
    }
    b->tail = NULL;
    b->n_waiting = 0;
    while (b->n_run > 0)
        job_finish(b, b->run[--b->n_run], ENGINE_DONE_ERROR, "the server is shutting down");
    pthread_mutex_unlock(&b->mu);
    engine_shutdown(b->e);
    close(b->wake);
    b->wake = -1;
    /* b stays: connections still holding jobs release them (serve_bridge_free after) */
}

void serve_bridge_free(serve_bridge *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mu);
    if (the_bridge == b)
        the_bridge = NULL;
    free(b->run);
    free(b->kv_path);
    free(b);
}
