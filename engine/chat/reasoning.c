/* Reasoning splitter (see reasoning.h): a small state machine per style over
 * the reply's bytes, one byte at a time, with the bytes that may start a
 * marker held back. */
#include "chat/reasoning.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ST_ANSWER, ST_REASON, ST_HEADER };

/* A harmony header longer than this without <|message|> is not a header:
 * the reply does not follow the format (the rest counts as answer). */
#define HEADER_MAX 128

typedef struct marker {
    const char *text;
    int next; /* state after it; -1: by the harmony header's channel */
} marker;

static const marker think_answer[] = {{"<think>", ST_REASON}, {NULL, 0}};
static const marker think_reason[] = {{"</think>", ST_ANSWER}, {NULL, 0}};
/* llama.cpp's Gemma 4 parser: "<|channel>thought" opens reasoning, other
 * (empty) channels are consumed, "<channel|>" closes */
static const marker gemma_answer[] = {
    {"<|channel>thought", ST_REASON}, {"<|channel>", ST_ANSWER}, {"<channel|>", ST_ANSWER}, {NULL, 0}};
static const marker gemma_reason[] = {{"<channel|>", ST_ANSWER}, {NULL, 0}};
static const marker harmony_body[] = {
    {"<|end|>", ST_HEADER}, {"<|return|>", ST_HEADER}, {"<|call|>", ST_HEADER}, {NULL, 0}};
static const marker harmony_header[] = {{"<|message|>", -1}, {NULL, 0}};
static const marker none[] = {{NULL, 0}};

static const marker *markers(const chat_reasoning *r)
{
    switch (r->style) {
    case CHAT_REASONING_THINK: return r->state == ST_REASON ? think_reason : think_answer;
    case CHAT_REASONING_GEMMA4: return r->state == ST_REASON ? gemma_reason : gemma_answer;
    case CHAT_REASONING_HARMONY: return r->state == ST_HEADER ? harmony_header : harmony_body;
    default: return none;
    }
}

enum chat_reasoning_style chat_reasoning_detect(const char *tmpl)
{
    if (!tmpl)
        return CHAT_REASONING_NONE;
    if (strstr(tmpl, "<|channel|>") && strstr(tmpl, "<|message|>"))
        return CHAT_REASONING_HARMONY;
    if (strstr(tmpl, "<|channel>") && strstr(tmpl, "<channel|>"))
        return CHAT_REASONING_GEMMA4;
    if (strstr(tmpl, "<think>") || strstr(tmpl, "</think>"))
        return CHAT_REASONING_THINK;
    return CHAT_REASONING_NONE;
}

