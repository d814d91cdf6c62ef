/* JSON save/load (cJSON) and Markdown export.
 *
 * Format 2 ("tokscope": 2): a conversation's "messages" are the versions it
 * shows; a message with other versions carries "versions" (one entry per
 * version, each the list of messages from that version on, null for the
 * shown one) and "version" (which is shown); a generated reply carries its
 * "tokens" (id, position, text span, logit, probabilities, entropies and
 * the candidates), so the inspector and branching work after loading. A
 * conversation with its own parameters (compare settings' side B) has
 * "params". Format 1 (no versions, no tokens) loads as before.
 *
 * A reply is bytes, not a string: a model's byte tokens give NULs and
 * invalid UTF-8, which a JSON string cannot hold. Such a message's
 * "content" has U+FFFD in their place (what versions before this load and
 * show) and "content_base64" its exact bytes, which the token offsets
 * count. A reply cut by tokscope's exit while it streamed has "done"
 * ENGINE_DONE_STOPPED (older versions show it stopped) and "interrupted".
 *
 * Loading checks each conversation on its own: one that is not sound is
 * left out and named, the others load. */
#include "store.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "atomic.h"
#include "params.h"
#include "think.h"
#include "ui.h"
#include "utf8.h"
#include "wrap.h"

#define STORE_MAX_BYTES (256u << 20)

/* Atomically (ui/atomic.c): a kill -9 or a full disk during a save leaves
 * the previous file whole. */
static bool write_file(const char *path, const char *data, char *err, size_t errlen)
{
    return atomic_write_file(path, data, strlen(data), err, errlen);
}

#define STORE_VERSION 2

static cJSON *params_json(const sampler_params *sp)
{
    cJSON *params = cJSON_CreateObject();
    for (int i = 0; params_names[i]; i++) {
        char v[64];
        params_format(sp, params_names[i], v, sizeof v);
        char *end;
        double d = strtod(v, &end);
        if (end != v && !*end)
            cJSON_AddNumberToObject(params, params_names[i], d);
        else
            cJSON_AddStringToObject(params, params_names[i], v);
    }
    return params;
}

/* ---- bytes a JSON string cannot hold: base64 (RFC 4648, padded) ----
 * OpenSSL's codec (libcrypto is linked already, for pull's SHA-256); the
 * strictness is ours: EVP_DecodeBlock skips blanks and takes padding as
 * zero bytes, a session file may hold neither. */

static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *s, size_t n)
{
    char *out = n <= INT_MAX / 4 * 3 - 3 ? malloc(4 * ((n + 2) / 3) + 1) : NULL;
    if (!out)
        abort();
    EVP_EncodeBlock((unsigned char *)out, s, (int)n); /* NUL-terminated */
    return out;
}

/* s's bytes (malloc'd, NUL-terminated after *n); NULL when s is not
 * base64: whole groups of four, '=' only as the last group's padding. */
static char *b64_decode(const char *s, size_t *n)
{
    const size_t sl = strlen(s);
    size_t pad = 0;
    while (pad < 2 && pad < sl && s[sl - 1 - pad] == '=')
        pad++;
    if (sl % 4 || sl > INT_MAX || strspn(s, b64_digits) != sl - pad)
        return NULL;
    char *out = malloc(sl / 4 * 3 + 1);
    if (!out)
        abort();
    const int got = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)s, (int)sl);
    if (got < 0) {
        free(out);
        return NULL;
    }
    *n = (size_t)got - pad; /* the padding came back as zero bytes */
    out[*n] = 0;
    return out;
}

/* s[0..n) as the string key; when those bytes are not all UTF-8 without a
 * NUL, the string has U+FFFD in place of each byte it cannot hold and
 * key_base64 the exact bytes. */
static void add_bytes(cJSON *o, const char *key, const char *s, size_t n)
{
    if (!memchr(s, 0, n) && utf8_valid(s, n)) {
        cJSON_AddStringToObject(o, key, s);
        return;
    }
    char *t = malloc(3 * n + 1);
    if (!t)
        abort();
    size_t tl = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i])
            t[tl++] = s[i];
        else {
            memcpy(t + tl, "\xef\xbf\xbd", 3);
            tl += 3;
        }
    char *clean = utf8_sanitize(t, tl, NULL);
    free(t);
    char *b = b64_encode((const unsigned char *)s, n);
    if (!clean)
        abort();
    char k64[64];
    snprintf(k64, sizeof k64, "%s_base64", key);
    cJSON_AddStringToObject(o, key, clean);
    cJSON_AddStringToObject(o, k64, b);
    free(clean);
    free(b);
}

/* The candidates' texts that are not UTF-8 (a byte token's piece): their
 * "text" has U+FFFD, and the message's "top_base64" lists [token index,
 * candidate index, exact bytes] for each. */
