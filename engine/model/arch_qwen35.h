/* What qwen35 and qwen35moe share (arch_qwen35.c): the hybrid layout's load
 * rules and layer recipe, with a dense SiLU FFN or (moe) a mixture of
 * experts with a shared expert after the post-attention norm. */
#ifndef TOKSCOPE_ARCH_QWEN35_H
#define TOKSCOPE_ARCH_QWEN35_H

#include "model/arch.h"

bool qwen35_load(model_loader *ld, model_hparams *hp, model_weights *w, bool moe);
void qwen35_layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il, bool moe);

#endif
