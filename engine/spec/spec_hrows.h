/* What the two MTP-style drafters (spec_mtp.c: Qwen3.5's block; spec_g4assist.c:
 * Gemma 4's assistant) keep of the target's hidden states between a
 * verification and the next draft: the rows of the last batch the target
 * evaluated, and "pending", the row the next draft pairs with. After a
 * verification that accepted k drafts, pending is the row of the last
 * accepted position. */
#ifndef TOKSCOPE_SPEC_HROWS_H
#define TOKSCOPE_SPEC_HROWS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct spec_hrows {
    float *pending; /* [width] */
    float *rows;    /* the last batch's rows, n of them */
    int32_t n, cap, width;
} spec_hrows;

bool spec_hrows_init(spec_hrows *r, int32_t width);
void spec_hrows_free(spec_hrows *r);
/* Keeps h[0, n) (n rows of width); pending becomes the last. False: out of memory. */
bool spec_hrows_keep(spec_hrows *r, const float *h, int32_t n);
/* After a verification of the kept batch that accepted n_accepted drafts. */
void spec_hrows_accept(spec_hrows *r, int32_t n_accepted);

/* The first index of the largest of x[0, n): the drafters' greedy pick. */
int32_t spec_argmax(const float *x, int32_t n);

#endif
