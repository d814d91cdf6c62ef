/* Tokenizer vocabulary: loading the tokenizer.* GGUF keys, special ids, token
 * attributes and the end-of-generation set, following llama.cpp's
 * llama_vocab::impl::load (including its text-based auto-detection). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

/* ---- byte string map ---- */

static uint64_t tok_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

bool tok_map_init(tok_map *m, size_t n_expected)
{
    size_t cap = 16;
    while (cap < n_expected * 2 + 1)
        cap <<= 1;
    m->keys = calloc(cap, sizeof *m->keys);
    m->lens = calloc(cap, sizeof *m->lens);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    m->n = 0;
    if (m->keys && m->lens && m->vals)
        return true;
    tok_map_free(m);
    return false;
}

void tok_map_free(tok_map *m)
{
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static bool tok_map_grow(tok_map *m)
{
    tok_map nm;
    if (!tok_map_init(&nm, m->cap))
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            tok_map_put(&nm, m->keys[i], m->lens[i], m->vals[i], NULL);
    tok_map_free(m);
    *m = nm;
    return true;
}

bool tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, bool *existed)
{
    if (existed)
        *existed = false;
    if ((m->n + 1) * 2 > m->cap && !tok_map_grow(m))
        return false;
    size_t mask = m->cap - 1;
    for (size_t i = tok_hash(key, len) & mask;; i = (i + 1) & mask) {
        if (!m->keys[i]) {
            m->keys[i] = key;
            m->lens[i] = (uint32_t)len;
            m->vals[i] = val;
            m->n++;
            return true;
        }
        if (m->lens[i] == len && memcmp(m->keys[i], key, len) == 0) {
            if (existed)
                *existed = true;
            return true;
        }
    }
}

int32_t tok_map_get(const tok_map *m, const char *key, size_t len)
{
    if (!m->cap)
        return -1;
    size_t mask = m->cap - 1;
    for (size_t i = tok_hash(key, len) & mask;; i = (i + 1) & mask) {
        if (!m->keys[i])
            return -1;
        if (m->lens[i] == len && memcmp(m->keys[i], key, len) == 0)
            return m->vals[i];
    }
}

int32_t tok_text_to_id(const tokenizer *t, const char *s, size_t len)
{
    return tok_map_get(&t->vocab, s, len);
}

int32_t tok_byte_token(const tokenizer *t, uint8_t b)
{
    static const char hex[] = "0123456789ABCDEF";
    char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    return tok_text_to_id(t, buf, 6);
}

int32_t tok_byte_to_id(const tokenizer *t, uint8_t b)
{
    int32_t id = tok_byte_token(t, b);
    if (id < 0) /* the reference falls back to the byte itself as text */
        id = tok_text_to_id(t, (const char *)&b, 1);
    return id;
}

/* ---- loading ---- */

static const struct {
    const char *model, *about, *pre;
} k_models[] = {
    {"llama", "SentencePiece (score-ordered merges, <0xXX> byte fallback)", "default"},
    {"gpt2", "byte-level BPE (pre-tokenizer from tokenizer.ggml.pre)", NULL},
    {"gemma4", "BPE over SentencePiece-style text (spaces as \xe2\x96\x81, <0xXX> byte fallback)", "gemma4"},
};

const char *tokenizer_model_about(const char *model)
{
    for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; i++)
        if (!strcmp(model, k_models[i].model))
            return k_models[i].about;
    return NULL;
}

const char *tokenizer_model_pre(const char *model)
{
    for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; i++)
        if (!strcmp(model, k_models[i].model))
            return k_models[i].pre;
    return NULL;
}

static int32_t gguf_token_id(const gguf_ctx *g, const char *key, int32_t def, int32_t n_vocab)
{
    uint32_t v;
    if (def >= n_vocab)
        def = -1;
    if (!gguf_get_u32(g, key, &v))
        return def;
    if (v >= (uint32_t)n_vocab) /* out of range (e.g. 0xFFFFFFFF): keep the default */
        return def;
    return (int32_t)v;
}

static void set_control(tokenizer *t, int32_t id) { t->tokens[id].attr |= TOK_ATTR_CONTROL; }

