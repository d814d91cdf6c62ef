/* Engine thread: owns the model, forward context, memory (memory/memory.h)
 * and sampler; the UI talks to it through two queues. This file holds the
 * public API, the command loop and model loading; engine_gen.c runs a turn,
 * engine_between.c takes the commands that come during one, engine_explore.c
 * the lens, engine_core.c what all of them (and remote/) share. */
#include "engine_internal.h"
#include "remote/remote.h"
#include "spec/spec_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

engine_params engine_default_params(void)
{
    engine_params p;
    memset(&p, 0, sizeof p);
    p.model_path = NULL;
    p.n_ctx = 0;
    p.n_threads = 0;
    p.no_kv_cache = false;
    p.cache_type_k = TENSOR_TYPE_F16;
    p.cache_type_v = TENSOR_TYPE_F16;
    p.blas = BLAS_MODE_AUTO;
    p.template_name = NULL;
    p.context_shift = true;
    p.sampling = sampler_default_params();
    return p;
}

static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

static void drop_cmd(void *item) { engine_cmd_free(item); }

static void drop_event(void *item)
{
    engine_event *ev = item;
    engine_lens_free(ev->lens);
}

static void unload(engine *e)
{
    spec_engine_close(e);
    engine_slots_free(e);
    engine_kv_forget(e);
    forward_free(e->f);
    sampler_free(e->s);
    model_free(e->m);
    memory_release(&e->mem);
    free(e->reply_off);
    e->reply_off = NULL;
    e->reply_cap = 0;
    e->f = NULL;
    e->s = NULL;
    e->m = NULL;
    e->tok = NULL;
    e->n_ctx = 0;
    e->n_vocab = 0;
}

static void post_progress(engine *e, float x)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_LOAD_PROGRESS;
    ev.progress = x;
    engine_post(e, &ev);
}

static void load(engine *e, const char *path)
{
    char err[512] = "";
    unload(e);
    if (!path || !*path) {
        engine_post_error(e, "load: no model path given");
        return;
    }
    post_progress(e, 0.0f);
    e->m = model_load(path, err, sizeof err);
    if (!e->m) {
        engine_post_error(e, "%s", err[0] ? err : "cannot load model");
        return;
    }
    post_progress(e, 0.5f);
    e->tok = model_get_tokenizer(e->m);
    const model_hparams *hp = model_get_hparams(e->m);
    if (!e->tok) {
        engine_post_error(e, "%s: the model has no tokenizer", path);
        unload(e);
        return;
    }
    forward_params fp = forward_default_params();
    fp.n_ctx = e->p.n_ctx;
    fp.n_threads = e->p.n_threads;
    fp.kv_type = e->p.cache_type_k;
    fp.v_type = e->p.cache_type_v;
    fp.blas = e->p.blas;
    if (e->p.n_parallel > 1)
        fp.n_seq = (uint32_t)e->p.n_parallel;
    e->f = forward_build(e->m, &fp, err, sizeof err);
    if (!e->f) {
        engine_post_error(e, "%s", err[0] ? err : "cannot build the forward context");
        unload(e);
        return;
    }
    e->n_vocab = hp->n_vocab;
    e->n_ctx = (int32_t)forward_n_ctx(e->f);
    e->s = sampler_build(&e->sp, e->n_vocab);
    if (e->s)
        sampler_set_tokenizer(e->s, e->tok); /* DRY sequence breakers */
    memory_params mp = {.ckpt_every = e->p.ckpt_every, .ckpt_max = e->p.ckpt_max,
                        .ckpt_max_bytes = (size_t)e->p.ckpt_max_bytes};
    if (!e->s || !memory_init(&e->mem, e->f, e->n_ctx, e->n_vocab, e->p.no_kv_cache, &mp, err, sizeof err)) {
        engine_post_error(e, "out of memory after loading %s", path);
        unload(e);
        return;
    }
    memory_set_progress(&e->mem, engine_progress_cb, e);
    if (e->p.n_parallel > 1) {
        forward_bits fb;
        forward_bits_settings(e->f, &fb);
        if (!engine_slots_init(e, (int32_t)fb.n_batch, err, sizeof err)) {
            engine_post_error(e, "%s", err);
            unload(e);
            return;
        }
    }
    if (!spec_engine_open(e, err, sizeof err)) /* the model runs without it, said so */
        engine_post_error(e, "speculative decoding off: %s", err);
    post_progress(e, 1.0f);

    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_LOADED;
    engine_model_info *in = &ev.info;
    snprintf(in->name, sizeof in->name, "%s", model_get_name(e->m));
    snprintf(in->arch, sizeof in->arch, "%s", model_get_arch(e->m) ? model_get_arch(e->m) : "");
    const char *ft = model_file_type_name(hp->file_type);
    snprintf(in->file_type, sizeof in->file_type, "%s", ft ? ft : "?");
    const chat_prompt_src src = engine_prompt_src(e, NULL);
    snprintf(in->template_name, sizeof in->template_name, "%s", chat_prompt_format(&src));
    in->n_ctx = (uint32_t)e->n_ctx;
    in->n_ctx_train = hp->n_ctx_train;
    in->n_layer = hp->n_layer;
    in->n_embd = hp->n_embd;
    in->n_vocab = hp->n_vocab;
    snprintf(in->cache_types, sizeof in->cache_types, "%s/%s", forward_kv_type_name(e->p.cache_type_k),
             forward_kv_type_name(e->p.cache_type_v));
    in->cache_bytes = forward_kv_cache_bytes(e->f);
    forward_blas_describe(e->m, e->p.blas, in->blas, sizeof in->blas);
    in->recurrent = memory_is_recurrent(&e->mem);
    in->ckpt_unit_bytes = memory_ckpt_unit_bytes(&e->mem);
    in->ckpt_every = e->mem.p.ckpt_every;
    in->ckpt_max = e->mem.p.ckpt_max;
    in->ckpt_max_bytes = e->mem.p.ckpt_max_bytes;
    const gguf_ctx *g = model_get_gguf(e->m);
    for (int64_t i = 0; g && i < gguf_n_tensors(g); i++)
        in->n_params += (uint64_t)gguf_tensor_at(g, i)->n_elements;
    ev.n_ctx = e->n_ctx;
    engine_post(e, &ev);
}

