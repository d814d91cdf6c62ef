/* BPE pre-tokenizer: splits text into words with the regex list llama.cpp's
 * llm_tokenizer_bpe picks for tokenizer.ggml.pre, with unicode_regex_split's
 * semantics:
 *  - the gpt2 and llama3 expressions use hand-written splitters (ported);
 *  - an expression using \p{..} runs over a "collapsed" text where every
 *    codepoint is one byte (ASCII kept, other whitespace -> \v, other
 *    codepoints -> one byte per category) and each \p{X} becomes that byte
 *    plus X's ASCII members; we match it with PCRE2 in byte mode, so \s, \d
 *    and classes mean exactly what std::regex gives the reference;
 *  - other expressions run over codepoints with non-ASCII whitespace -> \v
 *    (PCRE2 UTF mode without UCP: ASCII-only \s like std::wregex).
 * Each expression refines the previous split; unmatched gaps stay words. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

#define RE_GPT2 TOK_RE_GPT2_STR
#define RE_LLAMA3 TOK_RE_LLAMA3_STR
#define RE_QWEN2                                                                                             \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| " \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_PORO " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"

/* deepseek-llm letter class, UTF-8 (from the reference's source) */
#define RE_DSLLM_LETTERS                                                                                        \
    "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf\xc7\x84-\xca\x93"   \
    "\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf\xce\x86\xce\x88-\xce\x8a"      \
    "\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-" \
    "\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f\xb5\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-"        \
    "\xe1\xb2\xbf\xe1\xb4\x80-\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-"        \
    "\xe1\xbc\x95\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-"        \
    "\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-\xe1\xbe\xb4"         \
    "\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-\xe1\xbf\x8c\xe1\xbf\x90-"       \
    "\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b\xe1\xbf\xa0-\xe1\xbf\xac\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-"       \
    "\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87\xe2\x84\x8a-\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d"         \
    "\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9"         \
    "\xe2\x84\xbc-\xe2\x84\xbf\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-"        \
    "\xe2\xb1\xbb\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-"        \
    "\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87\xea\x9e\x8b-"       \
    "\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-\xef\xac\x97\xef\xbc\xa1-"       \
    "\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93"    \
    "\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2"       \
    "\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+"
#define RE_DSLLM_PUNCT                                                                                      \
    "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x80-" \
    "\xe3\x80\x82]+"
#define RE_CJK "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+"

struct pre_set {
    const char *names; /* '|'-separated tokenizer.ggml.pre values */
    const char *re[7];
};

