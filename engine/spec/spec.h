/* Speculative decoding: cheap guesses ("drafts") of the next tokens,
 * checked by the target model in one batch.
 *
 * The algorithm is llama.cpp's (common/speculative.cpp, common/sampling.cpp's
 * common_sampler_sample_and_accept_n, tools/server's use of them): after a
 * token `last` is sampled, a source proposes drafts d1..dn; the target
 * evaluates [last, d1..dn] as one batch at the explicit positions
 * n_past..n_past+n with a row of logits per position; each row is sampled
 * with the user's chain, in order, and the drafts are accepted while they
 * equal what was sampled. So every position is sampled exactly once, as
 * without drafts: the reply has the target's distribution and a seeded
 * reply draws the same random numbers. What a rejected draft wrote goes: the
 * cache is simply not counted past the accepted tokens; a recurrent state
 * (Qwen3.5's DeltaNet), which cannot be cut, does what llama-server does:
 * with mtp the state kept after the last accepted position (its n_rs_seq
 * rollback states), with draft and ngram the state before the batch and
 * the sampler's restored and the tokens drawn verified again (its
 * checkpoint replay: spec_verify).
 *
 * Sources: ngram (the reference's ngram-simple: the last n tokens looked up
 * earlier in the prompt and reply, what followed them proposed), draft (a
 * second GGUF with the same vocabulary, drafting greedily, as the
 * reference's draft-simple does with p_min 0) and mtp (the target's own
 * Qwen3.5 MTP block, the reference's draft-mtp: spec_mtp.c; it sees every
 * batch the target evaluates, so those go through spec_eval). */
#ifndef TOKSCOPE_SPEC_H
#define TOKSCOPE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"
#include "model/model.h"
#include "sampler/sampler.h"

enum spec_type { SPEC_OFF, SPEC_NGRAM, SPEC_DRAFT, SPEC_MTP, SPEC_AUTO };

#define SPEC_DRAFT_MAX 64 /* most drafts per verification */
#define SPEC_NGRAM_N 12   /* the reference's --spec-ngram-size-n */
#define SPEC_NGRAM_M 48   /* ... and -m: the drafts a match may give before --draft-max cuts them */
/* SPEC_AUTO (tokscope's own, not the reference's): drafting pauses for
 * SPEC_AUTO_PAUSE tokens whenever the last SPEC_AUTO_WINDOW drafts were
 * accepted less than SPEC_AUTO_MIN_PCT % of the time: the break-even
 * measured for a draft model of ~1/7 the target's cost with 3 drafts
 * (docs/speculative.md). Pausing changes which positions are verified in
 * batches, never what is sampled there. */
#define SPEC_AUTO_MIN_PCT 40
#define SPEC_AUTO_WINDOW 24
#define SPEC_AUTO_PAUSE 32

typedef struct spec_params {
    enum spec_type type;
    int32_t draft_max;       /* 3: drafts per verification (--draft-max) */
    int32_t ngram_n;         /* 12: tokens an n-gram match needs */
    const char *draft_model; /* SPEC_DRAFT: the draft GGUF */
} spec_params;

spec_params spec_default_params(void);
/* "off" "ngram" "draft" "mtp" "auto" (also "none", "ngram-simple",
 * "draft-simple", "draft-mtp" as the reference spells them). auto is the
 * target's MTP block where it has one (Gemma 4: with its assistant file),
 * else the draft model where one is given, else ngram; spec_create
 * resolves it (spec_get_params then names the kind) and drafting pauses
 * while it does not pay (SPEC_AUTO_MIN_PCT). */
bool spec_type_parse(const char *name, enum spec_type *out);
const char *spec_type_name(enum spec_type t);

typedef struct spec spec;

/* The drafting side for a target model. SPEC_DRAFT loads the draft model
 * (its forward context built with fp, n_ctx included) and refuses one
 * whose vocabulary differs, naming the difference. SPEC_MTP builds the
 * target's MTP block (a context of its own, fp's n_ctx) and refuses a
 * model without one. NULL with err set. */
spec *spec_create(const spec_params *p, const model *target, const forward_params *fp, char *err,
                  size_t errlen);
void spec_free(spec *s);
const spec_params *spec_get_params(const spec *s);

/* forward_eval of the target for a caller that drafts with s (s may be
 * NULL): with SPEC_MTP every batch the target evaluates (the prompt, single
 * tokens) must come through here, for the MTP block to see it. */
int spec_eval(spec *s, forward_ctx *f, const int32_t *tokens, int32_t n, int32_t pos, float *logits,
              bool all_logits, char *err, size_t errlen);