static void top_bytes_json(cJSON *jm, const ui_msg *m)
{
    cJSON *a = NULL;
    for (size_t i = 0; i < m->n_toks; i++)
        for (int32_t k = 0; k < m->toks[i].n_top; k++) {
            const char *tx = m->toks[i].top[k].text;
            const size_t n = strnlen(tx, ENGINE_TEXT_MAX);
            if (utf8_valid(tx, n))
                continue;
            if (!a)
                a = cJSON_AddArrayToObject(jm, "top_base64");
            char *b = b64_encode((const unsigned char *)tx, n);
            cJSON *e = cJSON_CreateArray();
            cJSON_AddItemToArray(e, cJSON_CreateNumber((double)i));
            cJSON_AddItemToArray(e, cJSON_CreateNumber(k));
            cJSON_AddItemToArray(e, cJSON_CreateString(b));
            cJSON_AddItemToArray(a, e);
            free(b);
        }
}

static cJSON *tokens_json(const ui_msg *m)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < m->n_toks; i++) {
        const ui_token *t = &m->toks[i];
        const double v[9] = {t->id,     t->pos,    t->off,         t->len,         t->logit,
                             t->p_raw, t->p_post, t->entropy_raw, t->entropy_post};
        cJSON *jt = cJSON_CreateDoubleArray(v, 9);
        cJSON *top = cJSON_CreateArray();
        for (int32_t k = 0; k < t->n_top; k++) {
            const engine_token_candidate *cd = &t->top[k];
            const double cv[4] = {cd->id, cd->logit, cd->p_raw, cd->p_post};
            cJSON *jc = cJSON_CreateDoubleArray(cv, 4);
            cJSON_AddItemToArray(jc, cJSON_CreateString(cd->text));
            cJSON_AddItemToArray(top, jc);
        }
        cJSON_AddItemToArray(jt, top);
        cJSON_AddItemToArray(a, jt);
    }
    return a;
}

static cJSON *msgs_json(const ui_msg *msgs, size_t n);

static cJSON *msg_json(const ui_msg *m)
{
    cJSON *jm = cJSON_CreateObject();
    cJSON_AddStringToObject(jm, "role", m->role);
    add_bytes(jm, "content", m->text, m->len);
    if (m->streaming || m->done_reason == CONV_DONE_INTERRUPTED) { /* cut by the exit: not finished */
        cJSON_AddNumberToObject(jm, "done", ENGINE_DONE_STOPPED);
        cJSON_AddBoolToObject(jm, "interrupted", true);
    } else if (m->done_reason >= 0)
        cJSON_AddNumberToObject(jm, "done", m->done_reason);
    if (m->n_toks) {
        cJSON_AddItemToObject(jm, "tokens", tokens_json(m));
        top_bytes_json(jm, m);
    }
    if (m->sent_set) /* the template and think settings its turn was sent with (ui/think.c) */
        cJSON_AddItemToObject(jm, "sent", think_sent_json(m));
    if (m->think_end && !m->streaming) { /* reasoning: content[0..think_end) is its block */
        cJSON_AddNumberToObject(jm, "think_end", m->think_end);
        cJSON_AddBoolToObject(jm, "think_open", m->think_open);
        if (m->n_think_vis) { /* the block's drawn pieces: [start, end) pairs, markers left out */
            cJSON *tv = cJSON_AddArrayToObject(jm, "think_text");
            for (uint32_t i = 0; i < m->n_think_vis; i++) {
                cJSON *pr = cJSON_CreateArray();
                cJSON_AddItemToArray(pr, cJSON_CreateNumber(m->think_vis[2 * i]));
                cJSON_AddItemToArray(pr, cJSON_CreateNumber(m->think_vis[2 * i + 1]));
                cJSON_AddItemToArray(tv, pr);
            }
        }
        if (m->reasoning) {
            /* what the next turn's template gets: exact, as the reply */
            add_bytes(jm, "reasoning", m->reasoning, m->reasoning_len);
            add_bytes(jm, "answer", m->answer ? m->answer : "", m->answer ? m->answer_len : 0);
        }
    }
    if (m->vers && m->vers->n > 1) {
        cJSON *vs = cJSON_AddArrayToObject(jm, "versions");
        for (size_t k = 0; k < m->vers->n; k++)
            cJSON_AddItemToArray(vs, k == m->vers->cur ? cJSON_CreateNull()
                                                       : msgs_json(m->vers->tails[k].msgs, m->vers->tails[k].n));
        cJSON_AddNumberToObject(jm, "version", (double)m->vers->cur);
    }
    return jm;
}

static cJSON *msgs_json(const ui_msg *msgs, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        const ui_msg *m = &msgs[i];
        if (!strcmp(m->role, "assistant") && m->len == 0 && !m->vers && !m->n_toks)
            continue; /* a placeholder */
        cJSON_AddItemToArray(a, msg_json(m));
    }
    return a;
}

