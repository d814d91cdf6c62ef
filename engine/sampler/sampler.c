/* Sampler chain, following llama.cpp's common sampler (src/llama-sampling.cpp):
 * penalties -> top-k -> typical -> top-p -> min-p -> temperature -> draw.
 *
 * One step works on a candidate array (id, logit, p) preallocated for the
 * whole vocabulary: no allocation per step. Tokens with a -inf (or NaN) logit
 * can never be drawn and are dropped up front. Penalties and DRY touch only
 * the tokens of the history, so they are kept as sparse adjustments and top-k
 * selects its k candidates straight from the logits with a heap (one pass,
 * no copy of the vocabulary); a full sort happens only when top-k is off and
 * typical or top-p needs sorted candidates. The raw softmax statistics take
 * one vectorised pass. */
#include "sampler/sampler.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/rng.h"
#include "sampler/sampler_internal.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

const char *const sampler_param_names[] = {"temp", "top_k", "top_p", "min_p", "typical_p", "repeat_penalty",
                                           "repeat_last_n", "frequency_penalty", "presence_penalty", "seed",
                                           "n_predict", "top_n_sigma", "xtc_probability", "xtc_threshold",
                                           "mirostat", "mirostat_tau", "mirostat_eta", "dry_multiplier",
                                           "dry_base", "dry_allowed_length", "dry_penalty_last_n", NULL};

sampler_params sampler_default_params(void)
{
    sampler_params p;
    memset(&p, 0, sizeof p);
    p.temp = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.typical_p = 1.0f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.frequency_penalty = 0.0f;
    p.presence_penalty = 0.0f;
    p.seed_set = false;
    p.n_predict = -1;
    p.n_top = 10;
    p.top_n_sigma = -1.0f;
    p.xtc_probability = 0.0f;
    p.xtc_threshold = 0.1f;
    p.mirostat = 0;
    p.mirostat_tau = 5.0f;
    p.mirostat_eta = 0.1f;
    p.dry_multiplier = 0.0f;
    p.dry_base = 1.75f;
    p.dry_allowed_length = 2;
    p.dry_penalty_last_n = 64; /* common_params_sampling's */
    /* common_params_sampling's dry_sequence_breakers */
    p.n_dry_breakers = 0;
    sampler_params_add_dry_breaker(&p, "\n");
    sampler_params_add_dry_breaker(&p, ":");
    sampler_params_add_dry_breaker(&p, "\"");
    sampler_params_add_dry_breaker(&p, "*");
    return p;
}

bool sampler_params_add_dry_breaker(sampler_params *p, const char *str)
{
    size_t l = strlen(str);
    if (l == 0)
        return true;
    if (p->n_dry_breakers >= SAMPLER_MAX_DRY_BRK)
        return false;
    if (l > SAMPLER_DRY_BRK_LEN - 1)
        l = SAMPLER_DRY_BRK_LEN - 1;
    memcpy(p->dry_breakers[p->n_dry_breakers], str, l);
    p->dry_breakers[p->n_dry_breakers++][l] = 0;
    return true;
}

/* llama.cpp's seeds are 32-bit and LLAMA_DEFAULT_SEED (0xFFFFFFFF) means a
 * random one, drawn for each sampler that has a generator. */
static void sampler_apply_seed(sampler *s)
{
    const uint32_t seed = s->p.seed_set ? (uint32_t)s->p.seed : RNG_SEED_RANDOM;
    rng_seed(&s->rng, rng_seed_value(seed));
    rng_seed(&s->rng_xtc, rng_seed_value(seed));
}

sampler *sampler_build(const sampler_params *p, int32_t n_vocab)
{
    if (n_vocab <= 0)
        return NULL;
    sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p ? *p : sampler_default_params();
    s->n_vocab = n_vocab;
    s->cur = malloc((size_t)n_vocab * sizeof *s->cur);
    s->tmp = malloc((size_t)n_vocab * sizeof *s->tmp);
    s->sc = malloc((size_t)n_vocab * sizeof *s->sc);
    s->post = calloc((size_t)n_vocab, sizeof *s->post);
    s->count = calloc((size_t)n_vocab, sizeof *s->count);
    s->adj_on = calloc((size_t)n_vocab, sizeof *s->adj_on);
    s->adj_val = malloc((size_t)n_vocab * sizeof *s->adj_val);
    s->adj_list = malloc((size_t)n_vocab * sizeof *s->adj_list);
    s->cap_hist = 1024;
    s->hist = malloc(s->cap_hist * sizeof *s->hist);
    if (!s->cur || !s->tmp || !s->sc || !s->post || !s->count || !s->hist || !s->adj_on || !s->adj_val ||
        !s->adj_list) {
        sampler_free(s);
        return NULL;
    }
    sampler_apply_seed(s);
    s->mu = 2.0f * s->p.mirostat_tau;
    return s;
}

void sampler_free(sampler *s)
{
    if (!s)
        return;
    free(s->cur);
    free(s->tmp);
    free(s->sc);
    free(s->post);
    free(s->count);
    free(s->adj_on);
    free(s->adj_val);
    free(s->adj_list);
    free(s->hist);
    free(s->eog);
    free(s->biased);
    sampler_free_dry(s);
    free(s);
}

void sampler_set_params(sampler *s, const sampler_params *p)
{
    bool reseed = p->seed_set && (!s->p.seed_set || p->seed != s->p.seed);
    bool remu = p->mirostat != s->p.mirostat || p->mirostat_tau != s->p.mirostat_tau;
    s->p = *p;
    if (remu)
        s->mu = 2.0f * p->mirostat_tau;
    if (reseed)
        sampler_apply_seed(s);
}

const sampler_params *sampler_get_params(const sampler *s) { return &s->p; }

