/* The slots' plan (engine_slots.h): which tokens go into a step's batch, and
 * how much of a cached sequence a new prompt keeps. Pure: no model, no engine. */
#include "engine_slots.h"

int32_t engine_slots_plan(const engine_slot_need *need, int32_t n, int32_t n_batch, int32_t *take)
{
    int32_t used = 0;
    for (int32_t i = 0; i < n; i++) {
        take[i] = need[i].busy && need[i].n_left == 0 ? 1 : 0;
        used += take[i];
    }
    for (;;) { /* the prompts, oldest first */
        int32_t best = -1;
        for (int32_t i = 0; i < n; i++)
            if (need[i].busy && need[i].n_left > 0 && take[i] == 0 &&
                (best < 0 || need[i].order < need[best].order))
                best = i;
        if (best < 0)
            break;
        int32_t room = n_batch - used;
        if (room <= 0 && used > 0)
            break;
        if (room <= 0)
            room = 1;
        take[best] = need[best].n_left < room ? need[best].n_left : room;
        used += take[best];
    }
    return used;
}

int32_t engine_slots_keep(int32_t common, int32_t n, int32_t held, bool can_cut)
{
    int32_t keep = common < n ? common : n - 1;
    if (keep < 0)
        keep = 0;
    if (!can_cut && keep < held)
        keep = 0;
    return keep;
}

int32_t engine_slots_choose(const engine_slot_cand *c, int32_t n_slots, int32_t n)
{
    int32_t best = -1;
    float sim_best = 0.0f;
    for (int32_t i = 0; i < n_slots && n > 0; i++) {
        if (c[i].busy || c[i].held == 0)
            continue;
        const float sim = (float)c[i].common / (float)n; /* llama-server's float, its strict > */
        if (sim > sim_best && sim > 0.1f)
            sim_best = sim, best = i;
    }
    if (best >= 0)
        return best;
    int64_t t_best = -1;
    for (int32_t i = 0; i < n_slots; i++) {
        if (c[i].busy)
            continue;
        const int64_t t = c[i].held == 0 ? -1 : c[i].last_used;
        if (best < 0 || t < t_best) /* of equals the lowest id (llama-server: the highest; ids only) */
            t_best = t, best = i;
    }
    return best;
}
