/* `tokscope info MODEL`: what a GGUF file holds, read straight from its
 * metadata (no model or tokenizer is built, so it also works on vocab-only
 * files and on models whose tensors we cannot compute with).
 *
 * Exit status: 0 described, 1 the file is unreadable or malformed (the
 * reader's message, naming field and byte offset, goes to stderr), 2 usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gguf/gguf.h"
#include "memory/memory.h"
#include "model/forward.h"
#include "model/forward_graph.h"
#include "model/model.h"
#include "model/rope_yarn.h"
#include "gguf/tensor.h"
#include "tokenizer/tokenizer.h"

#define KV_ARRAY_PREVIEW 8 /* array elements shown by --kv */
#define KV_STRING_MAX 160  /* string bytes shown before eliding */

static void usage(FILE *f)
{
    fprintf(f, "usage: tokscope info [--kv] MODEL.gguf\n"
               "       tokscope info [--kv] -m MODEL.gguf\n\n"
               "Describes a GGUF file: file layout, architecture and hyperparameters, tokenizer\n"
               "(special token ids and text), chat template, file type, every tensor (shape, type,\n"
               "bytes), totals by type (tensors, parameters, bytes), the type mix (each type's share\n"
               "of all tensor bytes) and the parameter count. Vocab-only files (no tensors) work.\n\n"
               "  --kv        also dump every key/value (arrays: length and first elements)\n"
               "  -h, --help  this text\n\n"
               "Exit status: 0 ok, 1 unreadable or malformed file (message on stderr), 2 usage.\n");
}

/* Prints s with C-style escapes for quotes, backslashes and bytes that are
 * not printable ASCII or UTF-8 continuation/lead bytes; at most max bytes of
 * the input, followed by "..." when cut. */
static void put_escaped(gguf_str s, size_t max)
{
    size_t n = s.len < max ? (size_t)s.len : max;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        switch (c) {
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\'': fputs("\\'", stdout); break;
        default:
            if (c < 0x20 || c == 0x7f)
                printf("\\x%02x", c);
            else
                putchar(c);
        }
    }
    if (n < s.len)
        fputs("...", stdout);
}

static void put_quoted(gguf_str s, size_t max)
{
    putchar('\'');
    put_escaped(s, max);
    putchar('\'');
}

/* Shortest %g form that reads back as the same float (1e-05, not
 * 9.99999975e-06); doubles likewise at double precision. */
static void put_real(double d, bool is_f32)
{
    char buf[64];
    for (int prec = is_f32 ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        double back = strtod(buf, NULL);
        if (is_f32 ? (float)back == (float)d : back == d)
            break;
    }
    fputs(buf, stdout);
}

static void put_bytes_h(uint64_t b)
{
    printf("%llu", (unsigned long long)b);
    if (b >= 1024) {
        static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
        double v = (double)b / 1024;
        int u = 0;
        while (v >= 1024 && u < 3) {
            v /= 1024;
            u++;
        }
        printf(" (%.2f %s)", v, units[u]);
    }
}

/* One scalar (or array element) in its natural notation. */
static void put_scalar(const gguf_ctx *g, int64_t k)
{
    enum gguf_vtype t = gguf_kv_type(g, k);
    gguf_str s;
    double d = 0;
    if (t == GGUF_VTYPE_STRING && gguf_kv_as_str(g, k, &s)) {
        put_quoted(s, KV_STRING_MAX);
        if (s.len > KV_STRING_MAX)
            printf(" (%llu bytes)", (unsigned long long)s.len);
        return;
    }
    int64_t iv;
    uint64_t uv;
    bool neg;
    if (t == GGUF_VTYPE_BOOL && gguf_kv_as_int(g, k, &iv, &uv, &neg))
        fputs(uv ? "true" : "false", stdout);
    else if (gguf_kv_as_int(g, k, &iv, &uv, &neg))
        neg ? printf("%lld", (long long)iv) : printf("%llu", (unsigned long long)uv);
    else if (gguf_kv_as_f64(g, k, &d))
        put_real(d, t == GGUF_VTYPE_FLOAT32);
    else
        fputs("?", stdout);
}

