/* Detokenization: token -> bytes (llama.cpp's token_to_piece, cached per
 * token with special rendering on) and sequences -> text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

/* BPE: every codepoint of the token text maps back to one byte; codepoints
 * outside the byte map are spelled out the way the reference does. */
static size_t bpe_decode_text(const char *s, size_t len, char *out)
{
    size_t o = 0, off = 0;
    while (off < len) {
        uint32_t cpt = unicode_decode(s, len, &off);
        int b = unicode_cpt_to_byte(cpt);
        if (b >= 0) {
            out[o++] = (char)b;
            continue;
        }
        char u[4];
        int l = unicode_encode(cpt, u);
        o += (size_t)sprintf(out + o, "[UNK_BYTE_0x");
        for (int j = 0; j < l; j++)
            o += (size_t)sprintf(out + o, "%02x", (uint8_t)u[j]);
        memcpy(out + o, s, len);
        o += len;
        out[o++] = ']';
    }
    return o;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool tok_build_pieces(tokenizer *t)
{
    t->piece = calloc((size_t)t->n_vocab, sizeof *t->piece);
    t->piece_len = calloc((size_t)t->n_vocab, sizeof *t->piece_len);
    /* worst case: every byte of a BPE token is an unmapped codepoint spelled out */
    size_t scap = (size_t)t->max_token_len * ((size_t)t->max_token_len + 24) + 16;
    char *tmp = malloc(scap);
    bool ok = t->piece && t->piece_len && tmp;
    for (int32_t id = 0; ok && id < t->n_vocab; id++) {
        const struct tok_token *tk = &t->tokens[id];
        uint32_t a = tk->attr;
        size_t n = 0;
        if (a & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED)) {
            memcpy(tmp, tk->text, tk->len);
            n = tk->len;
        } else if (a & TOK_ATTR_NORMAL) {
            if (t->kind == TOKENIZER_SPM || t->escape_ws) { /* ▁ -> space (gemma4 too) */
                for (size_t i = 0; i < tk->len;) {
                    if (i + 3 <= tk->len && !memcmp(tk->text + i, "\xe2\x96\x81", 3)) {
                        tmp[n++] = ' ';
                        i += 3;
                    } else {
                        tmp[n++] = tk->text[i++];
                    }
                }
            } else {
                n = bpe_decode_text(tk->text, tk->len, tmp);
            }
        } else if (a & TOK_ATTR_BYTE) {
            int hi = tk->len >= 5 ? hexval(tk->text[3]) : -1, lo = tk->len >= 5 ? hexval(tk->text[4]) : -1;
            tmp[0] = (char)(hi >= 0 && lo >= 0 ? hi * 16 + lo : 0);
            n = 1;
        } /* else undefined / unused: renders as nothing */
        char *p = malloc(n + 1);
        if (!p) {
            ok = false;
            break;
        }
        memcpy(p, tmp, n);
        p[n] = 0;
        t->piece[id] = p;
        t->piece_len[id] = (uint32_t)n;
    }
    free(tmp);
    return ok;
}

static const char *piece_of(const tokenizer *t, int32_t id, bool render_special, size_t *n)
{
    *n = 0;
    if (id < 0 || id >= t->n_vocab)
        return "";
    if (!render_special && (t->tokens[id].attr & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL)))
        return "";
    *n = t->piece_len[id];
    return t->piece[id];
}

int32_t tokenizer_token_to_piece(const tokenizer *t, int32_t id, bool render_special, char *buf, int32_t cap)
{
    size_t n;
    const char *p = piece_of(t, id, render_special, &n);
    if (buf && cap > 0)
        memcpy(buf, p, n < (size_t)cap ? n : (size_t)cap);
    return (int32_t)n;
}

int32_t tokenizer_decode(const tokenizer *t, const int32_t *ids, int32_t n, bool remove_leading_space,
                         bool render_special, char *buf, int32_t cap)
{
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l;
        const char *p = piece_of(t, ids[i], render_special, &l);
        /* like llama_detokenize: only the very first token loses its space */
        if (i == 0 && remove_leading_space && t->add_space_prefix && l && p[0] == ' ') {
            p++;
            l--;
        }
        if (buf && cap > 0 && total < (size_t)cap)
            memcpy(buf + total, p, total + l <= (size_t)cap ? l : (size_t)cap - total);
        total += l;
    }
    if (buf && cap > 0)
        buf[total < (size_t)cap ? total : (size_t)cap - 1] = 0;
    return total > INT32_MAX ? INT32_MAX : (int32_t)total;
}

/* llama_detokenize's space clean-up for BPE vocabs with clean_spaces. */
static size_t clean_spaces(char *text, size_t total)
{
    size_t t1 = total, n = total ? 1 : 0;
    for (size_t i = 1; i < t1; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
            n--;
        text[n++] = x;
    }
    size_t t2 = n;
    n = t2 ? 1 : 0;
    for (size_t i = 1; i < t2; i++) {
        char x = text[i];
        if (x == '\'' && i + 1 < t2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
            n--;
            text[++i] = 0;
        }
        text[n++] = x;
    }
    size_t t3 = n;
    n = t3 ? 1 : 0;
    for (size_t i = 1; i < t3; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < t3) {
            char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm')
                n--;
            else if (x1 != 't' && x1 != 'd' && i + 2 < t3) {
                char x2 = text[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e'))
                    n--;
            }
        }
        text[n++] = x;
    }
    return n;
}

int32_t tokenizer_detokenize(const tokenizer *t, const int32_t *ids, int32_t n, bool remove_special,
                             bool unparse_special, char *buf, int32_t cap)
{
    bool remove_space = t->add_space_prefix;
    if (remove_special && t->add_bos && n > 0 && ids[0] == t->bos) {
        remove_space = false;
        ids++;
        n--;
    }
    if (remove_special && t->add_eos && n > 0 && ids[n - 1] == t->eos)
        n--;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l;
        const char *p = piece_of(t, ids[i], unparse_special, &l);
        if (i == 0 && remove_space && l && p[0] == ' ') {
            p++;
            l--;
        }
        total += l;
    }
    char *tmp = malloc(total + 1);
    if (!tmp)
        return -1;
    size_t o = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l;
        const char *p = piece_of(t, ids[i], unparse_special, &l);
        if (i == 0 && remove_space && l && p[0] == ' ') {
            p++;
            l--;
        }
        memcpy(tmp + o, p, l);
        o += l;
    }
    if (t->clean_spaces)
        o = clean_spaces(tmp, o);
    if (buf && cap > 0) {
        memcpy(buf, tmp, o < (size_t)cap ? o : (size_t)cap - 1);
        buf[o < (size_t)cap ? o : (size_t)cap - 1] = 0;
    }
    free(tmp);
    return o > INT32_MAX ? INT32_MAX : (int32_t)o;
}

size_t tokenizer_utf8_complete(const char *buf, size_t len)
{
    const uint8_t *s = (const uint8_t *)buf;
    size_t j = len, k = 0;
    while (j > 0 && k < 4 && (s[j - 1] & 0xC0) == 0x80) {
        j--;
        k++;
    }
    if (j == 0 || k >= 4)
        return len; /* stray continuation bytes: nothing to wait for */
    uint8_t c = s[j - 1];
    size_t need;
    if (c < 0xC0)
        return len; /* ASCII (or junk) lead: complete */
    else if (c < 0xE0)
        need = 2;
    else if (c < 0xF0)
        need = 3;
    else if (c < 0xF8)
        need = 4;
    else
        return len;
    return k + 1 < need ? j - 1 : len;
}
