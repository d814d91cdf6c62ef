/* LLaMA model loading: hyperparameters from the GGUF keys, every tensor the
 * forward pass reads checked for presence, shape and type before anything
 * runs, so a bad file fails here with the tensor's name instead of inside
 * the hot loop. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"

struct model {
    gguf_ctx *g;
    tokenizer *tok;
    model_hparams hp;
    model_weights w;
    char *arch, *name, *chat_template;
    size_t weight_bytes;
};

static bool get_u32_arch(const gguf_ctx *g, const char *arch, const char *key, uint32_t *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    return gguf_get_u32(g, k, out);
}

static bool get_f32_arch(const gguf_ctx *g, const char *arch, const char *key, float *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    return gguf_get_f32(g, k, out);
}

/* Finds `name`, checks its shape (ne0 x ne1; ne1 = 1 for vectors) and that we
 * can compute with its type. */
static const gguf_tensor *want(const gguf_ctx *g, const char *name, int64_t ne0, int64_t ne1, bool optional,
                               bool must_be_f32, char *err, size_t errlen)
{
    const gguf_tensor *t = gguf_find_tensor(g, name);
    if (!t) {
        if (!optional)
            snprintf(err, errlen, "tensor '%s' is missing", name);
        return NULL;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
        snprintf(err, errlen, "tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", name,
                 (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                 (long long)ne0, (long long)ne1);
        return NULL;
    }
    const char *tn = tensor_type_name(t->type);
    if (!tensor_type_is_supported(t->type)) {
        snprintf(err, errlen, "tensor '%s' has type %s, which tokscope cannot compute with (supported: F32 F16 "
                 "BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K)", name, tn ? tn : "unknown");
        return NULL;
    }
    if (must_be_f32 && t->type != TENSOR_TYPE_F32) {
        snprintf(err, errlen, "tensor '%s' has type %s, expected F32 (norm weights)", name, tn ? tn : "?");
        return NULL;
    }
    if (tensor_row_size(t->type, ne0) == 0) {
        snprintf(err, errlen, "tensor '%s': row length %lld is not a multiple of the %s block size", name,
                 (long long)ne0, tn ? tn : "?");
        return NULL;
    }
    return t;
}

static void fail(model *m, char *err, size_t errlen, const char *path)
{
    /* Prefix the file so the user knows which model was rejected. */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, errlen, "%s: %s", path, tmp);
    model_free(m);
}

static model *load(const char *path, bool need_tokenizer, char *err, size_t errlen)
{
    model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->g = gguf_open(path, err, errlen);
    if (!m->g) {
        free(m);
        return NULL;
    }
    const gguf_ctx *g = m->g;
    m->arch = gguf_get_str_dup(g, "general.architecture");
    if (!m->arch) {
        snprintf(err, errlen, "general.architecture is missing");
        fail(m, err, errlen, path);
        return NULL;
    }
    if (strcmp(m->arch, "llama") != 0) {
        snprintf(err, errlen, "architecture '%s' is not supported (only 'llama')", m->arch);
        fail(m, err, errlen, path);
        return NULL;
    }
    const char *arch = m->arch;
    model_hparams *hp = &m->hp;
    if (!get_u32_arch(g, arch, "embedding_length", &hp->n_embd) || !get_u32_arch(g, arch, "block_count", &hp->n_layer) ||
        !get_u32_arch(g, arch, "attention.head_count", &hp->n_head) ||
        !get_u32_arch(g, arch, "feed_forward_length", &hp->n_ff)) {
        snprintf(err, errlen, "missing hyperparameter (%s.embedding_length, block_count, attention.head_count or "
                 "feed_forward_length)", arch);
        fail(m, err, errlen, path);
        return NULL;
    }
    if (!get_u32_arch(g, arch, "attention.head_count_kv", &hp->n_head_kv))
        hp->n_head_kv = hp->n_head;
    if (!get_u32_arch(g, arch, "context_length", &hp->n_ctx_train))
        hp->n_ctx_train = 2048;
    if (hp->n_embd == 0 || hp->n_layer == 0 || hp->n_head == 0 || hp->n_head_kv == 0 || hp->n_ff == 0 ||
        hp->n_embd % hp->n_head != 0 || hp->n_head % hp->n_head_kv != 0 || hp->n_embd > 65536 ||
        hp->n_layer > 1024 || hp->n_ff > 1 << 20 || hp->n_ctx_train == 0) {
        snprintf(err, errlen, "inconsistent hyperparameters: n_embd %u n_layer %u n_head %u n_head_kv %u n_ff %u",
                 hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_ff);
        fail(m, err, errlen, path);
        return NULL;
    }
    hp->head_dim = hp->n_embd / hp->n_head;
    if (!get_u32_arch(g, arch, "rope.dimension_count", &hp->n_rot))
        hp->n_rot = hp->head_dim;
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0) {
        snprintf(err, errlen, "rope.dimension_count %u does not fit head size %u", hp->n_rot, hp->head_dim);
        fail(m, err, errlen, path);
        return NULL;
    }
    if (!get_f32_arch(g, arch, "rope.freq_base", &hp->rope_freq_base))
        hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    float factor = 0;
    gguf_str stype = {0};
    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    bool has_type = gguf_get_str(g, key, &stype);
    if (get_f32_arch(g, arch, "rope.scaling.factor", &factor) && factor > 0 &&
        (!has_type || (stype.len == 6 && !memcmp(stype.ptr, "linear", 6))))
        hp->rope_freq_scale = 1.0f / factor;
    if (has_type && !(stype.len == 6 && !memcmp(stype.ptr, "linear", 6)) &&
        !(stype.len == 4 && !memcmp(stype.ptr, "none", 4))) {
        snprintf(err, errlen, "rope scaling type '%.*s' is not supported", (int)(stype.len > 40 ? 40 : stype.len),
                 stype.ptr);
        fail(m, err, errlen, path);
        return NULL;
    }
    if (!get_f32_arch(g, arch, "attention.layer_norm_rms_epsilon", &hp->rms_eps))
        hp->rms_eps = 1e-5f;
    if (!gguf_get_u32(g, "general.file_type", &hp->file_type))
        hp->file_type = 0;

    const gguf_tensor *emb = gguf_find_tensor(g, "token_embd.weight");
    if (!emb) {
        snprintf(err, errlen, "tensor 'token_embd.weight' is missing");
        fail(m, err, errlen, path);
        return NULL;
    }
    hp->n_vocab = (int32_t)emb->ne[1];
    if (emb->ne[1] <= 0 || emb->ne[1] > (1 << 24)) {
        snprintf(err, errlen, "tensor 'token_embd.weight' has an implausible vocabulary size %lld",
                 (long long)emb->ne[1]);
        fail(m, err, errlen, path);
        return NULL;
    }
    const int64_t E = hp->n_embd, KV = (int64_t)hp->n_head_kv * hp->head_dim, V = hp->n_vocab, F = hp->n_ff;
    err[0] = 0;
    m->w.tok_embd = want(g, "token_embd.weight", E, V, false, false, err, errlen);
    if (m->w.tok_embd)
        m->w.output_norm = want(g, "output_norm.weight", E, 1, false, true, err, errlen);
    if (m->w.output_norm) {
        m->w.output = want(g, "output.weight", E, V, true, false, err, errlen);
        if (!m->w.output && !err[0])
            m->w.output = m->w.tok_embd; /* tied embeddings */
    }
    if (!m->w.output) {
        fail(m, err, errlen, path);
        return NULL;
    }
    m->w.layers = calloc(hp->n_layer, sizeof *m->w.layers);
    if (!m->w.layers) {
        snprintf(err, errlen, "out of memory");
        fail(m, err, errlen, path);
        return NULL;
    }
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        model_layer *L = &m->w.layers[l];
        char n[96];
