/* Internals shared by the tokenizer_*.c files (not part of the public API). */
#ifndef TOKSCOPE_TOKENIZER_IMPL_H
#define TOKSCOPE_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* Token attributes as llama.cpp derives them (bit set, not the GGUF enum). */
enum {
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
    TOK_ATTR_LSTRIP = 1 << 7,
    TOK_ATTR_RSTRIP = 1 << 8,
};

/* Byte string -> int32 map (open addressing); keys are not copied. */
typedef struct tok_map {
    const char **keys;
    uint32_t *lens;
    int32_t *vals;
    size_t cap; /* power of two */
    size_t n;
} tok_map;

bool tok_map_init(tok_map *m, size_t n_expected);
void tok_map_free(tok_map *m);
/* Inserts unless the key exists (first insertion wins); false on OOM. */
bool tok_map_put(tok_map *m, const char *key, size_t len, int32_t val, bool *existed);
int32_t tok_map_get(const tok_map *m, const char *key, size_t len); /* -1 when absent */

enum tok_regex_kind {
    TOK_RE_GPT2,      /* llama.cpp's hand-written gpt2 splitter */
    TOK_RE_LLAMA3,    /* llama.cpp's hand-written llama3 splitter */
    TOK_RE_COLLAPSED, /* regex with \p{..}: matched over the category-collapsed text */
    TOK_RE_UTF,       /* regex without \p{..}: matched over codepoints */
};

typedef struct tok_regex {
    enum tok_regex_kind kind;
    void *code; /* pcre2_code_8 * for the two regex kinds */
} tok_regex;

struct tok_token {
    const char *text; /* into t->arena, NUL-terminated */
    uint32_t len;
    float score;
    int32_t type; /* GGUF token_type */
    uint32_t attr;
};

struct tokenizer {
    enum tokenizer_kind kind;
    char model[32];
    char pre[64];
    char name[128];
    int32_t n_vocab;
    struct tok_token *tokens;
    char *arena; /* token texts, merge strings */
    tok_map vocab;
    tok_map merges; /* "left right" -> rank */
    char *merge_arena;
    int32_t max_token_len;

    int32_t bos, eos, eot, eom, unk, sep, pad, nl;
    bool add_bos, add_eos, add_space_prefix, ignore_merges, clean_spaces;
    /* BPE over SentencePiece-style text (llama.cpp's GEMMA4 pre-type):
     * spaces become U+2581 before the merges (escape_ws), words stay raw
     * UTF-8 instead of GPT-2 byte-level text and byte fallback uses the
     * <0xXX> tokens (raw_words: the reference's byte_encode = false). */
    bool escape_ws, raw_words;
    bool newline_words; /* a word made only of '\n' that is a token stays whole (gemma4) */

    int32_t *special; /* CONTROL | USER_DEFINED | UNKNOWN ids, longest text first */
    int32_t n_special;
    uint8_t *eog;     /* per token */

    tok_regex regex[8];
    int n_regex;

    char **piece;      /* token_to_piece(render_special=true) cache */
    uint32_t *piece_len;
};

/* tokenizer_vocab.c */
int32_t tok_text_to_id(const tokenizer *t, const char *s, size_t len);
/* The <0xXX> token of byte b, -1 if none. */
int32_t tok_byte_token(const tokenizer *t, uint8_t b);
/* SPM byte fallback: <0xXX>, else the one-byte token b, else -1. */
int32_t tok_byte_to_id(const tokenizer *t, uint8_t b);

/* tokenizer_pretok.c: pre-tokenizer regexes chosen by tokenizer.ggml.pre */
bool tok_pretok_init(tokenizer *t, char *err, size_t errlen);
/* Compiles one pre-tokenizer expression; generic forces the PCRE2 path even
 * for the gpt2/llama3 expressions that have hand-written splitters (tests). */
bool tok_regex_compile(tok_regex *r, const char *re, bool generic, char *err, size_t errlen);
#define TOK_RE_GPT2_STR "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define TOK_RE_LLAMA3_STR                                                                                     \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| " \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
void tok_pretok_free(tokenizer *t);

/* A growable int32 vector the encoders append to. */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
    bool oom;
    size_t limit; /* counting only (tokenizer_count): ids are counted, not kept; 0 = off */
} tok_ids;
/* Counting and past the limit: the encoders stop at the next word. */
static inline bool tok_ids_over(const tok_ids *o) { return o->limit && o->n > o->limit; }
void tok_ids_push(tok_ids *o, int32_t id);

/* Growable list of words produced by the pre-tokenizer: byte-encoded words
 * concatenated in buf, word i is buf[off[i] .. off[i+1]). */
typedef struct tok_words {
    char *buf;
    size_t len, cap;
    size_t *off;
    size_t n, ocap;
    bool oom;
} tok_words;
void tok_words_free(tok_words *w);
/* Splits raw text with t's regex list; words are byte-level encoded. */
bool tok_pretok_split(const tokenizer *t, const char *text, size_t len, tok_words *out);

/* tokenizer_spm.c / tokenizer_bpe.c: encode one raw-text fragment. */
void tok_spm_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out);
void tok_bpe_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out);

/* tokenizer_detok.c */
bool tok_build_pieces(tokenizer *t);

#endif
