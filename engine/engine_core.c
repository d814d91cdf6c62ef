/* What every part of the engine thread shares (engine_internal.h): posting
 * events, freeing commands, the template and sampling settings, where a
 * prompt gets its format. It calls none of the other engine files, so
 * engine.c, engine_gen.c, engine_between.c, engine_explore.c and remote/
 * depend on it and not on each other in a circle. */
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void engine_cmd_free(engine_cmd *c)
{
    free(c->path);
    free(c->name);
    free(c->text);
    free(c->tokens);
    c->text = NULL;
    c->tokens = NULL;
    c->n_tokens = 0;
    for (size_t i = 0; i < c->n_messages; i++) {
        free((char *)c->messages[i].role);
        free((char *)c->messages[i].content);
    }
    free(c->messages);
    c->path = c->name = NULL;
    c->messages = NULL;
    c->n_messages = 0;
}

void engine_lens_free(engine_lens *l) { free(l); }

void engine_post(engine *e, engine_event *ev)
{
    if (!queue_push(e->events, ev))
        fprintf(stderr, "tokscope: engine event queue out of memory\n");
}

void engine_post_message(engine *e, enum engine_event_type type, const char *msg)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.conv_id = e->conv_id;
    ev.req_id = e->req_id;
    size_t l = strnlen(msg, sizeof ev.message - 1);
    memcpy(ev.message, msg, l);
    ev.message[l] = 0;
    engine_post(e, &ev);
}

/* "raw" is the engine's own format: the message contents back to back. */
bool engine_template_known(const char *name) { return !strcmp(name, "raw") || chat_builtin_known(name); }

void engine_set_template_name(engine *e, const char *name)
{
    if (!name || !*name || !strcmp(name, "model")) {
        free(e->tmpl_force);
        e->tmpl_force = NULL;
        return;
    }
    if (!engine_template_known(name)) {
        char list[256] = "";
        for (int i = 0; chat_builtin_names[i]; i++) {
            strncat(list, i ? " " : "", sizeof list - strlen(list) - 1);
            strncat(list, chat_builtin_names[i], sizeof list - strlen(list) - 1);
        }
        engine_post_error(e, "unknown chat template '%s' (built-ins: %s raw, or 'model')", name, list);
        return;
    }
    free(e->tmpl_force);
    e->tmpl_force = strdup(name);
}

/* Template-less models (base models such as stories260K) get "raw"
 * (chat_prompt_format): each reply continues the story where the last
 * message stopped. */
chat_prompt_src engine_prompt_src(const engine *e, const char *forced)
{
    return (chat_prompt_src){.tok = e->tok,
                             .model_template = e->m ? model_get_chat_template(e->m) : NULL,
                             .forced = forced ? forced : e->tmpl_force};
}

void engine_apply_params(engine *e, const sampler_params *p)
{
    e->sp = *p;
    if (e->sp.n_top > SAMPLER_MAX_TOP)
        e->sp.n_top = SAMPLER_MAX_TOP;
    if (e->s && !e->turn_own) /* a turn with its own parameters keeps them until it ends */
        sampler_set_params(e->s, &e->sp);
    e->params_changed = true;
}

/* ---- a reply's text: stop strings and what an event may carry ---- */

long engine_text_find_stop(const char *gen, size_t len, size_t emitted, const sampler_params *sp)
{
    long best = -1;
    for (int32_t i = 0; i < sp->n_stop; i++) {
        const char *st = sp->stop[i];
        size_t sl = strlen(st);
        if (!sl || len < emitted + sl)
            continue;
        const char *hit = memmem(gen + emitted, len - emitted, st, sl);
        if (hit && (best < 0 || hit - gen < best))
            best = hit - gen;
    }
    return best;
}

size_t engine_text_holdback(const char *gen, size_t len, size_t emitted, const sampler_params *sp)
{
    size_t hold = 0;
    for (int32_t i = 0; i < sp->n_stop; i++) {
        const char *st = sp->stop[i];
        size_t sl = strlen(st);
        for (size_t k = sl ? sl - 1 : 0; k > hold; k--)
            if (k <= len - emitted && !memcmp(gen + len - k, st, k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

void engine_text_emit(const char *gen, size_t *emitted, engine_event *ev, size_t upto, bool final)
{
    if (upto <= *emitted)
        return;
    size_t n = upto - *emitted;
    if (!final)
        n = tokenizer_utf8_complete(gen + *emitted, n);
    if (n > ENGINE_TEXT_MAX - 1) {
        size_t c = tokenizer_utf8_complete(gen + *emitted, ENGINE_TEXT_MAX - 1);
        n = c ? c : ENGINE_TEXT_MAX - 1;
    }
    memcpy(ev->text, gen + *emitted, n);
    ev->text[n] = 0;
    ev->text_len = (int32_t)n;
    *emitted += n;
}
