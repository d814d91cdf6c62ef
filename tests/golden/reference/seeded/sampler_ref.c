/* llama.cpp 34af94cd's samplers, alone, on synthetic logits: the tokens each
 * seeded chain selects. tests/unit/test_sampler_seeded.c builds the same
 * logits (seeded_logit below) and chains and checks tokscope selects the same.
 * Build and run: see make.sh. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llama.h"

#define V 512
#define STEPS 48

/* Logit of token i at step s: a hash spread over [-10, 10) (24 bits, exact
 * in float, so no ties), step-dependent so each step is a new distribution. */
static float seeded_logit(uint32_t i, uint32_t s)
{
    uint32_t h = i * 2654435761u ^ (s + 1u) * 2246822519u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    return (float)(h >> 8) * (1.0f / 16777216.0f) * 20.0f - 10.0f;
}

static struct llama_sampler *chain_for(const char *name, uint32_t seed)
{
    struct llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
#define ADD(x) llama_sampler_chain_add(c, (x))
    if (!strcmp(name, "temp")) {
        ADD(llama_sampler_init_temp_ext(0.8f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "default")) {
        ADD(llama_sampler_init_top_k(40));
        ADD(llama_sampler_init_top_p(0.95f, 0));
        ADD(llama_sampler_init_min_p(0.05f, 0));
        ADD(llama_sampler_init_temp_ext(0.8f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "top_p")) {
        ADD(llama_sampler_init_top_p(0.9f, 0));
        ADD(llama_sampler_init_temp_ext(1.0f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "min_p")) {
        ADD(llama_sampler_init_min_p(0.02f, 0));
        ADD(llama_sampler_init_temp_ext(1.2f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "typical")) {
        ADD(llama_sampler_init_top_k(40));
        ADD(llama_sampler_init_typical(0.9f, 0));
        ADD(llama_sampler_init_temp_ext(0.8f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "xtc")) {
        ADD(llama_sampler_init_top_k(40));
        ADD(llama_sampler_init_top_p(0.95f, 0));
        ADD(llama_sampler_init_min_p(0.05f, 0));
        ADD(llama_sampler_init_xtc(0.5f, 0.05f, 0, seed));
        ADD(llama_sampler_init_temp_ext(0.8f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "penalties")) {
        ADD(llama_sampler_init_penalties(V, 64, 1.3f, 0.2f, 0.1f));
        ADD(llama_sampler_init_top_k(40));
        ADD(llama_sampler_init_top_p(0.95f, 0));
        ADD(llama_sampler_init_min_p(0.05f, 0));
        ADD(llama_sampler_init_temp_ext(0.8f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "greedy")) {
        ADD(llama_sampler_init_top_k(40));
        ADD(llama_sampler_init_temp_ext(0.0f, 0.0f, 1.0f));
        ADD(llama_sampler_init_dist(seed));
    } else if (!strcmp(name, "mirostat2")) {
        ADD(llama_sampler_init_temp(0.8f));
        ADD(llama_sampler_init_mirostat_v2(seed, 5.0f, 0.1f));
    }
#undef ADD
    return c;
}

int main(void)
{
    static const char *names[] = {"temp", "default", "top_p", "min_p", "typical", "xtc", "penalties", "greedy", "mirostat2"};
    static const uint32_t seeds[] = {42, 1234, 0};
    static llama_token_data data[V];
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
        for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
            struct llama_sampler *c = chain_for(names[n], seeds[k]);
            printf("%s %u:", names[n], seeds[k]);
            for (uint32_t s = 0; s < STEPS; s++) {
                for (uint32_t i = 0; i < V; i++)
                    data[i] = (llama_token_data){(llama_token)i, seeded_logit(i, s), 0.0f};
                llama_token_data_array cur = {data, V, -1, false};
                llama_sampler_apply(c, &cur);
                llama_token id = cur.data[cur.selected].id;
                llama_sampler_accept(c, id);
                printf(" %d", id);
            }
            printf("\n");
            llama_sampler_free(c);
        }
    return 0;
}