static void reset(engine *e)
{
    memory_truncate(&e->mem, 0);
    e->kv_restored = 0;
    if (e->s)
        sampler_reset_history(e->s);
}

static void handle(engine *e, engine_cmd *c)
{
    switch (c->type) {
    case ENGINE_CMD_LOAD:
        load(e, c->path);
        break;
    case ENGINE_CMD_SUBMIT:
        engine_run_submit(e, c);
        break;
    case ENGINE_CMD_STOP:
    case ENGINE_CMD_STEP:
    case ENGINE_CMD_UNDO:
    case ENGINE_CMD_SET_REMOTE_PROBS: /* the remote backend's */
        break; /* nothing running */
    case ENGINE_CMD_SET_STEP:
        e->step_on = c->flag;
        break;
    case ENGINE_CMD_SET_SPEC:
        spec_engine_set(e, c->name, c->text);
        break;
    case ENGINE_CMD_LENS:
        engine_lens_queue(e, c);
        memset(c, 0, sizeof *c); /* ownership moved */
        engine_lens_run_pending(e, true);
        break;
    case ENGINE_CMD_SET_PARAMS:
        engine_apply_params(e, &c->sampling);
        break;
    case ENGINE_CMD_SET_TEMPLATE:
        engine_set_template_name(e, c->name);
        break;
    case ENGINE_CMD_RESET:
        reset(e);
        break;
    case ENGINE_CMD_SAVE_KV:
        engine_kv_save(e, c->path);
        break;
    case ENGINE_CMD_LOAD_KV:
        engine_kv_load(e, c->path);
        break;
    case ENGINE_CMD_QUIT:
        e->quit = true;
        break;
    }
}