void sampler_reseed(sampler *s)
{
    sampler_apply_seed(s);
    s->mu = 2.0f * s->p.mirostat_tau;
}

void sampler_accept(sampler *s, int32_t token)
{
    if (token < 0 || token >= s->n_vocab)
        return;
    if (s->n_hist == s->cap_hist) {
        if (s->cap_hist >= HIST_MAX) {
            size_t keep = s->n_hist / 2;
            memmove(s->hist, s->hist + (s->n_hist - keep), keep * sizeof *s->hist);
            s->n_hist = keep;
        } else {
            int32_t *h = realloc(s->hist, 2 * s->cap_hist * sizeof *h);
            if (!h)
                return;
            s->hist = h;
            s->cap_hist *= 2;
        }
    }
    s->hist[s->n_hist++] = token;
    s->n_accepted++;
}

void sampler_mark_get(const sampler *s, sampler_mark *m)
{
    m->rng = s->rng;
    m->rng_xtc = s->rng_xtc;
    m->mu = s->mu;
    m->n_accepted = s->n_accepted;
}

void sampler_rewind(sampler *s, const sampler_mark *m)
{
    s->rng = m->rng;
    s->rng_xtc = m->rng_xtc;
    s->mu = m->mu;
    const uint64_t drop = s->n_accepted > m->n_accepted ? s->n_accepted - m->n_accepted : 0;
    s->n_hist = drop < s->n_hist ? s->n_hist - (size_t)drop : 0;
    s->n_accepted = m->n_accepted;
}

void sampler_reset_history(sampler *s)
{
    s->n_hist = 0;
    s->mu = 2.0f * s->p.mirostat_tau;
}

/* ---- chain steps ------------------------------------------------------- */

static int cand_cmp_desc(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int scored_cmp_asc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Total order of the candidates: larger logit first, lower id on ties, so
 * that every filter is deterministic whatever the algorithm. */
static inline bool cand_before(const cand *a, const cand *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* Rearranges a[0..n) so that a[0..k) hold the k first candidates in
 * cand_before order (unordered among themselves): quickselect, O(n). */
static void select_top(cand *a, int32_t n, int32_t k)
{
    int32_t lo = 0, hi = n - 1, target = k - 1;
    while (hi > lo) {
        int32_t mid = lo + (hi - lo) / 2;
        const cand *x = &a[lo], *y = &a[mid], *z = &a[hi];
        const cand *md = cand_before(x, y) ? (cand_before(y, z) ? y : (cand_before(x, z) ? z : x))
                                           : (cand_before(x, z) ? x : (cand_before(y, z) ? z : y));
        const cand pivot = *md;
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (cand_before(&a[i], &pivot))
                i++;
            while (cand_before(&pivot, &a[j]))
                j--;
            if (i <= j) {
                cand t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (target <= j)
            hi = j;
        else if (target >= i)
            lo = i;
        else
            break;
    }
}

/* llama.cpp's llama_sampler_softmax_impl: float exponentials summed in float
 * in the candidates' present order, p = e / sum. The filters that decide by
 * probability (top-p, typical, XTC, mirostat) use it so that their cut is
 * the reference's to the last bit. */
static void softmax_ref(cand *c, int32_t n)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit > mx)
            mx = c[i].logit;
    float sum = 0.0f;
    for (int32_t i = 0; i < n; i++) {
        c[i].p = expf(c[i].logit - mx);
        sum += c[i].p;
    }
    for (int32_t i = 0; i < n; i++)
        c[i].p /= sum;
}

/* top-p on unsorted candidates without sorting them all: select and sort a
 * growing head (256, 1024, ...) until its mass reaches tp. Leaves the
 * survivors sorted at the front. The probabilities are softmax_ref's over
 * the unsorted order, as the reference computes them before it sorts. */
static int32_t top_p_unsorted(cand *c, int32_t n, float tp)
{
    softmax_ref(c, n);
    int32_t done = 0; /* c[0..done) sorted, all before the rest */
    float cum = 0.0f;
    for (int32_t m = 256;; m *= 4) {
        if (m >= n) {
            qsort(c + done, (size_t)(n - done), sizeof *c, cand_cmp_desc);
            m = n;
        } else {
            select_top(c + done, n - done, m - done);
            qsort(c + done, (size_t)(m - done), sizeof *c, cand_cmp_desc);
        }
        for (int32_t i = done; i < m; i++) {
            cum += c[i].p;
            if (cum >= tp)
                return i + 1;
        }
        if (m == n)
            return n;
        done = m;
    }
}

/* Entropy (nats) of c[0..n).p. */
static float entropy_of(const cand *c, int32_t n)
{
    double h = 0.0;
    for (int32_t i = 0; i < n; i++)
        if (c[i].p > 0.0f)
            h -= (double)c[i].p * log(c[i].p);
    return (float)h;
}

/* Softmax of cur[0..n) into .p; returns the entropy (nats). */
static float softmax_cand(cand *c, int32_t n)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit > mx)
            mx = c[i].logit;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        float e = expf(c[i].logit - mx);
        c[i].p = e;
        sum += e;
    }
    double h = 0.0;
    for (int32_t i = 0; i < n; i++) {
        c[i].p = (float)(c[i].p / sum);
        if (c[i].p > 0.0f)
            h -= (double)c[i].p * log(c[i].p);
    }
    return (float)h;
}

/* Repeat, frequency and presence penalties of the tokens in the last
 * repeat_last_n accepted, as adjustments (only those tokens change). */
