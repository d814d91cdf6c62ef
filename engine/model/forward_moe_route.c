/* The router of a mixture of experts (forward_graph.h's fwd_block_moe):
 * one token's logits to its experts and their weights, as llama.cpp's
 * build_moe_ffn computes them on the CPU backend:
 *  - softmax is ggml_soft_max: the max, expf(x - max) summed in double
 *    (16 lanes of ggml_v_expf at a time, each reduced like
 *    _mm512_reduce_add_ps, the tail with libm's expf), times (float)(1/sum);
 *    sigmoid is 1 / (1 + expf(-x));
 *  - the top k is ggml_argsort (descending) cut to k: std::sort, whose
 *    libstdc++ algorithm (introsort, median of three, insertion sort below
 *    17) decides which of two equal probabilities comes first, so
 *    moe_argsort_desc repeats it step for step;
 *  - the weights' sum is ggml_sum_rows (in double, rounded to float),
 *    clamped below at 2^-14, each weight divided by it, then ggml_scale. */
#include <math.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "model/arch.h"
#include "model/forward_internal.h"

/* ggml_soft_max_f32 on one row of n (AVX-512 build): y may be x. */
void moe_softmax(const float *x, float *y, int n)
{
    float max = -INFINITY;
    for (int i = 0; i < n; i++)
        max = max > x[i] ? max : x[i];
    double sum = 0.0;
    int i = 0;
    for (; i + 15 < n; i += 16) {
        float v[16];
        for (int l = 0; l < 16; l++)
            v[l] = v_expf(x[i + l] - max);
        for (int l = 0; l < 16; l++)
            y[i + l] = v[l];
        sum += (double)red16(v);
    }
    for (; i < n; i++) {
        const float v = expf(x[i] - max);
        sum += (double)v;
        y[i] = v;
    }
    sum = 1.0 / sum;
    const float s = (float)sum;
    for (int j = 0; j < n; j++)
        y[j] *= s;
}

/* libstdc++'s std::sort of idx[0, n) by v[idx] descending (ggml_argsort),
 * step for step, so that equal values end in the same order. */
static inline bool gt(const float *v, int32_t a, int32_t b) { return v[a] > v[b]; }

static void swap_i(int32_t *a, int32_t *b)
{
    const int32_t t = *a;
    *a = *b;
    *b = t;
}

