/* Model loading: what every architecture shares (sizes, RoPE, embeddings,
 * output) from the GGUF keys, then the architecture's own keys and layer
 * tensors (arch_<name>.c). Every tensor is checked for presence, shape and
 * type before anything runs, so a bad file fails here with the tensor's
 * name instead of inside the hot loop. A tensor no rule claimed is refused
 * too: running a file with weights we would ignore gives wrong numbers
 * without a word (Llama 3's rope_freqs once did exactly that). */
#include "model/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "model/arch.h"
#include "model/rope_yarn.h"

struct model {
    gguf_ctx *g;
    tokenizer *tok;
    model_hparams hp;
    model_weights w;
    char *arch, *name, *chat_template;
    size_t weight_bytes;
    bool view; /* model_mtp_view: g and the tensors are another model's */
};

struct model_loader {
    const gguf_ctx *g;
    const char *arch;
    bool *claimed; /* per tensor of the file */
    char *err;
    size_t errlen;
    bool failed;
};

bool ml_fail(model_loader *ld, const char *fmt, ...)
{
    if (!ld->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->err, ld->errlen, fmt, ap);
        va_end(ap);
        ld->failed = true;
    }
    return false;
}

bool ml_failed(const model_loader *ld) { return ld->failed; }

const gguf_ctx *ml_gguf(const model_loader *ld) { return ld->g; }

bool ml_u32(model_loader *ld, const char *key, uint32_t *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", ld->arch, key);
    return gguf_get_u32(ld->g, k, out);
}

bool ml_f32(model_loader *ld, const char *key, float *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", ld->arch, key);
    return gguf_get_f32(ld->g, k, out);
}

/* ARCH.KEY's name into k and its index (-1 when absent). */
static int64_t ml_find(model_loader *ld, const char *key, char *k, size_t cap)
{
    snprintf(k, cap, "%s.%s", ld->arch, key);
    return gguf_find_key(ld->g, k);
}

bool ml_bool_array(model_loader *ld, const char *key, bool *out, uint32_t n)
{
    char k[160];
    const int64_t i = ml_find(ld, key, k, sizeof k);
    if (i < 0 || gguf_kv_type(ld->g, i) != GGUF_VTYPE_ARRAY)
        return false;
    if (gguf_arr_len(ld->g, i) < n)
        return ml_fail(ld, "%s has %llu entries, the model has %u layers", k,
                       (unsigned long long)gguf_arr_len(ld->g, i), n);
    for (uint32_t j = 0; j < n; j++)
        out[j] = gguf_arr_i64(ld->g, i, j) != 0;
    return true;
}

bool ml_u32_array(model_loader *ld, const char *key, uint32_t *out, uint32_t n)
{
    char k[160];
    const int64_t i = ml_find(ld, key, k, sizeof k);
    if (i < 0)
        return false;
    if (gguf_kv_type(ld->g, i) != GGUF_VTYPE_ARRAY) {
        uint32_t v;
        if (!gguf_get_u32(ld->g, k, &v))
            return false;
        for (uint32_t j = 0; j < n; j++)
            out[j] = v;
        return true;
    }
    if (gguf_arr_len(ld->g, i) < n)
        return ml_fail(ld, "%s has %llu entries, the model has %u layers", k,
                       (unsigned long long)gguf_arr_len(ld->g, i), n);
    for (uint32_t j = 0; j < n; j++) {
        const int64_t v = gguf_arr_i64(ld->g, i, j);
        if (v < 0 || v > (1 << 20))
            return ml_fail(ld, "%s[%u] = %lld is out of range", k, j, (long long)v);
        out[j] = (uint32_t)v;
    }
    return true;
}