const char *chat_reasoning_style_name(enum chat_reasoning_style s)
{
    switch (s) {
    case CHAT_REASONING_THINK: return "think";
    case CHAT_REASONING_GEMMA4: return "gemma4";
    case CHAT_REASONING_HARMONY: return "harmony";
    default: return "none";
    }
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

void chat_reasoning_init(chat_reasoning *r, enum chat_reasoning_style style, const char *prompt)
{
    memset(r, 0, sizeof *r);
    r->style = style;
    r->answer_at = SIZE_MAX;
    r->state = style == CHAT_REASONING_HARMONY ? ST_HEADER : ST_ANSWER;
    if (!prompt)
        return;
    size_t n = strlen(prompt);
    while (n && (prompt[n - 1] == '\n' || prompt[n - 1] == ' ' || prompt[n - 1] == '\r'))
        n--; /* "<think>\n" and "<|channel>thought\n" end with a newline */
    if ((style == CHAT_REASONING_THINK && ends_with(prompt, n, "<think>")) ||
        (style == CHAT_REASONING_GEMMA4 && ends_with(prompt, n, "<|channel>thought")) ||
        (style == CHAT_REASONING_HARMONY && ends_with(prompt, n, "<|channel|>analysis<|message|>"))) {
        r->state = ST_REASON;
        r->seen = true;
    } else if (style == CHAT_REASONING_HARMONY && ends_with(prompt, n, "<|message|>"))
        r->state = ST_ANSWER; /* a final (or commentary) message already opened */
}

void chat_reasoning_init_inside(chat_reasoning *r, enum chat_reasoning_style style, bool inside)
{
    chat_reasoning_init(r, style, NULL);
    if (inside && style != CHAT_REASONING_NONE) {
        r->state = ST_REASON;
        r->seen = true;
    }
}

void chat_reasoning_free(chat_reasoning *r)
{
    free(r->spans);
    r->spans = NULL;
    r->n_spans = r->cap_spans = 0;
}

static void emit(chat_reasoning *r, size_t len, enum chat_span_kind kind)
{
    if (!len)
        return;
    if (r->n_spans && r->spans[r->n_spans - 1].kind == kind && r->spans[r->n_spans - 1].end == r->pos) {
        r->spans[r->n_spans - 1].end += len;
    } else {
        if (r->n_spans == r->cap_spans) {
            size_t cap = r->cap_spans ? r->cap_spans * 2 : 8;
            chat_span *s = realloc(r->spans, cap * sizeof *s);
            if (!s)
                abort();
            r->spans = s;
            r->cap_spans = cap;
        }
        r->spans[r->n_spans++] = (chat_span){r->pos, r->pos + len, kind};
    }
    r->pos += len;
}

enum chat_span_kind chat_reasoning_current(const chat_reasoning *r)
{
    return r->state == ST_REASON ? CHAT_SPAN_REASONING : r->state == ST_HEADER ? CHAT_SPAN_MARKER : CHAT_SPAN_ANSWER;
}

bool chat_reasoning_inside(const chat_reasoning *r)
{
    return r->state != ST_ANSWER;
}

/* The harmony header just read: its channel decides what the message is. */
static int header_state(const chat_reasoning *r)
{
    /* n_hdr counts the header's bytes up to HEADER_MAX; hdr keeps the first
     * sizeof hdr of them */
    const size_t n = r->n_hdr < sizeof r->hdr ? r->n_hdr : sizeof r->hdr;
    const char *h = memmem(r->hdr, n, "<|channel|>", 11);
    if (!h)
        return ST_ANSWER;
    h += 11;
    size_t left = (size_t)(r->hdr + n - h);
    return left >= 8 && !memcmp(h, "analysis", 8) ? ST_REASON : ST_ANSWER;
}

/* Drops the first k pending bytes. */
static void pend_drop(chat_reasoning *r, size_t k)
{
    memmove(r->pend, r->pend + k, r->n_pend - k);
    memmove(r->pend_virtual, r->pend_virtual + k, (r->n_pend - k) * sizeof *r->pend_virtual);
    r->n_pend -= k;
}

static void take_marker(chat_reasoning *r, const marker *m, size_t len)
{
    size_t real = 0; /* virtual bytes take no room in the reply */
    for (size_t i = 0; i < len; i++)
        real += !r->pend_virtual[i];
    emit(r, real, CHAT_SPAN_MARKER);
    r->seen = true;
    r->state = m->next >= 0 ? m->next : header_state(r);
    if (r->state == ST_HEADER)
        r->n_hdr = 0;
    pend_drop(r, len);
}

/* One content byte (no marker starts there) in the current state. */
static void take_byte(chat_reasoning *r)
{
    const char c = r->pend[0];
    enum chat_span_kind k = chat_reasoning_current(r);
    if (r->state == ST_HEADER) {
        if (r->n_hdr < sizeof r->hdr)
            r->hdr[r->n_hdr] = c;
        if (++r->n_hdr > HEADER_MAX) /* not the format: answer from here */
            r->state = ST_ANSWER;
    }
    const bool real = !r->pend_virtual[0];
    if (real && k == CHAT_SPAN_ANSWER && r->seen && r->answer_at == SIZE_MAX && c != ' ' && c != '\n' &&
        c != '\r' && c != '\t')
        r->answer_at = r->pos;
    if (k == CHAT_SPAN_REASONING)
        r->seen = true;
    if (real)
        emit(r, 1, k);
    pend_drop(r, 1);
}

/* Decides pending bytes: a full marker is taken (the longest), a byte that
 * starts no marker is content; a proper prefix of a marker waits for more
 * bytes unless the reply ended (final). */
static void resolve(chat_reasoning *r, bool final)
{
    while (r->n_pend) {
        const marker *ms = markers(r), *best = NULL;
        size_t best_len = 0;
        bool wait = false;
        for (const marker *m = ms; m->text; m++) {
            size_t ml = strlen(m->text);
            if (ml > r->n_pend) {
                if (!memcmp(m->text, r->pend, r->n_pend))
                    wait = true;
            } else if (!memcmp(m->text, r->pend, ml) && ml > best_len) {
                best = m;
                best_len = ml;
            }
        }
        if (wait && !final)
            return;
        if (best)
            take_marker(r, best, best_len);
        else
            take_byte(r);
    }
}

static void feed(chat_reasoning *r, const char *s, size_t n, bool virt)
{
    for (size_t i = 0; i < n; i++) {
        r->pend_virtual[r->n_pend] = virt;
        r->pend[r->n_pend++] = s[i]; /* resolve leaves fewer bytes than the longest marker */
        r->fed += !virt;
        resolve(r, false);
    }
}

size_t chat_reasoning_feed(chat_reasoning *r, const char *s, size_t n)
{
    size_t before = r->pos;
    feed(r, s, n, false);
    return r->pos - before;
}

void chat_reasoning_feed_virtual(chat_reasoning *r, const char *s, size_t n)
{
    feed(r, s, n, true);
}

void chat_reasoning_finish(chat_reasoning *r)
{
    resolve(r, true);
}

enum chat_span_kind chat_reasoning_kind_at(const chat_reasoning *r, size_t off)
{
    if (off >= r->pos)
        return chat_reasoning_current(r);
    size_t lo = 0, hi = r->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->spans[mid].end <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n_spans ? r->spans[lo].kind : chat_reasoning_current(r);
}

static bool blank(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

char *chat_reasoning_extract(const chat_reasoning *r, const char *text, size_t len, enum chat_span_kind kind)
{
    return chat_reasoning_extract_n(r, text, len, kind, NULL);
}

char *chat_reasoning_extract_n(const chat_reasoning *r, const char *text, size_t len, enum chat_span_kind kind,
                               size_t *out_len)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n_spans; i++)
        if (r->spans[i].kind == kind && r->spans[i].start < len)
            total += (r->spans[i].end < len ? r->spans[i].end : len) - r->spans[i].start;
    char *out = malloc(total + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < r->n_spans; i++)
        if (r->spans[i].kind == kind && r->spans[i].start < len) {
            size_t e = r->spans[i].end < len ? r->spans[i].end : len;
            memcpy(out + n, text + r->spans[i].start, e - r->spans[i].start);
            n += e - r->spans[i].start;
        }
    size_t a = 0;
    while (a < n && blank(out[a]))
        a++;
    while (n > a && blank(out[n - 1]))
        n--;
    memmove(out, out + a, n - a);
    out[n - a] = 0;
    if (out_len)
        *out_len = n - a;
    return out;
}

void chat_reasoning_split(chat_reasoning *r, enum chat_reasoning_style style, const char *prompt, const char *text,
                          size_t len)
{
    chat_reasoning_init(r, style, prompt);
    chat_reasoning_feed(r, text, len);
    chat_reasoning_finish(r);
}