char *store_serialize(ui_app *app, char *err, size_t errlen)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "tokscope", STORE_VERSION);
    cJSON_AddStringToObject(root, "model", app->model_path);
    cJSON_AddStringToObject(root, "template", app->template_name);
    cJSON_AddItemToObject(root, "params", params_json(&app->sp));
    cJSON_AddStringToObject(root, "think", think_value(app, 0));
    cJSON_AddStringToObject(root, "effort", think_value(app, 1));
    cJSON_AddNumberToObject(root, "current", (double)app->cur);
    cJSON *convs = cJSON_AddArrayToObject(root, "conversations");
    for (size_t k = 0; k < app->n_convs; k++) {
        const ui_conv *c = app->convs[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "system", c->system);
        if (c->has_sp)
            cJSON_AddItemToObject(o, "params", params_json(&c->sp));
        cJSON_AddItemToObject(o, "messages", msgs_json(c->msgs, c->n_msgs));
        cJSON_AddItemToArray(convs, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    /* JSON is UTF-8: a byte token's invalid sequence becomes U+FFFD (only
     * string contents can hold bytes >= 0x80, so the structure is intact) */
    char *clean = text ? utf8_sanitize(text, strlen(text), NULL) : NULL;
    cJSON_free(text);
    if (!clean)
        snprintf(err, errlen, "out of memory");
    return clean;
}

bool store_save(ui_app *app, const char *path, char *err, size_t errlen)
{
    char *text = store_serialize(app, err, errlen);
    if (!text)
        return false;
    bool ok = write_file(path, text, err, errlen);
    free(text);
    if (ok) {
        if (app->save_kv && app->eng)
            app->kv_announce++; /* /save says how its snapshot went */
        store_kv_save(app, path);
    }
    return ok;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = cap < STORE_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                snprintf(err, errlen, cap < STORE_MAX_BYTES ? "out of memory" : "%s: larger than %u MiB", path,
                         STORE_MAX_BYTES >> 20);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = 0;
    return buf;
}

static bool valid_role(const char *r)
{
    return !strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant");
}

static bool load_params(const cJSON *params, sampler_params *sp, char *err, size_t errlen)
{
    if (params && !cJSON_IsObject(params)) { /* an array's items have no names */
        snprintf(err, errlen, "\"params\" is not an object");
        return false;
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, params)
    {
        char v[64], perr[160];
        if (cJSON_IsNumber(p))
            snprintf(v, sizeof v, "%.17g", p->valuedouble);
        else if (cJSON_IsString(p))
            snprintf(v, sizeof v, "%s", p->valuestring);
        else if (cJSON_IsNull(p))
            snprintf(v, sizeof v, "random");
        else
            continue;
        if (!params_set_value(sp, p->string, v, perr, sizeof perr)) {
            snprintf(err, errlen, "%s", perr);
            return false;
        }
    }
    return true;
}

/* A message's "tokens": [id, pos, off, len, logit, p_raw, p_post, h_raw,
 * h_post, [[id, logit, p_raw, p_post, "text"], ...]] each, in text order. */
/* "think_text": absent, or [start, end) pairs in order inside [0, think_end] */
static bool valid_think_text(const cJSON *tv, const cJSON *te)
{
    if (!tv)
        return true;
    if (!cJSON_IsArray(tv) || !cJSON_IsNumber(te) || cJSON_GetArraySize(tv) < 1)
        return false;
    double last = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, tv)
    {
        const cJSON *a = cJSON_GetArrayItem(p, 0), *e = cJSON_GetArrayItem(p, 1);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(a) || !cJSON_IsNumber(e) ||
            a->valuedouble != (int)a->valuedouble || e->valuedouble != (int)e->valuedouble ||
            a->valuedouble < last || e->valuedouble < a->valuedouble || e->valuedouble > te->valuedouble)
            return false;
        last = e->valuedouble;
    }
    return true;
}

static void load_think_text(ui_msg *msg, const cJSON *tv)
{
    const int n = tv ? cJSON_GetArraySize(tv) : 0;
    if (n <= 0)
        return;
    msg->think_vis = malloc(2 * (size_t)n * sizeof *msg->think_vis);
    if (!msg->think_vis)
        abort();
    for (int i = 0; i < n; i++) {
        const cJSON *p = cJSON_GetArrayItem(tv, i);
        msg->think_vis[2 * i] = (uint32_t)cJSON_GetArrayItem(p, 0)->valuedouble;
        msg->think_vis[2 * i + 1] = (uint32_t)cJSON_GetArrayItem(p, 1)->valuedouble;
    }
    msg->n_think_vis = (uint32_t)n;
}

