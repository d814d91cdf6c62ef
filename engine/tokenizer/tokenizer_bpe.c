/* BPE (llama.cpp's llm_tokenizer_bpe_session): pre-tokenize into words,
 * then within each word repeatedly merge the adjacent pair with the lowest
 * merge rank (ties: leftmost). Symbols that are not tokens fall back to
 * single-byte tokens (byte-level characters, or <0xXX> for gemma4's raw
 * UTF-8 words), and are dropped where even those do not exist, exactly like
 * the reference. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

typedef struct bpe_sym {
    int32_t prev, next;
    size_t off, n;
} bpe_sym;

typedef struct bpe_bigram {
    int32_t left, right;
    int32_t rank;
    size_t size;
} bpe_bigram;

typedef struct bpe_work {
    bpe_sym *sym;
    size_t sym_cap;
    bpe_bigram *heap;
    size_t hn, hcap;
    char *key;
    size_t key_cap;
    bool oom;
} bpe_work;

static inline bool bpe_before(const bpe_bigram *a, const bpe_bigram *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void bpe_push(bpe_work *w, bpe_bigram x)
{
    if (w->hn == w->hcap) {
        size_t nc = w->hcap ? w->hcap * 2 : 64;
        bpe_bigram *nv = realloc(w->heap, nc * sizeof *nv);
        if (!nv) {
            w->oom = true;
            return;
        }
        w->heap = nv;
        w->hcap = nc;
    }
    size_t i = w->hn++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bpe_before(&x, &w->heap[p]))
            break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = x;
}

static bpe_bigram bpe_pop(bpe_work *w)
{
    bpe_bigram top = w->heap[0], x = w->heap[--w->hn];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const bpe_bigram *best = &x;
        if (l < w->hn && bpe_before(&w->heap[l], best)) {
            m = l;
            best = &w->heap[l];
        }
        if (r < w->hn && bpe_before(&w->heap[r], best))
            m = r;
        if (m == i)
            break;
        w->heap[i] = w->heap[m];
        i = m;
    }
    if (w->hn)
        w->heap[i] = x;
    return top;
}

static void bpe_try_add(const tokenizer *t, bpe_work *w, const char *word, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return;
    const bpe_sym *L = &w->sym[l], *R = &w->sym[r];
    size_t kl = L->n + 1 + R->n;
    if (!w->key || kl > w->key_cap) {
        size_t nc = kl * 2;
        char *nk = realloc(w->key, nc);
        if (!nk) {
            w->oom = true;
            return;
        }
        w->key = nk;
        w->key_cap = nc;
    }
    memcpy(w->key, word + L->off, L->n);
    w->key[L->n] = ' ';
    memcpy(w->key + L->n + 1, word + R->off, R->n);
    int32_t rank = tok_map_get(&t->merges, w->key, kl);
    if (rank < 0)
        return;
    bpe_bigram b = {l, r, rank, L->n + R->n};
    bpe_push(w, b);
}

/* true when some byte of s[0..len) differs from c */
static bool memchr_not(const char *s, int c, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != (char)c)
            return true;
    return false;
}

static void bpe_word(const tokenizer *t, bpe_work *w, const char *word, size_t len, tok_ids *out)
{
    if (!len)
        return;
    if (len > w->sym_cap) {
        size_t nc = len * 2;
        bpe_sym *ns = realloc(w->sym, nc * sizeof *ns);
        if (!ns) {
            w->oom = true;
            return;
        }
        w->sym = ns;
        w->sym_cap = nc;
    }
    int32_t n = 0;
    if ((t->ignore_merges || (t->newline_words && !memchr_not(word, '\n', len))) &&
        tok_text_to_id(t, word, len) >= 0) {
        /* a whole-word token; for gemma4 only a run of newlines (llama.cpp's
         * PR 21343; on the shipped vocab the merges agree for runs up to 40,
         * but a vocab whose merges pair them otherwise would differ) */
        w->sym[0] = (bpe_sym){-1, -1, 0, len};
        n = 1;
    } else {
        for (size_t off = 0; off < len;) {
            size_t l = unicode_len_utf8((uint8_t)word[off]);
            if (l > len - off)
                l = len - off;
            w->sym[n] = (bpe_sym){n - 1, off + l == len ? -1 : n + 1, off, l};
            off += l;
            n++;
        }
    }
    w->hn = 0;
    for (int32_t i = 1; i < n; i++)
        bpe_try_add(t, w, word, i - 1, i);
    while (w->hn) {
        bpe_bigram b = bpe_pop(w);
        bpe_sym *L = &w->sym[b.left], *R = &w->sym[b.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != b.size)
            continue; /* outdated */
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0)
            w->sym[R->next].prev = b.left;
        bpe_try_add(t, w, word, L->prev, b.left);
        bpe_try_add(t, w, word, b.left, L->next);
    }
    for (int32_t i = 0; i != -1; i = w->sym[i].next) {
        const bpe_sym *s = &w->sym[i];
        if (!s->n)
            continue;
        int32_t id = tok_text_to_id(t, word + s->off, s->n);
        if (id >= 0) {
            tok_ids_push(out, id);
            continue;
        }
        for (size_t j = 0; j < s->n; j++) {
            /* byte-level vocabs spell a byte as its mapped character (the word
             * is already byte-encoded), raw-UTF-8 ones as <0xXX> */
            int32_t bid = t->raw_words ? tok_byte_token(t, (uint8_t)word[s->off + j])
                                       : tok_text_to_id(t, word + s->off + j, 1);
            if (bid >= 0)
                tok_ids_push(out, bid);
        }
    }
}

void tok_bpe_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    tok_words words = {0};
    bpe_work w = {0};
    if (!tok_pretok_split(t, text, len, &words)) {
        out->oom = true;
        goto done;
    }
    /* words merge independently: a count past its limit stops after the word that passed it */
    for (size_t i = 0; i < words.n && !tok_ids_over(out); i++)
        bpe_word(t, &w, words.buf + words.off[i], words.off[i + 1] - words.off[i], out);
    if (w.oom)
        out->oom = true;
done:
    tok_words_free(&words);
    free(w.sym);
    free(w.heap);
    free(w.key);
}
