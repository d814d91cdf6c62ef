/* Unicode helpers for the tokenizers, with llama.cpp's exact conventions:
 * its UTF-8 decoder (lenient, invalid bytes -> U+FFFD one byte at a time),
 * its codepoint classes (one general category per codepoint plus the
 * White_Space flag) and GPT-2's byte <-> printable-codepoint mapping. */
#ifndef TOKSCOPE_UNICODE_H
#define TOKSCOPE_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum unicode_cat {
    UNICODE_CAT_NONE = 0, /* outside the text (lookahead past the end) */
    UNICODE_CAT_NUMBER = 1,
    UNICODE_CAT_LETTER = 2,
    UNICODE_CAT_SEPARATOR = 3,
    UNICODE_CAT_MARK = 4,
    UNICODE_CAT_PUNCT = 5,
    UNICODE_CAT_SYMBOL = 6,
    UNICODE_CAT_CONTROL = 7, /* \p{C}, includes unassigned codepoints */
};

#define UNICODE_FLAG_WHITESPACE 0x8

/* generated tables (unicode_data.c) */
extern const uint32_t unicode_range_starts[];
extern const uint8_t unicode_range_cats[];
extern const size_t unicode_n_ranges;
extern const uint32_t unicode_whitespace[];
extern const size_t unicode_n_whitespace;

/* Category in the low 3 bits, UNICODE_FLAG_WHITESPACE; codepoints past
 * U+10FFFF give 0 like the reference's "undefined". */
uint8_t unicode_flags(uint32_t cpt);
static inline int unicode_cat(uint8_t flags) { return flags & 7; }
static inline int unicode_is_ws(uint8_t flags) { return (flags & UNICODE_FLAG_WHITESPACE) != 0; }

/* Byte length of the UTF-8 sequence starting with byte c, from its high
 * nibble only (continuation bytes count 1), as llama.cpp's unicode_len_utf8. */
size_t unicode_len_utf8(uint8_t c);

/* Decodes one codepoint at s[*off] (len bytes total) the way the reference
 * does: no overlong/surrogate checks; an invalid or truncated sequence
 * consumes one byte and yields U+FFFD. */
uint32_t unicode_decode(const char *s, size_t len, size_t *off);

/* Decodes the whole buffer; returns a malloc'd array and its length in *n. */
uint32_t *unicode_decode_all(const char *s, size_t len, size_t *n);

/* Encodes cpt (> U+10FFFF becomes U+FFFD); returns bytes written (1..4). */
int unicode_encode(uint32_t cpt, char out[4]);

/* GPT-2 byte-level mapping: byte -> UTF-8 of its printable codepoint (len
 * 1 or 2), and codepoint -> byte (-1 when the codepoint is not in the map). */
const char *unicode_byte_to_utf8(uint8_t b, int *len);
int unicode_cpt_to_byte(uint32_t cpt);

#endif