static void *engine_main(void *arg)
{
    engine *e = arg;
    while (!e->quit) {
        engine_cmd c;
        if (e->slots) { /* --parallel: the slots' loop until QUIT */
            engine_slots_main(e);
            continue;
        }
        engine_lens_run_pending(e, true); /* those that waited for the turn to end */
        if (!queue_pop(e->deferred, &c) && !queue_pop_wait(e->cmds, &c, -1))
            continue;
        e->stop = false;
        e->step_ok = e->undo_req = false;
        handle(e, &c);
        engine_cmd_free(&c);
    }
    unload(e);
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_QUIT;
    engine_post(e, &ev);
    return NULL;
}

static void engine_destroy(engine *e)
{
    queue_free(e->cmds, drop_cmd);
    queue_free(e->deferred, drop_cmd);
    queue_free(e->lens_q, drop_cmd);
    queue_free(e->events, drop_event);
    free(e->step_text);
    free(e->model_path);
    free(e->template_name);
    free(e->draft_model);
    free(e->tmpl_force);
    free(e->prompt);
    free(e->gen);
    remote_free(e);
    free(e);
}

engine *engine_start(const engine_params *p, char *err, size_t errlen)
{
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->p = p ? *p : engine_default_params();
    e->model_path = xstrdup(e->p.model_path);
    e->template_name = xstrdup(e->p.template_name);
    e->p.model_path = e->model_path;
    e->p.template_name = e->template_name;
    e->draft_model = xstrdup(e->p.draft_model);
    e->p.draft_model = e->draft_model;
    e->sp = e->p.sampling;
    if (e->sp.n_top > SAMPLER_MAX_TOP)
        e->sp.n_top = SAMPLER_MAX_TOP;
    e->cmds = queue_build(sizeof(engine_cmd), false);
    e->deferred = queue_build(sizeof(engine_cmd), false);
    e->lens_q = queue_build(sizeof(engine_cmd), false);
    e->events = queue_build(sizeof(engine_event), true);
    e->step_on = e->p.step_mode;
    memory_release(&e->mem); /* empty: no positions, no logits */
    if (!e->cmds || !e->deferred || !e->lens_q || !e->events) {
        snprintf(err, errlen, "cannot create the engine queues");
        engine_destroy(e);
        return NULL;
    }
    if (e->template_name && *e->template_name) {
        if (!engine_template_known(e->template_name)) {
            snprintf(err, errlen, "unknown chat template '%s'", e->template_name);
            engine_destroy(e);
            return NULL;
        }
        e->tmpl_force = strdup(e->template_name);
    }
    if (e->p.remote_url && *e->p.remote_url) { /* a client of a server (remote/remote.h) */
        if (!remote_init(e, &e->p, err, errlen)) {
            engine_destroy(e);
            return NULL;
        }
        /* the copies are the backend's own; nothing else keeps the key */
        e->p.remote_url = e->p.remote_api_key = e->p.remote_model = NULL;
    } else if (e->model_path) {
        engine_cmd c = {.type = ENGINE_CMD_LOAD, .path = strdup(e->model_path)};
        queue_push(e->cmds, &c);
    }
    int rc = pthread_create(&e->th, NULL, e->remote ? remote_main : engine_main, e);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the engine thread: %s", strerror(rc));
        engine_destroy(e);
        return NULL;
    }
    return e;
}

void engine_send(engine *e, engine_cmd *cmd)
{
    engine_cmd c = *cmd;
    c.messages = NULL;
    c.n_messages = 0;
    c.tokens = NULL;
    c.n_tokens = 0;
    const bool carries = cmd->type == ENGINE_CMD_SUBMIT || cmd->type == ENGINE_CMD_LENS;
    if (carries && cmd->n_tokens > 0 && cmd->tokens) {
        c.tokens = malloc((size_t)cmd->n_tokens * sizeof *c.tokens);
        if (c.tokens) {
            memcpy(c.tokens, cmd->tokens, (size_t)cmd->n_tokens * sizeof *c.tokens);
            c.n_tokens = cmd->n_tokens;
        }
    }
    if (carries && cmd->n_messages) {
        c.messages = calloc(cmd->n_messages, sizeof *c.messages);
        if (c.messages) {
            for (size_t i = 0; i < cmd->n_messages; i++) {
                c.messages[i].role = strdup(cmd->messages[i].role ? cmd->messages[i].role : "user");
                /* the content's bytes, NULs included (a reply of byte tokens) */
                const char *src = cmd->messages[i].content ? cmd->messages[i].content : "";
                const size_t len = chat_content_len(&(chat_message){NULL, src, cmd->messages[i].content_len});
                char *dup = malloc(len + 1);
                if (dup) {
                    memcpy(dup, src, len);
                    dup[len] = 0;
                }
                c.messages[i].content = dup;
                c.messages[i].content_len = len;
            }
            c.n_messages = cmd->n_messages;
        }
    }
    cmd->path = cmd->name = cmd->text = NULL; /* owned by the queue now */
    if (!queue_push(e->cmds, &c))
        engine_cmd_free(&c);
}

