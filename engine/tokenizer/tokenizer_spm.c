/* SentencePiece-style BPE (llama.cpp's llm_tokenizer_spm): start from UTF-8
 * characters, repeatedly merge the adjacent pair whose concatenation is the
 * vocab token with the highest score (ties: leftmost), then emit each
 * remaining symbol as its token or, if it is none, as <0xXX> byte tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

typedef struct spm_sym {
    int32_t prev, next;
    size_t off, n;
} spm_sym;

typedef struct spm_bigram {
    int32_t left, right;
    float score;
    size_t size;
} spm_bigram;

typedef struct spm_heap {
    spm_bigram *v;
    size_t n, cap;
    bool oom;
} spm_heap;

/* true when a should be popped before b */
static inline bool spm_before(const spm_bigram *a, const spm_bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(spm_heap *h, spm_bigram x)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        spm_bigram *nv = realloc(h->v, nc * sizeof *nv);
        if (!nv) {
            h->oom = true;
            return;
        }
        h->v = nv;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!spm_before(&x, &h->v[p]))
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = x;
}

static spm_bigram heap_pop(spm_heap *h)
{
    spm_bigram top = h->v[0], x = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const spm_bigram *best = &x;
        if (l < h->n && spm_before(&h->v[l], best)) {
            m = l;
            best = &h->v[l];
        }
        if (r < h->n && spm_before(&h->v[r], best))
            m = r;
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

static void try_add(const tokenizer *t, const char *text, spm_sym *sy, spm_heap *h, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return;
    size_t size = sy[l].n + sy[r].n;
    int32_t id = tok_text_to_id(t, text + sy[l].off, size);
    if (id < 0)
        return;
    spm_bigram b = {l, r, t->tokens[id].score, size};
    heap_push(h, b);
}

void tok_spm_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    if (!len)
        return;
    spm_sym *sy = calloc(len, sizeof *sy);
    spm_heap h = {0};
    if (!sy) {
        out->oom = true;
        return;
    }
    int32_t ns = 0;
    for (size_t off = 0; off < len;) {
        size_t l = unicode_len_utf8((uint8_t)text[off]);
        if (l > len - off)
            l = len - off;
        sy[ns].off = off;
        sy[ns].n = l;
        sy[ns].prev = ns - 1;
        off += l;
        sy[ns].next = off == len ? -1 : ns + 1;
        ns++;
    }
    for (int32_t i = 1; i < ns; i++)
        try_add(t, text, sy, &h, i - 1, i);
    while (h.n) {
        spm_bigram b = heap_pop(&h);
        spm_sym *L = &sy[b.left], *R = &sy[b.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != b.size)
            continue; /* stale: one side was merged since */
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0)
            sy[R->next].prev = b.left;
        try_add(t, text, sy, &h, L->prev, b.left);
        try_add(t, text, sy, &h, b.left, L->next);
    }
    if (h.oom)
        out->oom = true;
    for (int32_t i = 0; i != -1; i = sy[i].next) {
        int32_t id = tok_text_to_id(t, text + sy[i].off, sy[i].n);
        if (id >= 0) {
            tok_ids_push(out, id);
            continue;
        }
        for (size_t j = 0; j < sy[i].n; j++) {
            int32_t bid = tok_byte_to_id(t, (uint8_t)text[sy[i].off + j]);
            if (bid < 0)
                bid = t->unk; /* the reference throws here */
            if (bid >= 0)
                tok_ids_push(out, bid);
        }
    }
    free(sy);
    free(h.v);
}