bool ml_i32_array(model_loader *ld, const char *key, int32_t *out, uint32_t n)
{
    char k[160];
    const int64_t i = ml_find(ld, key, k, sizeof k);
    if (i < 0 || gguf_kv_type(ld->g, i) != GGUF_VTYPE_ARRAY)
        return false;
    if (gguf_arr_len(ld->g, i) > n)
        return ml_fail(ld, "%s has %llu entries, at most %u expected", k, (unsigned long long)gguf_arr_len(ld->g, i), n);
    for (uint32_t j = 0; j < n; j++) {
        const int64_t v = j < gguf_arr_len(ld->g, i) ? gguf_arr_i64(ld->g, i, j) : 0;
        if (v < INT32_MIN || v > INT32_MAX)
            return ml_fail(ld, "%s[%u] = %lld is out of range", k, j, (long long)v);
        out[j] = (int32_t)v;
    }
    return true;
}

const gguf_tensor *ml_tensor(model_loader *ld, int il, const char *suffix, int64_t ne0, int64_t ne1, unsigned flags)
{
    return ml_tensor3(ld, il, suffix, ne0, ne1, 1, flags);
}

const gguf_tensor *ml_tensor3(model_loader *ld, int il, const char *suffix, int64_t ne0, int64_t ne1, int64_t ne2,
                              unsigned flags)
{
    if (ld->failed)
        return NULL;
    char name[128];
    if (il >= 0)
        snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    else
        snprintf(name, sizeof name, "%s", suffix);
    const gguf_tensor *t = gguf_find_tensor(ld->g, name);
    if (!t) {
        if (!(flags & ML_OPTIONAL))
            ml_fail(ld, "tensor '%s' is missing (required by architecture '%s')", name, ld->arch);
        return NULL;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != 1) {
        if (ne2 == 1)
            ml_fail(ld, "tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", name,
                    (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)ne0,
                    (long long)ne1);
        else
            ml_fail(ld, "tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld]", name,
                    (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)ne0,
                    (long long)ne1, (long long)ne2);
        return NULL;
    }
    const char *tn = tensor_type_name(t->type);
    if (!tensor_type_is_supported(t->type)) {
        ml_fail(ld, "tensor '%s' has type %s, which tokscope cannot compute with (supported: F32 F16 BF16 Q4_0 "
                "Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K MXFP4 IQ4_NL IQ4_XS IQ3_XXS IQ3_S IQ2_XXS IQ2_XS IQ2_S IQ1_S IQ1_M TQ1_0 TQ2_0)", name, tn ? tn : "unknown");
        return NULL;
    }
    if ((flags & ML_F32) && t->type != TENSOR_TYPE_F32) {
        ml_fail(ld, "tensor '%s' has type %s, expected F32 (norm weights, biases and factors)", name, tn ? tn : "?");
        return NULL;
    }
    if (tensor_row_size(t->type, ne0) == 0) {
        ml_fail(ld, "tensor '%s': row length %lld is not a multiple of the %s block size", name, (long long)ne0,
                tn ? tn : "?");
        return NULL;
    }
    const int64_t idx = t - gguf_tensor_at(ld->g, 0);
    if (idx >= 0 && idx < gguf_n_tensors(ld->g))
        ld->claimed[idx] = true;
    return t;
}

bool ml_qkv(model_loader *ld, model_layer *L, uint32_t il, const model_hparams *hp, bool fused_allowed)
{
    const int64_t E = hp->n_embd, NQ = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    const int l = (int)il;
    if (fused_allowed)
        L->wqkv = ml_tensor(ld, l, "attn_qkv.weight", E, NQ + 2 * KV, ML_OPTIONAL);
    if (!L->wqkv) {
        L->wq = ml_tensor(ld, l, "attn_q.weight", E, NQ, 0);
        L->wk = ml_tensor(ld, l, "attn_k.weight", E, KV, 0);
        L->wv = ml_tensor(ld, l, "attn_v.weight", E, KV, 0);
    }
    L->bq = ml_tensor(ld, l, "attn_q.bias", NQ, 1, ML_OPTIONAL | ML_F32);
    L->bk = ml_tensor(ld, l, "attn_k.bias", KV, 1, ML_OPTIONAL | ML_F32);
    L->bv = ml_tensor(ld, l, "attn_v.bias", KV, 1, ML_OPTIONAL | ML_F32);
    if (!ld->failed && (!L->bq != !L->bk || !L->bk != !L->bv))
        return ml_fail(ld, "layer %u has some of the attn_q/k/v biases but not all three", il);
    return !ld->failed;
}