static void push_heap(int32_t *first, int64_t hole, int64_t top, int32_t value, const float *v)
{
    int64_t parent = (hole - 1) / 2;
    while (hole > top && gt(v, first[parent], value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

static void adjust_heap(int32_t *first, int64_t hole, int64_t len, int32_t value, const float *v)
{
    const int64_t top = hole;
    int64_t child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (gt(v, first[child], first[child - 1]))
            child--;
        first[hole] = first[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        first[hole] = first[child - 1];
        hole = child - 1;
    }
    push_heap(first, hole, top, value, v);
}

static void heap_sort(int32_t *first, int32_t *last, const float *v)
{
    const int64_t len = last - first;
    if (len >= 2)
        for (int64_t parent = (len - 2) / 2;; parent--) {
            adjust_heap(first, parent, len, first[parent], v);
            if (parent == 0)
                break;
        }
    while (last - first > 1) {
        --last;
        const int32_t value = *last;
        *last = *first;
        adjust_heap(first, 0, last - first, value, v);
    }
}

static void median_to_first(int32_t *result, int32_t *a, int32_t *b, int32_t *c, const float *v)
{
    if (gt(v, *a, *b)) {
        if (gt(v, *b, *c))
            swap_i(result, b);
        else if (gt(v, *a, *c))
            swap_i(result, c);
        else
            swap_i(result, a);
    } else if (gt(v, *a, *c)) {
        swap_i(result, a);
    } else if (gt(v, *b, *c)) {
        swap_i(result, c);
    } else {
        swap_i(result, b);
    }
}

static int32_t *partition_pivot(int32_t *first, int32_t *last, const float *v)
{
    int32_t *mid = first + (last - first) / 2;
    median_to_first(first, first + 1, mid, last - 1, v);
    int32_t *lo = first + 1, *hi = last;
    const int32_t *pivot = first;
    for (;;) {
        while (gt(v, *lo, *pivot))
            ++lo;
        --hi;
        while (gt(v, *pivot, *hi))
            --hi;
        if (!(lo < hi))
            return lo;
        swap_i(lo, hi);
        ++lo;
    }
}

static void introsort_loop(int32_t *first, int32_t *last, int depth, const float *v)
{
    while (last - first > 16) {
        if (depth == 0) {
            heap_sort(first, last, v);
            return;
        }
        --depth;
        int32_t *cut = partition_pivot(first, last, v);
        introsort_loop(cut, last, depth, v);
        last = cut;
    }
}

/* libstdc++'s unguarded insertion: an element before `first` never moves
 * (the callers know one not smaller is there); the bound check changes no
 * result and lets an analyzer see that */
static void linear_insert(int32_t *first, int32_t *last, const float *v)
{
    const int32_t val = *last;
    int32_t *next = last - 1;
    while (next >= first && gt(v, val, *next)) {
        *last = *next;
        last = next;
        --next;
    }
    *last = val;
}

static void insertion_sort(int32_t *first, int32_t *last, const float *v)
{
    if (first == last)
        return;
    for (int32_t *i = first + 1; i != last; ++i) {
        if (gt(v, *i, *first)) {
            const int32_t val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
            *first = val;
        } else {
            linear_insert(first, i, v);
        }
    }
}

void moe_argsort_desc(const float *v, int32_t *idx, int n)
{
    for (int i = 0; i < n; i++)
        idx[i] = i;
    if (n < 2)
        return;
    int lg = 0;
    while ((2 << lg) <= n)
        lg++; /* floor(log2(n)) */
    introsort_loop(idx, idx + n, 2 * lg, v);
    if (n > 16) {
        insertion_sort(idx, idx + 16, v);
        for (int32_t *i = idx + 16; i != idx + n; ++i)
            linear_insert(idx, i, v);
    } else {
        insertion_sort(idx, idx + n, v);
    }
}

bool moe_topk_distinct(const float *v, int n, int k, int32_t *idx)
{
    if (k < 1 || k > n || k > MODEL_MAX_EXPERTS)
        return false;
    float top[MODEL_MAX_EXPERTS];
    int m = 0;
    for (int i = 0; i < n; i++) {
        const float x = v[i];
        if (x != x)
            return false;
        if (m == k && !(x > top[k - 1]))
            continue;
        /* insert below the values greater than x (the last one drops out
         * when the list is full) */
        int p = m < k ? m++ : k - 1;
        for (; p > 0 && x > top[p - 1]; p--) {
            top[p] = top[p - 1];
            idx[p] = idx[p - 1];
        }
        top[p] = x;
        idx[p] = i;
    }
    for (int j = 1; j < k; j++)
        if (!(top[j - 1] > top[j]))
            return false;
    int c = 0; /* values not below the k-th: exactly the k when none ties it */
    for (int i = 0; i < n; i++)
        c += v[i] >= top[k - 1];
    return c == k;
}

void moe_route(const float *logits, int n_expert, int n_used, enum model_moe_gating gating, bool norm_w,
               float w_scale, int32_t *ids, float *w)
{
    float probs[MODEL_MAX_EXPERTS] = {0}; /* (only n_expert are read; this quiets -Wmaybe-uninitialized) */
    int32_t idx[MODEL_MAX_EXPERTS];
    /* the loader keeps 1 <= n_used <= n_expert <= MODEL_MAX_EXPERTS */
    if (n_expert < 1 || n_used < 1)
        return;
    if (n_expert > MODEL_MAX_EXPERTS)
        n_expert = MODEL_MAX_EXPERTS;
    if (n_used > n_expert)
        n_used = n_expert;
    switch (gating) {
    case MODEL_MOE_GATING_SIGMOID:
        for (int i = 0; i < n_expert; i++)
            probs[i] = 1.0f / (1.0f + expf(-logits[i]));
        break;
    case MODEL_MOE_GATING_SOFTMAX_WEIGHT:
        memcpy(probs, logits, (size_t)n_expert * sizeof *probs);
        break;
    default:
        moe_softmax(logits, probs, n_expert);
        break;
    }
    /* the whole sort (most of the router's time at 256 experts) only
     * where ties could decide */
    if (!moe_topk_distinct(probs, n_expert, n_used, idx))
        moe_argsort_desc(probs, idx, n_expert);
    for (int k = 0; k < n_used; k++) {
        ids[k] = idx[k];
        w[k] = probs[idx[k]];
    }
    if (gating == MODEL_MOE_GATING_SOFTMAX_WEIGHT)
        moe_softmax(w, w, n_used);
    if (norm_w) {
        double sum = 0.0;
        for (int k = 0; k < n_used; k++)
            sum += (double)w[k];
        float s = (float)sum;
        s = s < 6.103515625e-5f ? 6.103515625e-5f : s; /* ggml_clamp(sum, 2^-14, inf) */
        for (int k = 0; k < n_used; k++)
            w[k] = w[k] / s;
    }
    if (w_scale != 0.0f && w_scale != 1.0f)
        for (int k = 0; k < n_used; k++)
            w[k] *= w_scale;
}