/* A token's id, position or text span: a number an int32_t holds. */
static bool int_num(const cJSON *j)
{
    return cJSON_IsNumber(j) && j->valuedouble >= INT32_MIN && j->valuedouble <= INT32_MAX;
}

/* A logit, probability or entropy: a number, or null (JSON has no NaN or
 * infinity: a save writes them as null) */
static bool real_num(const cJSON *j)
{
    return cJSON_IsNumber(j) || cJSON_IsNull(j);
}

static float real_value(const cJSON *j)
{
    return cJSON_IsNumber(j) && isfinite(j->valuedouble) ? (float)j->valuedouble : NAN;
}

/* *n_cut: the tokens at the end that run past text_len, which only a
 * message of a file from before "content_base64" may have (its "content"
 * stopped at a NUL byte while its tokens ran on): left out when it loads.
 * Other tokens past the text are malformed. */
static bool valid_tokens(const cJSON *toks, size_t text_len, bool legacy, size_t *n_cut)
{
    *n_cut = 0;
    if (!cJSON_IsArray(toks))
        return false;
    double last_off = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, toks)
    {
        if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 10)
            return false;
        for (int k = 0; k < 9; k++)
            if (k < 4 ? !int_num(cJSON_GetArrayItem(t, k)) : !real_num(cJSON_GetArrayItem(t, k)))
                return false;
        const double off = cJSON_GetArrayItem(t, 2)->valuedouble, len = cJSON_GetArrayItem(t, 3)->valuedouble;
        if (!(off >= last_off && len >= 0 && len < ENGINE_TEXT_MAX))
            return false;
        if (off + len > (double)text_len || *n_cut) { /* past the text: only at the end, only for legacy */
            if (!legacy || (!*n_cut && off > (double)text_len))
                return false;
            ++*n_cut;
        }
        last_off = off;
        const cJSON *top = cJSON_GetArrayItem(t, 9);
        if (!cJSON_IsArray(top) || cJSON_GetArraySize(top) > SAMPLER_MAX_TOP)
            return false;
        const cJSON *cd;
        cJSON_ArrayForEach(cd, top)
        {
            if (!cJSON_IsArray(cd) || cJSON_GetArraySize(cd) != 5 || !cJSON_IsString(cJSON_GetArrayItem(cd, 4)))
                return false;
            for (int k = 0; k < 4; k++)
                if (k < 1 ? !int_num(cJSON_GetArrayItem(cd, k)) : !real_num(cJSON_GetArrayItem(cd, k)))
                    return false;
        }
    }
    return true;
}

/* A message's text: the exact bytes of "content_base64" when it is there,
 * else "content" (malloc'd, NUL-terminated after *n); NULL when
 * "content_base64" is not base64. */
static char *msg_content(const cJSON *m, size_t *n)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "content_base64");
    if (b)
        return cJSON_IsString(b) ? b64_decode(b->valuestring, n) : NULL;
    const char *c = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
    *n = strlen(c);
    char *d = malloc(*n + 1);
    if (!d)
        abort();
    memcpy(d, c, *n + 1);
    return d;
}

/* key (a base64 field) is absent or holds base64. */
static bool valid_b64(const cJSON *m, const char *key)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, key);
    size_t n;
    char *d = cJSON_IsString(b) ? b64_decode(b->valuestring, &n) : NULL;
    free(d);
    return !b || d;
}

/* The validated base64 field key's bytes, else a copy of s (malloc'd). */
static char *bytes_or(const cJSON *m, const char *key, const char *s, size_t *len)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, key);
    size_t n = 0;
    char *d = b ? b64_decode(b->valuestring, &n) : strdup(s);
    if (!d)
        abort();
    *len = b ? n : strlen(d);
    return d;
}

/* A list of messages and, recursively, their versions. */
/* "top_base64": absent, or [token, candidate, base64] entries naming
 * candidates of toks, each with the bytes of a candidate's text (no NUL). */
static bool valid_top_bytes(const cJSON *tb, const cJSON *toks)
{
    if (!tb)
        return true;
    if (!cJSON_IsArray(tb) || !toks)
        return false;
    const cJSON *e;
    cJSON_ArrayForEach(e, tb)
    {
        const cJSON *ti = cJSON_GetArrayItem(e, 0), *ki = cJSON_GetArrayItem(e, 1), *b = cJSON_GetArrayItem(e, 2);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 3 || !cJSON_IsNumber(ti) || !cJSON_IsNumber(ki) ||
            !cJSON_IsString(b) || ti->valuedouble < 0 || ti->valuedouble >= cJSON_GetArraySize(toks) ||
            ti->valuedouble != (int)ti->valuedouble || ki->valuedouble != (int)ki->valuedouble || ki->valuedouble < 0 ||
            ki->valuedouble >= cJSON_GetArraySize(cJSON_GetArrayItem(cJSON_GetArrayItem(toks, (int)ti->valuedouble), 9)))
            return false;
        size_t n;
        char *d = b64_decode(b->valuestring, &n);
        const bool ok = d && n < ENGINE_TEXT_MAX && !memchr(d, 0, n);
        free(d);
        if (!ok)
            return false;
    }
    return true;
}