static void apply_penalties(sampler *s, const float *logits)
{
    const sampler_params *p = &s->p;
    if (p->repeat_last_n == 0 || s->n_hist == 0 ||
        (p->repeat_penalty == 1.0f && p->frequency_penalty == 0.0f && p->presence_penalty == 0.0f))
        return;
    size_t last = p->repeat_last_n < 0 ? s->n_hist : (size_t)p->repeat_last_n;
    if (last > s->n_hist)
        last = s->n_hist;
    const int32_t *h = s->hist + (s->n_hist - last);
    for (size_t i = 0; i < last; i++)
        s->count[h[i]]++;
    for (size_t i = 0; i < last; i++) {
        int32_t id = h[i], c = s->count[id];
        if (c == 0)
            continue; /* done at its first occurrence */
        s->count[id] = 0;
        float l = adj_get(s, logits, id);
        if (l <= 0.0f)
            l *= p->repeat_penalty;
        else
            l /= p->repeat_penalty;
        l -= (float)c * p->frequency_penalty + p->presence_penalty;
        adj_set(s, id, l);
    }
}

/* Locally typical sampling: keep the candidates whose information content is
 * closest to the entropy until their mass exceeds typical_p. As llama.cpp:
 * sorted, softmax_ref, float entropy; leaves them in typicality order. */
static int32_t apply_typical(sampler *s, int32_t n, float tp)
{
    cand *c = s->cur;
    qsort(c, (size_t)n, sizeof *c, cand_cmp_desc);
    softmax_ref(c, n);
    float ent = 0.0f;
    for (int32_t i = 0; i < n; i++)
        ent += -c[i].p * logf(c[i].p);
    for (int32_t i = 0; i < n; i++) {
        s->sc[i].score = fabsf(-logf(c[i].p) - ent);
        s->sc[i].i = i;
    }
    qsort(s->sc, (size_t)n, sizeof *s->sc, scored_cmp_asc);
    float cum = 0.0f;
    int32_t last = n;
    for (int32_t i = 0; i < n; i++) {
        cum += c[s->sc[i].i].p;
        if (cum > tp) {
            last = i + 1;
            break;
        }
    }
    for (int32_t i = 0; i < last; i++)
        s->tmp[i] = c[s->sc[i].i];
    memcpy(c, s->tmp, (size_t)last * sizeof *c);
    return last;
}

/* c sorted; probabilities as softmax_ref over that order (the reference
 * sums them sorted after top-k, unsorted otherwise: see the caller). */
static int32_t apply_top_p(cand *c, int32_t n, float tp)
{
    float cum = 0.0f;
    for (int32_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (cum >= tp)
            return i + 1;
    }
    return n;
}

static int32_t apply_min_p(cand *c, int32_t n, float mp)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit > mx)
            mx = c[i].logit;
    const float min_logit = mx + logf(mp);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit >= min_logit)
            c[m++] = c[i];
    return m;
}

/* Keeps the candidates within n standard deviations (over every finite
 * penalised logit, computed by the caller) of the maximum. */
static int32_t apply_top_n_sigma(cand *c, int32_t n, float nsig, double std)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit > mx)
            mx = c[i].logit;
    const float thr = mx - nsig * (float)std;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (!(c[i].logit < thr))
            c[m++] = c[i];
    return m;
}

/* Exclude Top Choices: with probability xtc_probability, drop every candidate
 * at or above the threshold except the least likely of them. Its own
 * generator draws a float each step (llama.cpp's uniform_real_distribution
 * <float>); only when it fires are the candidates sorted. */
static int32_t apply_xtc(sampler *s, cand *c, int32_t n, bool *sorted)
{
    const sampler_params *p = &s->p;
    if (p->xtc_probability <= 0.0f || p->xtc_threshold > 0.5f || n < 2)
        return n;
    if (rng_uniform_float(&s->rng_xtc) > p->xtc_probability)
        return n;
    if (!*sorted)
        qsort(c, (size_t)n, sizeof *c, cand_cmp_desc);
    *sorted = true;
    softmax_ref(c, n);
    int32_t last = 0;
    for (int32_t i = 0; i < n && c[i].p >= p->xtc_threshold; i++)
        last = i;
    if (last > 0) {
        memmove(c, c + last, (size_t)(n - last) * sizeof *c);
        n -= last;
    }
    return n;
}

/* Greedy: the first candidate in cand_before order, alone, with p = 1. */
static int32_t pick_greedy(cand *c, int32_t *n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < *n; i++)
        if (cand_before(&c[i], &c[best]))
            best = i;
    c[0] = c[best];
    c[0].p = 1.0f;
    *n = 1;
    return 0;
}

/* llama.cpp's dist sampler: one uniform double r per step; the exponentials
 * of the (tempered) logits, summed in double in the candidates' order, and
 * the first candidate where the running sum reaches r times the total. */
static int32_t draw(sampler *s, const cand *c, int32_t n)
{
    const double r = rng_uniform(&s->rng);
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit > mx)
            mx = c[i].logit;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += expf(c[i].logit - mx);
    const double target = sum * r;
    double run = 0.0;
    for (int32_t i = 0; i < n; i++) {
        run += expf(c[i].logit - mx);
        if (run >= target)
            return i;
    }
    return n - 1;
}

/* std::discrete_distribution<int> over c[0..n).p under libstdc++ (mirostat's
 * draw): weights as doubles normalised by their double sum, partial sums
 * with the last one set to 1, the first partial sum >= one uniform double.
 * Fewer than two weights draw nothing and give 0. */
static int32_t draw_discrete(sampler *s, const cand *c, int32_t n)
{
    if (n < 2)
        return 0;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += (double)c[i].p;
    const double u = rng_uniform(&s->rng);
    double cp = 0.0;
    for (int32_t i = 0; i < n - 1; i++) {
        cp += (double)c[i].p / sum;
        if (cp >= u)
            return i;
    }
    return n - 1;
}

/* ---- raw distribution statistics (one pass, vectorised where possible) --- */

typedef struct raw_stats {
    float max;
    double sum;  /* sum of exp(l - max) */
    double wsum; /* sum of exp(l - max) * (l - max), for the entropy */
    int32_t n_finite;
} raw_stats;

