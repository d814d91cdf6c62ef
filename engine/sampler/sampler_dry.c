/* DRY ("don't repeat yourself") repetition penalty, following llama.cpp's
 * port of koboldcpp's sampler: find, for every token, the longest repeat of
 * the context's suffix it would extend (a reverse Z-algorithm over the last
 * tokens, cut at the most recent sequence breaker) and lower its logit by
 * multiplier * base^(length - allowed_length). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/sampler_internal.h"
#include "tokenizer/tokenizer.h"

typedef struct brk_entry {
    int32_t head, len;
    int32_t tail[DRY_MAX_TAIL];
} brk_entry;

static int brk_cmp(const void *a, const void *b)
{
    const brk_entry *x = a, *y = b;
    return (x->head > y->head) - (x->head < y->head);
}

void sampler_free_dry(sampler *s)
{
    free(s->brk_start);
    free(s->brk_tail);
    free(s->brk_len);
    free(s->brk_single);
    free(s->dry_count);
    free(s->dry_touched);
    free(s->dry_max);
    s->brk_start = s->brk_tail = s->brk_len = NULL;
    s->brk_single = NULL;
    s->dry_count = s->dry_touched = s->dry_max = NULL;
    s->n_brk = 0;
    s->dry_cap = 0;
}

/* Replaces the breaker table by entries[0..n) (sorted here). */
static bool install(sampler *s, brk_entry *e, int32_t n)
{
    const int32_t nv = s->n_vocab;
    if (n > 0)
        qsort(e, (size_t)n, sizeof *e, brk_cmp);
    int32_t *start = calloc((size_t)nv + 1, sizeof *start);
    int32_t *tail = malloc(((size_t)n + 1) * DRY_MAX_TAIL * sizeof *tail);
    int32_t *len = malloc(((size_t)n + 1) * sizeof *len);
    bool *single = calloc((size_t)nv, sizeof *single);
    if (!start || !tail || !len || !single) {
        free(start);
        free(tail);
        free(len);
        free(single);
        return false;
    }
    for (int32_t i = 0; e && i < n; i++) {
        start[e[i].head + 1]++;
        memcpy(tail + (size_t)i * DRY_MAX_TAIL, e[i].tail, sizeof e[i].tail);
        len[i] = e[i].len;
        if (e[i].len == 0)
            single[e[i].head] = true;
    }
    for (int32_t t = 0; t < nv; t++)
        start[t + 1] += start[t];
    free(s->brk_start);
    free(s->brk_tail);
    free(s->brk_len);
    free(s->brk_single);
    s->brk_start = start;
    s->brk_tail = tail;
    s->brk_len = len;
    s->brk_single = single;
    s->n_brk = n;
    return true;
}

typedef struct brk_list {
    brk_entry *e;
    int32_t n, cap;
} brk_list;

/* Adds (head, tail) unless the same pair is there already. */
static void brk_add(brk_list *l, int32_t head, const int32_t *tail, int32_t len)
{
    if (len > DRY_MAX_TAIL)
        len = DRY_MAX_TAIL;
    for (int32_t i = l->n - 1; i >= 0 && l->e[i].head == head; i--)
        if (l->e[i].len == len && (len == 0 || !memcmp(l->e[i].tail, tail, (size_t)len * sizeof *tail)))
            return;
    if (l->n == l->cap) {
        int32_t cap = l->cap ? 2 * l->cap : 64;
        brk_entry *ne = realloc(l->e, (size_t)cap * sizeof *ne);
        if (!ne)
            return;
        l->e = ne;
        l->cap = cap;
    }
    brk_entry *b = &l->e[l->n++];
    memset(b, 0, sizeof *b);
    b->head = head;
    b->len = len;
    if (len)
        memcpy(b->tail, tail, (size_t)len * sizeof *tail);
}

bool sampler_set_dry_breakers(sampler *s, const int32_t *const *seqs, const int32_t *lens, int32_t n)
{
    brk_list l = {0};
    for (int32_t i = 0; i < n; i++) {
        if (lens[i] <= 0 || seqs[i][0] < 0 || seqs[i][0] >= s->n_vocab)
            continue;
        brk_add(&l, seqs[i][0], seqs[i] + 1, lens[i] - 1);
    }
    bool ok = install(s, l.e, l.n);
    free(l.e);
    s->brk_fixed = true;
    return ok;
}