/* *n_cut counts the tokens left out (valid_tokens). */
static bool valid_msgs(const cJSON *msgs, int depth, char *err, size_t errlen, size_t *n_cut)
{
    if (!cJSON_IsArray(msgs) || depth > 256) {
        snprintf(err, errlen, "%s", depth > 256 ? "versions nested too deep" : "\"messages\" is not a list");
        return false;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs)
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content) || !valid_role(role->valuestring)) {
            snprintf(err, errlen, "a message needs \"role\" (system/user/assistant) and \"content\" strings");
            return false;
        }
        size_t len;
        char *text = msg_content(m, &len);
        if (!text) {
            snprintf(err, errlen, "a message's \"content_base64\" is not base64");
            return false;
        }
        free(text);
        const cJSON *toks = cJSON_GetObjectItemCaseSensitive(m, "tokens");
        size_t cut = 0;
        const bool legacy = !cJSON_GetObjectItemCaseSensitive(m, "content_base64");
        if (toks && !valid_tokens(toks, len, legacy, &cut)) {
            snprintf(err, errlen, "a message's \"tokens\" are malformed");
            return false;
        }
        *n_cut += cut;
        if (!valid_top_bytes(cJSON_GetObjectItemCaseSensitive(m, "top_base64"), toks)) {
            snprintf(err, errlen, "a message's \"top_base64\" is malformed");
            return false;
        }
        /* reasoning (files since the 2026 templates; older ones have none) */
        const cJSON *te = cJSON_GetObjectItemCaseSensitive(m, "think_end");
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(m, "reasoning");
        const cJSON *an = cJSON_GetObjectItemCaseSensitive(m, "answer");
        if ((te && (!cJSON_IsNumber(te) || te->valuedouble < 0 ||
                    te->valuedouble > (double)len || te->valuedouble != (int)te->valuedouble)) ||
            (rs && !cJSON_IsString(rs)) || (an && !cJSON_IsString(an)) || !valid_b64(m, "reasoning_base64") ||
            !valid_b64(m, "answer_base64") ||
            !valid_think_text(cJSON_GetObjectItemCaseSensitive(m, "think_text"), te)) {
            snprintf(err, errlen, "a message's reasoning (\"think_end\", \"reasoning\", \"answer\") is malformed");
            return false;
        }
        const cJSON *vers = cJSON_GetObjectItemCaseSensitive(m, "versions");
        if (!vers)
            continue;
        const cJSON *cur = cJSON_GetObjectItemCaseSensitive(m, "version");
        const int n = cJSON_GetArraySize(vers);
        if (!cJSON_IsArray(vers) || n < 2 || !cJSON_IsNumber(cur) || cur->valuedouble < 0 ||
            cur->valuedouble >= n || cur->valuedouble != (int)cur->valuedouble) {
            snprintf(err, errlen, "a message's \"versions\" need two or more entries and \"version\" one of them");
            return false;
        }
        int k = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, vers)
        {
            const bool shown = k++ == (int)cur->valuedouble;
            if (shown ? !cJSON_IsNull(v) : !cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
                snprintf(err, errlen, "a version is null when shown, else a list of messages");
                return false;
            }
            if (!shown && !valid_msgs(v, depth + 1, err, errlen, n_cut))
                return false;
        }
    }
    return true;
}

/* Validated tokens; those past the text (valid_tokens' n_cut) left out. */
static void load_tokens(ui_msg *m, const cJSON *toks)
{
    int n = 0;
    const cJSON *jt;
    cJSON_ArrayForEach(jt, toks)
    {
        if (cJSON_GetArrayItem(jt, 2)->valuedouble + cJSON_GetArrayItem(jt, 3)->valuedouble > (double)m->len)
            break;
        n++;
    }
    if (n <= 0)
        return;
    m->toks = calloc((size_t)n, sizeof *m->toks);
    if (!m->toks)
        abort();
    m->cap_toks = (size_t)n;
    cJSON_ArrayForEach(jt, toks)
    {
        if (m->n_toks == (size_t)n)
            break;
        ui_token *t = &m->toks[m->n_toks++];
        t->id = (int32_t)cJSON_GetArrayItem(jt, 0)->valuedouble;
        t->pos = (int32_t)cJSON_GetArrayItem(jt, 1)->valuedouble;
        t->off = (uint32_t)cJSON_GetArrayItem(jt, 2)->valuedouble;
        t->len = (uint32_t)cJSON_GetArrayItem(jt, 3)->valuedouble;
        t->logit = real_value(cJSON_GetArrayItem(jt, 4));
        t->p_raw = real_value(cJSON_GetArrayItem(jt, 5));
        t->p_post = real_value(cJSON_GetArrayItem(jt, 6));
        t->entropy_raw = real_value(cJSON_GetArrayItem(jt, 7));
        t->entropy_post = real_value(cJSON_GetArrayItem(jt, 8));
        const cJSON *top = cJSON_GetArrayItem(jt, 9);
        const int nt = cJSON_GetArraySize(top);
        t->top = nt ? calloc((size_t)nt, sizeof *t->top) : NULL;
        if (nt && !t->top)
            abort();
        const cJSON *cd;
        cJSON_ArrayForEach(cd, top)
        {
            engine_token_candidate *c = &t->top[t->n_top++];
            c->id = (int32_t)cJSON_GetArrayItem(cd, 0)->valuedouble;
            c->logit = real_value(cJSON_GetArrayItem(cd, 1));
            c->p_raw = real_value(cJSON_GetArrayItem(cd, 2));
            c->p_post = real_value(cJSON_GetArrayItem(cd, 3));
            snprintf(c->text, sizeof c->text, "%s", cJSON_GetArrayItem(cd, 4)->valuestring);
        }
    }
}

