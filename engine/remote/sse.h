/* Server-sent events reader (the WHATWG "text/event-stream" rules) for the
 * remote backend's streamed replies. Bytes are fed as they arrive, cut
 * anywhere (inside a line, between CR and LF, inside a UTF-8 sequence); each
 * complete event is handed to a callback:
 *   - lines end with LF, CRLF or a lone CR;
 *   - "data:" lines append to the event's data (several lines joined by LF);
 *     one space after the colon is dropped;
 *   - "event:" names the event (empty: "message");
 *   - lines starting with ':' are comments (keep-alives), ignored;
 *   - "id:" and "retry:" are read and ignored;
 *   - a blank line dispatches the event (none when it has no data);
 *   - llama-server's non-standard "error: {...}" line is taken as the data of
 *     an event named "error" (its streamed errors come that way);
 *   - other field names are ignored, as the rules say.
 * "[DONE]" (OpenAI's end marker) is data like any other: the caller checks
 * it. At the end of the stream an event without its blank line is dropped
 * (the rules), but sse_finish says whether one was pending. No terminal I/O,
 * no network: the caller feeds it. */
#ifndef TOKSCOPE_REMOTE_SSE_H
#define TOKSCOPE_REMOTE_SSE_H

#include <stdbool.h>
#include <stddef.h>

#define SSE_MAX_EVENT (8u << 20) /* bytes of one event's data (a stream that exceeds it is refused) */

/* event: the event's name ("message" when none was given); data is
 * NUL-terminated (n bytes, may hold NULs). Return false to stop reading. */
typedef bool (*sse_event_cb)(void *user, const char *event, const char *data, size_t n);

typedef struct sse_reader {
    char *line; /* the line being read */
    size_t n_line, cap_line;
    char *data; /* the event's data so far */
    size_t n_data, cap_data;
    bool has_data;    /* a data line was seen (data may still be empty) */
    char event[64];   /* the event's name ("" = message) */
    bool after_cr;    /* the last byte was a CR: a following LF belongs to it */
    bool bom_checked; /* a leading UTF-8 BOM is dropped once */
    int n_bom;        /* bytes of a BOM's start seen so far */
    bool failed;      /* out of memory or an event over SSE_MAX_EVENT */
    bool stopped;     /* the callback returned false */
    size_t n_events;  /* events dispatched */
} sse_reader;

void sse_init(sse_reader *r);
void sse_free(sse_reader *r);
/* Feeds n bytes. False when reading stopped: the callback said so, or the
 * reader failed (r->failed: out of memory or an oversized event). */
bool sse_feed(sse_reader *r, const char *buf, size_t n, sse_event_cb cb, void *user);
/* The stream ended. True when nothing was left half-read (a line or an
 * event without its terminating blank line). */
bool sse_finish(sse_reader *r);

#endif
