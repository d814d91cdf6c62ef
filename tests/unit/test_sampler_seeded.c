/* The sampler's random numbers are llama.cpp's: std::mt19937 and libstdc++'s
 * uniform_real_distribution / discrete_distribution (values from g++ 12's
 * libstdc++, the reference's), and whole seeded chains on synthetic logits
 * select the tokens libllama 34af94cd selects
 * (tests/golden/reference/seeded/sampler.txt, made by sampler_ref.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/rng.h"
#include "sampler/sampler.h"

static void test_mt19937(void **state)
{
    (void)state;
    rng r;
    rng_seed(&r, 5489); /* the default seed */
    assert_int_equal(rng_next(&r), 3499211612u);
    for (int i = 1; i < 9999; i++)
        rng_next(&r);
    assert_int_equal(rng_next(&r), 4123659995u); /* the standard's check value */
}

static void test_canonical(void **state)
{
    (void)state;
    /* std::mt19937(42) through uniform_real_distribution<double>(0, 1), then
     * a fresh one through <float>: two outputs per double, one per float */
    static const double want_d[] = {0x1.97d47b66bfc3cp-1, 0x1.77aca8779b102p-3, 0x1.8f33a88f76c7fp-1};
    static const float want_f[] = {0x1.7f8772p-2f, 0x1.97d47cp-1f, 0x1.e6c406p-1f};
    rng r;
    rng_seed(&r, 42);
    for (int i = 0; i < 3; i++)
        assert_true(rng_uniform(&r) == want_d[i]);
    rng_seed(&r, 42);
    for (int i = 0; i < 3; i++)
        assert_true(rng_uniform_float(&r) == want_f[i]);
    assert_int_equal(rng_seed_value(7), 7);
}

#define V 512
#define STEPS 48

/* sampler_ref.c's logits, the same expression */
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

/* sampler_ref.c's chains as tokscope parameters */
static sampler_params chain_params(const char *name, uint32_t seed)
{
    sampler_params p = sampler_default_params(); /* top_k 40, top_p 0.95, min_p 0.05, temp 0.8 */
    p.seed = seed;
    p.seed_set = true;
    if (!strcmp(name, "temp")) {
        p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.0f;
    } else if (!strcmp(name, "top_p")) {
        p.top_k = 0, p.top_p = 0.9f, p.min_p = 0.0f, p.temp = 1.0f;
    } else if (!strcmp(name, "min_p")) {
        p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.02f, p.temp = 1.2f;
    } else if (!strcmp(name, "typical")) {
        p.top_p = 1.0f, p.min_p = 0.0f, p.typical_p = 0.9f;
    } else if (!strcmp(name, "xtc")) {
        p.xtc_probability = 0.5f, p.xtc_threshold = 0.05f;
    } else if (!strcmp(name, "penalties")) {
        p.repeat_penalty = 1.3f, p.frequency_penalty = 0.2f, p.presence_penalty = 0.1f, p.repeat_last_n = 64;
    } else if (!strcmp(name, "greedy")) {
        p.top_p = 1.0f, p.min_p = 0.0f, p.temp = 0.0f;
    } else if (!strcmp(name, "mirostat2")) {
        p.mirostat = 2, p.mirostat_tau = 5.0f, p.mirostat_eta = 0.1f;
    } else {
        assert_string_equal(name, "default");
    }
    return p;
}

static void test_reference_chains(void **state)
{
    (void)state;
    FILE *f = fopen("tests/golden/reference/seeded/sampler.txt", "r");
    assert_non_null(f);
    static float logits[STEPS][V];
    for (uint32_t s = 0; s < STEPS; s++)
        for (uint32_t i = 0; i < V; i++)
            logits[s][i] = seeded_logit(i, s);
    char name[32];
    unsigned seed;
    int n_chains = 0, n_bad = 0;
    while (fscanf(f, "%31s %u:", name, &seed) == 2) {
        sampler_params p = chain_params(name, seed);
        sampler *sm = sampler_build(&p, V);
        assert_non_null(sm);
        int first_bad = -1;
        for (int s = 0; s < STEPS; s++) {
            int want;
            assert_int_equal(fscanf(f, "%d", &want), 1);
            int32_t got = sampler_sample(sm, logits[s], NULL);
            sampler_accept(sm, got);
            if (got != want && first_bad < 0) {
                first_bad = s;
                print_message("%s %u: step %d: reference %d, tokscope %d\n", name, seed, s, want, got);
            }
        }
        n_bad += first_bad >= 0;
        n_chains++;
        sampler_free(sm);
    }
    fclose(f);
    assert_int_equal(n_chains, 27);
    assert_int_equal(n_bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mt19937),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_reference_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