/* Adds validated messages (their tokens and versions) to c. */
static void load_msgs(ui_conv *c, const cJSON *msgs, bool top)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs)
    {
        const char *role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        size_t len;
        char *content = msg_content(m, &len); /* validated: not NULL */
        if (top && !strcmp(role, "system") && c->n_msgs == 0 && !c->system[0]) {
            conv_set_system(c, content);
            free(content);
            continue;
        }
        const size_t at = conv_add_msg_n(c, role, content, len); /* may move c->msgs */
        free(content);
        ui_msg *msg = &c->msgs[at];
        const cJSON *done = cJSON_GetObjectItemCaseSensitive(m, "done");
        if (cJSON_IsNumber(done) && done->valuedouble >= 0 && done->valuedouble <= ENGINE_DONE_CUT)
            msg->done_reason = (int)done->valuedouble;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "interrupted")) && !strcmp(role, "assistant"))
            msg->done_reason = CONV_DONE_INTERRUPTED;
        const cJSON *toks = cJSON_GetObjectItemCaseSensitive(m, "tokens");
        if (toks)
            load_tokens(msg, toks);
        const cJSON *tb;
        cJSON_ArrayForEach(tb, cJSON_GetObjectItemCaseSensitive(m, "top_base64"))
        { /* validated; a token left out (legacy) takes its candidates with it */
            const size_t ti = (size_t)cJSON_GetArrayItem(tb, 0)->valuedouble;
            const int ki = (int)cJSON_GetArrayItem(tb, 1)->valuedouble;
            if (ti >= msg->n_toks || ki >= msg->toks[ti].n_top)
                continue;
            size_t n;
            char *d = b64_decode(cJSON_GetArrayItem(tb, 2)->valuestring, &n);
            memcpy(msg->toks[ti].top[ki].text, d, n + 1);
            free(d);
        }
        think_sent_load(msg, cJSON_GetObjectItemCaseSensitive(m, "sent"));
        const cJSON *te = cJSON_GetObjectItemCaseSensitive(m, "think_end");
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(m, "reasoning");
        if (cJSON_IsNumber(te) && !strcmp(role, "assistant")) {
            msg->think_end = (uint32_t)te->valuedouble;
            msg->think_open = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "think_open"));
            msg->think_set = true;
            load_think_text(msg, cJSON_GetObjectItemCaseSensitive(m, "think_text"));
            if (cJSON_IsString(rs)) {
                const cJSON *an = cJSON_GetObjectItemCaseSensitive(m, "answer");
                msg->reasoning = bytes_or(m, "reasoning_base64", rs->valuestring, &msg->reasoning_len);
                msg->answer = bytes_or(m, "answer_base64", cJSON_IsString(an) ? an->valuestring : "", &msg->answer_len);
            }
        }
        const cJSON *vers = cJSON_GetObjectItemCaseSensitive(m, "versions");
        if (!vers)
            continue;
        ui_versions *v = calloc(1, sizeof *v);
        if (!v)
            abort();
        v->n = (size_t)cJSON_GetArraySize(vers);
        v->cur = (size_t)cJSON_GetObjectItemCaseSensitive(m, "version")->valuedouble;
        v->tails = calloc(v->n, sizeof *v->tails);
        if (!v->tails)
            abort();
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, vers)
        {
            if (k != v->cur) { /* built as a conversation of its own, then taken over */
                ui_conv *tmp = conv_create(0, "");
                load_msgs(tmp, e, false);
                v->tails[k].msgs = tmp->msgs;
                v->tails[k].n = tmp->n_msgs;
                tmp->msgs = NULL;
                tmp->n_msgs = tmp->cap_msgs = 0;
                conv_free(tmp);
            }
            k++;
        }
        c->msgs[c->n_msgs - 1].vers = v;
    }
}