#define WANT(field, suffix, ne0, ne1, f32)                                                                   \
    snprintf(n, sizeof n, "blk.%u." suffix, l);                                                              \
    if (!(L->field = want(g, n, ne0, ne1, false, f32, err, errlen))) {                                       \
        fail(m, err, errlen, path);                                                                          \
        return NULL;                                                                                         \
    }
        WANT(attn_norm, "attn_norm.weight", E, 1, true)
        WANT(wq, "attn_q.weight", E, E, false)
        WANT(wk, "attn_k.weight", E, KV, false)
        WANT(wv, "attn_v.weight", E, KV, false)
        WANT(wo, "attn_output.weight", E, E, false)
        WANT(ffn_norm, "ffn_norm.weight", E, 1, true)
        WANT(ffn_gate, "ffn_gate.weight", E, F, false)
        WANT(ffn_up, "ffn_up.weight", E, F, false)
        WANT(ffn_down, "ffn_down.weight", F, E, false)
#undef WANT
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

model *model_load(const char *path, char *err, size_t errlen) { return load(path, true, err, errlen); }

model *model_load_weights_only(const char *path, char *err, size_t errlen)
{
    return load(path, false, err, errlen);
}

void model_free(model *m)
{
    if (!m)
        return;
    if (m->tok)
        tokenizer_free(m->tok);
    free(m->w.layers);
    free(m->arch);
    free(m->name);
    free(m->chat_template);
    if (m->g)
        gguf_close(m->g);
    free(m);
}

const model_hparams *model_get_hparams(const model *m) { return &m->hp; }
const tokenizer *model_get_tokenizer(const model *m) { return m->tok; }
const gguf_ctx *model_get_gguf(const model *m) { return m->g; }
const char *model_get_name(const model *m) { return m->name ? m->name : ""; }
const char *model_get_chat_template(const model *m) { return m->chat_template; }
const char *model_get_arch(const model *m) { return m->arch; }
size_t model_get_weight_bytes(const model *m) { return m->weight_bytes; }
const model_weights *model_get_weights(const model *m) { return &m->w; }

bool model_is_quantized(const model *m)
{
    /* Decided by the matmul weights: F32/F16/BF16 throughout means "float". */
    const model_weights *w = &m->w;
    if (w->output->type > TENSOR_TYPE_F16 && w->output->type != TENSOR_TYPE_BF16)
        return true;
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        const gguf_tensor *ts[] = {w->layers[l].wq, w->layers[l].wk, w->layers[l].wv, w->layers[l].wo,
                                   w->layers[l].ffn_gate, w->layers[l].ffn_up, w->layers[l].ffn_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (ts[i]->type > TENSOR_TYPE_F16 && ts[i]->type != TENSOR_TYPE_BF16)
                return true;
    }
    return false;
}
