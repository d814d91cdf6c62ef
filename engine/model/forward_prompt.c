/* Prompt text -> tokens for the commands (plain or one chat turn). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "model/forward.h"

static char *token_text(const tokenizer *t, int32_t id)
{
    if (id < 0)
        return strdup("");
    size_t len = 0;
    const char *s = tokenizer_token_str(t, id, &len);
    char *out = malloc(len + 1);
    if (out) {
        if (s)
            memcpy(out, s, len);
        out[s ? len : 0] = 0;
    }
    return out;
}

int32_t *forward_tokenize_prompt(const model *m, const forward_prompt_params *p, int32_t *n, char *warn,
                                 size_t warnlen, char *err, size_t errlen)
{
    const tokenizer *tok = model_get_tokenizer(m);
    if (warn && warnlen)
        warn[0] = 0;
    if (!tok) {
        snprintf(err, errlen, "the model has no usable tokenizer");
        return NULL;
    }
    const char *text = p->text ? p->text : "";
    char *rendered = NULL;
    bool add_bos = !p->no_bos && tokenizer_add_bos(tok) && tokenizer_bos(tok) >= 0;
    bool parse_special = false;
    if (p->chat) {
        chat_message msgs[2];
        size_t nm = 0;
        if (p->system && *p->system)
            msgs[nm++] = (chat_message){"system", p->system};
        msgs[nm++] = (chat_message){"user", text};
        char *bos = token_text(tok, tokenizer_bos(tok));
        char *eos = token_text(tok, tokenizer_eos(tok));
        chat_render_params rp = {bos ? bos : "", eos ? eos : "", true, NULL};
        const char *tmpl = p->template_name ? NULL : model_get_chat_template(m);
        const char *builtin = p->template_name;
        if (!tmpl && !builtin)
            builtin = NULL; /* chat_render picks "chatml" */
        rendered = chat_render(tmpl, builtin, msgs, nm, &rp, warn, warnlen, err, errlen);
        /* The template writes BOS itself when it wants one; the tokenizer
         * would add a second. common_chat strips the text, then tokenizes
         * with add_special, so BOS comes back as a token either way. */
        if (rendered && add_bos && bos && *bos && !strncmp(rendered, bos, strlen(bos)))
            memmove(rendered, rendered + strlen(bos), strlen(rendered + strlen(bos)) + 1);
        free(bos);
        free(eos);
        if (!rendered)
            return NULL;
        /* The reference's Jinja engine drops one trailing newline of the
         * render (keep_trailing_newline off), so "<|assistant|>\n" ends the
         * prompt as "<|assistant|>": matches its chat goldens for the
         * TinyLlama and SmolLM2 templates. */
        size_t rl = strlen(rendered);
        if (rl > 0 && rendered[rl - 1] == '\n') {
            rendered[--rl] = 0;
            if (rl > 0 && rendered[rl - 1] == '\r')
                rendered[--rl] = 0;
        }
        text = rendered;
        parse_special = true;
    }
    size_t len = strlen(text);
    int32_t cap = (int32_t)(len + 8 < 1 << 30 ? len + 8 : 1 << 30);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    int32_t got = ids ? tokenizer_encode(tok, text, len, add_bos, parse_special, ids, cap) : -1;
    if (got > cap) {
        int32_t *bigger = realloc(ids, (size_t)got * sizeof *ids);
        if (bigger) {
            ids = bigger;
            got = tokenizer_encode(tok, text, len, add_bos, parse_special, ids, got);
        } else {
            got = -1;
        }
    }
    free(rendered);
    if (got < 0) {
        free(ids);
        snprintf(err, errlen, "cannot tokenize the prompt");
        return NULL;
    }
    *n = got;
    return ids;
}