static const struct pre_set k_pre_sets[] = {
    {"default|", {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano|dbrx|smaug-bpe|glm4|"
     "chatglm-bpe",
     {RE_LLAMA3}},
    {"deepseek-llm", {"[\r\n]", RE_DSLLM_LETTERS, RE_DSLLM_PUNCT, "\\s+$", RE_CJK, "\\p{N}+"}},
    {"deepseek-coder", {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}"}},
    {"deepseek-v3|hunyuan-dense|joyai-llm|hy_v4",
     {"\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
      "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b|mellum2", {"\\p{N}", RE_GPT2}},
    {"gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|modern-bert|exaone4|jina-v1-en|"
     "jina-v2-code|roberta-bpe|mpt|olmo|jais|trillion|granite-docling",
     {RE_GPT2}},
    {"qwen2|deepseek-r1-qwen|kormo|f2llmv2|megrez|stablelm2|hunyuan|solar-open|grok-2", {RE_QWEN2}},
    {"poro-chat|bloom|gpt3-finnish", {RE_PORO}},
    {"viking", {RE_PORO, "\\p{N}"}},
    {"seed-coder",
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| "
      "?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"tekken",
     {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])("
      "[^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"gpt-4o|llama4|kanana2|talkie|minimax-m2",
     {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'["
      "mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'["
      "rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?"
      "!\\S)|\\s+"}},
    {"qwen35",
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
      "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"jais-2",
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|"
      "\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"}},
    {"spark2_5",
     {"\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
      "?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
      "\\p{N}"}},
    {"bailingmoe|bailingmoe2|llada-moe",
     {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
    {"ufakzeka", {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"laguna", {"[^\\n]+|[\\n]+", RE_QWEN2}},
    /* SentencePiece-style BPE: no word splitting beyond newline runs (words stay raw UTF-8) */
    {"gemma4|granite-embed-multi-311m", {"[^\\n]+|[\\n]+"}},
    {"exaone-moe",
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: "
      "\\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
    {"minicpm5",
     {"\\p{N}{1,3}",
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"chameleon",
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", RE_GPT2}},
};

static bool name_in(const char *name, const char *names)
{
    size_t n = strlen(name);
    for (const char *p = names;;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == n && !memcmp(p, name, n))
            return true;
        if (!bar)
            return false;
        p = bar + 1;
    }
}

/* \p{..} names the reference collapses, and their category */
static const struct {
    const char *pat;
    int cat;
} k_ucats[] = {
    {"\\p{N}", UNICODE_CAT_NUMBER},  {"\\p{L}", UNICODE_CAT_LETTER},  {"\\p{P}", UNICODE_CAT_PUNCT},
    {"\\p{M}", UNICODE_CAT_MARK},    {"\\p{S}", UNICODE_CAT_SYMBOL},  {"\\p{Lu}", UNICODE_CAT_LETTER},
    {"\\p{Ll}", UNICODE_CAT_LETTER}, {"\\p{Lt}", UNICODE_CAT_LETTER}, {"\\p{Lm}", UNICODE_CAT_LETTER},
    {"\\p{Lo}", UNICODE_CAT_LETTER},
};

/* byte standing for a category in the collapsed text (0xD0: anything else) */
static uint8_t collapsed_byte(int cat)
{
    switch (cat) {
    case UNICODE_CAT_NUMBER: return 0xD1;
    case UNICODE_CAT_LETTER: return 0xD2;
    case UNICODE_CAT_PUNCT: return 0xD3;
    case UNICODE_CAT_MARK: return 0xD4;
    case UNICODE_CAT_SYMBOL: return 0xD5;
    default: return 0xD0;
    }
}

/* ASCII members of each category, as class text */
static const char *collapsed_ascii(int cat)
{
    switch (cat) {
    case UNICODE_CAT_NUMBER: return "0-9";
    case UNICODE_CAT_LETTER: return "A-Za-z";
    case UNICODE_CAT_PUNCT: return "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}";
    case UNICODE_CAT_SYMBOL: return "\\$\\+<->^`\\|";
    default: return "";
    }
}

static bool uses_ucat(const char *re)
{
    for (size_t i = 0; i < sizeof k_ucats / sizeof k_ucats[0]; i++)
        if (strstr(re, k_ucats[i].pat))
            return true;
    return false;
}

/* The reference's regex rewrite for the collapsed text. */
static char *collapse_regex(const char *re)
{
    size_t n = strlen(re);
    char *out = malloc(n * 8 + 16);
    size_t o = 0;
    bool inside = false;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (re[i] == '[' && (i == 0 || re[i - 1] != '\\')) {
            out[o++] = '[';
            inside = true;
            continue;
        }
        if (inside && re[i] == ']' && re[i - 1] != '\\') {
            out[o++] = ']';
            inside = false;
            continue;
        }
        if (re[i] == '\\' && i + 3 < n && re[i + 1] == 'p' && re[i + 2] == '{') {
            const char *close = strchr(re + i + 3, '}');
            if (close && (size_t)(close - re) <= i + 10) {
                size_t pl = (size_t)(close - (re + i)) + 1;
                for (size_t k = 0; k < sizeof k_ucats / sizeof k_ucats[0]; k++) {
                    if (strlen(k_ucats[k].pat) == pl && !memcmp(k_ucats[k].pat, re + i, pl)) {
                        if (!inside)
                            out[o++] = '[';
                        out[o++] = (char)collapsed_byte(k_ucats[k].cat);
                        const char *a = collapsed_ascii(k_ucats[k].cat);
                        memcpy(out + o, a, strlen(a));
                        o += strlen(a);
                        if (!inside)
                            out[o++] = ']';
                        i += pl - 1;
                        goto next;
                    }
                }
            }
        }
        out[o++] = re[i];
    next:;
    }
    out[o] = 0;
    return out;
}

bool tok_regex_compile(tok_regex *r, const char *re, bool generic, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!generic && !strcmp(re, RE_GPT2)) {
        r->kind = TOK_RE_GPT2;
        return true;
    }
    if (!generic && !strcmp(re, RE_LLAMA3)) {
        r->kind = TOK_RE_LLAMA3;
        return true;
    }
    char *pat = NULL;
    uint32_t opts = PCRE2_DOLLAR_ENDONLY;
    if (uses_ucat(re)) {
        for (const unsigned char *p = (const unsigned char *)re; *p; p++)
            if (*p >= 0x80) {
                snprintf(err, errlen, "pre-tokenizer regex mixes unicode categories and non-ASCII characters");
                return false;
            }
        r->kind = TOK_RE_COLLAPSED;
        pat = collapse_regex(re);
        if (!pat) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
    } else {
        r->kind = TOK_RE_UTF;
        opts |= PCRE2_UTF;
    }
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)(pat ? pat : re), PCRE2_ZERO_TERMINATED, opts, &ec, &eo, NULL);
    free(pat);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        snprintf(err, errlen, "pre-tokenizer regex error at %zu: %s", (size_t)eo, (const char *)msg);
        return false;
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is unavailable */
    r->code = code;
    return true;
}

bool tok_pretok_init(tokenizer *t, char *err, size_t errlen)
{
    const struct pre_set *set = NULL;
    for (size_t i = 0; i < sizeof k_pre_sets / sizeof k_pre_sets[0]; i++)
        if (name_in(t->pre, k_pre_sets[i].names)) {
            set = &k_pre_sets[i];
            break;
        }
    if (!set) {
        snprintf(err, errlen, "unknown pre-tokenizer type: '%s'", t->pre);
        return false;
    }
    t->n_regex = 0;
    for (int i = 0; i < 7 && set->re[i]; i++) {
        if (!tok_regex_compile(&t->regex[i], set->re[i], false, err, errlen))
            return false;
        t->n_regex = i + 1;
    }
    return true;
}

void tok_pretok_free(tokenizer *t)
{
    for (int i = 0; i < t->n_regex; i++)
        if (t->regex[i].code)
            pcre2_code_free(t->regex[i].code);
    t->n_regex = 0;
}

/* ---- splitting ---- */

typedef struct offs {
    size_t *v;
    size_t n, cap;
    bool oom;
} offs;

static void offs_push(offs *o, size_t x)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 64;
        size_t *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv) {
            o->oom = true;
            return;
        }
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = x;
}

#define OOR 0xFFFFFFFFu
#define IS_L(f) (unicode_cat(f) == UNICODE_CAT_LETTER)
#define IS_N(f) (unicode_cat(f) == UNICODE_CAT_NUMBER)
#define IS_WS(f) unicode_is_ws(f)

typedef struct split_ctx {
    const uint32_t *cpts;
    const uint8_t *fl;
    size_t end;
    size_t prev;
    offs *out;
} split_ctx;

static inline uint32_t sc_cpt(const split_ctx *c, size_t p) { return p < c->end ? c->cpts[p] : OOR; }
static inline uint8_t sc_fl(const split_ctx *c, size_t p) { return p < c->end ? c->fl[p] : 0; }
static inline void sc_add(split_ctx *c, size_t e)
{
    if (e > c->prev)
        offs_push(c->out, e - c->prev);
    c->prev = e;
}
static inline uint32_t lower_ascii(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
static void split_gpt2(split_ctx *c, size_t ini)
{
    c->prev = ini;
    for (size_t pos = ini; pos < c->end;) {
        uint32_t cpt = sc_cpt(c, pos);
        uint8_t f = sc_fl(c, pos);
        if (cpt == '\'' && pos + 1 < c->end) {
            uint32_t n1 = sc_cpt(c, pos + 1);
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                pos += 2;
                sc_add(c, pos);
                continue;
            }
            if (pos + 2 < c->end) {
                uint32_t n2 = sc_cpt(c, pos + 2);
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    pos += 3;
                    sc_add(c, pos);
                    continue;
                }
            }
        }
        uint8_t f2 = cpt == ' ' ? sc_fl(c, pos + 1) : f;
        if (IS_L(f2)) {
            pos += cpt == ' ';
            while (IS_L(f2))
                f2 = sc_fl(c, ++pos);
            sc_add(c, pos);
            continue;
        }
        if (IS_N(f2)) {
            pos += cpt == ' ';
            while (IS_N(f2))
                f2 = sc_fl(c, ++pos);
            sc_add(c, pos);
            continue;
        }
        if (!(IS_WS(f2) || IS_L(f2) || IS_N(f2)) && f2) {
            pos += cpt == ' ';
            while (!(IS_WS(f2) || IS_L(f2) || IS_N(f2)) && f2)
                f2 = sc_fl(c, ++pos);
            sc_add(c, pos);
            continue;
        }
        size_t nws = 0;
        while (IS_WS(sc_fl(c, pos + nws)))
            nws++;
        if (nws > 1 && sc_cpt(c, pos + nws) != OOR) {
            pos += nws - 1;
            sc_add(c, pos);
            continue;
        }
        if (nws > 0) {
            pos += nws;
            sc_add(c, pos);
            continue;
        }
        sc_add(c, ++pos);
    }
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static void split_llama3(split_ctx *c, size_t ini)
{
    c->prev = ini;
    for (size_t pos = ini; pos < c->end;) {
        uint32_t cpt = sc_cpt(c, pos);
        uint8_t f = sc_fl(c, pos);
        if (cpt == '\'' && pos + 1 < c->end) {
            uint32_t n1 = lower_ascii(sc_cpt(c, pos + 1));
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                pos += 2;
                sc_add(c, pos);
                continue;
            }
            if (pos + 2 < c->end) {
                uint32_t n2 = lower_ascii(sc_cpt(c, pos + 2));
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    pos += 3;
                    sc_add(c, pos);
                    continue;
                }
            }
        }
        if (!(cpt == '\r' || cpt == '\n' || IS_N(f))) {
            if (IS_L(f) || IS_L(sc_fl(c, pos + 1))) {
                pos++;
                while (IS_L(sc_fl(c, pos)))
                    pos++;
                sc_add(c, pos);
                continue;
            }
        }
        if (IS_N(f)) {
            size_t i0 = pos;
            while (IS_N(sc_fl(c, pos))) {
                if (++pos - i0 >= 3) {
                    sc_add(c, pos);
                    i0 = pos;
                }
            }
            sc_add(c, pos);
            continue;
        }
        uint8_t f2 = cpt == ' ' ? sc_fl(c, pos + 1) : f;
        if (!(IS_WS(f2) || IS_L(f2) || IS_N(f2)) && f) {
            pos += cpt == ' ';
            while (!(IS_WS(f2) || IS_L(f2) || IS_N(f2)) && f2)
                f2 = sc_fl(c, ++pos);
            uint32_t c2 = sc_cpt(c, pos);
            while (c2 == '\r' || c2 == '\n')
                c2 = sc_cpt(c, ++pos);
            sc_add(c, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (IS_WS(sc_fl(c, pos + nws))) {
            uint32_t c2 = sc_cpt(c, pos + nws);
            if (c2 == '\r' || c2 == '\n')
                last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) {
            pos = last_rn;
            sc_add(c, pos);
            continue;
        }
        if (nws > 1 && sc_cpt(c, pos + nws) != OOR) {
            pos += nws - 1;
            sc_add(c, pos);
            continue;
        }
        if (nws > 0) {
            pos += nws;
            sc_add(c, pos);
            continue;
        }
        sc_add(c, ++pos);
    }
}

/* Runs a PCRE2 expression over each segment of subject (unit = 1 byte per
 * codepoint for collapsed text; UTF-8 with boff/rev maps otherwise). */
static void split_pcre(const tok_regex *r, const offs *in, offs *out, const uint8_t *subj, const size_t *boff,
                       const uint32_t *rev, pcre2_match_data *md)
{
    size_t start = 0; /* codepoint index */
    for (size_t k = 0; k < in->n; k++) {
        size_t len = in->v[k];
        size_t b0 = boff ? boff[start] : start;
        size_t b1 = boff ? boff[start + len] : start + len;
        const uint8_t *s = subj + b0;
        size_t slen = b1 - b0;
        size_t pos = 0;      /* byte offset within the segment where the next search starts */
        size_t last_end = 0; /* codepoint offset (within segment) of the previous match end */
        while (pos <= slen) {
            uint32_t mo = boff ? PCRE2_NO_UTF_CHECK : 0;
            int rc = pcre2_match(r->code, s, slen, pos, mo, md, NULL);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its stack on the heap */
                rc = pcre2_match(r->code, s, slen, pos, mo | PCRE2_NO_JIT, md, NULL);
            if (rc < 0)
                break; /* no (further) match: the rest of the segment stays one word */
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            size_t cms = boff ? rev[b0 + ms] - start : ms;
            size_t cme = boff ? rev[b0 + me] - start : me;
            if (me == ms) { /* empty match: never produced by our expressions; step over one codepoint */
                if (ms >= slen)
                    break;
                size_t step = 1;
                if (boff)
                    while (ms + step < slen && (s[ms + step] & 0xC0) == 0x80)
                        step++;
                pos = ms + step;
                continue;
            }
            if (cms > last_end)
                offs_push(out, cms - last_end);
            offs_push(out, cme - cms);
            last_end = cme;
            pos = me;
        }
        if (last_end < len)
            offs_push(out, len - last_end);
        start += len;
    }
}

static void words_put(tok_words *w, const char *s, size_t n)
{
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap : 256;
        while (nc < w->len + n)
            nc *= 2;
        char *nb = realloc(w->buf, nc);
        if (!nb) {
            w->oom = true;
            return;
        }
        w->buf = nb;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void words_mark(tok_words *w)
{
    if (w->n + 1 >= w->ocap) {
        size_t nc = w->ocap ? w->ocap * 2 : 64;
        size_t *no = realloc(w->off, nc * sizeof *no);
        if (!no) {
            w->oom = true;
            return;
        }
        w->off = no;
        w->ocap = nc;
    }
    w->off[++w->n] = w->len;
}

void tok_words_free(tok_words *w)
{
    free(w->buf);
    free(w->off);
    memset(w, 0, sizeof *w);
}

bool tok_pretok_split(const tokenizer *t, const char *text, size_t len, tok_words *w)
{
    size_t n;
    uint32_t *cpts = unicode_decode_all(text, len, &n);
    uint8_t *fl = malloc(n ? n : 1);
    uint8_t *collapsed = NULL, *utf = NULL;
    size_t *boff = NULL;
    uint32_t *rev = NULL;
    pcre2_match_data *md = NULL;
    offs a = {0}, b = {0};
    bool ok = false;
    if (!cpts || !fl)
        goto done;
    for (size_t i = 0; i < n; i++)
        fl[i] = cpts[i] > 0x10FFFF ? 0x10 : unicode_flags(cpts[i]); /* 0x10: "undefined", still non-zero */
    if (n)
        offs_push(&a, n);
    for (int ri = 0; ri < t->n_regex; ri++) {
        const tok_regex *r = &t->regex[ri];
        b.n = 0;
        if (r->kind == TOK_RE_GPT2 || r->kind == TOK_RE_LLAMA3) {
            split_ctx c = {cpts, fl, 0, 0, &b};
            size_t start = 0;
            for (size_t k = 0; k < a.n; k++) {
                c.end = start + a.v[k];
                if (r->kind == TOK_RE_GPT2)
                    split_gpt2(&c, start);
                else
                    split_llama3(&c, start);
                start = c.end;
            }
        } else {
            if (!md && !(md = pcre2_match_data_create(4, NULL)))
                goto done;
            if (r->kind == TOK_RE_COLLAPSED) {
                if (!collapsed) {
                    collapsed = malloc(n ? n : 1);
                    if (!collapsed)
                        goto done;
                    for (size_t i = 0; i < n; i++) {
                        if (cpts[i] < 128)
                            collapsed[i] = (uint8_t)cpts[i];
                        else if (IS_WS(fl[i]))
                            collapsed[i] = 0x0B;
                        else
                            collapsed[i] = collapsed_byte(unicode_cat(fl[i]));
                    }
                }
                split_pcre(r, &a, &b, collapsed, NULL, NULL, md);
            } else {
                if (!utf) {
                    utf = malloc(n * 4 + 1);
                    boff = malloc((n + 1) * sizeof *boff);
                    rev = malloc((n * 4 + 1) * sizeof *rev);
                    if (!utf || !boff || !rev)
                        goto done;
                    size_t o = 0;
                    for (size_t i = 0; i < n; i++) {
                        uint32_t cp = cpts[i];
                        if (cp > 0x7F && IS_WS(fl[i]))
                            cp = 0x0B;
                        else if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
                            cp = 0xFFFD; /* not encodable as valid UTF-8 for PCRE2 */
                        boff[i] = o;
                        int l = unicode_encode(cp, (char *)utf + o);
                        for (int j = 0; j < l; j++)
                            rev[o + (size_t)j] = (uint32_t)i;
                        o += (size_t)l;
                    }
                    boff[n] = o;
                    rev[o] = (uint32_t)n;
                }
                split_pcre(r, &a, &b, utf, boff, rev, md);
            }
        }
        if (b.oom)
            goto done;
        offs tmp = a;
        a = b;
        b = tmp;
    }
    /* words: codepoints back to UTF-8, then every byte through the GPT-2 map
     * (unless the vocab is not byte-level: gemma4) */
    if (!w->off) {
        w->ocap = 64;
        w->off = malloc(w->ocap * sizeof *w->off);
        if (!w->off)
            goto done;
    }
    w->n = 0;
    w->len = 0;
    w->off[0] = 0;
    size_t start = 0;
    for (size_t k = 0; k < a.n; k++) {
        for (size_t i = start; i < start + a.v[k]; i++) {
            char u[4];
            int l = unicode_encode(cpts[i], u);
            if (t->raw_words) {
                words_put(w, u, (size_t)l);
                continue;
            }
            for (int j = 0; j < l; j++) {
                int bl;
                const char *e = unicode_byte_to_utf8((uint8_t)u[j], &bl);
                words_put(w, e, (size_t)bl);
            }
        }
        words_mark(w);
        start += a.v[k];
    }
    ok = !w->oom;
done:
    free(cpts);
    free(fl);
    free(collapsed);
    free(utf);
    free(boff);
    free(rev);
    free(a.v);
    free(b.v);
    if (md)
        pcre2_match_data_free(md);
    return ok;
}