/* llama.cpp's get_overlapping_token_sequences for one breaker str, over
 * every token's text as vocab.detokenize({id}, true) gives it: a token
 * containing str is a one-token breaker; each place where the token ends
 * with a prefix of str makes it the head of a breaker whose tail is the
 * rest of str tokenized (no BOS, no special tokens), cut to 20 tokens. */
static void brk_from_string(brk_list *l, const tokenizer *t, int32_t nv, const char *str)
{
    const size_t sl = strlen(str);
    char word[2048];
    int32_t tail[64];
    for (int32_t id = 0; id < nv; id++) {
        int32_t wl = tokenizer_detokenize(t, &id, 1, false, true, word, (int32_t)sizeof word);
        if (wl < 0)
            continue;
        if (wl > (int32_t)sizeof word - 1)
            wl = (int32_t)sizeof word - 1;
        if (memmem(word, (size_t)wl, str, sl)) {
            brk_add(l, id, NULL, 0);
            continue;
        }
        for (int32_t pos = 0; pos < wl; pos++) {
            if (word[pos] != str[0])
                continue;
            size_t i = 1;
            bool match = true;
            for (; i < sl && (size_t)pos + i < (size_t)wl; i++)
                if (word[pos + (int32_t)i] != str[i]) {
                    match = false;
                    break;
                }
            if (!match)
                continue;
            int32_t nt = tokenizer_encode(t, str + i, sl - i, false, false, tail, 64);
            if (nt < 0)
                continue;
            if (nt > 64)
                nt = 64;
            brk_add(l, id, tail, nt); /* cut to DRY_MAX_TAIL there */
        }
    }
}

/* The breaker table from the parameters' strings, when they changed. */
static void brk_update(sampler *s)
{
    const sampler_params *p = &s->p;
    if (s->brk_fixed || !s->tok)
        return;
    if (s->brk_built && s->n_brk_str == p->n_dry_breakers &&
        !memcmp(s->brk_str, p->dry_breakers, (size_t)p->n_dry_breakers * sizeof p->dry_breakers[0]))
        return;
    const int32_t nv = s->n_vocab < tokenizer_n_vocab(s->tok) ? s->n_vocab : tokenizer_n_vocab(s->tok);
    brk_list l = {0};
    for (int32_t b = 0; b < p->n_dry_breakers; b++)
        if (p->dry_breakers[b][0])
            brk_from_string(&l, s->tok, nv, p->dry_breakers[b]);
    /* the same pair from two strings stays twice, as in llama.cpp's
     * multimap: harmless, the longest matching tail wins either way */
    if (install(s, l.e, l.n)) {
        s->brk_built = true;
        s->n_brk_str = p->n_dry_breakers;
        memcpy(s->brk_str, p->dry_breakers, sizeof s->brk_str);
    }
    free(l.e);
}

void sampler_set_tokenizer(sampler *s, const struct tokenizer *t)
{
    const int32_t nv = s->n_vocab < tokenizer_n_vocab(t) ? s->n_vocab : tokenizer_n_vocab(t);
    s->tok = t;
    s->brk_built = false;
    /* ignore_eos's ban list */
    int32_t *eog = malloc((size_t)nv * sizeof *eog), n_eog = 0;
    for (int32_t id = 0; eog && id < nv; id++)
        if (tokenizer_is_eog(t, id))
            eog[n_eog++] = id;
    if (eog)
        sampler_set_eog(s, eog, n_eog);
    free(eog);
}

/* hist read backwards: rat(0) is the most recent token */
#define RAT(i) (h[nh - 1 - (size_t)(i)])

