/* The UI's side of the remote backend (engine/remote/remote.h): what the
 * panes need to know when the engine is a server's client. The engine
 * interface is the same; only what has no remote meaning changes here. */
#ifndef TOKSCOPE_UI_REMOTE_UI_H
#define TOKSCOPE_UI_REMOTE_UI_H

#include <stdbool.h>

struct ui_app;

/* True in --remote mode. */
bool remote_ui_on(const struct ui_app *app);
/* In --remote mode: a one-line message that what needs the local engine
 * (step mode, the logit lens, undo by one token, /template) is not there,
 * and true; false (nothing shown) for a local model. */
bool remote_ui_refuse(struct ui_app *app, const char *what);
/* The server ignores the panel's parameter name (info.remote_ignored). */
bool remote_ui_ignored(const struct ui_app *app, const char *name);
/* --remote with one probability per token (the server's logprobs), not
 * tokscope serve's raw and post-sampler pair. */
bool remote_ui_one_prob(const struct ui_app *app);
/* /model [ID]: the server's models, or switch to ID. */
void remote_ui_model_cmd(struct ui_app *app, const char *args);
/* /probs [raw|post]: which numbers llama-server is asked for from the next
 * request on (post_sampling_probs); no argument: says which. */
void remote_ui_probs_cmd(struct ui_app *app, const char *args);

#endif