#if defined(__AVX2__) && defined(__FMA__)

/* exp of 8 floats (Cephes expf: range reduction + degree-6 polynomial, ~1 ulp) */
static inline __m256 exp8(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.3f);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

static float max_of(const float *l, int32_t n)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        m = _mm256_max_ps(_mm256_loadu_ps(l + i), m); /* a NaN lane keeps m */
    float t[8], mx = -INFINITY;
    _mm256_storeu_ps(t, m);
    for (int k = 0; k < 8; k++)
        if (t[k] > mx)
            mx = t[k];
    for (; i < n; i++)
        if (l[i] > mx)
            mx = l[i];
    return mx;
}

static void exp_sums(const float *l, int32_t n, float mx, raw_stats *r)
{
    const __m256 vmx = _mm256_set1_ps(mx), vlo = _mm256_set1_ps(-87.0f), vninf = _mm256_set1_ps(-INFINITY);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, w0 = s0, w1 = s0;
    int32_t nf = 0, i = 0;
    while (i + 8 <= n) {
        /* float partial sums over at most 64 values, then into doubles */
        __m256 se = _mm256_setzero_ps(), sw = se;
        for (int32_t end = i + 64 <= n ? i + 64 : n; i + 8 <= end; i += 8) {
            __m256 x = _mm256_loadu_ps(l + i);
            nf += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(x, vninf, _CMP_GT_OQ)));
            __m256 d = _mm256_sub_ps(x, vmx);
            __m256 ok = _mm256_cmp_ps(d, vlo, _CMP_GT_OQ); /* -inf, NaN and negligible terms drop out */
            __m256 e = _mm256_and_ps(exp8(d), ok);
            se = _mm256_add_ps(se, e);
            sw = _mm256_fmadd_ps(e, _mm256_and_ps(d, ok), sw);
        }
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(se)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(se, 1)));
        w0 = _mm256_add_pd(w0, _mm256_cvtps_pd(_mm256_castps256_ps128(sw)));
        w1 = _mm256_add_pd(w1, _mm256_cvtps_pd(_mm256_extractf128_ps(sw, 1)));
    }
    double t[4], sum = 0, wsum = 0;
    _mm256_storeu_pd(t, _mm256_add_pd(s0, s1));
    sum = t[0] + t[1] + t[2] + t[3];
    _mm256_storeu_pd(t, _mm256_add_pd(w0, w1));
    wsum = t[0] + t[1] + t[2] + t[3];
    for (; i < n; i++) {
        float x = l[i];
        if (!(x > -INFINITY))
            continue;
        nf++;
        float d = x - mx;
        float e = expf(d);
        sum += e;
        wsum += (double)e * d;
    }
    r->sum = sum;
    r->wsum = wsum;
    r->n_finite = nf;
}
#else
static float max_of(const float *l, int32_t n)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (l[i] > mx)
            mx = l[i];
    return mx;
}

static void exp_sums(const float *l, int32_t n, float mx, raw_stats *r)
{
    double sum = 0, wsum = 0;
    int32_t nf = 0;
    for (int32_t i = 0; i < n; i++) {
        float x = l[i];
        if (!(x > -INFINITY))
            continue;
        nf++;
        float d = x - mx;
        float e = expf(d);
        sum += e;
        wsum += (double)e * d;
    }
    r->sum = sum;
    r->wsum = wsum;
    r->n_finite = nf;
}
#endif

/* Every finite logit (penalised) as a candidate. */
static int32_t gather_all(sampler *s, const float *logits, bool adjusted)
{
    cand *c = s->cur;
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_vocab; i++) {
        float l = logits[i];
        if (!(l > -INFINITY))
            continue;
        c[n].id = i;
        c[n].logit = adjusted && s->adj_on[i] ? s->adj_val[i] : l;
        n++;
    }
    return n;
}

static void heap_push(cand *hp, int32_t *m, cand x)
{
    int32_t j = (*m)++;
    while (j > 0) {
        int32_t par = (j - 1) / 2;
        if (!cand_before(&hp[par], &x))
            break;
        hp[j] = hp[par];
        j = par;
    }
    hp[j] = x;
}

/* Replaces the heap's worst (hp[0]) by x and restores the order. */
static void heap_replace(cand *hp, int32_t m, cand x)
{
    int32_t j = 0;
    for (;;) {
        int32_t a = 2 * j + 1, b = a + 1, w = j;
        const cand *wc = &x;
        if (a < m && cand_before(wc, &hp[a]))
            w = a, wc = &hp[a];
        if (b < m && cand_before(wc, &hp[b]))
            w = b;
        if (w == j)
            break;
        hp[j] = hp[w];
        j = w;
    }
    hp[j] = x;
}

/* One raw logit of the scan: ids grow, so an equal logit never beats the
 * heap's worst. Adjusted tokens are left for later. */
static inline void top_k_offer(sampler *s, const float *logits, int32_t i, int32_t k, int32_t *m)
{
    cand *hp = s->cur;
    float l = logits[i];
    if (!(l > -INFINITY) || s->adj_on[i])
        return;
    cand x = {.id = i, .logit = l};
    if (*m < k)
        heap_push(hp, m, x);
    else if (l > hp[0].logit)
        heap_replace(hp, *m, x);
}

/* The k best penalised finite logits in one pass (min-heap on cand_before
 * order; once it is full a vector compare skips whole blocks below its
 * worst), sorted descending: top-k without copying the vocabulary. */