static void put_array_elem(const gguf_ctx *g, int64_t k, uint64_t j)
{
    enum gguf_vtype et = gguf_arr_type(g, k);
    if (et == GGUF_VTYPE_STRING)
        put_quoted(gguf_arr_str(g, k, j), 48);
    else if (et == GGUF_VTYPE_FLOAT32 || et == GGUF_VTYPE_FLOAT64)
        put_real(gguf_arr_f64(g, k, j), et == GGUF_VTYPE_FLOAT32);
    else if (et == GGUF_VTYPE_BOOL)
        fputs(gguf_arr_i64(g, k, j) ? "true" : "false", stdout);
    else if (et == GGUF_VTYPE_UINT64)
        printf("%llu", (unsigned long long)gguf_arr_u64(g, k, j));
    else
        printf("%lld", (long long)gguf_arr_i64(g, k, j));
}

/* Value of kv k on one line: scalars as such, arrays as type, length and
 * the first `preview` elements. */
static void put_value(const gguf_ctx *g, int64_t k, uint64_t preview)
{
    if (gguf_kv_type(g, k) != GGUF_VTYPE_ARRAY) {
        put_scalar(g, k);
        return;
    }
    uint64_t n = gguf_arr_len(g, k);
    printf("[%s x %llu]", gguf_vtype_name(gguf_arr_type(g, k)), (unsigned long long)n);
    if (!n || !preview)
        return;
    fputs(" ", stdout);
    for (uint64_t j = 0; j < n && j < preview; j++) {
        if (j)
            fputs(", ", stdout);
        put_array_elem(g, k, j);
    }
    if (n > preview)
        fputs(", ...", stdout);
}

/* "<arch>.<suffix>" printed under `label`; absent keys print `dflt`. */
static void put_hparam(const gguf_ctx *g, const char *arch, const char *suffix, const char *label, const char *dflt)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t k = gguf_find_key(g, key);
    printf("  %-22s ", label);
    if (k < 0) {
        printf("%s\n", dflt);
        return;
    }
    put_value(g, k, 4);
    enum gguf_vtype t = gguf_kv_type(g, k);
    if (t == GGUF_VTYPE_STRING || t == GGUF_VTYPE_BOOL)
        printf("  (unexpected type %s)", gguf_vtype_name(t));
    putchar('\n');
}

static void put_hparams(const gguf_ctx *g, const char *arch)
{
    char dflt[128];
    uint32_t n_embd = 0, n_head = 0;
    char key[256];
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    gguf_get_u32(g, key, &n_embd);
    snprintf(key, sizeof key, "%s.attention.head_count", arch);
    gguf_get_u32(g, key, &n_head);

    fputs("hyperparameters (", stdout);
    put_escaped((gguf_str){arch, strlen(arch)}, 64);
    puts(".*):");
    put_hparam(g, arch, "context_length", "context length", "- (absent)");
    put_hparam(g, arch, "embedding_length", "embedding length", "- (absent)");
    put_hparam(g, arch, "block_count", "layers", "- (absent)");
    put_hparam(g, arch, "attention.head_count", "heads", "- (absent)");
    put_hparam(g, arch, "attention.head_count_kv", "KV heads", "- (absent: same as heads)");
    put_hparam(g, arch, "feed_forward_length", "FFN length", "- (absent)");
    put_hparam(g, arch, "rope.freq_base", "rope freq base", "- (absent: default 10000)");
    uint32_t key_len = 0;
    snprintf(key, sizeof key, "%s.attention.key_length", arch);
    if (gguf_get_u32(g, key, &key_len))
        snprintf(dflt, sizeof dflt, "- (absent: default %u = key length)", key_len);
    else if (n_embd && n_head)
        snprintf(dflt, sizeof dflt, "- (absent: default %u = embedding / heads)", n_embd / n_head);
    else
        snprintf(dflt, sizeof dflt, "- (absent)");
    put_hparam(g, arch, "rope.dimension_count", "rope dimension count", dflt);
    put_hparam(g, arch, "attention.layer_norm_rms_epsilon", "rms eps", "- (absent)");
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (gguf_find_key(g, key) >= 0)
        put_hparam(g, arch, "rope.scaling.type", "rope scaling type", "-");
    snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
    if (gguf_find_key(g, key) >= 0)
        put_hparam(g, arch, "rope.scaling.factor", "rope scaling factor", "-");
    /* the keys some architectures add, shown when present */
    static const struct {
        const char *suffix, *label;
    } extra[] = {
        {"attention.key_length", "key length"},
        {"attention.value_length", "value length"},
        {"attention.sliding_window", "sliding window"},
        {"attention.sliding_window_pattern", "sliding window pattern"},
        {"rope.freq_base_swa", "rope freq base (SWA)"},
        {"rope.scaling.attn_factor", "rope attn factor"},
        {"rope.scaling.original_context_length", "rope original context"},
        {"final_logit_softcapping", "logit softcapping"},
        {"vocab_size", "vocab size (arch)"},
        {"expert_count", "experts"},
        {"expert_used_count", "experts used"},
        {"expert_feed_forward_length", "expert FFN length"},
        {"expert_shared_feed_forward_length", "shared expert FFN"},
        {"expert_weights_scale", "expert weights scale"},
        {"expert_weights_norm", "expert weights norm"},
        {"expert_gating_func", "expert gating func"},
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, extra[i].suffix);
        if (gguf_find_key(g, key) >= 0)
            put_hparam(g, arch, extra[i].suffix, extra[i].label, "-");
    }
}

