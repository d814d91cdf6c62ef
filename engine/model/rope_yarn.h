/* YaRN RoPE scaling (rope.scaling.type "yarn"), with the reference's
 * numbers: llama.cpp sets ext_factor 1, beta_fast 32, beta_slow 1 (its
 * loader reads no yarn_* key for the architectures tokscope runs) and
 * derives the attention factor from the scaling factor; ggml then mixes,
 * per rotated pair, the interpolated angle (position * freq_scale) and the
 * extrapolated one (position) with a ramp between two "correction dims",
 * and scales cos and sin by that factor times 1 + 0.1 ln(1 / freq_scale). */
#ifndef TOKSCOPE_ROPE_YARN_H
#define TOKSCOPE_ROPE_YARN_H

#include <stdint.h>

#define ROPE_YARN_BETA_FAST 32.0f
#define ROPE_YARN_BETA_SLOW 1.0f

/* ggml_rope_yarn_corr_dims: the first and last pair index of the ramp. */
void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]);

/* llama_context's yarn_attn_factor for ext_factor != 0 (no yarn_log_mul):
 * get_mscale(factor, 1) / (1 + 0.1 ln factor) * rope.scaling.attn_factor,
 * factor = 1 / freq_scale, each step rounded as the reference (libllama is
 * built without FMA). */
float rope_yarn_attn_factor(float freq_scale, float rope_attn_factor);

/* ggml's rope_yarn for pair i0 (even element index): cos and sin of the
 * mixed angle times mscale (mscale grows by 1 + 0.1 ln(1/freq_scale) when
 * ext_factor != 0, as an FMA: ggml-cpu is built with -march). */
void rope_yarn_cs(float theta_extrap, float freq_scale, const float dims[2], int64_t i0, float ext_factor,
                  float mscale, float *cos_out, float *sin_out);

#endif
