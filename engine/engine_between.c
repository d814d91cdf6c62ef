/* The commands that arrive while a turn runs (engine_gen.c calls
 * engine_drain between batches and tokens, engine_wait_step in step mode):
 * those that can act at once do, the others end the turn and wait for it. */
#include "engine_internal.h"
#include "spec/spec_engine.h"

#include <stdlib.h>

/* A command that arrived while a turn runs (STEP may come during the
 * evaluation, before the engine waits for it: remembered in step_ok). */
static void handle_between(engine *e, engine_cmd *c)
{
    switch (c->type) {
    case ENGINE_CMD_STOP:
        e->stop = true;
        break;
    case ENGINE_CMD_SET_PARAMS:
        engine_apply_params(e, &c->sampling);
        break;
    case ENGINE_CMD_SET_TEMPLATE:
        engine_set_template_name(e, c->name);
        break;
    case ENGINE_CMD_QUIT:
        e->quit = e->stop = true;
        break;
    case ENGINE_CMD_STEP:
        e->step_ok = true;
        e->step_token = !c->text && c->flag ? c->token : -1;
        free(e->step_text);
        e->step_text = c->text;
        c->text = NULL;
        break;
    case ENGINE_CMD_UNDO:
        e->undo_req = e->step_on; /* only a waiting step takes one */
        break;
    case ENGINE_CMD_SET_STEP:
        e->step_on = c->flag;
        break;
    case ENGINE_CMD_SET_REMOTE_PROBS: /* the remote backend's; nothing to do locally */
        break;
    case ENGINE_CMD_SET_SPEC: /* from the next reply */
        spec_engine_set(e, c->name, c->text);
        break;
    case ENGINE_CMD_LENS:
        engine_lens_queue(e, c);
        return; /* ownership moved */
    case ENGINE_CMD_SAVE_KV: /* a /save during a reply: the snapshot when it ends, the reply goes on */
        if (queue_push(e->deferred, c))
            return; /* ownership moved */
        break;
    default: /* SUBMIT, LOAD, RESET: end this turn, run them after it */
        e->stop = true;
        if (queue_push(e->deferred, c))
            return; /* ownership moved */
        break;
    }
    engine_cmd_free(c);
}

void engine_drain(engine *e)
{
    engine_cmd c;
    while (queue_pop(e->cmds, &c))
        handle_between(e, &c);
    if (!e->mem.evaluating)
        engine_lens_run_pending(e, false);
}

void engine_wait_step(engine *e)
{
    engine_cmd c;
    e->params_changed = false;
    while (!e->stop && !e->step_ok && !e->undo_req && e->step_on && !e->params_changed) {
        if (queue_pop_wait(e->cmds, &c, -1))
            handle_between(e, &c);
        engine_lens_run_pending(e, false);
    }
}