static int32_t gather_top_k(sampler *s, const float *logits, int32_t k)
{
    cand *hp = s->cur;
    const int32_t nv = s->n_vocab;
    int32_t m = 0, i = 0;
    for (; i < nv && m < k; i++)
        top_k_offer(s, logits, i, k, &m);
#if defined(__AVX2__)
    for (; m == k && i + 8 <= nv; i += 8) {
        unsigned mask = (unsigned)_mm256_movemask_ps(
            _mm256_cmp_ps(_mm256_loadu_ps(logits + i), _mm256_set1_ps(hp[0].logit), _CMP_GT_OQ));
        while (mask) {
            top_k_offer(s, logits, i + __builtin_ctz(mask), k, &m);
            mask &= mask - 1;
        }
    }
#endif
    for (; i < nv; i++)
        top_k_offer(s, logits, i, k, &m);
    for (int32_t a = 0; a < s->n_adj; a++) { /* penalised tokens, by full order */
        int32_t id = s->adj_list[a];
        if (!(logits[id] > -INFINITY))
            continue;
        cand x = {.id = id, .logit = s->adj_val[id]};
        if (m < k)
            heap_push(hp, &m, x);
        else if (cand_before(&x, &hp[0]))
            heap_replace(hp, m, x);
    }
    qsort(hp, (size_t)m, sizeof *hp, cand_cmp_desc);
    return m;
}

static inline void top_offer(const float *logits, int32_t id, int32_t n_top, sampler_candidate *top, int32_t *m)
{
    float l = logits[id];
    if (isnan(l) || (*m == n_top && !(l > top[*m - 1].logit)))
        return;
    int32_t j = *m < n_top ? (*m)++ : *m - 1;
    while (j > 0 && top[j - 1].logit < l) {
        top[j] = top[j - 1];
        j--;
    }
    top[j].id = id;
    top[j].logit = l;
}

/* Keeps the n_top largest raw logits in top[] (descending, ties by id). */
static int32_t collect_top(const float *logits, int32_t n_vocab, int32_t n_top, sampler_candidate *top)
{
    int32_t m = 0, i = 0;
    if (n_top <= 0)
        return 0;
    for (; i < n_vocab && m < n_top; i++)
        top_offer(logits, i, n_top, top, &m);
#if defined(__AVX2__)
    for (; i + 8 <= n_vocab; i += 8) {
        unsigned mask = (unsigned)_mm256_movemask_ps(
            _mm256_cmp_ps(_mm256_loadu_ps(logits + i), _mm256_set1_ps(top[m - 1].logit), _CMP_GT_OQ));
        while (mask) {
            top_offer(logits, i + __builtin_ctz(mask), n_top, top, &m);
            mask &= mask - 1;
        }
    }
#endif
    for (; i < n_vocab; i++)
        top_offer(logits, i, n_top, top, &m);
    return m;
}

/* Number of logits strictly above x (the chosen token's rank). */
static int32_t count_above(const float *l, int32_t n, float x)
{
    int32_t r = 0, i = 0;
#if defined(__AVX2__)
    const __m256 vx = _mm256_set1_ps(x);
    for (; i + 8 <= n; i += 8)
        r += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(l + i), vx, _CMP_GT_OQ)));
#endif
    for (; i < n; i++)
        r += l[i] > x;
    return r;
}

/* Standard deviation of every finite penalised logit (for top-n-sigma). */
static double penalised_std(const sampler *s, const float *logits, int32_t n_finite)
{
    double sum = 0, sq = 0;
    for (int32_t i = 0; i < s->n_vocab; i++) {
        float l = logits[i];
        if (!(l > -INFINITY))
            continue;
        sum += l;
        sq += (double)l * l;
    }
    for (int32_t k = 0; k < s->n_adj; k++) {
        int32_t id = s->adj_list[k];
        double r = logits[id], a = s->adj_val[id];
        if (!(r > -INFINITY))
            continue;
        sum += a - r;
        sq += a * a - r * r;
    }
    double mean = sum / n_finite, var = sq / n_finite - mean * mean;
    return var > 0 ? sqrt(var) : 0.0;
}

/* logit_bias and ignore_eos: s->biased = logits with each bias entry added
 * in turn (llama.cpp's logit-bias sampler, the chain's first step), then
 * every end-of-generation token at -inf. Returns how many finite logits that
 * took away (each counted where it turns -inf, so a token biased twice counts
 * once), -1 when out of memory (no bias then). */
static int32_t bias_apply(sampler *s, const float *logits, const sampler_params *p)
{
    if (!s->biased && !(s->biased = malloc((size_t)s->n_vocab * sizeof *s->biased)))
        return -1;
    memcpy(s->biased, logits, (size_t)s->n_vocab * sizeof *s->biased);
    float *b = s->biased;
    int32_t nb = 0;
    for (int32_t i = 0; i < p->n_bias; i++) {
        const int32_t id = p->bias[i].id;
        if (id < 0 || id >= s->n_vocab)
            continue;
        const bool was = b[id] > -INFINITY;
        b[id] += p->bias[i].bias;
        nb += was && !(b[id] > -INFINITY);
    }
    for (int32_t i = 0; p->ignore_eos && i < s->n_eog; i++) {
        nb += b[s->eog[i]] > -INFINITY;
        b[s->eog[i]] = -INFINITY;
    }
    return nb;
}

bool sampler_set_eog(sampler *s, const int32_t *ids, int32_t n)
{
    int32_t *e = n > 0 ? malloc((size_t)n * sizeof *e) : NULL;
    if (n > 0 && !e)
        return false;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        bool dup = false;
        for (int32_t k = 0; k < m && !dup; k++)
            dup = e[k] == ids[i];
        if (ids[i] >= 0 && ids[i] < s->n_vocab && !dup)
            e[m++] = ids[i];
    }
    free(s->eog);
    s->eog = e;
    s->n_eog = m;
    return true;
}

/* force < 0: draw (SAMPLE_DRAW) or choose nothing (SAMPLE_NONE); >= 0:
 * that token is the choice. Only a draw changes the sampler's state. */