/* A mixture of experts as the forward pass runs it (forward_graph.h's fwd_moe). */
static void put_experts(const model_hparams *hp, const model_layer *L0)
{
    static const char *const act[] = {[FWD_MOE_SILU] = "SiLU-gated", [FWD_MOE_GELU] = "GELU(tanh)-gated",
                                      [FWD_MOE_SWIGLU_OAI] = "clamped SwiGLU (swiglu_oai)"};
    const gguf_tensor *x = L0->ffn_gate_up_exps ? L0->ffn_gate_up_exps : L0->ffn_down_exps;
    printf("  %-22s %u, %u used per token, each %u wide, %s%s%s; %s\n", "experts", hp->n_expert, hp->n_expert_used,
           hp->n_ff_exp, act[hp->moe_act], L0->ffn_gate_up_exps ? " (gate and up fused)" : "",
           L0->ffn_down_exps_b ? ", with biases" : "", x ? tensor_type_name(x->type) : "?");
    printf("  %-22s ", "router");
    switch (hp->moe_gating) {
    case MODEL_MOE_GATING_SIGMOID: printf("sigmoid, top %u", hp->n_expert_used); break;
    case MODEL_MOE_GATING_SOFTMAX_WEIGHT: printf("top %u logits, softmax over them", hp->n_expert_used); break;
    default: printf("softmax, top %u", hp->n_expert_used); break;
    }
    if (L0->ffn_gate_inp_b)
        printf(", logits biased");
    if (hp->moe_norm_w)
        printf(", weights renormalised to sum 1");
    if (hp->moe_w_scale != 0.0f && hp->moe_w_scale != 1.0f)
        printf(", weights * %g", (double)hp->moe_w_scale);
    putchar('\n');
    if (L0->ffn_up_shexp)
        printf("  %-22s %lld wide, SiLU-gated, behind a sigmoid gate\n", "shared expert", (long long)L0->ffn_up_shexp->ne[1]);
}

/* What Gemma 4 adds, when a file has it: head sizes per layer kind, layers
 * that share another's KV cache, K = V layers, per-layer embeddings. */
static void put_layer_kinds(const model_hparams *hp, const model_weights *w)
{
    if (hp->head_dim_swa != hp->head_dim || hp->n_rot_swa != hp->n_rot)
        printf("  %-22s %u on full layers, %u on sliding layers (rope %u / %u dims)\n", "head sizes", hp->head_dim,
               hp->head_dim_swa, hp->n_rot, hp->n_rot_swa);
    bool kv_vary = false;
    for (uint32_t l = 1; l < hp->n_layer; l++)
        kv_vary |= hp->n_head_kv_l[l] != hp->n_head_kv_l[0];
    if (kv_vary) {
        printf("  %-22s", "KV heads by layer");
        for (uint32_t l = 0; l < hp->n_layer; l++)
            printf("%s %u", l ? "," : "", hp->n_head_kv_l[l]);
        putchar('\n');
    }
    if (hp->n_layer_kv < hp->n_layer) {
        printf("  %-22s layers %u-%u read the caches of layers", "shared KV", hp->n_layer_kv, hp->n_layer - 1);
        for (uint32_t l = hp->n_layer_kv; l < hp->n_layer; l++)
            printf("%s %u", l > hp->n_layer_kv ? "," : "", hp->kv_layer[l]);
        printf(" (no K/V of their own)\n");
    }
    int n_kv_same = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        n_kv_same += hp->kv_layer[l] == l && w->layers[l].wk && !w->layers[l].wv;
    if (n_kv_same > 0) {
        printf("  %-22s on layer%s", "K = V", n_kv_same > 1 ? "s" : "");
        for (uint32_t l = 0; l < hp->n_layer; l++)
            if (hp->kv_layer[l] == l && w->layers[l].wk && !w->layers[l].wv)
                printf(" %u", l);
        printf(" (no attn_v: the K projection is V)\n");
    }
    int n_moe = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        n_moe += w->layers[l].ffn_gate_inp_s != NULL;
    if (n_moe > 0)
        printf("  %-22s %d of %u, the experts beside the dense FFN; router input rms_norm(x) / sqrt(n_embd) * "
               "ffn_gate_inp.scale\n", "MoE layers", n_moe, hp->n_layer);
    if (hp->n_embd_per_layer > 0)
        printf("  %-22s %u per layer (%u in all), gated into every layer's output\n", "per-layer embeddings",
               hp->n_embd_per_layer, hp->n_embd_per_layer * hp->n_layer);
}

