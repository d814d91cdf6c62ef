/* `tokscope pull`: what a spec names (see pull.h). No network here. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pull.h"

int pull_spec_parse(const char *s, pull_spec *spec, char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    if (!s || !*s) {
        snprintf(err, errlen, "no model given (REPO[:QUANT] or a URL)");
        return -1;
    }
    if (!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8)) {
        if (strlen(s) >= sizeof spec->url) {
            snprintf(err, errlen, "URL too long");
            return -1;
        }
        spec->is_url = true;
        strcpy(spec->url, s);
        return 0;
    }
    const char *colon = strchr(s, ':');
    size_t rl = colon ? (size_t)(colon - s) : strlen(s);
    const char *slash = memchr(s, '/', rl);
    if (!slash || slash == s || slash + 1 == s + rl || memchr(slash + 1, '/', (size_t)(s + rl - slash - 1))) {
        snprintf(err, errlen, "'%.*s' is not a repository: expected OWNER/NAME[:QUANT] (e.g. "
                 "unsloth/Qwen3.5-4B-GGUF:Q4_K_M) or an http(s) URL", (int)rl, s);
        return -1;
    }
    for (size_t i = 0; i < rl; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_./", s[i])) {
            snprintf(err, errlen, "repository name '%.*s' has a character the hub does not allow ('%c')",
                     (int)rl, s, s[i]);
            return -1;
        }
    if (rl >= sizeof spec->repo || (colon && strlen(colon + 1) >= sizeof spec->quant)) {
        snprintf(err, errlen, "repository or quant name too long");
        return -1;
    }
    memcpy(spec->repo, s, rl);
    if (colon) {
        if (!colon[1] || strchr(colon + 1, '/') || strstr(colon + 1, "..")) {
            snprintf(err, errlen, "bad quant '%s' after ':' (e.g. Q4_K_M, or a file name)", colon + 1);
            return -1;
        }
        strcpy(spec->quant, colon + 1);
    }
    return 0;
}

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

bool pull_name_has_quant(const char *name, const char *quant)
{
    size_t q = strlen(quant);
    if (!q)
        return false;
    for (const char *p = name; *p; p++)
        if (!strncasecmp(p, quant, q) && (p == name || !word_char(p[-1])) && !word_char(p[q]))
            return true;
    return false;
}

bool pull_split_part(const char *name, int *part, int *count, size_t *prefix_len)
{
    size_t n = strlen(name);
    /* "-NNNNN-of-NNNNN.gguf" is 20 characters */
    if (n < 21 || strcasecmp(name + n - 5, ".gguf"))
        return false;
    const char *t = name + n - 20;
    if (t[0] != '-' || strncmp(t + 6, "-of-", 4))
        return false;
    for (int i = 0; i < 5; i++)
        if (!isdigit((unsigned char)t[1 + i]) || !isdigit((unsigned char)t[10 + i]))
            return false;
    *part = atoi(t + 1);
    *count = atoi(t + 10);
    *prefix_len = (size_t)(t - name);
    return *part >= 1 && *count >= 1 && *part <= *count;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

typedef struct cand {
    const cJSON *item;
    const char *path;
} cand;

static void fill(pull_file *f, const cJSON *it)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", cJSON_GetObjectItem(it, "path")->valuestring);
    const cJSON *sz = cJSON_GetObjectItem(it, "size");
    if (cJSON_IsNumber(sz) && sz->valuedouble > 0)
        f->size = (uint64_t)sz->valuedouble;
    const cJSON *lfs = cJSON_GetObjectItem(it, "lfs");
    const cJSON *oid = lfs ? cJSON_GetObjectItem(lfs, "oid") : NULL;
    if (cJSON_IsString(oid) && strlen(oid->valuestring) == 64)
        snprintf(f->sha256, sizeof f->sha256, "%s", oid->valuestring);
    const cJSON *lsz = lfs ? cJSON_GetObjectItem(lfs, "size") : NULL;
    if (cJSON_IsNumber(lsz) && lsz->valuedouble > 0)
        f->size = (uint64_t)lsz->valuedouble;
}

/* Same split set: same directory and prefix, same count. */
static bool same_set(const char *a, const char *b)
{
    int pa, ca, pb, cb;
    size_t la, lb;
    if (!pull_split_part(a, &pa, &ca, &la) || !pull_split_part(b, &pb, &cb, &lb))
        return false;
    return ca == cb && la == lb && !strncmp(a, b, la);
}

