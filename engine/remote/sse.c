/* Server-sent events reader (see sse.h). */
#include "remote/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sse_init(sse_reader *r)
{
    memset(r, 0, sizeof *r);
}

void sse_free(sse_reader *r)
{
    free(r->line);
    free(r->data);
    memset(r, 0, sizeof *r);
}

static bool reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    char *b = realloc(*buf, c);
    if (!b)
        return false;
    *buf = b;
    *cap = c;
    return true;
}

static bool append_data(sse_reader *r, const char *v, size_t n)
{
    if (r->n_data + n + 2 > SSE_MAX_EVENT || !reserve(&r->data, &r->cap_data, r->n_data + n + 2)) {
        r->failed = true;
        return false;
    }
    memcpy(r->data + r->n_data, v, n);
    r->n_data += n;
    r->data[r->n_data++] = '\n';
    r->data[r->n_data] = 0;
    r->has_data = true;
    return true;
}

static void reset_event(sse_reader *r)
{
    r->n_data = 0;
    r->has_data = false;
    r->event[0] = 0;
}

static bool dispatch(sse_reader *r, sse_event_cb cb, void *user)
{
    if (!r->has_data) { /* no data: nothing to dispatch (the name is forgotten too) */
        reset_event(r);
        return true;
    }
    size_t n = r->n_data;
    if (n && r->data[n - 1] == '\n') /* the last line's LF is not part of the data */
        n--;
    r->data[n] = 0;
    r->n_events++;
    bool go = cb(user, r->event[0] ? r->event : "message", r->data, n);
    reset_event(r);
    if (!go)
        r->stopped = true;
    return go;
}

/* One complete line (without its terminator). */
static bool process_line(sse_reader *r, const char *l, size_t n, sse_event_cb cb, void *user)
{
    if (n == 0)
        return dispatch(r, cb, user);
    if (l[0] == ':')
        return true; /* comment */
    const char *colon = memchr(l, ':', n);
    size_t fn = colon ? (size_t)(colon - l) : n;
    const char *v = colon ? colon + 1 : l + n;
    size_t vn = colon ? n - fn - 1 : 0;
    if (vn && v[0] == ' ') {
        v++;
        vn--;
    }
    if (fn == 4 && !memcmp(l, "data", 4))
        return append_data(r, v, vn);
    if (fn == 5 && !memcmp(l, "event", 5)) {
        size_t k = vn < sizeof r->event - 1 ? vn : sizeof r->event - 1;
        memcpy(r->event, v, k);
        r->event[k] = 0;
        if (memchr(r->event, 0, k)) /* a NUL in the name: keep what is before it */
            r->event[strlen(r->event)] = 0;
        return true;
    }
    if (fn == 5 && !memcmp(l, "error", 5)) { /* llama-server: "error: {json}" */
        snprintf(r->event, sizeof r->event, "error");
        return append_data(r, v, vn);
    }
    return true; /* id, retry and unknown fields */
}

static bool push_byte(sse_reader *r, char ch)
{
    if (r->n_line + 2 > SSE_MAX_EVENT || !reserve(&r->line, &r->cap_line, r->n_line + 2)) {
        r->failed = true;
        return false;
    }
    r->line[r->n_line++] = ch;
    return true;
}

bool sse_feed(sse_reader *r, const char *buf, size_t n, sse_event_cb cb, void *user)
{
    static const char bom[3] = {'\xef', '\xbb', '\xbf'};
    for (size_t i = 0; i < n; i++) {
        if (r->failed || r->stopped)
            return false;
        char ch = buf[i];
        if (!r->bom_checked) { /* a leading BOM is dropped, even when it arrives cut */
            if (ch == bom[r->n_bom]) {
                if (++r->n_bom == 3)
                    r->bom_checked = true;
                continue;
            }
            r->bom_checked = true;
            for (int k = 0; k < r->n_bom && k < 3; k++) /* not a BOM after all: those bytes are the line's */
                if (!push_byte(r, bom[k]))
                    return false;
        }
        if (r->after_cr) {
            r->after_cr = false;
            if (ch == '\n')
                continue; /* CRLF: the line ended at the CR */
        }
        if (ch == '\r' || ch == '\n') {
            r->after_cr = ch == '\r';
            size_t ln = r->n_line;
            r->n_line = 0;
            if (!process_line(r, r->line ? r->line : "", ln, cb, user))
                return false;
            continue;
        }
        if (!push_byte(r, ch))
            return false;
    }
    return !r->failed && !r->stopped;
}

bool sse_finish(sse_reader *r)
{
    return r->n_line == 0 && !r->has_data && (r->bom_checked || !r->n_bom);
}