/* qwen35's hybrid layout: which layers are Gated DeltaNet, their sizes and
 * recurrent state (what forward_rs_bytes snapshots), and IMROPE's sections. */
static uint64_t put_hybrid(const model_hparams *hp)
{
    if (hp->rope_imrope)
        printf("  %-22s IMROPE sections %d %d %d %d (text: one position in the first three)\n", "rope sections",
               hp->rope_sections[0], hp->rope_sections[1], hp->rope_sections[2], hp->rope_sections[3]);
    uint32_t n_rec = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        n_rec += hp->recurrent_layer[l];
    if (n_rec == 0)
        return 0;
    const uint64_t S = hp->ssm_d_state, ch = 2 * S * hp->ssm_n_group + hp->ssm_d_inner;
    const uint64_t conv = (uint64_t)(hp->ssm_d_conv - 1) * ch * 4, delta = S * S * hp->ssm_dt_rank * 4;
    printf("  %-22s %u of %u layers (attention:", "Gated DeltaNet", n_rec, hp->n_layer);
    for (uint32_t l = 0; l < hp->n_layer; l++)
        if (!hp->recurrent_layer[l])
            printf(" %u", l);
    printf("), conv %u over %llu channels, %u key / %u value heads of %llu\n", hp->ssm_d_conv,
           (unsigned long long)ch, hp->ssm_n_group, hp->ssm_dt_rank, (unsigned long long)S);
    printf("  %-22s %llu bytes per DeltaNet layer (conv %llu, delta rule %llu), %llu in all\n", "recurrent state",
           (unsigned long long)(conv + delta), (unsigned long long)conv, (unsigned long long)delta,
           (unsigned long long)((conv + delta) * n_rec));
    printf("  %-22s attention output times sigmoid of a per-head gate (attn_q: query | gate)\n", "attention gate");
    if (hp->n_layer_nextn)
        printf("  %-22s %u nextn/MTP block(s) after the trunk: the first drafts for --spec mtp\n", "MTP", hp->n_layer_nextn);
    return (conv + delta) * n_rec;
}

/* The hyperparameters tokscope derives and the architecture's rules, as the
 * forward pass will use them; or why it will not run the file. */
/* A recurrent model (Qwen3.5) with a state of rs bytes (put_hybrid): what
 * explore mode's checkpoints of it cost (engine/memory/memory.h), and that
 * it has no context shift. */
static void put_memory(const model_hparams *hp, uint64_t rs)
{
    if (rs == 0)
        return;
    const uint64_t lg = (uint64_t)hp->n_vocab * sizeof(float);
    printf("  %-22s %.1f KiB each (the state and a row of logits): one at every prompt's end and every %d\n"
           "  %-22s reply tokens, at most %d and %.0f MiB; going back re-evaluates at most %d reply tokens\n",
           "state checkpoints", (double)(rs + lg) / 1024.0, MEMORY_CKPT_EVERY, "", MEMORY_CKPT_MAX,
           (double)MEMORY_CKPT_MAX_BYTES / (1024.0 * 1024.0), MEMORY_CKPT_EVERY - 1);
    printf("  %-22s none (a recurrent state cannot drop tokens)\n", "context shift");
}

