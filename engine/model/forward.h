/* Forward pass of the llama architecture with a per-layer KV cache.
 *
 * The caller owns the position counter: every call says where its tokens sit
 * (start_pos). The cache rows [0, start_pos) must already hold the keys and
 * values of the tokens before them; rows [start_pos, start_pos+n) are
 * (over)written. Nothing here derives a position from how full the cache is. */
#ifndef TOKSCOPE_FORWARD_H
#define TOKSCOPE_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "gguf/tensor.h"
#include "kernels/blas.h"

typedef struct forward_params {
    uint32_t n_ctx;          /* cache length in positions; 0 = min(n_ctx_train, 4096) */
    uint32_t n_batch;        /* most tokens per internal batch; 0 = 512 */
    int32_t n_threads;       /* 0 = number of online CPUs */
    enum tensor_type kv_type; /* K cache: F16 (default, like the reference), Q8_0 or Q4_0; F32 is
                                 kept as F16, the numbers llama.cpp computes with an F32 cache */
    enum tensor_type v_type;  /* V cache, the same choices; F16 by default */
    enum blas_mode blas;      /* OpenBLAS for large batches (kernels/blas.h); off by default: the
                                 reference's bits */
    uint32_t n_seq;           /* sequences the cache holds (forward_decode), each in a stream of
                                 n_ctx positions of its own; 0 = 1 */
} forward_params;

forward_params forward_default_params(void);

/* KV cache type names as llama.cpp spells them (-ctk/-ctv): "f16", "f32",
 * "q8_0", "q4_0". false for another name. */
bool forward_kv_type_parse(const char *name, enum tensor_type *out);
const char *forward_kv_type_name(enum tensor_type t);

typedef struct forward_ctx forward_ctx;

forward_ctx *forward_build(const model *m, const forward_params *p, char *err, size_t errlen);
void forward_free(forward_ctx *f);
uint32_t forward_n_ctx(const forward_ctx *f);
/* Bytes of the KV cache, all layers. */
size_t forward_kv_cache_bytes(const forward_ctx *f);

/* OpenBLAS: the mode the context runs with, and the products it has run
 * through OpenBLAS so far. */
enum blas_mode forward_blas_mode(const forward_ctx *f);
uint64_t forward_blas_calls(const forward_ctx *f);
/* Of the model's matmul weights, how many (and how many bytes) a batch of
 * n_tok tokens sends through OpenBLAS in mode m; *n_total: all of them. */
int64_t forward_blas_plan(const model *m, enum blas_mode mode, int n_tok, int64_t *n_total, size_t *bytes);
/* One line for people: "auto: F16 from 256 tokens (155 of 155 matmul weights)". */
void forward_blas_describe(const model *m, enum blas_mode mode, char *buf, size_t cap);

/* Evaluates tokens[0..n) at positions start_pos..start_pos+n-1.
 * logits: n_vocab floats per output row. all_logits: one row per token (n rows);
 * otherwise only the last token's row, and, as in llama.cpp, the last layer's
 * FFN runs for that row alone (its one-token kernels set the bits); logits
 * NULL (not with all_logits): no row at all, the cache (and a recurrent
 * state) written as with one, the rest skipped as for a row without
 * logits (a draft model catching up: llama_decode with no output). Returns 0,
 * or -1 with err set (position past n_ctx, token id out of range). */
int forward_eval(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start_pos, float *logits,
                 bool all_logits, char *err, size_t errlen);

/* ---- several sequences in one call (engine/model/forward_seq.c) ------------------
 * The cache holds n_seq streams (forward_params.n_seq), one per sequence, each
 * n_ctx positions from 0: llama.cpp's cache with kv_unified = false (what
 * llama-server -np N runs), so a sequence's attention reads its own stream
 * only. forward_eval and the rest of this header work on stream 0.
 *
 * forward_decode evaluates a batch whose entries each name their token,
 * position and sequence, as llama_decode does with one seq_id per token: it
 * cuts the batch into internal batches the way llama.cpp's split_equal
 * does (a run of increasing sequence ids in order of first appearance,
 * the same number of tokens from each; n_batch tokens at most), which
 * decides every matmul's batch size and each stream's attention kernel, so
 * each row of logits has the reference's bits for that same batch. Within a
 * batch, a sequence's entries must sit at consecutive ascending positions;
 * the caller keeps each sequence's position counter (memory/memory_seq.h)
 * and its stream must hold the rows before its first position. A batch of
 * one sequence gives forward_eval's bits. logits: n_vocab floats for each
 * entry with out set, in batch order. A recurrent model keeps a state per
 * sequence (forward_rs_* are stream 0's); a sequence whose first entry is
 * at position 0 starts from an empty one. Refused (-1, err naming the
 * architecture) on an MTP view (model_mtp_view). forward_progress_fn is
 * called between internal batches with the entries done. */