void engine_submit(engine *e, int32_t conv_id, const chat_message *msgs, size_t n)
{
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT, .messages = (chat_message *)msgs, .n_messages = n, .conv_id = conv_id};
    engine_send(e, &c);
}

void engine_stop(engine *e)
{
    engine_cmd c = {.type = ENGINE_CMD_STOP};
    engine_send(e, &c);
}

void engine_set_params(engine *e, const sampler_params *p)
{
    engine_cmd c = {.type = ENGINE_CMD_SET_PARAMS, .sampling = *p};
    engine_send(e, &c);
}

void engine_load(engine *e, const char *path)
{
    engine_cmd c = {.type = ENGINE_CMD_LOAD, .path = xstrdup(path)};
    engine_send(e, &c);
}

void engine_set_template(engine *e, const char *name)
{
    engine_cmd c = {.type = ENGINE_CMD_SET_TEMPLATE, .name = xstrdup(name)};
    engine_send(e, &c);
}

void engine_set_spec(engine *e, const char *name, const char *value)
{
    engine_cmd c = {.type = ENGINE_CMD_SET_SPEC, .name = xstrdup(name), .text = xstrdup(value ? value : "")};
    engine_send(e, &c);
}

void engine_step(engine *e)
{
    engine_cmd c = {.type = ENGINE_CMD_STEP, .token = -1};
    engine_send(e, &c);
}

void engine_step_token(engine *e, int32_t id)
{
    engine_cmd c = {.type = ENGINE_CMD_STEP, .token = id, .flag = true};
    engine_send(e, &c);
}

void engine_step_text(engine *e, const char *text)
{
    engine_cmd c = {.type = ENGINE_CMD_STEP, .token = -1, .text = xstrdup(text ? text : "")};
    engine_send(e, &c);
}

void engine_undo(engine *e)
{
    engine_cmd c = {.type = ENGINE_CMD_UNDO};
    engine_send(e, &c);
}

void engine_set_step(engine *e, bool on)
{
    engine_cmd c = {.type = ENGINE_CMD_SET_STEP, .flag = on};
    engine_send(e, &c);
}

void engine_set_remote_probs(engine *e, bool post)
{
    engine_cmd c = {.type = ENGINE_CMD_SET_REMOTE_PROBS, .flag = post};
    engine_send(e, &c);
}

void engine_save_kv(engine *e, const char *path)
{
    engine_cmd c = {.type = ENGINE_CMD_SAVE_KV, .path = xstrdup(path)};
    engine_send(e, &c);
}

void engine_load_kv(engine *e, const char *path)
{
    engine_cmd c = {.type = ENGINE_CMD_LOAD_KV, .path = xstrdup(path)};
    engine_send(e, &c);
}

void engine_load_kv_seq(engine *e, const char *path, int32_t seq)
{
    engine_cmd c = {.type = ENGINE_CMD_LOAD_KV, .path = xstrdup(path), .index = seq};
    engine_send(e, &c);
}

void engine_reset(engine *e)
{
    engine_cmd c = {.type = ENGINE_CMD_RESET};
    engine_send(e, &c);
}

bool engine_poll(engine *e, engine_event *ev) { return queue_pop(e->events, ev); }

int engine_event_fd(const engine *e) { return queue_fd(e->events); }

void engine_shutdown(engine *e)
{
    if (!e)
        return;
    engine_cmd c = {.type = ENGINE_CMD_QUIT};
    engine_send(e, &c);
    pthread_join(e->th, NULL);
    engine_destroy(e);
}
