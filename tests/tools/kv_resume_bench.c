/* Time to the first new token after resuming a long conversation, with and
 * without a KV snapshot (memory/kv_snapshot.h), through the engine's own
 * commands as the TUI sends them. Not part of make test.
 *
 * Usage: kv_resume_bench MODEL [N_TOKENS [THREADS [SNAPSHOT]]]
 * A first engine evaluates a user message of about N_TOKENS tokens (one
 * reply token) and saves a snapshot; then, each in a new engine with the
 * model loaded (as a new process after its load): the conversation plus a
 * new message submitted cold (evaluated again), and the same after
 * LOAD_KV. Prints the wall-clock seconds from the command to the first
 * TOKEN event of each, and their ratio. With a fifth argument "quick" the
 * second is left out and turn 1's time stands for it (the same
 * conversation but its last 5 tokens: a lower bound of it). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void next(engine *e, engine_event *ev)
{
    while (!engine_poll(e, ev)) {
        struct pollfd p = {.fd = engine_event_fd(e), .events = POLLIN};
        poll(&p, 1, 1000);
    }
    if (ev->type == ENGINE_EV_ERROR)
        fprintf(stderr, "engine: %s\n", ev->message);
}

static engine *start(const char *path, int threads, uint32_t n_ctx)
{
    engine_params p = engine_default_params();
    p.model_path = path;
    p.n_ctx = n_ctx;
    p.n_threads = threads;
    p.template_name = "raw";
    p.sampling.temp = 0.0f;
    p.sampling.n_predict = 1;
    p.kv_max_bytes = 0;
    char err[256];
    engine *e = engine_start(&p, err, sizeof err);
    if (!e) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    engine_event ev;
    do
        next(e, &ev);
    while (ev.type != ENGINE_EV_LOADED && ev.type != ENGINE_EV_ERROR);
    if (ev.type == ENGINE_EV_ERROR)
        exit(1);
    return e;
}

/* Submits and returns the seconds to the first TOKEN event (t0: when timing began); waits for DONE. */
static double first_token(engine *e, const chat_message *m, size_t n, double t0, int32_t *n_prompt,
                          char *reply, size_t cap)
{
    engine_submit(e, 1, m, n);
    engine_event ev;
    double t = -1;
    size_t rl = 0;
    for (;;) {
        next(e, &ev);
        if (ev.type == ENGINE_EV_TOKEN && t < 0)
            t = now() - t0;
        if (ev.type == ENGINE_EV_TOKEN && reply && rl + (size_t)ev.text_len < cap) {
            memcpy(reply + rl, ev.text, (size_t)ev.text_len);
            rl += (size_t)ev.text_len;
        }
        if (ev.type == ENGINE_EV_KV)
            fprintf(stderr, "  %s\n", ev.message);
        if (ev.type == ENGINE_EV_DONE) {
            if (reply && rl + (size_t)ev.text_len < cap) {
                memcpy(reply + rl, ev.text, (size_t)ev.text_len);
                rl += (size_t)ev.text_len;
            }
            if (reply)
                reply[rl] = 0;
            *n_prompt = ev.n_prompt;
            return t;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kv_resume_bench MODEL [N_TOKENS [THREADS [SNAPSHOT [quick]]]]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *path = argv[1];
    const int n_tok = argc > 2 ? atoi(argv[2]) : 4000;
    const int threads = argc > 3 ? atoi(argv[3]) : 0;
    const char *snap = argc > 4 ? argv[4] : "/tmp/kv_resume_bench.kv";
    /* about one token a word on an SPM vocabulary; the words of a small list */
    static const char *words[] = {"the", "dog",   "ran", "to",  "a",   "big",
                                  "red", "house", "and", "saw", "cat", "sat"};
    size_t cap = (size_t)n_tok * 8 + 64, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < n_tok - 8; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s%s", i ? " " : "", words[(i * 7 + i / 13) % 12]);
    char reply[256] = "";
    chat_message conv[3] = {{"user", text, 0}, {"assistant", reply, 0}, {"user", "And then the dog", 0}};
    const uint32_t n_ctx = (uint32_t)n_tok + 512;
    int32_t np = 0;

    engine *a = start(path, threads, n_ctx);
    double t = first_token(a, conv, 1, now(), &np, reply, sizeof reply);
    printf("turn 1: %d tokens evaluated, first token after %.2f s\n", np, t);
    engine_save_kv(a, snap);
    engine_event ev;
    do
        next(a, &ev);
    while (ev.type != ENGINE_EV_KV);
    printf("%s\n", ev.message);
    engine_shutdown(a);
    if (ev.kv != ENGINE_KV_SAVED)
        return 1;

    double cold = t;
    if (!(argc > 5 && !strcmp(argv[5], "quick"))) {
        engine *b = start(path, threads, n_ctx); /* a new process, model loaded: evaluates it all again */
        cold = first_token(b, conv, 3, now(), &np, NULL, 0);
        printf("resume without a snapshot: %d tokens evaluated, first new token after %.2f s\n", np, cold);
        engine_shutdown(b);
    }

    engine *c = start(path, threads, n_ctx);
    const double t0 = now();
    engine_load_kv(c, snap);
    const double warm = first_token(c, conv, 3, t0, &np, NULL, 0);
    printf(
        "resume with the snapshot:    %d tokens evaluated, first new token after %.2f s (restore included)\n",
        np, warm);
    engine_shutdown(c);
    struct stat sb;
    if (stat(snap, &sb) == 0)
        printf("snapshot: %.1f MiB\n", (double)sb.st_size / 1048576.0);
    printf("ratio: %.1fx\n", cold / warm);
    free(text);
    return 0;
}