bool ml_ffn(model_loader *ld, model_layer *L, uint32_t il, const model_hparams *hp)
{
    const int64_t E = hp->n_embd, F = hp->n_ff;
    L->ffn_gate = ml_tensor(ld, (int)il, "ffn_gate.weight", E, F, 0);
    L->ffn_up = ml_tensor(ld, (int)il, "ffn_up.weight", E, F, 0);
    L->ffn_down = ml_tensor(ld, (int)il, "ffn_down.weight", F, E, 0);
    return !ld->failed;
}

static void fail(model *m, char *err, size_t errlen, const char *path)
{
    /* Prefix the file so the user knows which model was rejected. */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, errlen, "%s: %s", path, tmp);
    model_free(m);
}

static bool str_is(gguf_str s, const char *lit) { return s.len == strlen(lit) && !memcmp(s.ptr, lit, s.len); }

/* The hyperparameters every architecture has (llama.cpp's load_hparams). */
static bool load_shared_hparams(model_loader *ld, model_hparams *hp)
{
    bool have_ff = ml_u32(ld, "feed_forward_length", &hp->n_ff);
    if (!have_ff && ml_u32(ld, "block_count", &hp->n_layer) && hp->n_layer > 0 && hp->n_layer <= MODEL_MAX_LAYERS) {
        /* one width per layer (Gemma 4): n_ff is the widest, which sizes the
         * buffers; each layer's tensors say their own */
        uint32_t ff[MODEL_MAX_LAYERS];
        have_ff = ml_u32_array(ld, "feed_forward_length", ff, hp->n_layer);
        for (uint32_t l = 0; have_ff && l < hp->n_layer; l++)
            hp->n_ff = ff[l] > hp->n_ff ? ff[l] : hp->n_ff;
    }
    if (!ml_u32(ld, "embedding_length", &hp->n_embd) || !ml_u32(ld, "block_count", &hp->n_layer) ||
        !ml_u32(ld, "attention.head_count", &hp->n_head) || !have_ff)
        return ml_fail(ld, "missing hyperparameter (%s.embedding_length, block_count, attention.head_count or "
                       "feed_forward_length)", ld->arch);
    bool kv_per_layer = false;
    if (!ml_u32(ld, "attention.head_count_kv", &hp->n_head_kv)) {
        hp->n_head_kv = hp->n_head;
        /* one count per layer (Gemma 4): n_head_kv is the most, for sizes */
        if (hp->n_layer > 0 && hp->n_layer <= MODEL_MAX_LAYERS &&
            ml_u32_array(ld, "attention.head_count_kv", hp->n_head_kv_l, hp->n_layer)) {
            kv_per_layer = true;
            hp->n_head_kv = 0;
            for (uint32_t l = 0; l < hp->n_layer; l++) {
                if (hp->n_head_kv_l[l] == 0 || hp->n_head % hp->n_head_kv_l[l] != 0)
                    return ml_fail(ld, "layer %u has %u KV heads, which do not divide its %u query heads", l,
                                   hp->n_head_kv_l[l], hp->n_head);
                hp->n_head_kv = hp->n_head_kv_l[l] > hp->n_head_kv ? hp->n_head_kv_l[l] : hp->n_head_kv;
            }
        }
    }
    for (uint32_t l = 0; !kv_per_layer && l < hp->n_layer && l < MODEL_MAX_LAYERS; l++)
        hp->n_head_kv_l[l] = hp->n_head_kv;
    if (!ml_u32(ld, "context_length", &hp->n_ctx_train))
        hp->n_ctx_train = 2048;
    if (hp->n_embd == 0 || hp->n_layer == 0 || hp->n_head == 0 || hp->n_head_kv == 0 || hp->n_ff == 0 ||
        hp->n_head % hp->n_head_kv != 0 || hp->n_embd > 65536 || hp->n_layer > MODEL_MAX_LAYERS ||
        hp->n_head > 4096 || hp->n_ff > 1 << 20 || hp->n_ctx_train == 0)
        return ml_fail(ld, "inconsistent hyperparameters: n_embd %u n_layer %u n_head %u n_head_kv %u n_ff %u",
                       hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_ff);
    hp->head_dim = hp->n_embd / hp->n_head;
    uint32_t vlen = 0;
    if (ml_u32(ld, "attention.key_length", &hp->head_dim) | ml_u32(ld, "attention.value_length", &vlen)) {
        if (vlen == 0)
            vlen = hp->n_embd / hp->n_head;
        if (vlen != hp->head_dim)
            return ml_fail(ld, "attention.key_length %u differs from value_length %u (not supported)", hp->head_dim,
                           vlen);
    }
    if (hp->head_dim == 0 || hp->head_dim > 1024 || (hp->head_dim * hp->n_head == 0))
        return ml_fail(ld, "head size %u is not supported", hp->head_dim);
    if (!(hp->n_embd % hp->n_head == 0 || ml_u32(ld, "attention.key_length", &vlen)))
        return ml_fail(ld, "n_embd %u is not a multiple of n_head %u and no attention.key_length says the head size",
                       hp->n_embd, hp->n_head);
    if (!ml_u32(ld, "rope.dimension_count", &hp->n_rot))
        hp->n_rot = hp->head_dim;
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
        return ml_fail(ld, "rope.dimension_count %u does not fit head size %u", hp->n_rot, hp->head_dim);

    if (!ml_f32(ld, "rope.freq_base", &hp->rope_freq_base))
        hp->rope_freq_base = 10000.0f;
    /* rope.scaling.type (default linear, as llama.cpp reads it) and factor */
    gguf_str stype = {"linear", 6};
    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.type", ld->arch);
    gguf_get_str(ld->g, key, &stype);
    if (str_is(stype, "none"))
        hp->rope_scaling = MODEL_ROPE_SCALING_NONE;
    else if (str_is(stype, "linear"))
        hp->rope_scaling = MODEL_ROPE_SCALING_LINEAR;
    else if (str_is(stype, "longrope"))
        hp->rope_scaling = MODEL_ROPE_SCALING_LONGROPE;
    else if (str_is(stype, "yarn"))
        hp->rope_scaling = MODEL_ROPE_SCALING_YARN;
    else
        return ml_fail(ld, "rope scaling type '%.*s' is not supported (supported: none, linear, longrope, yarn)",
                       (int)(stype.len > 40 ? 40 : stype.len), stype.ptr);
    float factor = 0;
    if (!ml_f32(ld, "rope.scaling.factor", &factor))
        ml_f32(ld, "rope.scale_linear", &factor);
    hp->rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    if (hp->rope_scaling == MODEL_ROPE_SCALING_NONE)
        hp->rope_freq_scale = 1.0f; /* never scale when the type says none */
    if (!ml_f32(ld, "rope.scaling.attn_factor", &hp->rope_attn_factor))
        hp->rope_attn_factor = 1.0f;
    /* YaRN as llama_context sets it up: ext_factor 1, the attention factor
     * derived from the scaling factor (the yarn_* keys are not read by the
     * reference's loader; neither are they here) */
    hp->rope_ext_factor = 0.0f;
    if (hp->rope_scaling == MODEL_ROPE_SCALING_YARN) {
        hp->rope_ext_factor = 1.0f;
        hp->rope_attn_factor = rope_yarn_attn_factor(hp->rope_freq_scale, hp->rope_attn_factor);
    }
    if (!ml_u32(ld, "rope.scaling.original_context_length", &hp->n_ctx_orig))
        hp->n_ctx_orig = hp->n_ctx_train;
    hp->rope_freq_base_swa = 10000.0f;
    hp->rope_freq_scale_swa = 1.0f;
    hp->head_dim_swa = hp->head_dim;
    hp->n_rot_swa = hp->n_rot;
    hp->n_layer_kv = hp->n_layer;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        hp->kv_layer[l] = (uint16_t)l;
    if (!ml_f32(ld, "attention.layer_norm_rms_epsilon", &hp->rms_eps))
        hp->rms_eps = 1e-5f;
    hp->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
    return true;
}

