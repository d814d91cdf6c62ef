/* The target's hidden rows an MTP-style drafter keeps (spec_hrows.h). */
#include "spec/spec_hrows.h"

#include <stdlib.h>
#include <string.h>

bool spec_hrows_init(spec_hrows *r, int32_t width)
{
    memset(r, 0, sizeof *r);
    r->width = width;
    r->pending = calloc((size_t)width, sizeof *r->pending);
    return r->pending != NULL;
}

void spec_hrows_free(spec_hrows *r)
{
    free(r->pending);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

bool spec_hrows_keep(spec_hrows *r, const float *h, int32_t n)
{
    const size_t E = (size_t)r->width;
    if (n > r->cap) {
        float *q = realloc(r->rows, (size_t)n * E * sizeof *q);
        if (!q)
            return false;
        r->rows = q;
        r->cap = n;
    }
    memcpy(r->rows, h, (size_t)n * E * sizeof(float));
    r->n = n;
    memcpy(r->pending, h + (size_t)(n - 1) * E, E * sizeof(float));
    return true;
}

void spec_hrows_accept(spec_hrows *r, int32_t n_accepted)
{
    if (r->n <= 0)
        return;
    const int32_t i = n_accepted < r->n - 1 ? n_accepted : r->n - 1;
    memcpy(r->pending, r->rows + (size_t)i * (size_t)r->width, (size_t)r->width * sizeof(float));
}

int32_t spec_argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}
