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