/* Takes ownership of g (closed on failure). path names the file in messages. */
static model *load(gguf_ctx *gctx, const char *path, bool need_tokenizer, char *err, size_t errlen)
{
    if (!gctx)
        return NULL;
    model *m = calloc(1, sizeof *m);
    if (!m) {
        gguf_close(gctx);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->g = gctx;
    const gguf_ctx *g = m->g;
    m->arch = gguf_get_str_dup(g, "general.architecture");
    if (!m->arch) {
        snprintf(err, errlen, "general.architecture is missing");
        fail(m, err, errlen, path);
        return NULL;
    }
    const arch_def *a = arch_find(m->arch);
    if (!a) {
        snprintf(err, errlen, "architecture '%.64s' is not supported (supported: %s)", m->arch, model_arch_list());
        fail(m, err, errlen, path);
        return NULL;
    }
    model_loader ld = {g, m->arch, calloc((size_t)gguf_n_tensors(g) + 1, sizeof(bool)), err, errlen, false};
    if (!ld.claimed) {
        snprintf(err, errlen, "out of memory");
        fail(m, err, errlen, path);
        return NULL;
    }
    model_hparams *hp = &m->hp;
    hp->arch = a->arch;
    hp->rope_type = a->rope_type;
    if (!gguf_get_u32(g, "general.file_type", &hp->file_type))
        hp->file_type = 0;
    if (load_shared_hparams(&ld, hp)) {
        const gguf_tensor *emb = gguf_find_tensor(g, "token_embd.weight");
        if (!emb)
            ml_fail(&ld, "tensor 'token_embd.weight' is missing");
        else if (emb->ne[1] <= 0 || emb->ne[1] > (1 << 24))
            ml_fail(&ld, "tensor 'token_embd.weight' has an implausible vocabulary size %lld", (long long)emb->ne[1]);
        else
            hp->n_vocab = (int32_t)emb->ne[1];
    }
    if (!ld.failed) {
        const int64_t E = hp->n_embd, V = hp->n_vocab;
        m->w.tok_embd = ml_tensor(&ld, -1, "token_embd.weight", E, V, 0);
        m->w.output_norm = ml_tensor(&ld, -1, "output_norm.weight", E, 1, ML_F32);
        m->w.output = ml_tensor(&ld, -1, "output.weight", E, V, ML_OPTIONAL);
        if (!m->w.output)
            m->w.output = m->w.tok_embd; /* tied embeddings */
        m->w.layers = calloc(hp->n_layer, sizeof *m->w.layers);
        if (!m->w.layers)
            ml_fail(&ld, "out of memory");
    }
    if (!ld.failed)
        a->load(&ld, hp, &m->w);
    for (int64_t i = 0; !ld.failed && i < gguf_n_tensors(g); i++)
        if (!ld.claimed[i])
            ml_fail(&ld, "tensor '%s' is not used by architecture '%s' as tokscope implements it; refusing to run "
                    "a model whose weights it would ignore", gguf_tensor_at(g, i)->name, m->arch);
    free(ld.claimed);
    if (ld.failed) {
        fail(m, err, errlen, path);
        return NULL;
    }
    for (int64_t i = 0; i < gguf_n_tensors(g); i++)
        m->weight_bytes += gguf_tensor_at(g, i)->nbytes;

    m->tok = tokenizer_build(g, err, errlen);
    if (!m->tok && !need_tokenizer) {
        err[0] = 0;
    } else if (!m->tok) {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "tokenizer: %s", tmp);
        fail(m, err, errlen, path);
        return NULL;
    }
    if (m->tok && tokenizer_n_vocab(m->tok) != hp->n_vocab) {
        snprintf(err, errlen, "vocabulary has %d tokens but token_embd.weight has %d rows",
                 tokenizer_n_vocab(m->tok), hp->n_vocab);
        fail(m, err, errlen, path);
        return NULL;
    }
    m->chat_template = gguf_get_str_dup(g, "tokenizer.chat_template");
    m->name = gguf_get_str_dup(g, "general.name");
    if (!m->name) {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        m->name = strdup(b);
        char *dot = m->name ? strrchr(m->name, '.') : NULL;
        if (dot && !strcmp(dot, ".gguf"))
            *dot = 0;
    }
    return m;
}