typedef struct forward_batch {
    int32_t n;
    const int32_t *token, *pos, *seq;
    const int8_t *out; /* logits for this entry; NULL: for the last entry only */
} forward_batch;

int forward_decode(forward_ctx *f, const forward_batch *b, float *logits, char *err, size_t errlen);
uint32_t forward_n_seq(const forward_ctx *f);
/* Whether forward_decode takes more than one sequence on this model (false
 * with why in err: the architecture is named). */
bool forward_multi_seq_ok(const model *m, char *err, size_t errlen);

/* forward_eval for speculative decoding with an MTP block (engine/spec):
 * h_out (may be NULL): n rows of n_embd floats, each token's last hidden
 * state through the output norm (llama.cpp's h_nextn, on every row
 * whatever all_logits says; for architectures whose last block drops the
 * rows without logits at its very end, as qwen35's does). h_in: on a
 * model_mtp_view, each token's input hidden state (n rows of n_embd),
 * required there; NULL elsewhere. */
int forward_eval_h(forward_ctx *f, const int32_t *tokens, const float *h_in, int32_t n, int32_t start_pos,
                   float *logits, bool all_logits, float *h_out, char *err, size_t errlen);

/* llama.cpp's shared KV cells (gemma4-assistant): f's layer l reads the
 * cache of owner's layer src[l] (the cache that layer reads) instead of a
 * cache of its own, and stores nothing; a query at pos then sees the keys
 * before pos only (those the owner evaluated; within the window of n_swa
 * positions up to pos on a sliding layer), one token per evaluation. The
 * contexts must agree on cache length, types and rotation and each pair
 * of layers on kind, head size and KV heads. owner must outlive f. 0, or
 * -1 with err set (nothing changed). */
int forward_share_kv(forward_ctx *f, const forward_ctx *owner, const uint32_t *src, char *err, size_t errlen);

/* ---- recurrent state (engine/model/forward_rs.c) ---------------------------------
 * Recurrent state (Gated DeltaNet layers' conv and delta-rule states). A model
 * without recurrent layers has none: forward_rs_bytes() == 0, the rest are no-ops.
 * The state follows the same explicit position counter as the KV cache: on a
 * recurrent model forward_eval refuses a start_pos other than forward_rs_pos(f),
 * except 0, which resets the state first. */
bool forward_is_recurrent(const forward_ctx *f);
size_t forward_rs_bytes(const forward_ctx *f);            /* bytes of one snapshot, all layers */
int32_t forward_rs_pos(const forward_ctx *f);             /* positions the state has consumed: [0, pos) */
void forward_rs_save(const forward_ctx *f, void *dst);    /* snapshot (forward_rs_bytes bytes) */
void forward_rs_load(forward_ctx *f, const void *src, int32_t pos); /* restore a snapshot taken at pos */
void forward_rs_reset(forward_ctx *f);                    /* empty state, pos 0 */
/* Sequence s's state (forward_decode keeps one per sequence; its position is
 * the caller's counter): saved, or loaded as the state after pos tokens. */
void forward_rs_save_seq(const forward_ctx *f, int32_t s, void *dst);
void forward_rs_load_seq(forward_ctx *f, int32_t s, const void *src, int32_t pos);
/* Keeps the state after each token of every later evaluation of at most n
 * tokens (n 0: none; a longer one keeps none), as llama.cpp's n_rs_seq
 * does for speculative decoding: the recurrence runs token by token, so the
 * state after token i of a batch is the state the first i + 1 tokens alone
 * give. Refused (false) on a context of several sequences (forward_params.n_seq
 * > 1: forward_decode's rows mix them) and when out of memory. */
bool forward_rs_keep(forward_ctx *f, int32_t n);
/* The state after token i of the last evaluation (which kept them): pos
 * its start + i + 1. false when there is no such state. */
bool forward_rs_rollback(forward_ctx *f, int32_t i);

