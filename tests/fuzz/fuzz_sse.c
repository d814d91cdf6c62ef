/* Fuzz target: the remote backend's SSE reader (engine/remote/sse.c) and
 * its chunk parser (remote_json.c) on random streams. The first byte picks
 * where the stream is cut (the rest is the stream). Checks:
 * - the events do not depend on the cuts: fed whole, cut at the chosen
 *   byte, and one byte at a time, the same events in the same order;
 * - no event's data holds a CR, and its LFs come from data lines only
 *   (an event's data never ends with its own terminator);
 * - event names hold no CR or LF;
 * - every event's data through remote_parse_chunk never crashes, and the
 *   pieces it reports lie inside the data (no read past it). */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "remote/remote.h"
#include "remote/sse.h"

typedef struct log {
    char *s;
    size_t n, cap;
    int n_events;
} log_t;

static void put(log_t *l, const void *p, size_t n)
{
    if (l->n + n + 1 > l->cap) {
        size_t c = l->cap ? l->cap : 4096;
        while (c < l->n + n + 1)
            c *= 2;
        l->s = realloc(l->s, c);
        FUZZ_CHECK(l->s, "out of memory");
        l->cap = c;
    }
    memcpy(l->s + l->n, p, n);
    l->n += n;
}

static void on_piece(void *u, const remote_piece *p, bool reasoning)
{
    (void)u;
    (void)reasoning;
    FUZZ_CHECK(p->len <= (size_t)1 << 24, "piece of %zu bytes", p->len);
    FUZZ_CHECK(p->n_top >= 0 && p->n_top <= SAMPLER_MAX_TOP, "n_top %d", p->n_top);
    for (int i = 0; i < p->n_top; i++)
        FUZZ_CHECK(memchr(p->top[i].text, 0, sizeof p->top[i].text), "candidate text not terminated");
    volatile char sink = 0;
    for (size_t i = 0; i < p->len; i++) /* ASan: the bytes are readable */
        sink ^= p->text[i];
    (void)sink;
}
static void on_finish(void *u, const char *r)
{
    (void)u;
    FUZZ_CHECK(r, "finish without a reason");
}
static void on_usage(void *u, int32_t a, int32_t b, double c)
{
    (void)u;
    (void)a;
    (void)b;
    (void)c;
}
static void on_error(void *u, const char *m)
{
    (void)u;
    FUZZ_CHECK(m && strlen(m) < 4096 && !strchr(m, '\n'), "error message not one line");
}

static bool on_event(void *user, const char *event, const char *data, size_t n)
{
    log_t *l = user;
    FUZZ_CHECK(event && !strpbrk(event, "\r\n"), "event name with a line end");
    FUZZ_CHECK(!memchr(data, '\r', n), "data with a CR");
    FUZZ_CHECK(data[n] == 0, "data not terminated");
    put(l, event, strlen(event));
    put(l, "\0", 1);
    put(l, &n, sizeof n);
    put(l, data, n);
    l->n_events++;
    return true;
}

static void run(const uint8_t *d, size_t n, size_t cut, int mode, log_t *l)
{
    sse_reader r;
    sse_init(&r);
    if (mode == 0)
        sse_feed(&r, (const char *)d, n, on_event, l);
    else if (mode == 1) {
        sse_feed(&r, (const char *)d, cut, on_event, l);
        sse_feed(&r, (const char *)d + cut, n - cut, on_event, l);
    } else
        for (size_t i = 0; i < n; i++)
            sse_feed(&r, (const char *)d + i, 1, on_event, l);
    FUZZ_CHECK(!r.failed, "the reader failed on %zu bytes", n);
    sse_finish(&r);
    sse_free(&r);
}

static bool parse_each(void *user, const char *event, const char *data, size_t n)
{
    (void)user;
    (void)event;
    remote_chunk_cb cb = {NULL, on_piece, on_finish, on_usage, on_error};
    remote_parse_chunk(data, n, &cb);
    char m[256];
    remote_error_message(data, m, sizeof m);
    FUZZ_CHECK(!strchr(m, '\n') && !strchr(m, '\r'), "error message not one line");
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 16)
        return 0;
    size_t n = size - 1;
    const uint8_t *d = data + 1;
    size_t cut = n ? (size_t)data[0] * n / 255 : 0;
    log_t a = {0}, b = {0}, c = {0};
    run(d, n, cut, 0, &a);
    run(d, n, cut, 1, &b);
    run(d, n, cut, 2, &c);
    FUZZ_CHECK(a.n_events == b.n_events && a.n == b.n && (!a.n || !memcmp(a.s, b.s, a.n)),
               "cut at %zu changes the events (%d vs %d)", cut, a.n_events, b.n_events);
    FUZZ_CHECK(a.n_events == c.n_events && a.n == c.n && (!a.n || !memcmp(a.s, c.s, a.n)),
               "byte by byte changes the events (%d vs %d)", a.n_events, c.n_events);
    free(a.s);
    free(b.s);
    free(c.s);
    sse_reader r;
    sse_init(&r);
    sse_feed(&r, (const char *)d, n, parse_each, NULL);
    sse_free(&r);
    return 0;
}
