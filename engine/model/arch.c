/* The architectures tokscope runs, by general.architecture name. */
#include "model/arch.h"

#include <string.h>

static const arch_def *const archs[MODEL_ARCH_COUNT] = {
    [MODEL_ARCH_LLAMA] = &arch_llama,   [MODEL_ARCH_QWEN2] = &arch_qwen2, [MODEL_ARCH_QWEN3] = &arch_qwen3,
    [MODEL_ARCH_GEMMA3] = &arch_gemma3, [MODEL_ARCH_PHI3] = &arch_phi3,
    [MODEL_ARCH_QWEN3MOE] = &arch_qwen3moe, [MODEL_ARCH_GPTOSS] = &arch_gptoss,
    [MODEL_ARCH_GEMMA4] = &arch_gemma4, [MODEL_ARCH_QWEN35] = &arch_qwen35, [MODEL_ARCH_QWEN35MOE] = &arch_qwen35moe,
    [MODEL_ARCH_GEMMA4_ASSISTANT] = &arch_gemma4_assistant,
};

const arch_def *arch_find(const char *name)
{
    for (int i = 0; i < MODEL_ARCH_COUNT; i++)
        if (!strcmp(archs[i]->name, name))
            return archs[i];
    return NULL;
}

const arch_def *arch_get(enum model_arch a)
{
    return a < MODEL_ARCH_COUNT ? archs[a] : NULL;
}

const char *model_arch_name(enum model_arch a)
{
    return a < MODEL_ARCH_COUNT ? archs[a]->name : "?";
}

const char *model_arch_list(void)
{
    return "llama qwen2 qwen3 gemma3 phi3 qwen3moe gpt-oss gemma4 qwen35 qwen35moe gemma4-assistant";
}

const char *model_rope_type_name(enum model_rope_type t)
{
    return t == MODEL_ROPE_NEOX ? "neox" : "norm";
}

const char *model_rope_scaling_name(enum model_rope_scaling s)
{
    switch (s) {
    case MODEL_ROPE_SCALING_NONE:
        return "none";
    case MODEL_ROPE_SCALING_LINEAR:
        return "linear";
    case MODEL_ROPE_SCALING_LONGROPE:
        return "longrope";
    case MODEL_ROPE_SCALING_YARN:
        return "yarn";
    }
    return "?";
}