/* Whether conversation c loads (else why); its own parameters into *own,
 * from sp. */
static bool valid_conv(const cJSON *c, const sampler_params *sp, sampler_params *own, char *why, size_t cap,
                       size_t *n_cut)
{
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(c, "messages");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(c, "system");
    if (!cJSON_IsObject(c) || (msgs && !cJSON_IsArray(msgs)) || (sys && !cJSON_IsString(sys) && !cJSON_IsNull(sys))) {
        snprintf(why, cap, "not {\"system\": string, \"messages\": [...]}");
        return false;
    }
    if (msgs && !valid_msgs(msgs, 0, why, cap, n_cut))
        return false;
    *own = *sp;
    const cJSON *jp = cJSON_GetObjectItemCaseSensitive(c, "params");
    return !jp || load_params(jp, own, why, cap);
}

bool store_load(ui_app *app, const char *path, char *err, size_t errlen)
{
    if (ui_busy(app)) {
        snprintf(err, errlen, "generating: Esc stops first");
        return false;
    }
    char *text = read_file(path, err, errlen);
    if (!text)
        return false;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s: not valid JSON", path);
        return false;
    }
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "tokscope");
    if (cJSON_IsNumber(ver) && ver->valuedouble > STORE_VERSION) {
        snprintf(err, errlen, "%s: format %g is newer than this tokscope's (%d)", path, ver->valuedouble,
                 STORE_VERSION);
        cJSON_Delete(root);
        return false;
    }
    const cJSON *convs = cJSON_GetObjectItemCaseSensitive(root, "conversations");
    if (!cJSON_IsArray(convs) || cJSON_GetArraySize(convs) == 0) {
        snprintf(err, errlen, "%s: no \"conversations\" array", path);
        cJSON_Delete(root);
        return false;
    }
    /* every conversation checked on its own before the current state is
     * touched: one that is not sound is left out, the others load */
    const int n_convs = cJSON_GetArraySize(convs);
    sampler_params sp = app->sp;
    char why[400], note[1400] = ""; /* cut to errlen when it is handed on */
    if (!load_params(cJSON_GetObjectItemCaseSensitive(root, "params"), &sp, why, sizeof why)) {
        sp = app->sp; /* the conversations do not depend on them */
        snprintf(note, sizeof note, "its parameters were not applied (%s)", why);
    }
    sampler_params *own = calloc((size_t)n_convs, sizeof *own);
    bool *sound = calloc((size_t)n_convs, sizeof *sound);
    if (!own || !sound) {
        free(own);
        free(sound);
        snprintf(err, errlen, "out of memory");
        cJSON_Delete(root);
        return false;
    }
    int n_sound = 0, i = 0, cut_conv = 0; /* the first conversation with a reply cut at a NUL (legacy) */
    size_t n_cut_tokens = 0;
    char bad[200] = "", first_why[400] = "";
    const cJSON *c;
    cJSON_ArrayForEach(c, convs)
    {
        size_t cut = 0;
        if (valid_conv(c, &sp, &own[i], why, sizeof why, &cut)) {
            sound[i] = true;
            n_sound++;
            if (cut && !cut_conv) {
                cut_conv = i + 1;
                n_cut_tokens = cut;
            }
        } else {
            if (!first_why[0])
                snprintf(first_why, sizeof first_why, "%s", why);
            size_t bl = strlen(bad);
            snprintf(bad + bl, sizeof bad - bl, "%s%d", bl ? ", " : "", i + 1);
        }
        i++;
    }
    if (n_sound == 0) {
        if (n_convs == 1)
            snprintf(err, errlen, "%s: %s", path, first_why);
        else
            snprintf(err, errlen, "%s: none of its %d conversations loads (the first: %s)", path, n_convs, first_why);
        free(own);
        free(sound);
        cJSON_Delete(root);
        return false;
    }
    for (size_t k = 0; k < app->n_convs; k++)
        conv_free(app->convs[k]);
    app->n_convs = 0;
    app->cmp_on = app->cmp_queued = false;
    app->edit_conv = app->edit_uid = -1;
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(root, "current");
    const int want = cJSON_IsNumber(cur) && cur->valuedouble >= 0 && cur->valuedouble < n_convs
                         ? (int)cur->valuedouble
                         : -1;
    app->cur = 0;
    i = 0;
    cJSON_ArrayForEach(c, convs)
    {
        if (!sound[i++])
            continue;
        if (i - 1 == want)
            app->cur = app->n_convs;
        const cJSON *sys = cJSON_GetObjectItemCaseSensitive(c, "system");
        ui_conv *conv = ui_new_conv(app, cJSON_IsString(sys) ? sys->valuestring : "");
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(c, "messages");
        if (msgs)
            load_msgs(conv, msgs, true);
        if (cJSON_GetObjectItemCaseSensitive(c, "params")) {
            conv->has_sp = true;
            conv->sp = own[i - 1];
        }
    }
    free(own);
    free(sound);
    if (cut_conv) {
        size_t nl = strlen(note);
        snprintf(note + nl, sizeof note - nl,
                 "%sconversation %d: a reply's last %zu token%s ran past its text (an older version cut it at "
                 "a NUL byte): left out",
                 nl ? "; " : "", cut_conv, n_cut_tokens, n_cut_tokens == 1 ? "" : "s");
    }
    if (n_sound < n_convs) {
        size_t nl = strlen(note);
        snprintf(note + nl, sizeof note - nl, "%sconversation%s %s of %d not loaded: %s%s", nl ? "; " : "",
                 n_convs - n_sound > 1 ? "s" : "", bad, n_convs, n_convs - n_sound > 1 ? "the first: " : "",
                 first_why);
    }
    app->sp = sp;
    ui_params_changed(app);
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(root, "template");
    (void)tmpl; /* the template stays a property of the session: /template changes it */
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(root, "think");
    const cJSON *ef = cJSON_GetObjectItemCaseSensitive(root, "effort");
    app->think = THINK_AUTO; /* older files: the template's defaults */
    app->effort = EFFORT_AUTO;
    if (cJSON_IsString(th))
        think_set(app, "think", th->valuestring);
    if (cJSON_IsString(ef))
        think_set(app, "effort", ef->valuestring);
    cJSON_Delete(root);
    snprintf(err, errlen, "%s", note); /* "" when all loaded */
    store_kv_load(app, path); /* the memory of the conversation, when a snapshot is beside it */
    return true;
}