static void put_model_view(const char *path)
{
    char err[1024];
    model *m = model_load_weights_only(path, err, sizeof err);
    if (!m) {
        const char *msg = strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':' ? err + strlen(path) + 2 : err;
        printf("runs:          no: %s\n", msg);
        return;
    }
    const model_hparams *hp = model_get_hparams(m);
    const model_weights *w = model_get_weights(m);
    const model_layer *L0 = &w->layers[0];
    const model_layer *LA = L0; /* the first attention layer (a hybrid model's first may be DeltaNet) */
    for (uint32_t l = 0; l < hp->n_layer && hp->recurrent_layer[l]; l++)
        LA = &w->layers[l + 1 < hp->n_layer ? l + 1 : l];
    printf("as tokscope runs it (%s):\n", model_arch_name(hp->arch));
    printf("  %-22s %u query / %u KV heads of %u (queries %u wide)\n", "attention", hp->n_head, hp->n_head_kv,
           hp->head_dim, hp->n_head * hp->head_dim);
    printf("  %-22s %s, %u of %u dims, base %g", "rope", model_rope_type_name(hp->rope_type), hp->n_rot, hp->head_dim,
           (double)hp->rope_freq_base);
    if (hp->rope_scaling == MODEL_ROPE_SCALING_LINEAR && hp->rope_freq_scale == 1.0f)
        printf(", no scaling");
    else
        printf(", scaling %s", model_rope_scaling_name(hp->rope_scaling));
    if (hp->rope_freq_scale != 1.0f)
        printf(" (factor %g)", 1.0 / (double)hp->rope_freq_scale);
    if (hp->rope_attn_factor != 1.0f)
        printf(", attn factor %g", (double)hp->rope_attn_factor);
    putchar('\n');
    const gguf_tensor *ff[3] = {w->rope_freqs, w->rope_long, w->rope_short};
    const char *ffn[3] = {"rope_freqs", "rope_factors_long", "rope_factors_short"};
    for (int i = 0; i < 3; i++) {
        if (!ff[i])
            continue;
        const float *v = ff[i]->data;
        const int64_t n = ff[i]->ne[0];
        printf("  %-22s %s: %lld factors, first %g, last %g", "rope factors", ffn[i], (long long)n, (double)v[0],
               (double)v[n - 1]);
        if (i == 1)
            printf(" (used when the context exceeds %u)", hp->n_ctx_orig);
        if (i == 2)
            printf(" (used up to a context of %u)", hp->n_ctx_orig);
        putchar('\n');
    }
    if (hp->n_swa > 0) {
        uint32_t n_local = 0;
        for (uint32_t l = 0; l < hp->n_layer; l++)
            n_local += hp->swa_layer[l];
        printf("  %-22s window %u on %u of %u layers (global:", "sliding window", hp->n_swa, n_local, hp->n_layer);
        for (uint32_t l = 0; l < hp->n_layer; l++)
            if (!hp->swa_layer[l])
                printf(" %u", l);
        printf("), local rope base %g\n", (double)hp->rope_freq_base_swa);
    } else {
        printf("  %-22s none (full causal attention)\n", "sliding window");
    }
    if (hp->rope_scaling == MODEL_ROPE_SCALING_YARN) {
        float dims[2];
        rope_yarn_corr_dims((int)hp->n_rot, (int)hp->n_ctx_orig, hp->rope_freq_base, ROPE_YARN_BETA_FAST,
                            ROPE_YARN_BETA_SLOW, dims);
        printf("  %-22s original context %u, beta %g/%g: pairs up to %g extrapolate, from %g on interpolate; "
               "cos/sin * %.9g\n", "YaRN", hp->n_ctx_orig, (double)ROPE_YARN_BETA_FAST, (double)ROPE_YARN_BETA_SLOW,
               (double)dims[0], (double)dims[1],
               (double)(hp->rope_attn_factor * (1.0f + 0.1f * logf(1.0f / hp->rope_freq_scale))));
    }
    if (L0->attn_sinks)
        printf("  %-22s one logit per query head (attn_sinks) joins every softmax%s\n", "attention sinks",
               L0->bo ? "; output projection with a bias" : "");
    put_layer_kinds(hp, w);
    const uint64_t rs_bytes = put_hybrid(hp);
    if (hp->q_scale != 0.0f)
        printf("  %-22s queries * %g before attention, softmax scale %g\n", "attention scale", (double)hp->q_scale,
               (double)hp->kq_scale);
    else if (hp->kq_scale == 1.0f / sqrtf((float)hp->head_dim))
        printf("  %-22s softmax scale %g (1/sqrt(head size))\n", "attention scale", (double)hp->kq_scale);
    else
        printf("  %-22s softmax scale %g\n", "attention scale", (double)hp->kq_scale);
    printf("  %-22s %s%s%s\n", "Q/K/V", LA->wqkv ? "fused attn_qkv" : "separate", LA->bq ? ", with biases" : "",
           LA->q_norm ? ", per-head Q/K RMS norms" : "");
    const bool gelu = hp->arch == MODEL_ARCH_GEMMA3 || hp->arch == MODEL_ARCH_GEMMA4;
    if (L0->ffn_up)
        printf("  %-22s %s%s%s\n", "FFN", gelu ? "GELU(tanh)-gated" : "SiLU-gated",
               L0->ffn_gate ? "" : " (gate and up fused in ffn_up)",
               L0->ffn_post_norm ? ", post-attention and post-FFN norms" : "");
    if (hp->n_expert > 0)
        put_experts(hp, L0);
    if (hp->embd_scale != 0.0f)
        printf("  %-22s %g (sqrt of the embedding length)\n", "embedding scale", (double)hp->embd_scale);
    if (hp->logit_softcap != 0.0f)
        printf("  %-22s %g\n", "logit softcapping", (double)hp->logit_softcap);
    printf("  %-22s %s\n", "output", w->output == w->tok_embd ? "tied to token_embd" : "output.weight");
    put_memory(hp, rs_bytes);
    /* what --blas auto (the default of the TUI, generate and bench) does with this model */
    char blas[256];
    forward_blas_describe(m, BLAS_MODE_AUTO, blas, sizeof blas);
    printf("  %-22s %s; %s\n", "OpenBLAS", blas, blas_library());
    model_free(m);
}

