/* YaRN (see rope_yarn.h): ggml's and llama.cpp's expressions, in their
 * float order. */
#include "model/rope_yarn.h"

#include <math.h>

/* n_dims * ln(n_ctx_orig / (2 pi n_rot)) / (2 ln base): the pair index
 * whose wavelength spans n_rot turns over the original context. */
static float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base)
{
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2])
{
    const float start = floorf(corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    const float end = ceilf(corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    dims[0] = start > 0 ? start : 0;
    dims[1] = end < (float)(n_dims - 1) ? end : (float)(n_dims - 1);
}

float rope_yarn_attn_factor(float freq_scale, float rope_attn_factor)
{
    const float factor = 1.0f / freq_scale;
    /* volatile: separate roundings, as the reference's non-FMA build */
    volatile float t = 0.1f * 1.0f * logf(factor);
    float f = factor <= 1.0f ? 1.0f : t + 1.0f;
    volatile float u = 0.1f * logf(factor);
    f *= 1.0f / (1.0f + u);
    return f * rope_attn_factor;
}

/* rope_yarn_ramp: 1 below the first correction dim, 0 past the last. */
static float ramp(float low, float high, int64_t i0)
{
    const float d = 0.001f > high - low ? 0.001f : high - low;
    const float y = ((float)(i0 / 2) - low) / d;
    const float c = 0 > y ? 0 : y;
    return 1 - (1 < c ? 1 : c);
}

void rope_yarn_cs(float theta_extrap, float freq_scale, const float dims[2], int64_t i0, float ext_factor,
                  float mscale, float *cos_out, float *sin_out)
{
    const float theta_interp = freq_scale * theta_extrap;
    float theta = theta_interp;
    if (ext_factor != 0.0f) {
        const float mix = ramp(dims[0], dims[1], i0) * ext_factor;
        /* GCC contracts a*b + c*d in the reference into fma(a, b, c*d) */
        theta = fmaf(theta_interp, 1 - mix, theta_extrap * mix);
        mscale *= fmaf(0.1f, logf(1.0f / freq_scale), 1.0f);
    }
    *cos_out = cosf(theta) * mscale;
    *sin_out = sinf(theta) * mscale;
}