void sampler_apply_dry(sampler *s, const float *logits)
{
    const sampler_params *p = &s->p;
    if (p->dry_multiplier == 0.0f || p->dry_base < 1.0f || p->dry_penalty_last_n == 0)
        return;
    brk_update(s);
    const int32_t *h = s->hist;
    const size_t nh = s->n_hist;
    size_t eff = p->dry_penalty_last_n < 0 ? nh : (size_t)p->dry_penalty_last_n;
    int32_t last_n = (int32_t)(eff < nh ? eff : nh);
    const int32_t allowed = p->dry_allowed_length;
    if (last_n <= allowed)
        return;
    if (!s->dry_max) {
        s->dry_max = calloc((size_t)s->n_vocab, sizeof *s->dry_max);
        if (!s->dry_max)
            return;
    }
    if ((size_t)last_n > s->dry_cap) { /* grows with the history, not per step */
        size_t cap = (size_t)last_n * 2;
        int32_t *rc = realloc(s->dry_count, cap * sizeof *rc);
        if (!rc)
            return;
        s->dry_count = rc;
        int32_t *tc = realloc(s->dry_touched, cap * sizeof *tc);
        if (!tc)
            return;
        s->dry_touched = tc;
        s->dry_cap = cap;
    }

    /* 1: the most recent sequence breaker limits the repeat length */
    int32_t rep_limit = last_n;
    for (int32_t i = 0; i < last_n && s->brk_start; i++) {
        int32_t tok = RAT(i);
        int32_t b0 = s->brk_start[tok], b1 = s->brk_start[tok + 1];
        if (b0 == b1)
            continue;
        int32_t longest = -1;
        for (int32_t b = b0; b < b1; b++) {
            int32_t sl = s->brk_len[b];
            if (sl > longest && sl <= i) {
                const int32_t *tail = s->brk_tail + (size_t)b * DRY_MAX_TAIL;
                bool match = true;
                for (int32_t o = 0; o < sl; o++)
                    if (tail[o] != RAT(i - o - 1)) {
                        match = false;
                        break;
                    }
                if (match)
                    longest = sl;
            }
        }
        if (longest >= 0) {
            rep_limit = i - longest;
            break;
        }
    }
    if (rep_limit < allowed)
        return;

    /* 2: reverse Z-algorithm: count[last - k] = length of the context suffix
     * that also ends k tokens earlier */
    int32_t *cnt = s->dry_count;
    memset(cnt, 0, (size_t)last_n * sizeof *cnt);
    const int32_t last = last_n - 1;
    int32_t rt = 0, lt = 0;
    for (int32_t k = 1; k < last_n; k++) {
        if (k > rt) {
            int32_t m = 0;
            while (m + k < last_n && RAT(m) == RAT(m + k))
                m++;
            cnt[last - k] = m < rep_limit ? m : rep_limit;
            if (m > 0) {
                lt = k;
                rt = k + m - 1;
            }
        } else {
            int32_t pi = k - lt, right = rt - k + 1;
            if (cnt[last - pi] < right) {
                int32_t m = cnt[last - pi];
                cnt[last - k] = m < rep_limit ? m : rep_limit;
            } else {
                int32_t i = rt + 1;
                while (i < last_n && RAT(i) == RAT(i - k))
                    i++;
                int32_t m = i - k;
                cnt[last - k] = m < rep_limit ? m : rep_limit;
                lt = k;
                rt = i - 1;
            }
        }
    }

    /* 3: the token after each repeat would extend it */
    int32_t n_touched = 0;
    for (int32_t i = 0; i < last_n - 1; i++) {
        int32_t len = cnt[i];
        if (len < allowed)
            continue;
        int32_t tok = RAT(last_n - 2 - i);
        if (s->dry_max[tok] == 0)
            s->dry_touched[n_touched++] = tok;
        if (s->dry_max[tok] < len + 1)
            s->dry_max[tok] = len + 1;
    }

    /* 4: penalties (exponent clamped so the power stays finite) */
    if (n_touched) {
        int32_t max_exp = 0;
        if (p->dry_base > 1.000001f)
            max_exp = (int32_t)(88.7228391f / logf(p->dry_base));
        for (int32_t i = 0; i < n_touched; i++) {
            int32_t id = s->dry_touched[i];
            if (s->brk_single && s->brk_single[id])
                continue;
            int32_t e = s->dry_max[id] - 1 - allowed;
            if (max_exp > 0 && e > max_exp)
                e = max_exp;
            adj_set(s, id, adj_get(s, logits, id) - p->dry_multiplier * powf(p->dry_base, (float)e));
        }
        for (int32_t i = 0; i < n_touched; i++)
            s->dry_max[s->dry_touched[i]] = 0;
    }
}