/* "tokenizer.ggml.<what>_token_id" with the token's text. */
static void put_special(const gguf_ctx *g, int64_t tokens, const char *what, const char *label)
{
    char key[128];
    snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", what);
    printf("  %-12s ", label);
    int64_t k = gguf_find_key(g, key);
    if (k < 0) {
        puts("-");
        return;
    }
    int64_t id;
    if (!gguf_get_i64(g, key, &id)) {
        fputs("(not an integer: ", stdout);
        put_value(g, k, 4);
        puts(")");
        return;
    }
    printf("%lld", (long long)id);
    uint64_t n = tokens >= 0 ? gguf_arr_len(g, tokens) : 0;
    if (id == -1 || id == UINT32_MAX) { /* how converters write "no such token" */
        puts(" (none)");
        return;
    }
    if (id >= 0 && (uint64_t)id < n) {
        putchar(' ');
        put_quoted(gguf_arr_str(g, tokens, (uint64_t)id), 64);
    } else {
        printf(" (out of range: vocab has %llu tokens)", (unsigned long long)n);
    }
    putchar('\n');
}

static void put_flag(const gguf_ctx *g, const char *key, const char *label)
{
    bool b;
    if (gguf_get_bool(g, key, &b))
        printf("  %-12s %s\n", label, b ? "true" : "false");
}

static void put_tokenizer(const gguf_ctx *g)
{
    gguf_str s;
    puts("tokenizer:");
    printf("  %-12s ", "model");
    char model[64] = "";
    if (gguf_get_str(g, "tokenizer.ggml.model", &s)) {
        put_escaped(s, 64);
        putchar('\n');
        snprintf(model, sizeof model, "%.*s", (int)(s.len < 63 ? s.len : 63), s.ptr);
        /* the name alone does not say how tokscope tokenizes (gemma4 is a BPE) */
        const char *about = tokenizer_model_about(model);
        printf("  %-12s %s\n", "kind", about ? about : "not supported by tokscope");
    } else
        puts("- (absent)");
    const char *implied = model[0] ? tokenizer_model_pre(model) : NULL;
    printf("  %-12s ", "pre");
    if (gguf_get_str(g, "tokenizer.ggml.pre", &s)) {
        put_escaped(s, 64);
        if (implied && (s.len != strlen(implied) || memcmp(s.ptr, implied, s.len)))
            printf(" (ignored: %s implies %s)", model, implied);
        putchar('\n');
    } else if (implied)
        printf("- (absent: %s implies %s)\n", model, implied);
    else
        puts("- (absent)");
    int64_t tokens = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (tokens >= 0 && (gguf_kv_type(g, tokens) != GGUF_VTYPE_ARRAY || gguf_arr_type(g, tokens) != GGUF_VTYPE_STRING)) {
        printf("  %-12s (tokenizer.ggml.tokens is not a string array)\n", "vocab size");
        tokens = -1;
    } else if (tokens >= 0)
        printf("  %-12s %llu\n", "vocab size", (unsigned long long)gguf_arr_len(g, tokens));
    else
        printf("  %-12s - (no tokenizer.ggml.tokens)\n", "vocab size");
    int64_t merges = gguf_find_key(g, "tokenizer.ggml.merges");
    if (merges >= 0)
        printf("  %-12s %llu\n", "merges", (unsigned long long)gguf_arr_len(g, merges));
    static const struct {
        const char *key, *label;
        bool always; /* print "-" when absent; the others only when present */
    } specials[] = {
        {"bos", "bos", true},      {"eos", "eos", true},     {"eot", "eot", true},
        {"eom", "eom", false},     {"unknown", "unk", true}, {"padding", "pad", true},
        {"seperator", "sep", false} /* sic: llama.cpp's spelling */,
    };
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        char key[128];
        snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", specials[i].key);
        if (specials[i].always || gguf_find_key(g, key) >= 0)
            put_special(g, tokens, specials[i].key, specials[i].label);
    }
    put_flag(g, "tokenizer.ggml.add_bos_token", "add bos");
    put_flag(g, "tokenizer.ggml.add_eos_token", "add eos");
    put_flag(g, "tokenizer.ggml.add_space_prefix", "space prefix");

    int64_t tk = gguf_find_key(g, "tokenizer.chat_template");
    if (tk >= 0 && gguf_kv_as_str(g, tk, &s))
        printf("chat template: present (%llu bytes)\n", (unsigned long long)s.len);
    else if (tk >= 0)
        printf("chat template: present but not a string (%s)\n", gguf_vtype_name(gguf_kv_type(g, tk)));
    else
        puts("chat template: none");
}

