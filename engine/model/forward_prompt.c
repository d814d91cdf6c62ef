/* Prompt text -> tokens for the commands: plain here, one chat turn through
 * the chat prompt every path shares (chat/chat_prompt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_prompt.h"
#include "model/forward.h"

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
    if (p->chat) { /* the one chat prompt every path builds (chat/chat_prompt.h) */
        chat_message msgs[2];
        size_t nm = 0;
        if (p->system && *p->system)
            msgs[nm++] = (chat_message){"system", p->system, 0};
        msgs[nm++] = (chat_message){"user", text, 0};
        chat_prompt_src src = {tok, model_get_chat_template(m), p->template_name, p->no_bos};
        return chat_prompt_tokenize(&src, msgs, nm, n, warn, warnlen, err, errlen);
    }
    const bool add_bos = !p->no_bos && tokenizer_add_bos(tok) && tokenizer_bos(tok) >= 0;
    size_t len = strlen(text);
    int32_t cap = (int32_t)(len + 8 < 1 << 30 ? len + 8 : 1 << 30);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    int32_t got = ids ? tokenizer_encode(tok, text, len, add_bos, false, ids, cap) : -1;
    if (got > cap) {
        int32_t *bigger = realloc(ids, (size_t)got * sizeof *ids);
        if (bigger) {
            ids = bigger;
            got = tokenizer_encode(tok, text, len, add_bos, false, ids, got);
        } else {
            got = -1;
        }
    }
    if (got < 0) {
        free(ids);
        snprintf(err, errlen, "cannot tokenize the prompt");
        return NULL;
    }
    *n = got;
    return ids;
}
