/* JSONL golden files: cJSON per line, strict about the fields we use. */
#include "golden.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void golden_free(golden *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_pos; i++) {
        free(g->pos[i].top_id);
        free(g->pos[i].top_logit);
    }
    free(g->pos);
    free(g->prompt);
    free(g->generated);
    free(g->text);
    free(g);
}

static int32_t *int_array(const cJSON *a, int32_t *n)
{
    if (!cJSON_IsArray(a))
        return NULL;
    int32_t len = cJSON_GetArraySize(a);
    int32_t *out = calloc((size_t)len + 1, sizeof *out);
    if (!out)
        return NULL;
    int32_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsNumber(e)) {
            free(out);
            return NULL;
        }
        out[i++] = (int32_t)e->valuedouble;
    }
    *n = len;
    return out;
}

static const cJSON *num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v : NULL;
}

static int parse_pos(const cJSON *o, golden_pos *p)
{
    const cJSON *vp = num(o, "pos"), *vt = num(o, "token_in"), *va = num(o, "argmax"), *vl = num(o, "lse");
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(o, "top");
    if (!vp || !vt || !va || !vl || !cJSON_IsArray(top))
        return -1;
    p->pos = (int32_t)vp->valuedouble;
    p->token_in = (int32_t)vt->valuedouble;
    p->argmax = (int32_t)va->valuedouble;
    p->lse = (float)vl->valuedouble;
    p->n_top = cJSON_GetArraySize(top);
    p->top_id = malloc(((size_t)p->n_top + 1) * sizeof *p->top_id);
    p->top_logit = malloc(((size_t)p->n_top + 1) * sizeof *p->top_logit);
    if (!p->top_id || !p->top_logit)
        return -1;
    int32_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, top)
    {
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(e, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(e, 1)))
            return -1;
        p->top_id[i] = (int32_t)cJSON_GetArrayItem(e, 0)->valuedouble;
        p->top_logit[i] = (float)cJSON_GetArrayItem(e, 1)->valuedouble;
        i++;
    }
    return 0;
}

golden *golden_load(const char *path, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, errlen, "%s: cannot open", path);
        return NULL;
    }
    golden *g = calloc(1, sizeof *g);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, cap_pos = 0;
    bool ok = g != NULL;
    while (ok && (len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len == 0 || line[0] == '\n')
            continue;
        cJSON *o = cJSON_Parse(line);
        if (!o || !cJSON_IsObject(o)) {
            snprintf(err, errlen, "%s:%d: not a JSON object", path, lineno);
            cJSON_Delete(o);
            ok = false;
            break;
        }
        if (lineno == 1) {
            g->prompt = int_array(cJSON_GetObjectItemCaseSensitive(o, "prompt_tokens"), &g->n_prompt);
            const cJSON *nv = num(o, "n_vocab");
            if (!g->prompt || !nv || g->n_prompt < 1) {
                snprintf(err, errlen, "%s:1: expected {\"prompt_tokens\":[...],\"n_vocab\":N}", path);
                ok = false;
            } else {
                g->n_vocab = (int32_t)nv->valuedouble;
            }
        } else if (cJSON_GetObjectItemCaseSensitive(o, "pos")) {
            /* A file made the way generation runs starts at the last prompt
             * position; the ones before it get empty entries (n_top 0). */
            const cJSON *vp = num(o, "pos");
            if (g->n_pos == 0 && g->n_prompt > 1 && vp && (int32_t)vp->valuedouble == g->n_prompt - 1)
                g->first = g->n_prompt - 1;
            const int32_t want = (g->n_pos > g->first ? g->n_pos : g->first) + 1;
            if (want > cap_pos) {
                cap_pos += want + 64;
                golden_pos *np = realloc(g->pos, (size_t)cap_pos * sizeof *np);
                if (!np) {
                    snprintf(err, errlen, "out of memory");
                    ok = false;
                    cJSON_Delete(o);
                    break;
                }
                g->pos = np;
            }
            for (; g->n_pos < g->first; g->n_pos++) {
                golden_pos *e = &g->pos[g->n_pos];
                memset(e, 0, sizeof *e);
                e->pos = g->n_pos;
                e->token_in = g->prompt[g->n_pos];
                e->argmax = -1;
            }
            golden_pos *p = &g->pos[g->n_pos];
            memset(p, 0, sizeof *p);
            g->n_pos++;
            if (parse_pos(o, p) != 0 || p->pos != g->n_pos - 1) {
                snprintf(err, errlen, "%s:%d: bad position line (expected pos %d with token_in, argmax, lse, top)",
                         path, lineno, g->n_pos - 1);
                ok = false;
            }
        } else if (cJSON_GetObjectItemCaseSensitive(o, "generated")) {
            g->generated = int_array(cJSON_GetObjectItemCaseSensitive(o, "generated"), &g->n_generated);
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "text");
            if (!g->generated || !cJSON_IsString(t)) {
                snprintf(err, errlen, "%s:%d: bad final line", path, lineno);
                ok = false;
            } else {
                g->text = strdup(t->valuestring);
            }
        } else {
            snprintf(err, errlen, "%s:%d: unknown line", path, lineno);
            ok = false;
        }
        cJSON_Delete(o);
    }
    free(line);
    fclose(fp);
    if (ok && (!g->prompt || g->n_pos < g->n_prompt)) {
        snprintf(err, errlen, "%s: %s", path, !g->prompt ? "empty file" : "fewer positions than prompt tokens");
        ok = false;
    }
    for (int32_t i = 0; ok && i < g->n_pos; i++)
        if (i < g->n_prompt && g->pos[i].token_in != g->prompt[i]) {
            snprintf(err, errlen, "%s: position %d: token_in %d differs from prompt token %d", path, i,
                     g->pos[i].token_in, g->prompt[i]);
            ok = false;
        }
    if (!ok) {
        golden_free(g);
        return NULL;
    }
    return g;
}

