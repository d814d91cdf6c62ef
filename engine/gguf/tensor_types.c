/* Byte layout traits of ggml's tensor types (see tensor.h). */
#include "gguf/tensor.h"

struct type_traits {
    const char *name;
    int64_t block_size;
    size_t type_size;
    bool supported; /* we have dequantize + dot kernels */
};

/* Sizes as in ggml's block_* structs; types we cannot compute with are listed
 * so that `tokscope info` can still describe files that hold them. */
static const struct type_traits traits[TENSOR_TYPE_COUNT] = {
    [0] = {"F32", 1, 4, true},
    [1] = {"F16", 1, 2, true},
    [2] = {"Q4_0", 32, 18, true},
    [3] = {"Q4_1", 32, 20, true},
    [6] = {"Q5_0", 32, 22, true},
    [7] = {"Q5_1", 32, 24, true},
    [8] = {"Q8_0", 32, 34, true},
    [9] = {"Q8_1", 32, 36, false},
    [10] = {"Q2_K", QK_K, 84, true},
    [11] = {"Q3_K", QK_K, 110, true},
    [12] = {"Q4_K", QK_K, 144, true},
    [13] = {"Q5_K", QK_K, 176, true},
    [14] = {"Q6_K", QK_K, 210, true},
    [15] = {"Q8_K", QK_K, 292, false},
    [16] = {"IQ2_XXS", QK_K, 66, true},
    [17] = {"IQ2_XS", QK_K, 74, true},
    [18] = {"IQ3_XXS", QK_K, 98, true},
    [19] = {"IQ1_S", QK_K, 50, true},
    [20] = {"IQ4_NL", 32, 18, true},
    [21] = {"IQ3_S", QK_K, 110, true},
    [22] = {"IQ2_S", QK_K, 82, true},
    [23] = {"IQ4_XS", QK_K, 136, true},
    [24] = {"I8", 1, 1, false},
    [25] = {"I16", 1, 2, false},
    [26] = {"I32", 1, 4, false},
    [27] = {"I64", 1, 8, false},
    [28] = {"F64", 1, 8, false},
    [29] = {"IQ1_M", QK_K, 56, true},
    [30] = {"BF16", 1, 2, true},
    [34] = {"TQ1_0", QK_K, 54, true},
    [35] = {"TQ2_0", QK_K, 66, true},
    [39] = {"MXFP4", 32, 17, true},
};

static const struct type_traits *get(uint32_t type)
{
    if (type >= TENSOR_TYPE_COUNT || traits[type].name == NULL)
        return NULL;
    return &traits[type];
}

const char *tensor_type_name(uint32_t type)
{
    const struct type_traits *t = get(type);
    return t ? t->name : NULL;
}

bool tensor_type_is_known(uint32_t type) { return get(type) != NULL; }

bool tensor_type_is_supported(uint32_t type)
{
    const struct type_traits *t = get(type);
    return t && t->supported;
}

int64_t tensor_type_block_size(uint32_t type)
{
    const struct type_traits *t = get(type);
    return t ? t->block_size : 0;
}

size_t tensor_type_size(uint32_t type)
{
    const struct type_traits *t = get(type);
    return t ? t->type_size : 0;
}

size_t tensor_row_size(uint32_t type, int64_t n)
{
    const struct type_traits *t = get(type);
    if (!t || n < 0 || n % t->block_size != 0)
        return 0;
    return (size_t)(n / t->block_size) * t->type_size;
}

enum tensor_type tensor_dot_type(enum tensor_type type)
{
    switch (type) {
    case TENSOR_TYPE_Q4_0:
    case TENSOR_TYPE_Q5_0:
    case TENSOR_TYPE_Q8_0:
    case TENSOR_TYPE_MXFP4:
    case TENSOR_TYPE_IQ4_NL:
        return TENSOR_TYPE_Q8_0;
    case TENSOR_TYPE_Q4_1:
    case TENSOR_TYPE_Q5_1:
        return TENSOR_TYPE_Q8_1;
    case TENSOR_TYPE_Q2_K:
    case TENSOR_TYPE_Q3_K:
    case TENSOR_TYPE_Q4_K:
    case TENSOR_TYPE_Q5_K:
    case TENSOR_TYPE_Q6_K:
    case TENSOR_TYPE_IQ4_XS:
    case TENSOR_TYPE_IQ2_XXS:
    case TENSOR_TYPE_IQ2_XS:
    case TENSOR_TYPE_IQ2_S:
    case TENSOR_TYPE_IQ3_XXS:
    case TENSOR_TYPE_IQ3_S:
    case TENSOR_TYPE_IQ1_S:
    case TENSOR_TYPE_IQ1_M:
    case TENSOR_TYPE_TQ1_0:
    case TENSOR_TYPE_TQ2_0:
        return TENSOR_TYPE_Q8_K;
    default:
        return type;
    }
}
