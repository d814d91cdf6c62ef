/* Checks the chat template renderer against golden/chat (rendered by
 * transformers): `chat_golden DIR [FILE [MORE]]` reads DIR/FILE (default
 * golden.jsonl) and DIR/templates/NAME.{jinja,json} (MORE/NAME.{jinja,json} when
 * DIR has no such file: one the golden was made with but the shared
 * folder lacks); a line's "vars" object is passed as template variables
 * (enable_thinking, reasoning_effort); prints one ok/not ok line per golden line
 * (a diff snippet on mismatch), then smoke-renders every template that has
 * no golden line with a few conversations (it must not fail, unless the
 * template raises on purpose). Exit status 1 when any check failed. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

#include "chat/chat.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = 0;
    fclose(f);
    return b;
}

typedef struct tmpl_info {
    char *text, *bos, *eos;
} tmpl_info;

static const char *g_more; /* extra template folder (NULL: none) */

static bool template_exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/%s.jinja", dir, name);
    if (access(path, R_OK) == 0)
        return true;
    snprintf(path, sizeof path, "%s/%s.jinja", g_more ? g_more : "", name);
    return g_more && access(path, R_OK) == 0;
}

static int load_template(const char *dir, const char *name, tmpl_info *t)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/%s.jinja", dir, name);
    t->text = slurp(path);
    if (!t->text && g_more) {
        snprintf(path, sizeof path, "%s/%s.jinja", g_more, name);
        t->text = slurp(path);
    }
    snprintf(path, sizeof path, "%s/templates/%s.json", dir, name);
    char *js = slurp(path);
    if (!js && g_more) {
        snprintf(path, sizeof path, "%s/%s.json", g_more, name);
        js = slurp(path);
    }
    t->bos = t->eos = NULL;
    if (js) {
        cJSON *j = cJSON_Parse(js);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "bos_token");
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "eos_token");
        t->bos = strdup(cJSON_IsString(b) ? b->valuestring : "");
        t->eos = strdup(cJSON_IsString(e) ? e->valuestring : "");
        cJSON_Delete(j);
        free(js);
    } else if (t->text) { /* no NAME.json: no BOS/EOS text (a template that uses them needs one) */
        t->bos = strdup("");
        t->eos = strdup("");
    }
    return t->text && t->bos ? 0 : -1;
}

static void free_template(tmpl_info *t)
{
    free(t->text);
    free(t->bos);
    free(t->eos);
}

