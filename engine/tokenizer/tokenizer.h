/* Tokenizers: SentencePiece-style (GGUF `tokenizer.ggml.model = llama`),
 * byte-level BPE (`gpt2`, pre-tokenizer chosen by `tokenizer.ggml.pre`) and
 * Gemma 4's BPE over SentencePiece-style text (`gemma4`: spaces are U+2581,
 * no word splitting but at newlines, <0xXX> byte fallback; kind BPE).
 * Behaviour matches llama.cpp's llama-vocab for the same GGUF vocab. */
#ifndef TOKSCOPE_TOKENIZER_H
#define TOKSCOPE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

typedef struct tokenizer tokenizer;

enum tokenizer_kind { TOKENIZER_SPM, TOKENIZER_BPE };

/* Token attributes from tokenizer.ggml.token_type */
enum tokenizer_token_type {
    TOKEN_TYPE_UNDEFINED = 0,
    TOKEN_TYPE_NORMAL = 1,
    TOKEN_TYPE_UNKNOWN = 2,
    TOKEN_TYPE_CONTROL = 3,
    TOKEN_TYPE_USER_DEFINED = 4,
    TOKEN_TYPE_UNUSED = 5,
    TOKEN_TYPE_BYTE = 6,
};

/* What tokscope makes of a tokenizer.ggml.model value, for display: the
 * algorithm in a few words, NULL when the model is not supported. */
const char *tokenizer_model_about(const char *model);
/* The pre-tokenizer a tokenizer.ggml.model implies whatever tokenizer.ggml.pre
 * says ("default" for llama, "gemma4" for gemma4), NULL when the key decides. */
const char *tokenizer_model_pre(const char *model);

/* Builds from the tokenizer.* keys of an open GGUF (model or vocab-only). The
 * tokenizer copies what it needs; the gguf may be closed afterwards. */
tokenizer *tokenizer_build(const gguf_ctx *g, char *err, size_t errlen);
void tokenizer_free(tokenizer *t);

enum tokenizer_kind tokenizer_kind(const tokenizer *t);
const char *tokenizer_pre(const tokenizer *t); /* "default", "smollm", ... */
int32_t tokenizer_n_vocab(const tokenizer *t);
int32_t tokenizer_bos(const tokenizer *t);  /* -1 if none */
int32_t tokenizer_eos(const tokenizer *t);
int32_t tokenizer_eot(const tokenizer *t);  /* -1 if none */
int32_t tokenizer_unk(const tokenizer *t);
int32_t tokenizer_pad(const tokenizer *t);
/* tokenizer.ggml.add_bos_token (default: SPM and llama3-style BPE yes, other
 * BPE no; gemma4 always yes, as the reference forces it) and the vocab has a
 * BOS id. */
bool tokenizer_add_bos(const tokenizer *t);

/* Encodes `len` bytes of text like llama_tokenize(add_special = add_bos).
 * add_bos: prepend BOS (only if the vocab has one; EOS is never appended).
 * parse_special: control and unknown-type tokens written literally in the text
 * ("<|im_start|>") become those tokens; user-defined tokens always do, as in
 * the reference. Writes at most max_out ids and returns the total count (may
 * exceed max_out: call again with a bigger buffer), or -1 on error. Invalid
 * UTF-8 is not an error: SPM byte-encodes it, BPE sees U+FFFD, as the
 * reference does. */
int32_t tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_bos,
                         bool parse_special, int32_t *out, int32_t max_out);

/* The count tokenizer_encode would return, without keeping the ids, stopping
 * early once it passes limit (limit <= 0: no limit). Exact up to limit; above
 * it, the count where it stopped (> limit, <= the full count). Fragments
 * between special tokens, and BPE's pretokenized words, are encoded
 * independently, so counting stops after the one that passes the limit (a
 * fragment is still pretokenized whole); an SPM fragment is merged whole (its
 * merges cross spaces), so a long one is counted in full. -1 on error. */
int32_t tokenizer_count(const tokenizer *t, const char *text, size_t len, bool add_bos, bool parse_special,
                        int32_t limit);

/* The token's vocabulary string as stored ("▁the", "Ġthe", "<0x0A>"). */
const char *tokenizer_token_str(const tokenizer *t, int32_t id, size_t *len);
enum tokenizer_token_type tokenizer_token_type(const tokenizer *t, int32_t id);

/* The bytes the token contributes to the output text (SPM and gemma4: ▁ ->
 * space, <0xXX> -> that byte; other BPE: byte-level decoding). Control tokens give their text only
 * when render_special. Returns the byte count (may exceed cap; nothing past cap
 * is written). A token can be part of a UTF-8 character: callers that print
 * must buffer incomplete sequences (see tokenizer_utf8_complete). */
int32_t tokenizer_token_to_piece(const tokenizer *t, int32_t id, bool render_special, char *buf,
                                 int32_t cap);

/* Detokenize a sequence by concatenating pieces; when remove_leading_space,
 * the first token (only the first, as in llama_detokenize) loses one leading
 * space if the vocab adds a space prefix (SPM). No clean-up of spaces (see
 * tokenizer_detokenize), so valid UTF-8 round-trips. Returns bytes needed
 * (like snprintf; output truncated to cap-1 and NUL-terminated). */
int32_t tokenizer_decode(const tokenizer *t, const int32_t *ids, int32_t n, bool remove_leading_space,
                         bool render_special, char *buf, int32_t cap);

/* Length of the longest prefix of buf[0..len) that ends on a UTF-8 character
 * boundary (the rest waits for the next token). */
size_t tokenizer_utf8_complete(const char *buf, size_t len);

/* End-of-generation: eos, eot and the vocab's other end-of-turn tokens
 * (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>, ...). */
bool tokenizer_is_eog(const tokenizer *t, int32_t id);

/* Id of the token whose text is exactly s, or -1. */
int32_t tokenizer_find(const tokenizer *t, const char *s);

/* llama_detokenize exactly: remove_special drops a leading BOS (then keeps the
 * space) / trailing EOS the vocab adds; the first token loses one leading
 * space when the vocab adds a space prefix; BPE vocabs with clean_spaces get
 * llama.cpp's " ," / " 's" clean-up. Returns the byte count (text truncated to
 * cap-1 and NUL-terminated), -1 on allocation failure. */
int32_t tokenizer_detokenize(const tokenizer *t, const int32_t *ids, int32_t n, bool remove_special,
                             bool unparse_special, char *buf, int32_t cap);

/* Newline token (SPM <0x0A>, BPE: encoding of "\n"), -1 if none. */
int32_t tokenizer_nl(const tokenizer *t);

#endif
