/* `tokscope template`: renders a conversation with a model's chat template
 * (read straight from the GGUF), a template file, or a built-in format, and
 * prints the raw text with nothing added. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "cli.h"
#include "commands.h"
#include "gguf/gguf.h"
#include "chat/jinja.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tokscope template [-m MODEL | --template FILE.jinja [--bos S] [--eos S]] [--builtin NAME]\n"
               "                         [--no-generation-prompt] [--date YYYY-MM-DD] [--var NAME=VALUE]... MESSAGES.json\n"
               "MESSAGES.json: an array of {\"role\", \"content\"} objects, or an object with a \"messages\" array\n"
               "(its other keys, e.g. \"tools\", become template variables).\n"
               "--var NAME=VALUE: one more template variable (VALUE as JSON when it parses: true, false, 3,\n"
               "\"text\"; else the text itself), e.g. --var enable_thinking=false --var reasoning_effort=high.\n"
               "Built-in formats:");
    for (int i = 0; chat_builtin_names[i]; i++)
        fprintf(f, " %s", chat_builtin_names[i]);
    fprintf(f, "\n");
}

static char *slurp(const char *path, const char *what)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tokscope: template: cannot open %s '%s'\n", what, path);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b)
            break;
        if (n + 1 >= cap) {
            if (cap > ((size_t)256 << 20)) {
                fprintf(stderr, "tokscope: template: %s '%s' is too large\n", what, path);
                free(b);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    if (!b) {
        fprintf(stderr, "tokscope: template: out of memory reading '%s'\n", path);
        return NULL;
    }
    b[n] = 0;
    if (strlen(b) != n) {
        fprintf(stderr, "tokscope: template: %s '%s' contains NUL bytes\n", what, path);
        free(b);
        return NULL;
    }
    return b;
}

/* Text of token `key` (a token id) from tokenizer.ggml.tokens, or NULL. */
static char *token_text(gguf_ctx *g, const char *key)
{
    uint32_t id;
    if (!gguf_get_u32(g, key, &id))
        return NULL;
    int64_t k = gguf_find_key(g, "tokenizer.ggml.tokens");
    if (k < 0 || gguf_kv_type(g, k) != GGUF_VTYPE_ARRAY || gguf_arr_type(g, k) != GGUF_VTYPE_STRING ||
        id >= gguf_arr_len(g, k))
        return NULL;
    gguf_str s = gguf_arr_str(g, k, id);
    char *r = malloc(s.len + 1);
    if (r) {
        memcpy(r, s.ptr, s.len);
        r[s.len] = 0;
    }
    return r;
}

/* A copy of the file's variables (base may be NULL) with each NAME=VALUE
 * set: VALUE as JSON when it parses, else as a string. */
static cJSON *with_vars(const cJSON *base, const char *const *vars, int n)
{
    cJSON *o = base ? cJSON_Duplicate(base, true) : cJSON_CreateObject();
    for (int i = 0; o && i < n; i++) {
        const char *eq = strchr(vars[i], '=');
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - vars[i]), vars[i]);
        cJSON *v = cJSON_Parse(eq + 1);
        if (!v)
            v = cJSON_CreateString(eq + 1);
        cJSON_DeleteItemFromObjectCaseSensitive(o, name);
        cJSON_AddItemToObject(o, name, v);
    }
    return o;
}

