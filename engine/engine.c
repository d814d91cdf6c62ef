/* Engine thread (placeholder bodies; real implementation follows). */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

engine_params engine_default_params(void)
{
    engine_params p;
    memset(&p, 0, sizeof p);
    p.context_shift = true;
    p.sampling = sampler_default_params();
    return p;
}

engine *engine_start(const engine_params *p, char *err, size_t errlen)
{
    (void)p;
    snprintf(err, errlen, "engine not implemented yet");
    return NULL;
}

void engine_send(engine *e, engine_cmd *cmd)
{
    (void)e;
    free(cmd->path);
    free(cmd->name);
}

void engine_submit(engine *e, int32_t conv_id, const chat_message *msgs, size_t n) { (void)e; (void)conv_id; (void)msgs; (void)n; }
void engine_stop(engine *e) { (void)e; }
void engine_set_params(engine *e, const sampler_params *p) { (void)e; (void)p; }
bool engine_poll(engine *e, engine_event *ev) { (void)e; (void)ev; return false; }
int engine_event_fd(const engine *e) { (void)e; return -1; }
void engine_shutdown(engine *e) { (void)e; }