int32_t *golden_sequence(const golden *g, int32_t *n)
{
    int32_t *s = malloc(((size_t)g->n_pos + 1) * sizeof *s);
    if (!s)
        return NULL;
    for (int32_t i = 0; i < g->n_pos; i++)
        s[i] = i < g->n_prompt ? g->prompt[i] : g->pos[i].token_in;
    *n = g->n_pos;
    return s;
}

double golden_lse(const float *logits, int32_t n)
{
    if (n <= 0)
        return -INFINITY;
    float mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (logits[i] > mx)
            mx = logits[i];
    if (!(mx > -INFINITY))
        return mx; /* all -inf (or NaN): no mass to sum */
    double s = 0;
    for (int32_t i = 0; i < n; i++)
        s += exp((double)logits[i] - mx);
    return s > 0 ? mx + log(s) : mx; /* s >= 1 here: the max term is exp(0) */
}

int32_t golden_argmax(const float *logits, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

static void write_ids(FILE *f, const int32_t *ids, int32_t n)
{
    fputc('[', f);
    for (int32_t i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", ids[i]);
    fputc(']', f);
}

void golden_write_header(FILE *f, const int32_t *prompt, int32_t n, int32_t n_vocab)
{
    fputs("{\"prompt_tokens\":", f);
    write_ids(f, prompt, n);
    fprintf(f, ",\"n_vocab\":%d}\n", n_vocab);
}

void golden_write_top(FILE *f, const float *logits, int32_t n_vocab, int32_t k, int32_t *scratch)
{
    if (k > n_vocab)
        k = n_vocab;
    if (k < 0)
        k = 0;
    /* partial selection sort of the k largest: k is small (40) */
    int32_t *idx = scratch;
    int32_t n_sel = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (n_sel < k) {
            int32_t j = n_sel++;
            while (j > 0 && logits[idx[j - 1]] < logits[i]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = i;
        } else if (k > 0 && logits[i] > logits[idx[k - 1]]) {
            int32_t j = k - 1;
            while (j > 0 && logits[idx[j - 1]] < logits[i]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = i;
        }
    }
    fprintf(f, "\"argmax\":%d,\"lse\":%.6f,\"top\":[", golden_argmax(logits, n_vocab), golden_lse(logits, n_vocab));
    for (int32_t i = 0; i < n_sel; i++)
        fprintf(f, "%s[%d,%.6f]", i ? "," : "", idx[i], logits[idx[i]]);
    fputc(']', f);
}

void golden_write_pos(FILE *f, int32_t pos, int32_t token_in, const float *logits, int32_t n_vocab, int32_t k,
                      int32_t *scratch)
{
    golden_write_pos_extra(f, pos, token_in, logits, n_vocab, k, scratch, NULL);
}

void golden_write_pos_extra(FILE *f, int32_t pos, int32_t token_in, const float *logits, int32_t n_vocab, int32_t k,
                            int32_t *scratch, const char *extra)
{
    fprintf(f, "{\"pos\":%d,\"token_in\":%d,", pos, token_in);
    golden_write_top(f, logits, n_vocab, k, scratch);
    if (extra)
        fputs(extra, f);
    fputs("}\n", f);
}

void golden_write_final(FILE *f, const int32_t *gen, int32_t n, const char *text)
{
    fputs("{\"generated\":", f);
    write_ids(f, gen, n);
    fputs(",\"text\":", f);
    /* byte tokens may give bytes that are not UTF-8, which JSON forbids:
     * U+FFFD for those (as the TUI's saves), the exact bytes in text_hex */
    if (!text)
        text = "";
    const size_t len = strlen(text);
    const bool valid = utf8_valid(text, len);
    char *clean = valid ? NULL : utf8_sanitize(text, len, NULL);
    cJSON *s = cJSON_CreateString(clean ? clean : valid ? text : "");
    char *js = s ? cJSON_PrintUnformatted(s) : NULL;
    fputs(js ? js : "\"\"", f);
    free(js);
    cJSON_Delete(s);
    free(clean);
    if (!valid) {
        fputs(",\"text_hex\":\"", f);
        for (size_t i = 0; i < len; i++)
            fprintf(f, "%02x", (unsigned char)text[i]);
        fputc('"', f);
    }
    fputs("}\n", f);
}

int32_t *golden_parse_ids(const char *s, int32_t *n)
{
    size_t cap = strlen(s) / 2 + 2;
    int32_t *ids = malloc(cap * sizeof *ids);
    int32_t k = 0;
    const char *p = s;
    while (ids && *p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ',')) {
            free(ids);
            return NULL;
        }
        ids[k++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (k == 0) {
        free(ids);
        return NULL;
    }
    *n = k;
    return ids;
}
