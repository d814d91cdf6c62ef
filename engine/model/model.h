/* LLaMA-architecture model: hyperparameters and weights read from GGUF
 * (weights stay in the mmap), plus the tokenizer and chat template. */
#ifndef TOKSCOPE_MODEL_H
#define TOKSCOPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

typedef struct model_hparams {
    uint32_t n_ctx_train;
    uint32_t n_embd;
    uint32_t n_layer;
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t n_ff;
    uint32_t n_rot;      /* rope.dimension_count, default n_embd / n_head */
    uint32_t head_dim;   /* n_embd / n_head */
    int32_t n_vocab;
    float rope_freq_base;  /* default 10000 */
    float rope_freq_scale; /* 1 / rope.scaling.factor when linear scaling, else 1 */
    float rms_eps;
    uint32_t file_type;    /* general.file_type, 0 if absent */
} model_hparams;

typedef struct model model;

/* Opens, validates shapes and types of every tensor the forward pass needs
 * (clear error naming the tensor otherwise), builds the tokenizer. */
model *model_load(const char *path, char *err, size_t errlen);
/* Same, but a tokenizer that fails to build is not an error:
 * model_get_tokenizer() then returns NULL (compare needs token ids only). */
model *model_load_weights_only(const char *path, char *err, size_t errlen);
void model_free(model *m);

const model_hparams *model_get_hparams(const model *m);
const tokenizer *model_get_tokenizer(const model *m);
const gguf_ctx *model_get_gguf(const model *m);
const char *model_get_name(const model *m);          /* general.name or file base name */
const char *model_get_chat_template(const model *m); /* NULL when absent */
const char *model_get_arch(const model *m);
size_t model_get_weight_bytes(const model *m);
const char *model_file_type_name(uint32_t file_type); /* "Q4_K_M", ... */

/* The weights the forward pass reads (views into the GGUF mapping). */
typedef struct model_layer {
    const gguf_tensor *attn_norm, *wq, *wk, *wv, *wo;
    const gguf_tensor *ffn_norm, *ffn_gate, *ffn_up, *ffn_down;
} model_layer;

typedef struct model_weights {
    const gguf_tensor *tok_embd, *output_norm;
    const gguf_tensor *output; /* == tok_embd when the embeddings are tied */
    model_layer *layers;       /* n_layer */
} model_weights;

const model_weights *model_get_weights(const model *m);
/* True when any matmul weight is a quantized block type (not F32/F16/BF16). */
bool model_is_quantized(const model *m);

#endif