/* First token (by the candidates' listed order) present in the vocab. */
static int32_t find_first(const tokenizer *t, const char *const *cands)
{
    for (int i = 0; cands[i]; i++) {
        int32_t id = tokenizer_find(t, cands[i]);
        if (id >= 0)
            return id;
    }
    return -1;
}

static void detect_specials(tokenizer *t, int32_t fim[6])
{
    static const char *const eot_c[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                        "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>",
                                        "<end_of_utterance>", NULL};
    static const char *const eom_c[] = {"<|eom_id|>", NULL};
    static const char *const fim_pre_c[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                            "<\357\275\234fim\342\226\201begin\357\275\234>", "<PRE>",
                                            "\342\226\201<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
    static const char *const fim_suf_c[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                            "<\357\275\234fim\342\226\201hole\357\275\234>", "<SUF>",
                                            "\342\226\201<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
    static const char *const fim_mid_c[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                            "<\357\275\234fim\342\226\201end\357\275\234>", "<MID>",
                                            "\342\226\201<MID>", "<|code_middle|>", "<|middle|>", NULL};
    static const char *const fim_pad_c[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
    static const char *const fim_rep_c[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
                                            NULL};
    static const char *const fim_sep_c[] = {"<|file_sep|>", NULL};
    int32_t id;
    /* The reference takes the first hit in hash order; we take the first
     * candidate in the listed order. Either way the token becomes CONTROL. */
    if (t->eot < 0 && (id = find_first(t, eot_c)) >= 0) {
        t->eot = id;
        set_control(t, id);
    }
    if (t->eom < 0 && (id = find_first(t, eom_c)) >= 0) {
        t->eom = id;
        set_control(t, id);
    }
    const char *const *fims[6] = {fim_pre_c, fim_suf_c, fim_mid_c, fim_pad_c, fim_rep_c, fim_sep_c};
    for (int k = 0; k < 6; k++)
        if (fim[k] < 0 && (id = find_first(t, fims[k])) >= 0) {
            fim[k] = id;
            set_control(t, id);
        }
}

static void build_eog(tokenizer *t, int32_t fim_pad, int32_t fim_rep, int32_t fim_sep)
{
    static const char *const eog_c[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>", "[e~[", NULL};
    if (fim_pad >= 0)
        t->eog[fim_pad] = 1;
    if (fim_rep >= 0)
        t->eog[fim_rep] = 1;
    if (fim_sep >= 0)
        t->eog[fim_sep] = 1;
    for (int i = 0; eog_c[i]; i++) {
        int32_t id = tokenizer_find(t, eog_c[i]);
        if (id >= 0) {
            t->eog[id] = 1;
            set_control(t, id);
        }
    }
    /* gpt-oss: these are always rendered */
    static const char *const ud[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    for (int i = 0; ud[i]; i++) {
        int32_t id = tokenizer_find(t, ud[i]);
        if (id >= 0)
            t->tokens[id].attr = TOK_ATTR_USER_DEFINED;
    }
    if (t->eos >= 0)
        t->eog[t->eos] = 1;
    if (t->eot >= 0)
        t->eog[t->eot] = 1;
    if (t->eom >= 0)
        t->eog[t->eom] = 1;
    /* o200k_harmony / solar-open: <|end|> is not end-of-generation there */
    int32_t ret = tokenizer_find(t, "<|return|>"), call = tokenizer_find(t, "<|call|>");
    int32_t calls = tokenizer_find(t, "<|calls|>"), flush = tokenizer_find(t, "<|flush|>");
    int32_t end = tokenizer_find(t, "<|end|>");
    bool has_ret = ret >= 0 && t->eog[ret], has_call = (call >= 0 && t->eog[call]) || (calls >= 0 && t->eog[calls]);
    bool has_flush = flush >= 0 && t->eog[flush], has_end = end >= 0 && t->eog[end];
    if ((has_ret && has_call && has_end) || (has_call && has_flush && has_end)) {
        t->eog[end] = 0;
        t->tokens[end].attr = TOK_ATTR_USER_DEFINED;
    }
    /* gemma4 / paddleocr: </s> is not end-of-generation when <|tool_response> is */
    int32_t tr = tokenizer_find(t, "<|tool_response>"), s = tokenizer_find(t, "</s>");
    if (tr >= 0 && t->eog[tr] && s >= 0 && t->eog[s]) {
        t->eog[s] = 0;
        t->tokens[s].attr = TOK_ATTR_NORMAL;
    }
}

static int cmp_special(const void *a, const void *b, void *ctx)
{
    const tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->tokens[x].len != t->tokens[y].len)
        return t->tokens[x].len > t->tokens[y].len ? -1 : 1;
    return x < y ? -1 : x > y;
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return true;
    return false;
}

static void set_attr_by_text(tokenizer *t, const char *s, uint32_t attr, bool on)
{
    int32_t id = tokenizer_find(t, s);
    if (id < 0)
        return;
    if (on)
        t->tokens[id].attr |= attr;
    else
        t->tokens[id].attr &= ~attr;
}

static bool str_in(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

/* llama.cpp's GEMMA4 pre-type: tokenizer model gemma4 (which implies it),
 * or a gpt2 vocab naming it. */
static bool pre_is_gemma4(const char *pre)
{
    return !strcmp(pre, "gemma4") || !strcmp(pre, "granite-embed-multi-311m");
}

/* BPE pre-tokenizer flags (the regexes live in tokenizer_pretok.c). */
static void bpe_pre_flags(tokenizer *t)
{
    static const char *const llama3[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                                         "midm-2.0", "lfm2", "jina-v5-nano", NULL};
    static const char *const no_clean[] = {
        "deepseek-llm", "deepseek-coder", "deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4", "spark2_5",
        "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "poro-chat", "viking", "tekken",
        "smollm", "chameleon", "gpt-4o", "llama4", "kanana2", "talkie", "trillion", "granite-docling",
        "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "grok-2", "ufakzeka", "laguna",
        "minimax-m2", "solar-open", NULL};
    t->add_space_prefix = false;
    t->clean_spaces = true;
    if (pre_is_gemma4(t->pre)) {
        /* llama.cpp's GEMMA4 pre-type (clean_spaces stays on there) */
        t->escape_ws = true;
        t->raw_words = true;
        t->newline_words = true;
    }
    if (str_in(t->pre, llama3)) {
        t->ignore_merges = true;
        t->add_bos = true;
    }
    if (str_in(t->pre, no_clean))
        t->clean_spaces = false;
    if (!strcmp(t->pre, "minicpm5"))
        t->ignore_merges = true;
    if (!strcmp(t->pre, "tekken")) {
        t->ignore_merges = true;
        t->add_bos = true;
    }
    if (!strcmp(t->pre, "chameleon"))
        t->add_bos = true;
}

static bool load_merges(tokenizer *t, const gguf_ctx *g, char *err, size_t errlen)
{
    int64_t k = gguf_find_key(g, "tokenizer.ggml.merges");
    if (k < 0) {
        snprintf(err, errlen, "cannot find tokenizer merges (tokenizer.ggml.merges) in %s", gguf_path(g));
        return false;
    }
    if (gguf_kv_type(g, k) != GGUF_VTYPE_ARRAY || gguf_arr_type(g, k) != GGUF_VTYPE_STRING) {
        snprintf(err, errlen, "invalid gguf type for tokenizer.ggml.merges");
        return false;
    }
    uint64_t n = gguf_arr_len(g, k), total = 0;
    if (n > INT32_MAX) {
        snprintf(err, errlen, "too many merges (%llu)", (unsigned long long)n);
        return false;
    }
    for (uint64_t i = 0; i < n; i++)
        total += gguf_arr_str(g, k, i).len + 1;
    t->merge_arena = malloc(total ? total : 1);
    if (!t->merge_arena || !tok_map_init(&t->merges, n)) {
        snprintf(err, errlen, "out of memory loading merges");
        return false;
    }
    char *p = t->merge_arena;
    for (uint64_t i = 0; i < n; i++) {
        gguf_str s = gguf_arr_str(g, k, i);
        memcpy(p, s.ptr, s.len);
        p[s.len] = 0;
        /* the reference splits at the first space from index 1; a merge without
         * one becomes the pair ("", "") which never matches a lookup */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        if (sp)
            tok_map_put(&t->merges, p, s.len, (int32_t)i, NULL);
        p += s.len + 1;
    }
    return true;
}

tokenizer *tokenizer_build(const gguf_ctx *g, char *err, size_t errlen)
{
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = 0;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->bos = t->eos = t->eot = t->eom = t->unk = t->sep = t->pad = t->nl = -1;

    gguf_str s;
    if (!gguf_get_str(g, "tokenizer.ggml.model", &s)) {
        snprintf(err, errlen, "%s: no tokenizer (tokenizer.ggml.model missing)", gguf_path(g));
        goto fail;
    }
    snprintf(t->model, sizeof t->model, "%.*s", (int)(s.len < 31 ? s.len : 31), s.ptr);
    if (gguf_get_str(g, "tokenizer.ggml.pre", &s))
        snprintf(t->pre, sizeof t->pre, "%.*s", (int)(s.len < 63 ? s.len : 63), s.ptr);
    if (gguf_get_str(g, "general.name", &s))
        snprintf(t->name, sizeof t->name, "%.*s", (int)(s.len < 127 ? s.len : 127), s.ptr);

    int32_t def_bos, def_eos, def_unk;
    if (!strcmp(t->model, "llama")) {
        t->kind = TOKENIZER_SPM;
        def_bos = 1, def_eos = 2, def_unk = 0;
        snprintf(t->pre, sizeof t->pre, "default");
        t->add_space_prefix = true;
        t->clean_spaces = false;
        t->add_bos = true;
    } else if (!strcmp(t->model, "gpt2")) {
        t->kind = TOKENIZER_BPE;
        def_bos = 11, def_eos = 11, def_unk = -1;
        if (!t->pre[0])
            snprintf(t->pre, sizeof t->pre, "default");
    } else if (!strcmp(t->model, "gemma4")) {
        /* BPE merges over SentencePiece-style text; the reference ignores
         * tokenizer.ggml.pre here and has no default special ids */
        t->kind = TOKENIZER_BPE;
        def_bos = def_eos = def_unk = -1;
        snprintf(t->pre, sizeof t->pre, "gemma4");
    } else {
        snprintf(err, errlen,
                 "%s: unsupported tokenizer model '%s' (only 'llama' SPM, 'gpt2' BPE and 'gemma4' BPE over "
                 "SentencePiece-style text)",
                 gguf_path(g), t->model);
        goto fail;
    }

    int64_t kt = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (kt < 0 || gguf_kv_type(g, kt) != GGUF_VTYPE_ARRAY || gguf_arr_type(g, kt) != GGUF_VTYPE_STRING) {
        snprintf(err, errlen, "%s: tokenizer.ggml.tokens missing or not a string array", gguf_path(g));
        goto fail;
    }
    uint64_t n = gguf_arr_len(g, kt);
    if (n == 0 || n > (1u << 24)) {
        snprintf(err, errlen, "%s: unreasonable vocab size %llu", gguf_path(g), (unsigned long long)n);
        goto fail;
    }
    t->n_vocab = (int32_t)n;
    int64_t ks = gguf_find_key(g, "tokenizer.ggml.scores");
    if (ks >= 0 && (gguf_kv_type(g, ks) != GGUF_VTYPE_ARRAY || gguf_arr_len(g, ks) < n ||
                    (gguf_arr_type(g, ks) != GGUF_VTYPE_FLOAT32 && gguf_arr_type(g, ks) != GGUF_VTYPE_INT32))) {
        snprintf(err, errlen, "%s: invalid tokenizer.ggml.scores", gguf_path(g));
        goto fail;
    }
    int64_t ky = gguf_find_key(g, "tokenizer.ggml.token_type");
    if (ky >= 0 && (gguf_kv_type(g, ky) != GGUF_VTYPE_ARRAY || gguf_arr_len(g, ky) < n ||
                    gguf_arr_type(g, ky) != GGUF_VTYPE_INT32)) {
        snprintf(err, errlen, "%s: invalid tokenizer.ggml.token_type", gguf_path(g));
        goto fail;
    }

    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l = gguf_arr_str(g, kt, i).len;
        total += (l ? l : 24) + 1;
    }
    t->tokens = calloc(n, sizeof *t->tokens);
    t->arena = malloc(total);
    t->eog = calloc(n, 1);
    if (!t->tokens || !t->arena || !t->eog || !tok_map_init(&t->vocab, n)) {
        snprintf(err, errlen, "out of memory loading the vocab");
        goto fail;
    }
    char *p = t->arena;
    for (uint64_t i = 0; i < n; i++) {
        gguf_str w = gguf_arr_str(g, kt, i);
        struct tok_token *tk = &t->tokens[i];
        if (w.len == 0) {
            w.len = (uint64_t)snprintf(p, 24, "[EMPTY_%llu]", (unsigned long long)i);
        } else {
            memcpy(p, w.ptr, w.len);
            p[w.len] = 0;
        }
        tk->text = p;
        tk->len = (uint32_t)w.len;
        p += w.len + 1;
        if ((int32_t)w.len > t->max_token_len)
            t->max_token_len = (int32_t)w.len;
        bool dup;
        if (!tok_map_put(&t->vocab, tk->text, tk->len, (int32_t)i, &dup)) {
            snprintf(err, errlen, "out of memory loading the vocab");
            goto fail;
        }
        if (dup) {
            snprintf(err, errlen, "%s: duplicate token in vocabulary: '%s' has ids %d and %llu", gguf_path(g),
                     tk->text, tok_map_get(&t->vocab, tk->text, tk->len), (unsigned long long)i);
            goto fail;
        }
        tk->score = ks >= 0 ? (float)gguf_arr_f64(g, ks, i) : 0.0f;
        tk->type = ky >= 0 ? (int32_t)gguf_arr_i64(g, ky, i) : TOKEN_TYPE_NORMAL;
        switch (ky >= 0 ? tk->type : TOKEN_TYPE_NORMAL) {
        case TOKEN_TYPE_UNKNOWN: tk->attr = TOK_ATTR_UNKNOWN; break;
        case TOKEN_TYPE_UNUSED: tk->attr = TOK_ATTR_UNUSED; break;
        case TOKEN_TYPE_NORMAL: tk->attr = TOK_ATTR_NORMAL; break;
        case TOKEN_TYPE_CONTROL: tk->attr = TOK_ATTR_CONTROL; break;
        case TOKEN_TYPE_USER_DEFINED: tk->attr = TOK_ATTR_USER_DEFINED; break;
        case TOKEN_TYPE_BYTE: tk->attr = TOK_ATTR_BYTE; break;
        default: tk->attr = 0; break;
        }
    }

    if (t->kind == TOKENIZER_BPE) {
        if (!load_merges(t, g, err, errlen))
            goto fail;
        bpe_pre_flags(t);
    }
    bool bv;
    if (gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &bv))
        t->add_space_prefix = bv;

    int32_t nv = t->n_vocab;
    if (t->kind == TOKENIZER_BPE && (!strcmp(t->pre, "glm4") || !strcmp(t->pre, "chatglm-bpe")))
        def_bos = -1;
    t->bos = gguf_token_id(g, "tokenizer.ggml.bos_token_id", def_bos, nv);
    t->eos = gguf_token_id(g, "tokenizer.ggml.eos_token_id", def_eos, nv);
    t->eot = gguf_token_id(g, "tokenizer.ggml.eot_token_id", -1, nv);
    t->eom = gguf_token_id(g, "tokenizer.ggml.eom_token_id", -1, nv);
    t->unk = gguf_token_id(g, "tokenizer.ggml.unknown_token_id", def_unk, nv);
    t->sep = gguf_token_id(g, "tokenizer.ggml.seperator_token_id", -1, nv);
    t->pad = gguf_token_id(g, "tokenizer.ggml.padding_token_id", -1, nv);
    if (gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &bv))
        t->add_bos = bv;
    if (gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &bv))
        t->add_eos = bv;
    /* Gemma 4: the reference forces BOS on whatever the key says */
    if (t->kind == TOKENIZER_BPE && pre_is_gemma4(t->pre))
        t->add_bos = true;

    int32_t fim[6];
    static const char *const fim_keys[6] = {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id",
                                            "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_pad_token_id",
                                            "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id"};
    for (int i = 0; i < 6; i++)
        fim[i] = gguf_token_id(g, fim_keys[i], -1, nv);
    if (fim[0] < 0)
        fim[0] = gguf_token_id(g, "tokenizer.ggml.prefix_token_id", -1, nv);
    if (fim[1] < 0)
        fim[1] = gguf_token_id(g, "tokenizer.ggml.suffix_token_id", -1, nv);
    if (fim[2] < 0)
        fim[2] = gguf_token_id(g, "tokenizer.ggml.middle_token_id", -1, nv);
    detect_specials(t, fim);
    /* control tokens whose text says "unused" are unused */
    for (int32_t i = 0; i < nv; i++)
        if ((t->tokens[i].attr & TOK_ATTR_CONTROL) && strstr(t->tokens[i].text, "unused"))
            t->tokens[i].attr |= TOK_ATTR_UNUSED;
    build_eog(t, fim[3], fim[4], fim[5]);

    /* special tokens, longest text first (ties by id: the reference's sort is
     * unstable there) */
    t->special = malloc(sizeof *t->special * (size_t)nv);
    if (!t->special) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int32_t i = 0; i < nv; i++)
        if (t->tokens[i].attr & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN))
            t->special[t->n_special++] = i;
    qsort_r(t->special, (size_t)t->n_special, sizeof *t->special, cmp_special, t);

    /* per-model attributes the GGUF does not carry (llama.cpp keys them on the name) */
    if (contains_ci(t->name, "phi-3") || contains_ci(t->name, "phi3")) {
        for (int32_t i = 0; i < t->n_special; i++)
            t->tokens[t->special[i]].attr |= TOK_ATTR_RSTRIP;
        set_attr_by_text(t, "</s>", TOK_ATTR_RSTRIP, true);
        set_attr_by_text(t, "<unk>", TOK_ATTR_RSTRIP, false);
        set_attr_by_text(t, "<s>", TOK_ATTR_RSTRIP, false);
        set_attr_by_text(t, "<|endoftext|>", TOK_ATTR_RSTRIP, false);
    }
    if (strstr(t->pre, "jina-v2-de") || strstr(t->pre, "jina-v2-es") || strstr(t->pre, "jina-v2-code"))
        set_attr_by_text(t, "<mask>", TOK_ATTR_LSTRIP, true);

    if (t->kind == TOKENIZER_BPE && !tok_pretok_init(t, err, errlen))
        goto fail;
    if (!tok_build_pieces(t)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (t->kind == TOKENIZER_SPM) {
        t->nl = tok_byte_to_id(t, '\n');
    } else {
        int32_t ids[4];
        int32_t k = tokenizer_encode(t, "\n", 1, false, false, ids, 4);
        t->nl = k > 0 ? ids[0] : t->pad;
    }
    return t;
fail:
    tokenizer_free(t);
    return NULL;
}

void tokenizer_free(tokenizer *t)
{
    if (!t)
        return;
    tok_pretok_free(t);
    if (t->piece) {
        for (int32_t i = 0; i < t->n_vocab; i++)
            free(t->piece[i]);
        free(t->piece);
    }
    free(t->piece_len);
    tok_map_free(&t->vocab);
    tok_map_free(&t->merges);
    free(t->merge_arena);
    free(t->tokens);
    free(t->arena);
    free(t->eog);
    free(t->special);
    free(t);
}

enum tokenizer_kind tokenizer_kind(const tokenizer *t) { return t->kind; }
const char *tokenizer_pre(const tokenizer *t) { return t->pre; }
int32_t tokenizer_n_vocab(const tokenizer *t) { return t->n_vocab; }
int32_t tokenizer_bos(const tokenizer *t) { return t->bos; }
int32_t tokenizer_eos(const tokenizer *t) { return t->eos; }
int32_t tokenizer_eot(const tokenizer *t) { return t->eot; }
int32_t tokenizer_unk(const tokenizer *t) { return t->unk; }
int32_t tokenizer_pad(const tokenizer *t) { return t->pad; }
bool tokenizer_add_bos(const tokenizer *t) { return t->add_bos && t->bos >= 0; }

const char *tokenizer_token_str(const tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = t->tokens[id].len;
    return t->tokens[id].text;
}

enum tokenizer_token_type tokenizer_token_type(const tokenizer *t, int32_t id)
{
    if (id < 0 || id >= t->n_vocab)
        return TOKEN_TYPE_UNDEFINED;
    return (enum tokenizer_token_type)t->tokens[id].type;
}

bool tokenizer_is_eog(const tokenizer *t, int32_t id) { return id >= 0 && id < t->n_vocab && t->eog[id]; }

int32_t tokenizer_find(const tokenizer *t, const char *s) { return tok_text_to_id(t, s, strlen(s)); }

int32_t tokenizer_nl(const tokenizer *t) { return t->nl; }