int pull_pick(const char *tree_json, const char *quant, pull_file *files, int cap, char *err, size_t errlen)
{
    cJSON *root = cJSON_Parse(tree_json);
    if (!cJSON_IsArray(root)) {
        snprintf(err, errlen, "the hub's file listing is not a JSON array");
        cJSON_Delete(root);
        return -1;
    }
    int n_all = cJSON_GetArraySize(root);
    cand *c = calloc((size_t)n_all + 1, sizeof *c);
    int nc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        const cJSON *type = cJSON_GetObjectItem(it, "type");
        const cJSON *path = cJSON_GetObjectItem(it, "path");
        if (!cJSON_IsString(path) || (cJSON_IsString(type) && strcmp(type->valuestring, "file")))
            continue;
        size_t pl = strlen(path->valuestring);
        if (pl < 5 || pl >= sizeof files[0].path || strcasecmp(path->valuestring + pl - 5, ".gguf"))
            continue;
        if (strcasestr(base_name(path->valuestring), "mmproj"))
            continue;
        c[nc++] = (cand){it, path->valuestring};
    }
    int rc = -1;
    if (nc == 0) {
        snprintf(err, errlen, "the repository has no .gguf file");
        goto out;
    }
    /* the candidates the spec means */
    const char *q = quant && *quant ? quant : NULL;
    bool by_file = q && strlen(q) > 5 && !strcasecmp(q + strlen(q) - 5, ".gguf");
    int *m = calloc((size_t)nc, sizeof *m), nm = 0;
    for (int i = 0; i < nc; i++) {
        bool hit;
        if (by_file)
            hit = !strcmp(c[i].path, q) || !strcmp(base_name(c[i].path), q);
        else if (q)
            hit = pull_name_has_quant(c[i].path, q);
        else
            hit = pull_name_has_quant(c[i].path, "Q4_K_M");
        if (hit)
            m[nm++] = i;
    }
    if (nm == 0 && !q) { /* no Q4_K_M: the only model, if there is one */
        for (int i = 0; i < nc; i++)
            m[nm++] = i;
    }
    if (nm == 0) {
        int off = snprintf(err, errlen, "no .gguf file matches '%s'; the repository has:", q ? q : "Q4_K_M");
        for (int i = 0; i < nc && off > 0 && (size_t)off < errlen; i++)
            off += snprintf(err + off, errlen - (size_t)off, " %s", c[i].path);
        free(m);
        goto out;
    }
    /* every match must belong to one model: one file, or parts of one split set */
    for (int k = 1; k < nm; k++)
        if (!same_set(c[m[0]].path, c[m[k]].path)) {
            int off = snprintf(err, errlen, "%d files match%s%s: ", nm, q ? " " : " (no quant given)",
                               q ? q : "");
            for (int j = 0; j < nm && off > 0 && (size_t)off < errlen; j++)
                off += snprintf(err + off, errlen - (size_t)off, "%s%s", j ? ", " : "", c[m[j]].path);
            if (off > 0 && (size_t)off < errlen)
                snprintf(err + off, errlen - (size_t)off, "; name one: %s", q ? "REPO:FILE.gguf" : "REPO:QUANT");
            free(m);
            goto out;
        }
    int part, count;
    size_t pre;
    if (pull_split_part(c[m[0]].path, &part, &count, &pre)) {
        /* the whole set, in part order, whatever the match found */
        if (count > cap) {
            snprintf(err, errlen, "split model of %d parts: more than %d", count, cap);
            free(m);
            goto out;
        }
        int found = 0;
        for (int p = 1; p <= count; p++) {
            bool got = false;
            for (int i = 0; i < nc && !got; i++) {
                int pi, ci;
                size_t li;
                if (same_set(c[m[0]].path, c[i].path) && pull_split_part(c[i].path, &pi, &ci, &li) && pi == p) {
                    fill(&files[found++], c[i].item);
                    got = true;
                }
            }
            if (!got) {
                snprintf(err, errlen, "split model %.*s: part %d of %d is not in the repository", (int)pre,
                         c[m[0]].path, p, count);
                free(m);
                goto out;
            }
        }
        rc = found;
    } else {
        fill(&files[0], c[m[0]].item);
        rc = 1;
    }
    free(m);
out:
    free(c);
    cJSON_Delete(root);
    return rc;
}