/* ---- the cache for a snapshot on disk (engine/model/forward_kv.c) -------------
 * forward_kv_pieces calls fn on every run of cache bytes that holds positions
 * [0, n) (per layer with a cache of its own, per KV head: its K rows, then its
 * V rows, in the cache's own type), in an order that never changes for a
 * model and settings; fn may read or fill them. Returns the bytes, 0 when fn
 * said stop (fn NULL: only counts). */
typedef bool (*forward_kv_piece_fn)(void *user, void *bytes, size_t len);
size_t forward_kv_pieces(forward_ctx *f, int32_t n, forward_kv_piece_fn fn, void *user);
/* The same over sequence s's stream (forward_decode's; stream 0 is forward_eval's):
 * every stream's pieces have the same sizes and order. 0 for s out of range. */
size_t forward_kv_pieces_seq(forward_ctx *f, int32_t s, int32_t n, forward_kv_piece_fn fn, void *user);
/* What a context computes with that changes the bits of its cache and
 * logits: the cache length (Phi-3 picks RoPE factors by it), the internal
 * batch (how a prompt is cut), the threads (a long single query's attention
 * is split by them), the cache types and their rotation
 * (LLAMA_ATTN_ROT_DISABLE), OpenBLAS's mode. */
typedef struct forward_bits {
    uint32_t n_ctx, n_batch;
    int32_t n_threads, kv_type, v_type, blas, rot_k, rot_v;
} forward_bits;
void forward_bits_settings(const forward_ctx *f, forward_bits *out);

/* ---- logit lens (engine/model/forward_lens.c) -----------------------------------
 * Evaluations beside forward_eval, on the same context and cache; forward_eval
 * itself does no extra work for them. */

/* Evaluates like forward_eval as if the model had only its first n_layer
 * blocks: the output norm and head read the residual after block n_layer,
 * and with !all_logits the rows without logits are dropped in block
 * n_layer. That is what a copy of the file cut to n_layer blocks gives, bit
 * for bit. Cache rows of the later blocks are not touched. */
int forward_eval_cut(forward_ctx *f, int32_t n_layer, const int32_t *tokens, int32_t n, int32_t start_pos,
                     float *logits, bool all_logits, char *err, size_t errlen);

/* After every block l = 1..n_layer of a lens evaluation: the logits the
 * output norm and head give on the residual stream of rows [row0,
 * row0 + n_rows) of the evaluation (n_vocab floats per row). Block
 * n_layer's are the model's own logits. */
typedef void (*forward_lens_fn)(void *user, int32_t layer, int32_t row0, int32_t n_rows, const float *logits);

/* Evaluates tokens[0..n) at start_pos.. like forward_eval with all_logits
 * (logits: n rows, the model's own) and calls fn after every block. Each
 * block's logits are what forward_eval_cut to that many blocks gives with
 * all_logits. keep_cache: the cache rows [start_pos, start_pos + n) are
 * restored afterwards (re-running a position that is already cached
 * changes nothing). */
int forward_eval_lens(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start_pos, float *logits,
                      bool keep_cache, forward_lens_fn fn, void *user, char *err, size_t errlen);

/* Called between internal batches during forward_eval (prefill progress,
 * cancellation). Return false to abort the evaluation (forward_eval returns -1). */
typedef bool (*forward_progress_fn)(void *user, int32_t done, int32_t total);
void forward_set_progress(forward_ctx *f, forward_progress_fn fn, void *user);

/* ---- prompt building (engine/model/forward_prompt.c) ----------------------------
 * How the commands turn user text into tokens, the way llama.cpp's common
 * code does it. */
typedef struct forward_prompt_params {
    const char *text;          /* user prompt ("" = nothing but BOS) */
    bool no_bos;               /* never add BOS */
    bool chat;                 /* render one user turn with the chat template */
    const char *system;        /* optional system message (chat only) */
    const char *template_name; /* force a built-in chat format (chat only) */
} forward_prompt_params;

/* Tokenizes the prompt. Plain: add BOS when the vocab wants it (and !no_bos),
 * special tokens not parsed. Chat: the messages {system?, user} through
 * chat_prompt_tokenize (chat/chat_prompt.h), the function the TUI and serve
 * build their prompts with too. Returns a malloc'd array and its length in
 * *n, or NULL with err set. warn (may be NULL) receives template fallback
 * warnings. */
int32_t *forward_tokenize_prompt(const model *m, const forward_prompt_params *p, int32_t *n, char *warn,
                                 size_t warnlen, char *err, size_t errlen);

#endif