bool store_export_md(ui_app *app, const char *path, char *err, size_t errlen)
{
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len); /* then written atomically, as /save */
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    ui_conv *c = ui_current(app);
    fprintf(f, "# Conversation %zu\n\n", app->cur + 1);
    if (app->loaded)
        fprintf(f, "Model: `%s` (%s, %s)\n\n", app->info.name, app->info.arch, app->info.file_type);
    if (c->system[0])
        fprintf(f, "## System\n\n%s\n\n", c->system);
    for (size_t i = 0; i < c->n_msgs; i++) {
        const ui_msg *m = &c->msgs[i];
        const char *title = !strcmp(m->role, "user") ? "User" : !strcmp(m->role, "assistant") ? "Assistant" : "System";
        if (m->reasoning) /* reasoning apart, folded as in the pane */
            fprintf(f, "## %s\n\n<details><summary>thinking</summary>\n\n%s\n\n</details>\n\n%s\n\n", title,
                    m->reasoning, m->answer ? m->answer : "");
        else { /* the bytes as generated, NULs included */
            fprintf(f, "## %s\n\n", title);
            fwrite(m->text, 1, m->len, f);
            fputs("\n\n", f);
        }
    }
    if (fclose(f) != 0 || !mem) {
        free(mem);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bool ok = atomic_write_file(path, mem, mem_len, err, errlen);
    free(mem);
    return ok;
}

bool store_peek(const char *path, store_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char *text = read_file(path, err, errlen);
    if (!text)
        return false;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *convs = cJSON_GetObjectItemCaseSensitive(root, "conversations");
    if (!root || !cJSON_IsArray(convs) || cJSON_GetArraySize(convs) == 0) {
        snprintf(err, errlen, "%s: %s", path, root ? "no \"conversations\" array" : "not valid JSON");
        cJSON_Delete(root);
        return false;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (cJSON_IsString(model))
        snprintf(s->model, sizeof s->model, "%s", model->valuestring);
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(root, "current");
    int ci = cJSON_IsNumber(cur) && cur->valuedouble >= 0 && cur->valuedouble < cJSON_GetArraySize(convs)
                 ? (int)cur->valuedouble
                 : 0;
    int k = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, convs)
    {
        s->n_convs++;
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(c, "messages");
        const cJSON *m;
        cJSON_ArrayForEach(m, msgs)
        {
            s->n_msgs++;
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
            const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
            if (k == ci && !s->title[0] && cJSON_IsString(role) && !strcmp(role->valuestring, "user") &&
                cJSON_IsString(content)) {
                const char *t = content->valuestring;
                while (*t == ' ' || *t == '\n')
                    t++;
                size_t n = wrap_fit(t, strcspn(t, "\n"), 40, NULL);
                snprintf(s->title, sizeof s->title, "%.*s%s", (int)n, t,
                         t[n] && t[n] != '\n' ? "\xe2\x80\xa6" : "");
            }
        }
        k++;
    }
    cJSON_Delete(root);
    return true;
}
