/* Versions of a message (branches). A conversation shows one path; where a
 * message has versions, each other version is kept with the conversation
 * that followed it (a tail), and switching swaps the visible tail with a
 * kept one. Messages move between the path and the tails by value (their
 * pointers travel with them), so nothing is copied but a branch's start. */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort(); /* out of memory in an interactive UI: nothing sensible left to do */
    return q;
}

void msg_versions_free(ui_msg *m)
{
    ui_versions *v = m->vers;
    if (!v)
        return;
    m->vers = NULL;
    for (size_t i = 0; i < v->n; i++) {
        for (size_t k = 0; k < v->tails[i].n; k++)
            msg_clear(&v->tails[i].msgs[k]);
        free(v->tails[i].msgs);
    }
    free(v->tails);
    free(v);
}

size_t conv_versions(const ui_msg *m, size_t *cur)
{
    if (!m->vers || m->vers->n < 2) {
        *cur = 1;
        return 1;
    }
    *cur = m->vers->cur + 1;
    return m->vers->n;
}

/* Moves messages [i, n) of the path into t (which must be empty). */
static void take_tail(ui_conv *c, size_t i, ui_tail *t)
{
    t->n = c->n_msgs - i;
    t->msgs = xrealloc(NULL, t->n * sizeof *t->msgs);
    memcpy(t->msgs, c->msgs + i, t->n * sizeof *t->msgs);
    c->n_msgs = i;
}

/* Appends t's messages to the path; t is left empty. */
static void put_tail(ui_conv *c, ui_tail *t)
{
    if (c->n_msgs + t->n > c->cap_msgs) {
        size_t cap = c->cap_msgs ? c->cap_msgs : 8;
        while (cap < c->n_msgs + t->n)
            cap *= 2;
        c->msgs = xrealloc(c->msgs, cap * sizeof *c->msgs);
        c->cap_msgs = cap;
    }
    memcpy(c->msgs + c->n_msgs, t->msgs, t->n * sizeof *t->msgs);
    c->n_msgs += t->n;
    free(t->msgs);
    t->msgs = NULL;
    t->n = 0;
}

ui_tail *conv_fork(ui_conv *c, size_t i)
{
    if (i >= c->n_msgs)
        return NULL;
    ui_versions *v = c->msgs[i].vers;
    c->msgs[i].vers = NULL;
    if (!v) {
        v = calloc(1, sizeof *v);
        if (!v)
            abort();
        v->n = 1;
        v->tails = xrealloc(NULL, sizeof *v->tails);
        memset(v->tails, 0, sizeof *v->tails);
    }
    take_tail(c, i, &v->tails[v->cur]);
    v->tails = xrealloc(v->tails, (v->n + 1) * sizeof *v->tails);
    memset(&v->tails[v->n], 0, sizeof v->tails[v->n]);
    const size_t old = v->cur;
    v->cur = v->n++;
    /* the next message added at i carries the versions */
    c->pending_vers = v;
    c->pending_at = i;
    c->pending_old = old;
    conv_sel_clear(c);
    return &v->tails[old];
}

void conv_unfork(ui_conv *c)
{
    ui_versions *v = c->pending_vers;
    if (!v)
        return; /* no fork pending */
    c->pending_vers = NULL;
    while (c->n_msgs > c->pending_at)
        conv_pop(c);
    v->n--; /* the empty slot of the version that was not made */
    v->cur = c->pending_old;
    put_tail(c, &v->tails[v->cur]);
    if (v->n < 2) {
        free(v->tails);
        free(v);
        v = NULL;
    }
    if (c->pending_at < c->n_msgs)
        c->msgs[c->pending_at].vers = v;
}

bool conv_switch_version(ui_conv *c, size_t i, int delta)
{
    if (i >= c->n_msgs || !c->msgs[i].vers || c->msgs[i].vers->n < 2)
        return false;
    ui_versions *v = c->msgs[i].vers;
    c->msgs[i].vers = NULL;
    const size_t n = v->n;
    const size_t to = (v->cur + n + (size_t)((delta % (int)n) + (int)n)) % n;
    if (to == v->cur) {
        c->msgs[i].vers = v;
        return false;
    }
    take_tail(c, i, &v->tails[v->cur]);
    put_tail(c, &v->tails[to]);
    v->cur = to;
    c->msgs[i].vers = v;
    conv_sel_clear(c);
    return true;
}

size_t conv_add_prefix(ui_conv *c, const ui_msg *m, size_t k)
{
    if (k > m->n_toks)
        k = m->n_toks;
    const size_t bytes = k < m->n_toks ? m->toks[k].off : m->len;
    char *text = xrealloc(NULL, bytes + 1);
    memcpy(text, m->text, bytes);
    const size_t mi = conv_add_msg_n(c, "assistant", text, bytes); /* a length: a NUL token's text stays */
    free(text);
    ui_msg *d = &c->msgs[mi];
    d->streaming = true;
    if (k) {
        d->toks = xrealloc(NULL, k * sizeof *d->toks);
        d->cap_toks = d->n_toks = k;
        for (size_t j = 0; j < k; j++) {
            d->toks[j] = m->toks[j];
            d->toks[j].lens = NULL; /* asked again when wanted: the step is the same */
            d->toks[j].lens_wait = false;
            d->toks[j].lens_failed = false;
            d->toks[j].top = NULL;
            if (m->toks[j].n_top) {
                d->toks[j].top = xrealloc(NULL, (size_t)m->toks[j].n_top * sizeof *d->toks[j].top);
                memcpy(d->toks[j].top, m->toks[j].top, (size_t)m->toks[j].n_top * sizeof *d->toks[j].top);
            }
        }
    }
    return mi;
}

ui_msg *conv_msg_by_uid(ui_conv *c, int32_t uid, size_t *index)
{
    for (size_t i = 0; i < c->n_msgs; i++)
        if (c->msgs[i].uid == uid) {
            if (index)
                *index = i;
            return &c->msgs[i];
        }
    return NULL;
}