int cmd_template(int argc, char **argv)
{
    const char *model = NULL, *tfile = NULL, *bos = NULL, *eos = NULL, *builtin = NULL, *date = NULL, *mfile = NULL;
    bool gen = true;
    const char *vars[32];
    int n_vars = 0;
    static const int opt_ids[] = {CLI_HELP, CLI_MODEL, CLI_TEMPLATE_FILE, CLI_BOS,          CLI_EOS,
                                  CLI_BUILTIN, CLI_DATE, CLI_NO_GEN_PROMPT, CLI_VAR};
    cli cl;
    cli_value v;
    cli_begin(&cl, "template", opt_ids, sizeof opt_ids / sizeof opt_ids[0], false, argc, argv);
    int id;
    while ((id = cli_next(&cl, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: return 2;
        case CLI_HELP: usage(stdout); return 0;
        case CLI_MODEL: model = v.text; break;
        case CLI_TEMPLATE_FILE: tfile = v.text; break;
        case CLI_BOS: bos = v.text; break;
        case CLI_EOS: eos = v.text; break;
        case CLI_BUILTIN: builtin = v.text; break;
        case CLI_DATE: date = v.text; break;
        case CLI_NO_GEN_PROMPT: gen = false; break;
        case CLI_VAR:
            if (n_vars == 32)
                return cli_fail(&cl, "--var: 32 variables at most");
            vars[n_vars++] = v.text;
            break;
        }
    }
    const int rest = cli_rest(&cl);
    if (rest < argc - 1)
        return cli_fail(&cl, "one messages file at a time ('%s' and '%s')", argv[rest], argv[rest + 1]);
    if (rest == argc - 1)
        mfile = argv[rest];
    if (!mfile)
        return cli_fail(&cl, "MESSAGES.json is required");
    if (model && tfile)
        return cli_fail(&cl, "use either -m or --template, not both");

    int rc = 1;
    char *tmpl = NULL, *bos_own = NULL, *eos_own = NULL, *json = NULL;
    cJSON *root = NULL;
    if (model) {
        char err[512];
        gguf_ctx *g = gguf_open(model, err, sizeof err);
        if (!g) {
            fprintf(stderr, "tokscope: %s\n", err);
            goto done;
        }
        tmpl = gguf_get_str_dup(g, "tokenizer.chat_template");
        bos_own = token_text(g, "tokenizer.ggml.bos_token_id");
        eos_own = token_text(g, "tokenizer.ggml.eos_token_id");
        gguf_close(g);
        if (!tmpl && !builtin)
            fprintf(stderr, "tokscope: template: %s has no chat template; using built-in format 'chatml'\n", model);
    } else if (tfile) {
        tmpl = slurp(tfile, "template");
        if (!tmpl)
            goto done;
    } else if (!builtin) {
        fprintf(stderr, "tokscope: template: give -m MODEL, --template FILE or --builtin NAME\n");
        goto done;
    }
    json = slurp(mfile, "messages file");
    if (!json)
        goto done;
    /* a "\u0000" in a content (a reply's byte token) is a NUL of the prompt: parsed
     * escaped (cJSON holds C strings), read back as bytes (chat.h) */
    size_t elen = 0;
    char *ejson = chat_bytes_json_in(json, strlen(json), &elen);
    root = ejson ? cJSON_ParseWithLength(ejson, elen) : NULL;
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        fprintf(stderr, "tokscope: template: %s is not valid JSON (near byte %ld)\n", mfile,
                at && ejson ? (long)(at - ejson) : -1L);
        free(ejson);
        goto done;
    }
    jinja_cjson_mark_floats(root, ejson); /* keep 2.0 a float, as Python's json.loads does */
    free(ejson);
    chat_bytes_mark(root);
    const cJSON *msgs = root;
    if (cJSON_IsObject(root))
        msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(msgs)) {
        fprintf(stderr, "tokscope: template: %s must hold an array of messages (or an object with \"messages\")\n",
                mfile);
        goto done;
    }
    int n = cJSON_GetArraySize(msgs), i = 0;
    chat_message *cm = calloc((size_t)n + 1, sizeof *cm);
    if (!cm) {
        fprintf(stderr, "tokscope: template: out of memory\n");
        goto done;
    }
    for (const cJSON *m = msgs->child; m; m = m->next, i++) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            fprintf(stderr, "tokscope: template: message %d needs a string \"role\"\n", i);
            free(cm);
            goto done;
        }
        cm[i].role = role->valuestring;
        cm[i].content = cJSON_IsString(content) ? content->valuestring : NULL;
    }
    chat_render_params p = {
        .bos_token = bos ? bos : bos_own ? bos_own : "",
        .eos_token = eos ? eos : eos_own ? eos_own : "",
        .add_generation_prompt = gen,
        .date = date,
    };
    char err[1024];
    char *out = NULL;
    size_t out_len = 0;
    if (tmpl && !builtin) {
        bool raised = false;
        /* in the object form, keys besides "messages" become template variables (tools, enable_thinking, ...) */
        cJSON *extra = cJSON_IsObject(root) ? root : NULL;
        if (n_vars) /* --var on top of the file's variables */
            extra = with_vars(extra, vars, n_vars);
        out = chat_render_jinja_vars_n(tmpl, msgs, extra, &p, &raised, &out_len, err, sizeof err);
        if (extra != root)
            cJSON_Delete(extra);
        if (!out) {
            /* First line: the message alone, as a Python traceback would end
             * (comparable with transformers' errors); then where it happened. */
            int line = 0, col = 0, used = 0;
            if (!raised && sscanf(err, "%d:%d: %n", &line, &col, &used) == 2 && used > 0)
                fprintf(stderr, "tokscope: template error: %s\n", err + used);
            else
                fprintf(stderr, "tokscope: template error: %s\n", err);
            if (!raised) {
                const char *where = model ? model : tfile;
                if (line > 0)
                    fprintf(stderr, "tokscope: template: at %s%s:%d:%d\n", where, model ? " (chat template)" : "", line,
                            col);
                fprintf(stderr, "tokscope: template: the chat app falls back to the built-in format '%s' here "
                                "(--builtin %s shows it)\n",
                        chat_detect_builtin(tmpl), chat_detect_builtin(tmpl));
            }
        }
    } else {
        for (int k = 0; k < n; k++)
            if (!cm[k].content) {
                fprintf(stderr, "tokscope: template: message %d needs a string \"content\" for built-in formats\n", k);
                free(cm);
                goto done;
            }
        for (int k = 0; k < n; k++) /* the contents' bytes: the tree is not read again */
            cm[k].content_len = chat_bytes_unescape((char *)cm[k].content);
        const char *name = builtin ? builtin : chat_detect_builtin(tmpl);
        out = chat_render_builtin_n(name, cm, (size_t)n, &p, &out_len, err, sizeof err);
        if (!out)
            fprintf(stderr, "tokscope: template: %s\n", err);
    }
    free(cm);
    if (out) {
        size_t len = out_len;
        if (fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0)
            fprintf(stderr, "tokscope: template: error writing output\n");
        else
            rc = 0;
        free(out);
    }
done:
    cJSON_Delete(root);
    free(json);
    free(tmpl);
    free(bos_own);
    free(eos_own);
    return rc;
}