static void put_shape(const gguf_tensor *t, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < t->n_dims && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", d ? " x " : "", (long long)t->ne[d]);
}

static void put_tensors(const gguf_ctx *g)
{
    int64_t n = gguf_n_tensors(g);
    if (n == 0) {
        puts("tensors: none (vocab-only file)");
        return;
    }
    size_t w = 4;
    for (int64_t i = 0; i < n; i++) {
        size_t l = strlen(gguf_tensor_at(g, i)->name);
        if (l > w)
            w = l;
    }
    if (w > 64)
        w = 64;
    printf("tensors (%lld):\n", (long long)n);
    printf("  %-*s  %-24s  %-7s  %12s\n", (int)w, "name", "shape", "type", "bytes");
    struct {
        int64_t count;
        uint64_t bytes, params;
    } by_type[TENSOR_TYPE_COUNT] = {{0}};
    uint64_t params = 0, bytes = 0;
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char shape[128];
        put_shape(t, shape, sizeof shape);
        /* names come from the file: escape control bytes, keep the column */
        printf("  ");
        put_escaped((gguf_str){t->name, strlen(t->name)}, 256);
        size_t l = strlen(t->name);
        printf("%*s  %-24s  %-7s  %12zu\n", l < w ? (int)(w - l) : 0, "", shape, tensor_type_name(t->type), t->nbytes);
        if (t->type < TENSOR_TYPE_COUNT) { /* always: the reader refuses unknown ids */
            by_type[t->type].count++;
            by_type[t->type].bytes += t->nbytes;
            by_type[t->type].params += (uint64_t)t->n_elements;
        }
        params += (uint64_t)t->n_elements;
        bytes += t->nbytes;
    }
    puts("totals by type:");
    printf("  %-7s  %6s  %14s  %14s\n", "type", "count", "params", "bytes");
    for (uint32_t ty = 0; ty < TENSOR_TYPE_COUNT; ty++)
        if (by_type[ty].count)
            printf("  %-7s  %6lld  %14llu  %14llu%s\n", tensor_type_name(ty), (long long)by_type[ty].count,
                   (unsigned long long)by_type[ty].params, (unsigned long long)by_type[ty].bytes,
                   tensor_type_is_supported(ty) ? "" : "  (no kernels: cannot run)");
    printf("total parameters: %llu", (unsigned long long)params);
    if (params >= 1000000)
        printf(" (%.2f M)", (double)params / 1e6);
    else if (params >= 1000)
        printf(" (%.1f K)", (double)params / 1e3);
    printf("\ntotal tensor bytes: ");
    put_bytes_h(bytes);
    if (params)
        printf(", %.2f bits per weight", (double)bytes * 8 / (double)params);
    putchar('\n');
    /* The type mix in one line, largest share of the bytes first: what an
     * imatrix quant really is (an "IQ2_XXS" file keeps K types on some
     * tensors). Types of equal bytes keep their id order. */
    if (bytes) {
        printf("type mix (share of tensor bytes):");
        bool done[TENSOR_TYPE_COUNT] = {false};
        for (const char *sep = " ";; sep = ", ") {
            int best = -1;
            for (int ty = 0; ty < TENSOR_TYPE_COUNT; ty++)
                if (by_type[ty].count && !done[ty] && (best < 0 || by_type[ty].bytes > by_type[best].bytes))
                    best = ty;
            if (best < 0)
                break;
            done[best] = true;
            printf("%s%s %.1f%%", sep, tensor_type_name((uint32_t)best),
                   100.0 * (double)by_type[best].bytes / (double)bytes);
        }
        putchar('\n');
    }
    if (gguf_find_tensor(g, "token_embd.weight")) {
        if (gguf_find_tensor(g, "output.weight"))
            puts("output: separate output.weight");
        else
            puts("output: tied embeddings (no output.weight; token_embd.weight is reused)");
    }
}

