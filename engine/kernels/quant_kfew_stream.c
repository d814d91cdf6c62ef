/* How the few-token K-quant kernels' one-token rows stream from memory
 * (quant_kfew.h): the choice between their two ways, made by measuring.
 *
 * Which way is faster depends on the host's memory, and on a VM it changes
 * from one second to the next (docs/speed-ik.md, thirty-eighth session;
 * the Qwen3.5 width's 417 MB Q6_K output head, token by token alternating
 * the two, same state): where a plain two-thread read gets 24-35 GB/s the
 * sequential pass takes 0.90-0.92 of the paired pass's time, where it gets
 * 45-59 GB/s 1.23 times it (the hardware prefetchers alone fall behind
 * there). So each thread measures: KFEW_PROBE calls of 128 KB or more (a
 * chunk of a layer's matvec: with a megabyte, TinyLlama's 2048-row matrices
 * never reached it) in one way or the other at random, then the way with the
 * lower median cycles per byte for the next KFEW_KEEP, then again. A
 * call's cost depends on what the other thread does meanwhile (a chunk
 * alone at a matvec's end reads faster), so the ways are compared by
 * medians over many calls, not call by call.
 *
 * Each row length has its own tuner (quant_kfew_tuner_of). The Qwen3.5
 * width's token makes about six calls of 512-wide expert rows to one chunk
 * of its 2048-wide output head; on a Zen 5 (forty-first session) the
 * experts' calls cost the same either way while the head streamed 1.5-1.9x
 * slower one row after the other, so a tuner shared by both kept choosing
 * the sequential way for the head on the experts' evidence. (Those
 * measurements are of the sequential way as it was then, row pairs with
 * row A's lanes on the stack; reading single rows it streams the head
 * faster than the pairs on that Zen 5: quant_q6k_few.c's q6f_row.) */
#include "kernels/quant_kfew.h"

#ifdef QUANT_HAVE_KFEW
#include <stdlib.h>

int quant_kfew_stream = QUANT_KFEW_STREAM_AUTO;

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return v[n / 2];
}

int quant_kfew_tuner_next(quant_kfew_tuner *t)
{
    if (t->keep > 0)
        return t->way;
    t->rng = t->rng * 1664525u + 1013904223u;
    int way = (int)(t->rng >> 31);
    if (t->n[way] >= KFEW_PROBE / 2)
        way = 1 - way;
    return way;
}

void quant_kfew_tuner_seen(quant_kfew_tuner *t, int way, float cost)
{
    if (t->keep > 0) {
        t->keep--;
        return;
    }
    t->cost[way][t->n[way]++] = cost;
    if (t->n[0] + t->n[1] < KFEW_PROBE)
        return;
    const float m0 = median(t->cost[0], t->n[0]), m1 = median(t->cost[1], t->n[1]);
    t->way = m1 < m0 ? QUANT_KFEW_STREAM_SEQ : QUANT_KFEW_STREAM_PAIRS;
    t->keep = KFEW_KEEP;
    t->n[0] = t->n[1] = 0;
}

quant_kfew_tuner *quant_kfew_tuner_of(quant_kfew_tuners *s, int64_t nb)
{
    int i = 0;
    while (i < KFEW_TUNERS - 1 && s->nb[i] != nb && s->nb[i] != 0)
        i++;
    if (i < KFEW_TUNERS - 1)
        s->nb[i] = nb;
    return &s->t[i];
}
#endif