static void show_diff(const char *want, const char *got)
{
    size_t i = 0;
    while (want[i] && want[i] == got[i])
        i++;
    size_t from = i > 40 ? i - 40 : 0;
    printf("#   first difference at byte %zu\n", i);
    printf("#   want: ");
    for (size_t k = from; k < i + 60 && want[k]; k++)
        putchar(want[k] == '\n' ? '|' : want[k]);
    printf("\n#   got:  ");
    for (size_t k = from; k < i + 60 && got[k]; k++)
        putchar(got[k] == '\n' ? '|' : got[k]);
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "../shared/golden/chat";
    const char *file = argc > 2 ? argv[2] : "golden.jsonl";
    g_more = argc > 3 ? argv[3] : NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "chat_golden: cannot open %s\n", path);
        return 2;
    }
    int fails = 0, lineno = 0;
    char *line = NULL;
    size_t cap = 0;
    char seen[64][128];
    int nseen = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        cJSON *j = cJSON_Parse(line);
        const cJSON *tn = cJSON_GetObjectItemCaseSensitive(j, "template");
        const cJSON *cs = cJSON_GetObjectItemCaseSensitive(j, "case");
        const cJSON *agp = cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt");
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(j, "output");
        const cJSON *gerr = cJSON_GetObjectItemCaseSensitive(j, "error");
        const cJSON *vars = cJSON_GetObjectItemCaseSensitive(j, "vars");
        if (!cJSON_IsString(tn) || !cJSON_IsArray(msgs)) {
            printf("not ok - chat golden line %d\n#   malformed line\n", lineno);
            fails++;
            cJSON_Delete(j);
            continue;
        }
        char name[256];
        snprintf(name, sizeof name, "chat %s %s%s", tn->valuestring, cJSON_IsString(cs) ? cs->valuestring : "?",
                 cJSON_IsTrue(agp) ? "+gen" : "");
        bool dup = false;
        for (int i = 0; i < nseen; i++)
            dup |= !strcmp(seen[i], tn->valuestring);
        if (!dup && nseen < 64)
            snprintf(seen[nseen++], sizeof seen[0], "%s", tn->valuestring);
        tmpl_info t;
        if (!template_exists(dir, tn->valuestring)) {
            /* a golden line whose template the shared folder does not ship
             * (golden2026's Gemma 4 "-interleaved" variant): said, not hidden */
            printf("skip - %s (template %s.jinja is in neither %s/templates nor %s)\n", name, tn->valuestring, dir,
                   g_more ? g_more : "an extra folder");
            cJSON_Delete(j);
            continue;
        }
        if (load_template(dir, tn->valuestring, &t)) {
            printf("not ok - %s\n#   cannot load template\n", name);
            fails++;
            free_template(&t);
            cJSON_Delete(j);
            continue;
        }
        chat_render_params p = {.bos_token = t.bos, .eos_token = t.eos, .add_generation_prompt = cJSON_IsTrue(agp),
                                .date = "2024-07-26"};
        char err[1024];
        bool raised;
        char *r = chat_render_jinja_vars(t.text, msgs, cJSON_IsObject(vars) ? vars : NULL, &p, &raised, err,
                                         sizeof err);
        if (cJSON_IsString(gerr)) {
            if (!r && raised && !strcmp(err, gerr->valuestring))
                printf("ok - %s (error)\n", name);
            else {
                printf("not ok - %s\n#   want error: %s\n#   got: %s\n", name, gerr->valuestring, r ? "(output)" : err);
                fails++;
            }
        } else if (!r) {
            printf("not ok - %s\n#   error: %s\n", name, err);
            fails++;
        } else if (!cJSON_IsString(out) || strcmp(r, out->valuestring) != 0) {
            printf("not ok - %s\n", name);
            if (cJSON_IsString(out))
                show_diff(out->valuestring, r);
            fails++;
        } else
            printf("ok - %s\n", name);
        free(r);
        free_template(&t);
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);

    /* smoke: templates without golden lines */
    static const char *convs[] = {
        "[{\"role\":\"user\",\"content\":\"Hello\"}]",
        "[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello!\"},{\"role\":\"user\",\"content\":\"Bye\"}]",
        "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello!\"},{\"role\":\"user\",\"content\":\"Bye\"}]",
    };
    snprintf(path, sizeof path, "%s/templates", dir);
    DIR *d = opendir(path);
    struct dirent *de;
    char *names[256];
    int nn = 0;
    while (d && (de = readdir(d)) && nn < 256) {
        size_t l = strlen(de->d_name);
        if (l > 6 && !strcmp(de->d_name + l - 6, ".jinja"))
            names[nn++] = strndup(de->d_name, l - 6);
    }
    if (d)
        closedir(d);
    for (int a = 0; a < nn; a++)
        for (int b = a + 1; b < nn; b++)
            if (strcmp(names[a], names[b]) > 0) {
                char *tmp = names[a];
                names[a] = names[b];
                names[b] = tmp;
            }
    for (int i = 0; i < nn; i++) {
        bool dup = false;
        for (int k = 0; k < nseen; k++)
            dup |= !strcmp(seen[k], names[i]);
        if (dup) {
            free(names[i]);
            continue;
        }
        tmpl_info t;
        if (load_template(dir, names[i], &t)) {
            printf("not ok - chat smoke %s\n#   cannot load template\n", names[i]);
            fails++;
            free_template(&t);
            free(names[i]);
            continue;
        }
        for (int c = 0; c < 3; c++) {
            cJSON *msgs = cJSON_Parse(convs[c]);
            chat_render_params p = {.bos_token = t.bos, .eos_token = t.eos, .add_generation_prompt = true,
                                    .date = "2024-07-26"};
            char err[1024];
            bool raised;
            char *r = chat_render_jinja_json(t.text, msgs, &p, &raised, err, sizeof err);
            /* a template may refuse system messages on purpose; that must be its own raise_exception */
            bool ok = r != NULL || (raised && c == 2);
            bool has_content = r && strstr(r, c == 0 ? "Hello" : "Bye") != NULL;
            if (ok && (r == NULL || has_content))
                printf("ok - chat smoke %s conv%d%s\n", names[i], c, r ? "" : " (template refuses system role)");
            else {
                printf("not ok - chat smoke %s conv%d\n#   %s\n", names[i], c, r ? "rendered text misses the last message" : err);
                fails++;
            }
            free(r);
            cJSON_Delete(msgs);
        }
        free_template(&t);
        free(names[i]);
    }
    return fails ? 1 : 0;
}