static void put_kvs(const gguf_ctx *g)
{
    int64_t n = gguf_n_kv(g);
    printf("key/values (%lld):\n", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        gguf_str key = gguf_kv_key(g, i);
        printf("  ");
        put_escaped(key, 256);
        enum gguf_vtype t = gguf_kv_type(g, i);
        printf("%*s %-6s = ", key.len < 40 ? (int)(40 - key.len) : 0, "",
               t == GGUF_VTYPE_ARRAY ? "array" : gguf_vtype_name(t));
        put_value(g, i, KV_ARRAY_PREVIEW);
        putchar('\n');
    }
}

int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    bool kv = false;
    static const int opt_ids[] = {CLI_HELP, CLI_KV, CLI_MODEL};
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    cli p;
    cli_value v;
    cli_begin(&p, "info", opt_ids, sizeof opt_ids / sizeof opt_ids[0], false, argc, argv);
    int id;
    while ((id = cli_next(&p, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: return 2;
        case CLI_HELP: usage(stdout); return 0;
        case CLI_KV: kv = true; break;
        case CLI_MODEL:
            if (path)
                return cli_fail(&p, "one model at a time ('%s' and '%s')", path, v.text);
            path = v.text;
            break;
        }
    }
    for (int i = cli_rest(&p); i < argc; i++) {
        if (path)
            return cli_fail(&p, "one model at a time ('%s' and '%s')", path, argv[i]);
        path = argv[i];
    }
    if (!path)
        return cli_fail(&p, "MODEL is required");

    char err[1024];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    if (!g) {
        fprintf(stderr, "tokscope: %s\n", err);
        return 1;
    }

    printf("file:          %s\n", path);
    printf("  size:        ");
    put_bytes_h(gguf_file_size(g));
    printf("\n  GGUF:        v%u, alignment %zu, data offset %zu\n", gguf_version(g), gguf_alignment(g),
           gguf_data_offset(g));
    printf("  contents:    %lld key/values, %lld tensors\n", (long long)gguf_n_kv(g), (long long)gguf_n_tensors(g));
    if (gguf_n_tensors(g) > 0) {
        /* the reader checked every tensor lies inside the file */
        size_t end = 0;
        for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            size_t e = gguf_data_offset(g) + (size_t)t->offset + t->nbytes;
            if (e > end)
                end = e;
        }
        printf("  data end:    %zu (%zu trailing bytes)\n", end, gguf_file_size(g) - end);
    }

    gguf_str s;
    char *arch = gguf_get_str_dup(g, "general.architecture");
    printf("architecture:  ");
    if (arch) {
        put_escaped((gguf_str){arch, strlen(arch)}, 128);
        putchar('\n');
    } else
        puts("- (no general.architecture)");
    printf("name:          ");
    if (gguf_get_str(g, "general.name", &s)) {
        put_escaped(s, 128);
        putchar('\n');
    } else
        puts("-");
    uint32_t ft;
    if (gguf_get_u32(g, "general.file_type", &ft))
        printf("file type:     %u (%s)\n", ft, model_file_type_name(ft));
    else
        puts("file type:     - (no general.file_type)");
    if (arch && *arch && strlen(arch) < 200)
        put_hparams(g, arch);
    free(arch);
    put_model_view(path);
    put_tokenizer(g);
    put_tensors(g);
    if (kv)
        put_kvs(g);
    gguf_close(g);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tokscope: info: error writing output\n");
        return 1;
    }
    return 0;
}