#define SAMPLE_DRAW (-1)
#define SAMPLE_NONE (-2)

static int32_t choose(sampler *s, const cand *c, int32_t n, int32_t force)
{
    if (force == SAMPLE_DRAW)
        return draw(s, c, n);
    for (int32_t i = 0; force >= 0 && i < n; i++)
        if (c[i].id == force)
            return i;
    return -1; /* filtered out, or no choice */
}

static int32_t sample(sampler *s, const float *logits, sampler_step *step, int32_t force)
{
    const sampler_params *p = &s->p;
    const int32_t nv = s->n_vocab;
    cand *c = s->cur;

    raw_stats rs;
    rs.max = max_of(logits, nv);
    rs.sum = rs.wsum = 0;
    rs.n_finite = 0;
    if (rs.max > -INFINITY)
        exp_sums(logits, nv, rs.max, &rs);
    if (rs.n_finite == 0) { /* nothing drawable: report token 0 with zero probabilities */
        if (step) {
            memset(step, 0, sizeof *step);
            step->logit = logits[0];
        }
        return 0;
    }

    /* the chain reads cl: the logits with logit_bias's and ignore_eos's bias; the report the raw ones */
    const float *cl = logits;
    int32_t n_finite = rs.n_finite;
    if (p->n_bias > 0 || (p->ignore_eos && s->n_eog > 0)) {
        int32_t nb = bias_apply(s, logits, p);
        if (nb >= 0 && nb < n_finite) { /* all of them banned: nothing to ban in favour of */
            cl = s->biased;
            n_finite -= nb;
        }
    }

    int32_t n, chosen;
    float ent_post = 0.0f;
    if (p->mirostat == 2) {
        /* llama.cpp's mirostat chain: temperature, then mirostat v2 (no penalties) */
        n = gather_all(s, cl, false);
        if (p->temp <= 0.0f) {
            chosen = pick_greedy(c, &n);
            if (force != SAMPLE_DRAW)
                chosen = choose(s, c, n, force);
        } else {
            for (int32_t i = 0; i < n; i++)
                c[i].logit /= p->temp;
            /* as llama.cpp: sorted, softmax_ref, cut at the first token whose
             * surprise -log2 p exceeds mu (keeping at least one), softmax_ref
             * again, then a discrete_distribution draw */
            qsort(c, (size_t)n, sizeof *c, cand_cmp_desc);
            softmax_ref(c, n);
            int32_t m = 0;
            while (m < n && !(-log2f(c[m].p) > s->mu))
                m++;
            n = m > 0 ? m : 1;
            softmax_ref(c, n);
            ent_post = entropy_of(c, n);
            chosen = force == SAMPLE_DRAW ? draw_discrete(s, c, n) : choose(s, c, n, force);
        }
        if (force == SAMPLE_DRAW)
            s->mu -= p->mirostat_eta * (-log2f(c[chosen].p) - p->mirostat_tau);
    } else {
        apply_penalties(s, cl);
        sampler_apply_dry(s, cl);
        bool sorted = false;
        if (p->top_k > 0 && p->top_k < n_finite) {
            n = gather_top_k(s, cl, p->top_k);
            sorted = true;
        } else {
            n = gather_all(s, cl, true);
        }
        /* top-n-sigma precedes top-k in the chain; both keep the largest
         * logits, so applying it to the top-k survivors is the same */
        if (p->top_n_sigma > 0.0f && n > 1)
            n = apply_top_n_sigma(c, n, p->top_n_sigma, penalised_std(s, cl, n_finite));
        for (int32_t k = 0; k < s->n_adj; k++)
            s->adj_on[s->adj_list[k]] = 0;
        s->n_adj = 0;

        if (!sorted && p->top_k > 0) { /* top-k of the whole vocabulary still sorts it */
            qsort(c, (size_t)n, sizeof *c, cand_cmp_desc);
            sorted = true;
        }
        /* the order of the candidates matters beyond the filters: the final
         * draw walks them as they are, so each step keeps the reference's
         * (vocabulary order until something sorts) */
        if (p->typical_p < 1.0f && n > 1) {
            n = apply_typical(s, n, p->typical_p);
            sorted = false;
        }
        if (p->top_p < 1.0f && n > 1) {
            if (!sorted && n > 4096)
                n = top_p_unsorted(c, n, p->top_p);
            else {
                softmax_ref(c, n); /* summed in the present order, then sorted */
                if (!sorted)
                    qsort(c, (size_t)n, sizeof *c, cand_cmp_desc);
                n = apply_top_p(c, n, p->top_p);
            }
            sorted = true;
        }
        if (p->min_p > 0.0f && n > 1)
            n = apply_min_p(c, n, p->min_p);
        if (p->xtc_probability > 0.0f && n > 1)
            n = apply_xtc(s, c, n, &sorted);

        if (p->temp <= 0.0f) {
            chosen = pick_greedy(c, &n);
            if (force == SAMPLE_DRAW)
                (void)rng_uniform(&s->rng); /* the reference's dist draws at temp 0 too */
            else
                chosen = choose(s, c, n, force);
        } else {
            for (int32_t i = 0; i < n; i++)
                c[i].logit /= p->temp;
            ent_post = softmax_cand(c, n);
            chosen = choose(s, c, n, force);
        }
    }
    const int32_t token = chosen >= 0 ? c[chosen].id : force >= 0 ? force : -1;

    if (step) {
        const double sum = rs.sum;
        const float mx = rs.max;
        step->token = token;
        step->logit = token >= 0 ? logits[token] : 0.0f;
        step->p_raw = token >= 0 ? (float)(exp((double)logits[token] - mx) / sum) : 0.0f;
        step->p_post = chosen >= 0 ? c[chosen].p : 0.0f;
        step->entropy_raw = (float)(log(sum) - rs.wsum / sum);
        step->entropy_post = ent_post;
        step->n_survivors = n;
        step->rank = token >= 0 ? count_above(logits, nv, logits[token]) : 0;
        int32_t n_top = p->n_top < 0 ? 0 : p->n_top > SAMPLER_MAX_TOP ? SAMPLER_MAX_TOP : p->n_top;
        for (int32_t i = 0; i < n; i++)
            s->post[c[i].id] = c[i].p;
        step->n_top = collect_top(logits, nv, n_top, step->top);
        for (int32_t i = 0; i < step->n_top; i++) {
            sampler_candidate *t = &step->top[i];
            t->p_raw = t->logit > -INFINITY ? (float)(exp((double)t->logit - mx) / sum) : 0.0f;
            t->p_post = s->post[t->id];
        }
        for (int32_t i = 0; i < n; i++)
            s->post[c[i].id] = 0.0f;
    }
    return token;
}

