/* The engine's memory on disk: a snapshot of what the forward context holds
 * of a conversation (its tokens, the position counter, the KV cache rows
 * [0, n_past) in the cache's own type, the last logits and the prompt's
 * anchor, and for a recurrent model (Qwen3.5) its live state, the calls that
 * evaluated each position and the checkpoints), so that a conversation
 * resumed in a new process continues from it instead of being evaluated
 * again, with the bits of one never interrupted.
 *
 * A snapshot is stamped with the model file's identity and the settings
 * that change the bits (forward_bits, the CPU kernels this build runs); it
 * is restored only when they all match, and ends with a SHA-256 of all its
 * bytes: a truncated or altered file is refused, never trusted. Whether the
 * conversation's tokens match is the memory's usual rule afterwards
 * (memory_reuse): the restored tokens are the cache's, and a prompt that
 * differs from them keeps only the prefix they share.
 *
 * Part of the memory (it reads and restores memory.h's private fields).
 * Engine thread only; no terminal I/O. */
#ifndef TOKSCOPE_KV_SNAPSHOT_H
#define TOKSCOPE_KV_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory/memory.h"
#include "memory/memory_seq.h"
#include "model/forward.h"
#include "model/model.h"

/* What a snapshot must match: the model file and the settings. */
typedef struct kv_stamp {
    uint64_t model_size;    /* bytes of the GGUF file */
    uint8_t model_hash[32]; /* SHA-256 of its header, metadata and tensor table and of the first
                               4 KiB of every tensor's data (kv_stamp_model) */
    forward_bits bits;      /* the forward context's settings that change the bits */
    char isa[96];           /* the SIMD kernels this build was compiled for */
    int32_t n_vocab;
    uint64_t rs_bytes; /* the recurrent state (0: none) */
} kv_stamp;

/* The stamp of model m (its file identity: one pass over its header and
 * the first 4 KiB of each tensor, memory-mapped) and forward context f. */
void kv_stamp_make(kv_stamp *st, const model *m, const forward_ctx *f, const memory *mem);

/* Bytes a snapshot of m takes on disk now. */
uint64_t kv_snapshot_bytes(const memory *m);

/* Writes a snapshot of m to path, atomically (a temporary file beside it,
 * renamed over it; a failure leaves an earlier snapshot whole and no
 * temporary behind). max_bytes > 0: refuse a larger one. Returns 0, or -1
 * with err set (nothing written: no KV cache, over the cap, an I/O error). */
int kv_snapshot_save(const memory *m, const kv_stamp *st, const char *path, uint64_t max_bytes,
                     uint64_t *bytes, char *err, size_t errlen);

/* Restores the snapshot at path into m (n_past and the rest as they were
 * saved). Returns 0; 1 when it does not apply or cannot be trusted (why
 * says so: no such file, another model or settings, truncated, checksum)
 * and m is unchanged; -1 with why set when reading failed half way (m is
 * then emptied: n_past 0). */
int kv_snapshot_load(memory *m, const kv_stamp *st, const char *path, int32_t *n_tokens, char *why,
                     size_t whylen);

/* The same for sequence s of a memory of several (serve --parallel,
 * memory/memory_seq.h): its tokens, its stream's KV rows and (recurrent) its
 * state, in the format above with no logits and no checkpoints; a snapshot
 * of either kind restores into a sequence when its recurrent state (if any)
 * is at its end. A sequence holding nothing is not written (-1). */
int kv_snapshot_save_seq(const memory_seq *ms, int32_t s, const kv_stamp *st, const char *path,
                         uint64_t max_bytes, uint64_t *bytes, char *err, size_t errlen);
int kv_snapshot_load_seq(memory_seq *ms, int32_t s, const kv_stamp *st, const char *path, int32_t *n_tokens,
                         char *why, size_t whylen);

/* The snapshot file that goes with a session file: NAME.json -> NAME.kv
 * (NAME.kv appended when it does not end in .json). False when too long. */
bool kv_snapshot_path(const char *session, char *out, size_t cap);

#endif
