/* Tokenizer front end: special-token partitioning (llama.cpp's
 * tokenizer_st_partition) and dispatch of the raw-text fragments to the SPM
 * or BPE encoder, with llama.cpp's BOS, space-prefix and (SPM, gemma4)
 * space-escaping rules. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

void tok_ids_push(tok_ids *o, int32_t id)
{
    if (o->limit) {
        o->n++;
        return;
    }
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 256;
        int32_t *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv) {
            o->oom = true;
            return;
        }
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = id;
}

typedef struct frag {
    int32_t token; /* -1: raw text [off, off+len) */
    size_t off, len;
} frag;

typedef struct frags {
    frag *v;
    size_t n, cap;
    bool oom;
} frags;

static void frags_push(frags *f, int32_t token, size_t off, size_t len)
{
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 16;
        frag *nv = realloc(f->v, nc * sizeof *nv);
        if (!nv) {
            f->oom = true;
            return;
        }
        f->v = nv;
        f->cap = nc;
    }
    f->v[f->n++] = (frag){token, off, len};
}

static const char *find_bytes(const char *hay, size_t hl, const char *needle, size_t nl)
{
    return nl ? memmem(hay, hl, needle, nl) : NULL;
}

/* Splits every raw fragment around each occurrence of each special token,
 * longest tokens first; lstrip/rstrip tokens swallow adjacent whitespace. */
static bool partition(const tokenizer *t, const char *text, size_t len, bool parse_special, frags *cur)
{
    frags nxt = {0};
    frags_push(cur, -1, 0, len);
    for (int32_t si = 0; si < t->n_special && !cur->oom; si++) {
        int32_t id = t->special[si];
        const struct tok_token *tk = &t->tokens[id];
        if (!parse_special && (tk->attr & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN)))
            continue; /* user-defined tokens are matched even then, like HF tokenizers */
        bool any = false;
        for (size_t k = 0; k < cur->n && !any; k++)
            if (cur->v[k].token < 0 && find_bytes(text + cur->v[k].off, cur->v[k].len, tk->text, tk->len))
                any = true;
        if (!any)
            continue;
        nxt.n = 0;
        for (size_t k = 0; k < cur->n; k++) {
            frag f = cur->v[k];
            if (f.token >= 0) {
                frags_push(&nxt, f.token, 0, 0);
                continue;
            }
            size_t base = f.off, blen = f.len;
            for (;;) {
                const char *m = find_bytes(text + base, blen, tk->text, tk->len);
                if (!m) {
                    if (blen > 0)
                        frags_push(&nxt, -1, base, blen);
                    break;
                }
                size_t mo = (size_t)(m - text);
                size_t ll = mo - base;
                if (tk->attr & TOK_ATTR_LSTRIP)
                    while (ll > 0 && isspace((unsigned char)text[base + ll - 1]))
                        ll--;
                if (ll > 0)
                    frags_push(&nxt, -1, base, ll);
                frags_push(&nxt, id, 0, 0);
                size_t end = base + blen, ro = mo + tk->len;
                if (ro >= end)
                    break;
                size_t rl = end - ro;
                if (tk->attr & TOK_ATTR_RSTRIP)
                    while (rl > 0 && isspace((unsigned char)text[ro])) {
                        ro++;
                        rl--;
                    }
                base = ro;
                blen = rl;
            }
        }
        frags tmp = *cur;
        *cur = nxt;
        nxt = tmp;
    }
    free(nxt.v);
    return !cur->oom && !nxt.oom;
}

/* llama_escape_whitespace: each ' ' byte becomes U+2581 (E2 96 81); out
 * holds 3 * len bytes. Returns the bytes written. */
static size_t escape_spaces(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') {
            out[o++] = (char)0xE2;
            out[o++] = (char)0x96;
            out[o++] = (char)0x81;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

/* limit > 0: count only, and stop once the count passes limit. */
static int32_t encode(const tokenizer *t, const char *text, size_t len, bool add_bos, bool parse_special, int32_t *out,
                      int32_t max_out, int32_t limit)
{
    tok_ids ids = {.limit = limit > 0 ? (size_t)limit : 0};
    frags fr = {0};
    char *buf = NULL;
    int32_t ret = -1;
    if (!t || (!text && len))
        return -1;
    if (len > (size_t)INT32_MAX / 2)
        return -1;
    if (len && !partition(t, text, len, parse_special, &fr))
        goto done;
    if (add_bos && t->bos >= 0)
        tok_ids_push(&ids, t->bos);
    if (t->kind == TOKENIZER_SPM) {
        bool prev_special = true; /* the first fragment gets the space prefix */
        buf = malloc(len * 3 + 4);
        if (!buf)
            goto done;
        for (size_t k = 0; k < fr.n && !tok_ids_over(&ids); k++) {
            const frag *f = &fr.v[k];
            if (f->token >= 0) {
                tok_ids_push(&ids, f->token);
                prev_special = true;
                continue;
            }
            size_t o = 0;
            /* spaces become U+2581, the space prefix too */
            if (t->add_space_prefix && prev_special)
                o = escape_spaces(" ", 1, buf);
            o += escape_spaces(text + f->off, f->len, buf + o);
            tok_spm_encode(t, buf, o, &ids);
            prev_special = false;
        }
    } else {
        if (t->escape_ws && !(buf = malloc(len * 3 + 1)))
            goto done;
        for (size_t k = 0; k < fr.n && !tok_ids_over(&ids); k++) {
            const frag *f = &fr.v[k];
            if (f->token >= 0) {
                tok_ids_push(&ids, f->token);
            } else if (t->escape_ws) {
                /* gemma4: every space becomes U+2581 before the merges (no prefix) */
                size_t o = escape_spaces(text + f->off, f->len, buf);
                tok_bpe_encode(t, buf, o, &ids);
            } else {
                tok_bpe_encode(t, text + f->off, f->len, &ids);
            }
        }
    }
    if (ids.oom || ids.n > INT32_MAX)
        goto done;
    if (!ids.limit && out && max_out > 0 && ids.n)
        memcpy(out, ids.v, sizeof *out * (ids.n < (size_t)max_out ? ids.n : (size_t)max_out));
    ret = (int32_t)ids.n;
done:
    free(buf);
    free(fr.v);
    free(ids.v);
    return ret;
}

int32_t tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_bos, bool parse_special,
                         int32_t *out, int32_t max_out)
{
    return encode(t, text, len, add_bos, parse_special, out, max_out, 0);
}

int32_t tokenizer_count(const tokenizer *t, const char *text, size_t len, bool add_bos, bool parse_special,
                        int32_t limit)
{
    if (limit <= 0 || limit == INT32_MAX)
        return encode(t, text, len, add_bos, parse_special, NULL, 0, 0);
    return encode(t, text, len, add_bos, parse_special, NULL, 0, limit);
}