int32_t sampler_sample(sampler *s, const float *logits, sampler_step *step)
{
    return sample(s, logits, step, SAMPLE_DRAW);
}

void sampler_report(sampler *s, const float *logits, int32_t token, sampler_step *step)
{
    /* XTC draws to decide; with the state restored, the draw that follows
     * a report decides the same way, so the report shows what it will use */
    const rng saved = s->rng, saved_xtc = s->rng_xtc;
    const float mu = s->mu;
    sample(s, logits, step, token >= 0 ? token : SAMPLE_NONE);
    s->rng = saved;
    s->rng_xtc = saved_xtc;
    s->mu = mu;
}

/* ---- parameters by name ------------------------------------------------- */

static bool parse_float(const char *v, float lo, float hi, float *out, const char *name, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0.0;
    if (!v || end == v || errno || !isfinite(d)) {
        snprintf(err, errlen, "%s: '%s' is not a number", name, v ? v : "");
        return false;
    }
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (*end) {
        snprintf(err, errlen, "%s: '%s' is not a number", name, v);
        return false;
    }
    if (d < lo || d > hi) {
        snprintf(err, errlen, "%s must be in [%g, %g], got %s", name, lo, hi, v);
        return false;
    }
    *out = (float)d;
    return true;
}

static bool parse_int(const char *v, long long lo, long long hi, long long *out, const char *name, char *err,
                      size_t errlen)
{
    char *end;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || end == v || errno) {
        snprintf(err, errlen, "%s: '%s' is not an integer", name, v ? v : "");
        return false;
    }
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (*end) {
        snprintf(err, errlen, "%s: '%s' is not an integer", name, v);
        return false;
    }
    if (x < lo || x > hi) {
        snprintf(err, errlen, "%s must be in [%lld, %lld], got %s", name, lo, hi, v);
        return false;
    }
    *out = x;
    return true;
}

bool sampler_params_set(sampler_params *p, const char *name, const char *value, char *err, size_t errlen)
{
    long long i;
    if (!name) {
        snprintf(err, errlen, "missing parameter name");
        return false;
    }
    if (!strcmp(name, "temp") || !strcmp(name, "temperature"))
        return parse_float(value, 0.0f, 100.0f, &p->temp, "temp", err, errlen);
    if (!strcmp(name, "top_k")) {
        if (!parse_int(value, -1, 1000000000, &i, name, err, errlen))
            return false;
        p->top_k = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "top_p"))
        return parse_float(value, 0.0f, 1.0f, &p->top_p, name, err, errlen);
    if (!strcmp(name, "min_p"))
        return parse_float(value, 0.0f, 1.0f, &p->min_p, name, err, errlen);
    if (!strcmp(name, "typical_p"))
        return parse_float(value, 0.0f, 1.0f, &p->typical_p, name, err, errlen);
    if (!strcmp(name, "repeat_penalty")) {
        float f;
        if (!parse_float(value, 0.0f, 10.0f, &f, name, err, errlen))
            return false;
        if (f <= 0.0f) {
            snprintf(err, errlen, "repeat_penalty must be > 0 (1 disables)");
            return false;
        }
        p->repeat_penalty = f;
        return true;
    }
    if (!strcmp(name, "repeat_last_n")) {
        if (!parse_int(value, -1, 1 << 24, &i, name, err, errlen))
            return false;
        p->repeat_last_n = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "frequency_penalty"))
        return parse_float(value, -10.0f, 10.0f, &p->frequency_penalty, name, err, errlen);
    if (!strcmp(name, "presence_penalty"))
        return parse_float(value, -10.0f, 10.0f, &p->presence_penalty, name, err, errlen);
    if (!strcmp(name, "seed")) {
        if (value && (!strcmp(value, "random") || !strcmp(value, "-1"))) {
            p->seed_set = false;
            return true;
        }
        char *end;
        errno = 0;
        unsigned long long x = value ? strtoull(value, &end, 10) : 0;
        if (!value || end == value || errno || *end || value[0] == '-') {
            snprintf(err, errlen, "seed: '%s' is not a non-negative integer (or 'random')", value ? value : "");
            return false;
        }
        p->seed = x;
        p->seed_set = true;
        return true;
    }
    if (!strcmp(name, "n_predict")) {
        if (!parse_int(value, -1, 1 << 30, &i, name, err, errlen))
            return false;
        p->n_predict = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "top_n_sigma")) {
        float f;
        if (!parse_float(value, -1.0f, 100.0f, &f, name, err, errlen))
            return false;
        p->top_n_sigma = f;
        return true;
    }
    if (!strcmp(name, "xtc_probability"))
        return parse_float(value, 0.0f, 1.0f, &p->xtc_probability, name, err, errlen);
    if (!strcmp(name, "xtc_threshold"))
        return parse_float(value, 0.0f, 1.0f, &p->xtc_threshold, name, err, errlen);
    if (!strcmp(name, "mirostat")) {
        if (!parse_int(value, 0, 2, &i, name, err, errlen))
            return false;
        if (i == 1) {
            snprintf(err, errlen, "mirostat: only 0 (off) and 2 (mirostat v2) are supported");
            return false;
        }
        p->mirostat = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "mirostat_tau"))
        return parse_float(value, 0.0f, 100.0f, &p->mirostat_tau, name, err, errlen);
    if (!strcmp(name, "mirostat_eta"))
        return parse_float(value, 0.0f, 10.0f, &p->mirostat_eta, name, err, errlen);
    if (!strcmp(name, "dry_multiplier"))
        return parse_float(value, 0.0f, 100.0f, &p->dry_multiplier, name, err, errlen);
    if (!strcmp(name, "dry_base"))
        return parse_float(value, 1.0f, 100.0f, &p->dry_base, name, err, errlen);
    if (!strcmp(name, "dry_allowed_length")) {
        if (!parse_int(value, 0, 1 << 20, &i, name, err, errlen))
            return false;
        p->dry_allowed_length = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "dry_penalty_last_n")) {
        if (!parse_int(value, -1, 1 << 24, &i, name, err, errlen))
            return false;
        p->dry_penalty_last_n = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "n_top")) {
        if (!parse_int(value, 0, SAMPLER_MAX_TOP, &i, name, err, errlen))
            return false;
        p->n_top = (int32_t)i;
        return true;
    }
    if (!strcmp(name, "stop")) {
        if (!value || !*value) { /* empty value clears the list */
            p->n_stop = 0;
            return true;
        }
        if (strlen(value) >= SAMPLER_STOP_LEN) {
            snprintf(err, errlen, "stop string too long (at most %d bytes)", SAMPLER_STOP_LEN - 1);
            return false;
        }
        for (int32_t k = 0; k < p->n_stop; k++)
            if (!strcmp(p->stop[k], value))
                return true;
        if (p->n_stop >= SAMPLER_MAX_STOP) {
            snprintf(err, errlen, "too many stop strings (at most %d)", SAMPLER_MAX_STOP);
            return false;
        }
        snprintf(p->stop[p->n_stop++], SAMPLER_STOP_LEN, "%s", value);
        return true;
    }
    snprintf(err, errlen, "unknown sampling parameter '%s'", name);
    return false;
}

