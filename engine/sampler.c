/* Sampler chain (placeholder bodies; real implementation follows). */
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sampler {
    sampler_params p;
    int32_t n_vocab;
};

const char *const sampler_param_names[] = {"temp", "top_k", "top_p", "min_p", "typical_p", "repeat_penalty",
                                           "repeat_last_n", "frequency_penalty", "presence_penalty", "seed",
                                           "n_predict", NULL};

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
    p.n_predict = -1;
    p.n_top = 10;
    return p;
}

sampler *sampler_build(const sampler_params *p, int32_t n_vocab)
{
    sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p ? *p : sampler_default_params();
    s->n_vocab = n_vocab;
    return s;
}

void sampler_free(sampler *s) { free(s); }
void sampler_set_params(sampler *s, const sampler_params *p) { s->p = *p; }
const sampler_params *sampler_get_params(const sampler *s) { return &s->p; }
void sampler_accept(sampler *s, int32_t token) { (void)s; (void)token; }
void sampler_reset_history(sampler *s) { (void)s; }

int32_t sampler_sample(sampler *s, const float *logits, sampler_step *step)
{
    int32_t best = 0;
    for (int32_t i = 1; i < s->n_vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    if (step) {
        memset(step, 0, sizeof *step);
        step->token = best;
        step->logit = logits[best];
    }
    return best;
}

bool sampler_params_set(sampler_params *p, const char *name, const char *value, char *err, size_t errlen)
{
    (void)p; (void)value;
    snprintf(err, errlen, "unknown parameter '%s'", name);
    return false;
}

bool sampler_params_get(const sampler_params *p, const char *name, char *buf, size_t cap)
{
    (void)p; (void)name;
    if (cap)
        buf[0] = 0;
    return false;
}
