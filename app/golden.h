/* Golden logits files (JSONL, ../shared/README.md schema): reading them for
 * `compare` and writing the same schema for `logits`.
 *
 *   {"prompt_tokens":[...], "n_vocab":N}
 *   {"pos":P, "token_in":T, "argmax":A, "lse":L, "top":[[id,logit],...]}   one per position,
 *                                    or from the last prompt position on
 *   {"generated":[...], "text":"..."}
 */
#ifndef TOKSCOPE_GOLDEN_H
#define TOKSCOPE_GOLDEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct golden_pos {
    int32_t pos, token_in, argmax;
    float lse;
    int32_t n_top;
    int32_t *top_id;   /* descending by logit */
    float *top_logit;
} golden_pos;

typedef struct golden {
    int32_t *prompt;
    int32_t n_prompt;
    int32_t n_vocab;
    golden_pos *pos;   /* in file order; pos[i].pos == i is checked */
    int32_t n_pos;
    int32_t first;     /* first position with logits: 0, or n_prompt - 1 for a file
                          that lists only the last prompt position (as generation
                          computes it); the entries before it have n_top 0 */
    int32_t *generated;
    int32_t n_generated;
    char *text;        /* NULL when the final line is absent */
} golden;

golden *golden_load(const char *path, char *err, size_t errlen);
void golden_free(golden *g);

/* The teacher-forcing sequence: prompt tokens, then the token_in of every
 * position past the prompt. Malloc'd; *n gets its length. */
int32_t *golden_sequence(const golden *g, int32_t *n);

/* Writers for the same schema. */
void golden_write_header(FILE *f, const int32_t *prompt, int32_t n, int32_t n_vocab);
/* Computes argmax, log-sum-exp and the k largest logits. scratch: n_vocab ints. */
void golden_write_pos(FILE *f, int32_t pos, int32_t token_in, const float *logits, int32_t n_vocab, int32_t k,
                      int32_t *scratch);
/* The same line with extra (",\"key\":value...", may be NULL) before its closing brace. */
void golden_write_pos_extra(FILE *f, int32_t pos, int32_t token_in, const float *logits, int32_t n_vocab, int32_t k,
                            int32_t *scratch, const char *extra);
/* "argmax":A,"lse":L,"top":[[id,logit],...] of one row of logits (the k largest). */
void golden_write_top(FILE *f, const float *logits, int32_t n_vocab, int32_t k, int32_t *scratch);
void golden_write_final(FILE *f, const int32_t *gen, int32_t n, const char *text);

/* Log-sum-exp over n logits (max-shifted, summed in double). */
/* "1,2,3" -> malloc'd ids (non-negative), NULL when malformed or empty. */
int32_t *golden_parse_ids(const char *s, int32_t *n);

double golden_lse(const float *logits, int32_t n);
int32_t golden_argmax(const float *logits, int32_t n);

#endif