/* Drafts for the sequence ctx[0, n) followed by last (sampled, not
 * evaluated yet): at most max tokens into out. Returns how many, or -1 with
 * err set (the draft model failed). */
int32_t spec_draft(spec *s, const int32_t *ctx, int32_t n, int32_t last, int32_t max, int32_t *out, char *err,
                   size_t errlen);

/* The drafts a draft model would not make: the reference's checks
 * (tokenizer kind, BOS/EOS, size within 128, every token's text from id 5
 * on). false with err naming the first mismatch. */
bool spec_vocab_check(const model *target, const model *draft, char *err, size_t errlen);

/* The n-gram source alone (spec_ngram.c): common_ngram_simple_draft with
 * key size n_key and at most m_max drafts before the cut to max. */
int32_t spec_ngram_draft(const int32_t *ctx, int32_t n, int32_t last, int32_t n_key, int32_t m_max,
                         int32_t max, int32_t *out);

/* ---- verification (spec_verify.c) ----
 * common_sampler_sample_and_accept_n: rows[i] (n_vocab floats each) is the
 * distribution after the batch's token i; each is sampled with smp
 * (sampler_accept after each draw) until a draw differs from draft[i] or the
 * last row is sampled. out (n_draft + 1) gets the tokens drawn, steps (may be
 * NULL) their reports. Returns how many: the drafts accepted + 1. */
int32_t spec_sample_accept(sampler *smp, const float *rows, int32_t n_vocab, const int32_t *draft,
                           int32_t n_draft, int32_t *out, sampler_step *steps);

/* On a bare forward context (generate):
 * seq[0, n_past) is what f holds; seq[n_past] = last, seq[n_past+1 ..
 * n_past+n_draft] the drafts. Evaluates them as one batch (rows: (n_draft+1)
 * x n_vocab floats), samples each row with smp (sampler_accept after each
 * draw) until a draw differs from its draft: out gets the k + 1 tokens
 * drawn (the k accepted drafts, then the target's own token). A KV cache
 * then holds seq[0, n_past + k + 1). A recurrent state that went past a
 * rejected draft does what llama-server 34af94cd does without rollback
 * states (n_rs_seq 0: draft and ngram): the state at n_past (saved in rs,
 * forward_rs_bytes) and the sampler's (sampler_mark) restored, the k + 1
 * tokens drawn become the drafts of a new batch at n_past (written to seq)
 * and are drawn again, with one more after them, until a batch accepts
 * all its drafts. f holds seq[0, n_past + n) for the n tokens returned
 * (the last one not evaluated); steps (may be NULL) their reports;
 * *n_accepted (may be NULL) the drafts accepted as the server counts them
 * (a replayed position drawn in the first pass is none). Returns n, or -1
 * with err set. */
int32_t spec_verify(forward_ctx *f, sampler *smp, int32_t n_vocab, int32_t *seq, int32_t n_past, int32_t n_draft,
                    float *rows, void *rs, int32_t *out, sampler_step *steps, int32_t *n_accepted, char *err,
                    size_t errlen);

/* One step of generation on a bare forward context (generate's and bench's
 * loop): f holds seq[0, n_past) and last was sampled (sampler_accept done)
 * but not evaluated. Drafts at most max tokens after it (spec_draft, into
 * seq + n_past + 1) and, when there are any, sets seq[n_past] = last,
 * verifies them (spec_verify, with buffers s keeps for f; SPEC_MTP keeps
 * the recurrent state after each position instead, as the reference's
 * draft-mtp context does, and never replays) and counts them (spec_count):
 * out gets the n tokens drawn and f holds seq[0, n_past + n); returns n.
 * Returns 0 when there were no drafts (nothing evaluated: the caller
 * evaluates last alone, with spec_eval), -1 with err set. */
int32_t spec_step(spec *s, forward_ctx *f, sampler *smp, int32_t *seq, int32_t n_past, int32_t last,
                  int32_t max, int32_t *out, char *err, size_t errlen);

/* After a verification the caller did itself (spec_eval with all rows,
 * then spec_sample_accept): its n_accepted drafts accepted, for the MTP
 * block to go on from the hidden state of the last accepted position
 * (common_speculative_accept). A no-op for the other kinds. */
void spec_accept(spec *s, int32_t n_accepted);

/* Counts since the start, as llama-server logs them (draft acceptance). */
typedef struct spec_stats {
    int64_t n_drafted, n_accepted, n_verify;
} spec_stats;
void spec_count(spec *s, int32_t n_drafted, int32_t n_accepted);
spec_stats spec_get_stats(const spec *s);

#endif