bool sampler_params_get(const sampler_params *p, const char *name, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return false;
    buf[0] = 0;
    if (!name)
        return false;
    if (!strcmp(name, "temp") || !strcmp(name, "temperature"))
        snprintf(buf, cap, "%g", (double)p->temp);
    else if (!strcmp(name, "top_k"))
        snprintf(buf, cap, "%d", (int)p->top_k);
    else if (!strcmp(name, "top_p"))
        snprintf(buf, cap, "%g", (double)p->top_p);
    else if (!strcmp(name, "min_p"))
        snprintf(buf, cap, "%g", (double)p->min_p);
    else if (!strcmp(name, "typical_p"))
        snprintf(buf, cap, "%g", (double)p->typical_p);
    else if (!strcmp(name, "repeat_penalty"))
        snprintf(buf, cap, "%g", (double)p->repeat_penalty);
    else if (!strcmp(name, "repeat_last_n"))
        snprintf(buf, cap, "%d", (int)p->repeat_last_n);
    else if (!strcmp(name, "frequency_penalty"))
        snprintf(buf, cap, "%g", (double)p->frequency_penalty);
    else if (!strcmp(name, "presence_penalty"))
        snprintf(buf, cap, "%g", (double)p->presence_penalty);
    else if (!strcmp(name, "seed")) {
        if (p->seed_set)
            snprintf(buf, cap, "%llu", (unsigned long long)p->seed);
        else
            snprintf(buf, cap, "random");
    } else if (!strcmp(name, "n_predict"))
        snprintf(buf, cap, "%d", (int)p->n_predict);
    else if (!strcmp(name, "n_top"))
        snprintf(buf, cap, "%d", (int)p->n_top);
    else if (!strcmp(name, "top_n_sigma"))
        snprintf(buf, cap, "%g", (double)p->top_n_sigma);
    else if (!strcmp(name, "xtc_probability"))
        snprintf(buf, cap, "%g", (double)p->xtc_probability);
    else if (!strcmp(name, "xtc_threshold"))
        snprintf(buf, cap, "%g", (double)p->xtc_threshold);
    else if (!strcmp(name, "mirostat"))
        snprintf(buf, cap, "%d", (int)p->mirostat);
    else if (!strcmp(name, "mirostat_tau"))
        snprintf(buf, cap, "%g", (double)p->mirostat_tau);
    else if (!strcmp(name, "mirostat_eta"))
        snprintf(buf, cap, "%g", (double)p->mirostat_eta);
    else if (!strcmp(name, "dry_multiplier"))
        snprintf(buf, cap, "%g", (double)p->dry_multiplier);
    else if (!strcmp(name, "dry_base"))
        snprintf(buf, cap, "%g", (double)p->dry_base);
    else if (!strcmp(name, "dry_allowed_length"))
        snprintf(buf, cap, "%d", (int)p->dry_allowed_length);
    else if (!strcmp(name, "dry_penalty_last_n"))
        snprintf(buf, cap, "%d", (int)p->dry_penalty_last_n);
    else if (!strcmp(name, "stop")) {
        /* "a" "b": each stop string quoted, space-separated */
        size_t off = 0;
        for (int32_t k = 0; k < p->n_stop && off < cap; k++) {
            int w = snprintf(buf + off, cap - off, "%s\"%s\"", k ? " " : "", p->stop[k]);
            if (w < 0)
                break;
            off += (size_t)w;
        }
    } else
        return false;
    return true;
}