model *model_load(const char *path, char *err, size_t errlen)
{
    return load(gguf_open(path, err, errlen), path, true, err, errlen);
}

model *model_load_weights_only(const char *path, char *err, size_t errlen)
{
    return load(gguf_open(path, err, errlen), path, false, err, errlen);
}

model *model_load_buffer(const void *buf, size_t size, const char *name, char *err, size_t errlen)
{
    return load(gguf_open_buffer(buf, size, name, err, errlen), name, true, err, errlen);
}

void model_free(model *m)
{
    if (!m)
        return;
    if (m->tok)
        tokenizer_free(m->tok);
    free(m->w.layers);
    if (m->view) {
        free(m);
        return;
    }
    free(m->arch);
    free(m->name);
    free(m->chat_template);
    if (m->g)
        gguf_close(m->g);
    free(m);
}

model *model_mtp_view(const model *m, char *err, size_t errlen)
{
    const model_hparams *hp = &m->hp;
    const model_weights *w = &m->w;
    const model_layer *L = &w->mtp;
    if (hp->n_layer_nextn == 0) {
        snprintf(err, errlen, "the model has no MTP block (nextn_predict_layers): --spec mtp needs one");
        return NULL;
    }
    const bool moe = hp->n_expert > 0;
    const struct {
        const gguf_tensor *t;
        const char *name;
    } need[] = {
        {w->mtp_eh_proj, "nextn.eh_proj"}, {w->mtp_enorm, "nextn.enorm"}, {w->mtp_hnorm, "nextn.hnorm"},
        {L->attn_norm, "attn_norm"}, {L->ffn_norm, "post_attention_norm"}, {L->wq, "attn_q"}, {L->wk, "attn_k"},
        {L->wv, "attn_v"}, {L->wo, "attn_output"}, {L->q_norm, "attn_q_norm"}, {L->k_norm, "attn_k_norm"},
        {moe ? L->ffn_gate_inp : L->ffn_gate, moe ? "ffn_gate_inp" : "ffn_gate"},
        {moe ? L->ffn_down_exps : L->ffn_up, moe ? "ffn_down_exps" : "ffn_up"},
        {moe ? (L->ffn_gate_up_exps ? L->ffn_gate_up_exps : L->ffn_up_exps) : L->ffn_down,
         moe ? "ffn_up_exps" : "ffn_down"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!need[i].t) {
            snprintf(err, errlen, "the MTP block (blk.%u) lacks its %s tensor", hp->n_layer, need[i].name);
            return NULL;
        }
    if (moe && !L->ffn_gate_up_exps && !L->ffn_gate_exps) {
        snprintf(err, errlen, "the MTP block (blk.%u) lacks its ffn_gate_exps tensor", hp->n_layer);
        return NULL;
    }
    model *v = calloc(1, sizeof *v);
    model_layer *ls = calloc(1, sizeof *ls);
    if (!v || !ls) {
        free(v);
        free(ls);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->view = true;
    v->g = m->g;
    v->hp = *hp;
    v->hp.n_layer = 1;
    v->hp.n_layer_nextn = 0;
    v->hp.n_layer_kv = 1;
    v->hp.recurrent_layer[0] = false; /* the block is full attention */
    v->hp.swa_layer[0] = false;
    v->hp.kv_layer[0] = 0;
    v->hp.n_head_kv_l[0] = hp->n_head_kv;
    *ls = *L;
    v->w = *w;
    v->w.layers = ls;
    v->w.tok_embd = w->mtp_embed ? w->mtp_embed : w->tok_embd;
    v->w.output_norm = w->mtp_head_norm ? w->mtp_head_norm : w->output_norm;
    v->w.output = w->mtp_head ? w->mtp_head : w->output;
    v->w.ple_tok_embd = NULL;
    v->w.mtp_input = true;
    v->weight_bytes = m->weight_bytes;
    return v;
}

model *model_g4assist_view(const model *a, const model *t, char *err, size_t errlen)
{
    const model_hparams *ha = &a->hp, *ht = &t->hp;
    if (ha->arch != MODEL_ARCH_GEMMA4_ASSISTANT) {
        snprintf(err, errlen, "the draft model's architecture is %s, not gemma4-assistant", a->arch);
        return NULL;
    }
    if (ht->arch != MODEL_ARCH_GEMMA4) {
        snprintf(err, errlen, "a gemma4-assistant drafts for a gemma4 model, not %s", t->arch);
        return NULL;
    }
    if (ha->n_embd_out != ht->n_embd) {
        snprintf(err, errlen, "the assistant takes hidden states of %u (embedding_length_out), the target's are %u",
                 ha->n_embd_out, ht->n_embd);
        return NULL;
    }
    if (ha->n_vocab != ht->n_vocab) {
        snprintf(err, errlen, "the assistant has %d tokens, the target %d", ha->n_vocab, ht->n_vocab);
        return NULL;
    }
    model *v = calloc(1, sizeof *v);
    model_layer *ls = calloc(ha->n_layer, sizeof *ls);
    if (!v || !ls) {
        free(v);
        free(ls);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->view = true;
    v->g = a->g;
    v->hp = *ha;
    memcpy(ls, a->w.layers, ha->n_layer * sizeof *ls);
    v->w = a->w;
    v->w.layers = ls;
    v->w.tok_embd = t->w.tok_embd; /* the input rows: ggml_get_rows(model_other->tok_embd) */
    v->w.output = a->w.output;     /* its own token_embd, tied */
    v->w.g4assist_input = true;
    v->weight_bytes = a->weight_bytes;
    return v;
}

const model_hparams *model_get_hparams(const model *m) { return &m->hp; }
const tokenizer *model_get_tokenizer(const model *m) { return m->tok; }
const gguf_ctx *model_get_gguf(const model *m) { return m->g; }
const char *model_get_name(const model *m) { return m->name ? m->name : ""; }
const char *model_get_chat_template(const model *m) { return m->chat_template; }
const char *model_get_arch(const model *m) { return m->arch; }
size_t model_get_weight_bytes(const model *m) { return m->weight_bytes; }
const model_weights *model_get_weights(const model *m) { return &m->w; }

static bool is_quant(const gguf_tensor *t)
{
    return t && t->type > TENSOR_TYPE_F16 && t->type != TENSOR_TYPE_BF16;
}

bool model_is_quantized(const model *m)
{
    /* Decided by the matmul weights: F32/F16/BF16 throughout means "float". */
    const model_weights *w = &m->w;
    if (is_quant(w->output))
        return true;
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        const model_layer *L = &w->layers[l];
        const gguf_tensor *ts[] = {L->wq,          L->wk,         L->wv,           L->wqkv,
                                   L->wo,          L->ffn_gate,   L->ffn_up,       L->ffn_down,
                                   L->ffn_gate_exps, L->ffn_up_exps, L->ffn_gate_up_exps, L->ffn_down_exps,
                                   L->ffn_gate_shexp, L->ffn_up_shexp, L->ffn_down_shexp};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (is_quant(ts[i]))
                return true;
    }
    return false;
}
