/* The drafting side of speculative decoding (spec.h): the kinds, the draft
 * model and its own forward context, the counts. */
#include "spec/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/spec_g4assist.h"
#include "spec/spec_hrows.h"
#include "spec/spec_mtp.h"
#include "tokenizer/tokenizer.h"

struct spec {
    spec_params p;
    char *draft_path;
    int32_t n_vocab_tgt;
    spec_stats st;
    /* SPEC_AUTO: the current window's counts and the plain tokens left in
     * a pause */
    bool autogate;
    int32_t w_drafted, w_accepted, pause;
    /* SPEC_DRAFT: the draft model and what its context holds */
    model *dm;
    forward_ctx *df;
    int32_t d_vocab, d_ctx;
    int32_t *dtoks; /* [0, d_past) */
    int32_t d_past;
    float *dlogits;
    void *snap;       /* recurrent draft: its state after [0, snap_pos) */
    int32_t snap_pos; /* -1 = none */
    /* spec_step's buffers for spec_verify: a row of logits per batch
     * position, the target's recurrent state (rs_bytes) */
    float *rows;
    void *rs;
    size_t rs_bytes;
    /* SPEC_MTP: the block, and the target's h_nextn rows of a batch */
    spec_mtp *mtp;
    spec_g4a *g4a; /* SPEC_MTP on gemma4: its assistant file (spec_g4assist.c) */
    float *h;
    int32_t cap_h, n_embd;
};

spec_params spec_default_params(void)
{
    spec_params p = {.type = SPEC_OFF, .draft_max = 3, .ngram_n = SPEC_NGRAM_N, .draft_model = NULL};
    return p;
}

static const struct {
    const char *name;
    enum spec_type t;
} names[] = {
    {"off", SPEC_OFF},  {"ngram", SPEC_NGRAM},        {"draft", SPEC_DRAFT},        {"mtp", SPEC_MTP},
    {"auto", SPEC_AUTO}, {"none", SPEC_OFF},        {"ngram-simple", SPEC_NGRAM}, {"draft-simple", SPEC_DRAFT},
    {"draft-mtp", SPEC_MTP},
};

bool spec_type_parse(const char *name, enum spec_type *out)
{
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) {
            *out = names[i].t;
            return true;
        }
    return false;
}

const char *spec_type_name(enum spec_type t)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].t == t)
            return names[i].name;
    return "?";
}

bool spec_vocab_check(const model *target, const model *draft, char *err, size_t errlen)
{
    const tokenizer *a = model_get_tokenizer(target), *b = model_get_tokenizer(draft);
    if (!a || !b) {
        snprintf(err, errlen, "the %s model has no vocabulary", a ? "draft" : "target");
        return false;
    }
    if (tokenizer_kind(a) != tokenizer_kind(b)) {
        snprintf(err, errlen, "the draft model's tokenizer is %s, the target's %s",
                 tokenizer_kind(b) == TOKENIZER_SPM ? "SentencePiece" : "BPE",
                 tokenizer_kind(a) == TOKENIZER_SPM ? "SentencePiece" : "BPE");
        return false;
    }
    if (tokenizer_add_bos(a) != tokenizer_add_bos(b) ||
        (tokenizer_add_bos(a) && tokenizer_bos(a) != tokenizer_bos(b))) {
        snprintf(err, errlen, "BOS differs: the target %s %d, the draft %s %d",
                 tokenizer_add_bos(a) ? "adds" : "does not add", (int)tokenizer_bos(a),
                 tokenizer_add_bos(b) ? "adds" : "does not add", (int)tokenizer_bos(b));
        return false;
    }
    if (tokenizer_eos(a) != tokenizer_eos(b)) {
        snprintf(err, errlen, "EOS differs: the target's is token %d, the draft's %d", (int)tokenizer_eos(a),
                 (int)tokenizer_eos(b));
        return false;
    }
    const int32_t na = tokenizer_n_vocab(a), nb = tokenizer_n_vocab(b);
    if (na - nb > 128 || nb - na > 128) {
        snprintf(err, errlen, "the target has %d tokens, the draft %d (at most 128 apart)", (int)na, (int)nb);
        return false;
    }
    for (int32_t i = 5; i < (na < nb ? na : nb); i++) {
        size_t la = 0, lb = 0;
        const char *sa = tokenizer_token_str(a, i, &la), *sb = tokenizer_token_str(b, i, &lb);
        if (la != lb || (la && memcmp(sa, sb, la))) {
            snprintf(err, errlen, "token %d differs: the target's is '%.*s', the draft's '%.*s'", (int)i,
                     (int)(la > 40 ? 40 : la), sa ? sa : "", (int)(lb > 40 ? 40 : lb), sb ? sb : "");
            return false;
        }
    }
    return true;
}

spec *spec_create(const spec_params *p, const model *target, const forward_params *fp, char *err,
                  size_t errlen)
{
    spec *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->p = *p;
    s->p.draft_model = NULL;
    s->snap_pos = -1;
    s->n_vocab_tgt = model_get_hparams(target)->n_vocab;
    if (s->p.draft_max < 0)
        s->p.draft_max = 0;
    if (s->p.draft_max > SPEC_DRAFT_MAX)
        s->p.draft_max = SPEC_DRAFT_MAX;
    if (s->p.ngram_n < 1)
        s->p.ngram_n = SPEC_NGRAM_N;
    if (p->type == SPEC_AUTO) {
        const model_hparams *hp = model_get_hparams(target);
        const bool md = p->draft_model && p->draft_model[0];
        s->autogate = true;
        s->p.type = hp->n_layer_nextn > 0 || (hp->arch == MODEL_ARCH_GEMMA4 && md) ? SPEC_MTP
                    : md                                                           ? SPEC_DRAFT
                                                                                   : SPEC_NGRAM;
    }
    const enum spec_type type = s->p.type;
    if (type == SPEC_MTP && model_get_hparams(target)->arch == MODEL_ARCH_GEMMA4) {
        if (!p->draft_model || !p->draft_model[0]) {
            snprintf(err, errlen, "--spec mtp on a Gemma 4 model needs its assistant file (a gemma4-assistant GGUF): "
                     "--draft-model FILE");
            goto fail;
        }
        char e2[700];
        s->g4a = spec_g4a_create(target, p->draft_model, fp, e2, sizeof e2);
        if (!s->g4a) {
            snprintf(err, errlen, "--spec mtp: %s", e2);
            goto fail;
        }
        s->n_embd = (int32_t)model_get_hparams(target)->n_embd;
    } else if (type == SPEC_MTP) {
        char e2[400];
        s->mtp = spec_mtp_create(target, fp, e2, sizeof e2);
        if (!s->mtp) {
            snprintf(err, errlen, "--spec mtp: %s", e2);
            goto fail;
        }
        s->n_embd = (int32_t)model_get_hparams(target)->n_embd;
    }
    if (type == SPEC_DRAFT) {
        if (!p->draft_model || !p->draft_model[0]) {
            snprintf(err, errlen, "--spec draft needs a draft model (--draft-model FILE)");
            goto fail;
        }
        char e2[512];
        s->dm = model_load(p->draft_model, e2, sizeof e2);
        if (!s->dm) {
            snprintf(err, errlen, "draft model: %s", e2);
            goto fail;
        }
        if (!spec_vocab_check(target, s->dm, e2, sizeof e2)) {
            snprintf(err, errlen, "the draft model's vocabulary does not match the target's: %s", e2);
            goto fail;
        }
        s->df = forward_build(s->dm, fp, e2, sizeof e2);
        if (!s->df) {
            snprintf(err, errlen, "draft model: %s", e2);
            goto fail;
        }
        s->d_vocab = model_get_hparams(s->dm)->n_vocab;
        s->d_ctx = (int32_t)forward_n_ctx(s->df);
        s->draft_path = strdup(p->draft_model);
        s->dtoks = malloc((size_t)s->d_ctx * sizeof *s->dtoks);
        s->dlogits = malloc((size_t)s->d_vocab * sizeof *s->dlogits);
        s->snap = forward_is_recurrent(s->df) ? malloc(forward_rs_bytes(s->df)) : NULL;
        if (!s->draft_path || !s->dtoks || !s->dlogits || (forward_is_recurrent(s->df) && !s->snap)) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        s->p.draft_model = s->draft_path;
    }
    return s;
fail:
    spec_free(s);
    return NULL;
}

void spec_free(spec *s)
{
    if (!s)
        return;
    forward_free(s->df);
    model_free(s->dm);
    spec_mtp_free(s->mtp);
    spec_g4a_free(s->g4a);
    free(s->h);
    free(s->draft_path);
    free(s->dtoks);
    free(s->dlogits);
    free(s->snap);
    free(s->rows);
    free(s->rs);
    free(s);
}

const spec_params *spec_get_params(const spec *s)
{
    return &s->p;
}

/* draft-simple: the draft context brought to hold ctx (what it already
 * holds of it kept), then last and each greedy draft evaluated alone. */
static int32_t draft_model(spec *s, const int32_t *ctx, int32_t n, int32_t last, int32_t max, int32_t *out,
                           char *err, size_t errlen)
{
    if (n + max + 1 > s->d_ctx)
        return 0;
    int32_t common = 0;
    while (common < s->d_past && common < n && s->dtoks[common] == ctx[common])
        common++;
    int32_t start = common;
    if (forward_is_recurrent(s->df) && common < s->d_past) { /* a state cannot be cut: from a snapshot */
        if (s->snap_pos >= 0 && s->snap_pos <= common) {
            forward_rs_load(s->df, s->snap, s->snap_pos);
            start = s->snap_pos;
        } else {
            forward_rs_reset(s->df);
            start = 0;
        }
    }
    s->d_past = start;
    memcpy(s->dtoks + start, ctx + start, (size_t)(n - start) * sizeof *ctx);
    /* no logits there: llama.cpp's draft-simple decodes them with no output,
     * and their last row's FFN and head (the Q6_K output matrix, half a
     * draft step) would go unused */
    if (start < n && forward_eval(s->df, ctx + start, n - start, start, NULL, false, err, errlen) != 0)
        return -1;
    s->d_past = n;
    if (s->snap) {
        forward_rs_save(s->df, s->snap);
        s->snap_pos = n;
    }
    int32_t tok = last, nd = 0;
    for (;;) {
        s->dtoks[s->d_past] = tok;
        if (forward_eval(s->df, &tok, 1, s->d_past, s->dlogits, false, err, errlen) != 0)
            return -1;
        s->d_past++;
        tok = spec_argmax(s->dlogits, s->d_vocab);
        if (tok >= s->n_vocab_tgt)
            break;
        out[nd++] = tok;
        if (nd >= max)
            break;
    }
    return nd;
}

int32_t spec_draft(spec *s, const int32_t *ctx, int32_t n, int32_t last, int32_t max, int32_t *out, char *err,
                   size_t errlen)
{
    if (max > s->p.draft_max)
        max = s->p.draft_max;
    if (max <= 0)
        return 0;
    if (s->pause > 0) { /* --spec auto: this token alone */
        s->pause--;
        return 0;
    }
    switch (s->p.type) {
    case SPEC_NGRAM:
        return spec_ngram_draft(ctx, n, last, s->p.ngram_n, SPEC_NGRAM_M, max, out);
    case SPEC_DRAFT:
        return draft_model(s, ctx, n, last, max, out, err, errlen);
    case SPEC_MTP:
        if (s->g4a)
            return spec_g4a_draft(s->g4a, last, n, max, out, err, errlen);
        return spec_mtp_draft(s->mtp, last, n, max, out, err, errlen);
    default:
        return 0;
    }
}

int spec_eval(spec *s, forward_ctx *f, const int32_t *tokens, int32_t n, int32_t pos, float *logits,
              bool all_logits, char *err, size_t errlen)
{
    if (!s || (!s->mtp && !s->g4a))
        return forward_eval(f, tokens, n, pos, logits, all_logits, err, errlen);
    if (n > s->cap_h) {
        float *h = realloc(s->h, (size_t)n * (size_t)s->n_embd * sizeof *h);
        if (!h) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        s->h = h;
        s->cap_h = n;
    }
    if (forward_eval_h(f, tokens, NULL, n, pos, logits, all_logits, s->h, err, errlen) != 0)
        return -1;
    if (s->g4a)
        return spec_g4a_process(s->g4a, f, s->h, n, err, errlen);
    return spec_mtp_process(s->mtp, tokens, n, pos, s->h, err, errlen);
}

static void mtp_accept(spec *s, int32_t n_accepted)
{
    if (s->g4a)
        spec_g4a_accept(s->g4a, n_accepted);
    else
        spec_mtp_accept(s->mtp, n_accepted);
}

/* spec_step with the MTP block, as llama-server runs it: the block sees
 * every batch the target evaluates. A recurrent target that rejected a
 * draft goes back to its state after the last accepted position, which the
 * verification kept (forward_rs_keep: the reference's draft-mtp context
 * has n_rs_seq = --draft-max, a state per position of the batch), so there
 * is no checkpoint and no second evaluation: it drafts again at once from
 * the token drawn in place of the rejected one, and the block goes on from
 * the hidden state of the last accepted position. */
static int32_t step_mtp(spec *s, forward_ctx *f, sampler *smp, int32_t *seq, int32_t n_past, int32_t nd,
                        int32_t *out, char *err, size_t errlen)
{
    if (!forward_rs_keep(f, nd + 1)) {
        if (forward_n_seq(f) > 1)
            snprintf(err, errlen, "--spec mtp keeps the recurrent states of one sequence, not of %u",
                     forward_n_seq(f));
        else
            snprintf(err, errlen, "out of memory for the recurrent states of the verification");
        return -1;
    }
    if (spec_eval(s, f, seq + n_past, nd + 1, n_past, s->rows, true, err, errlen) != 0) {
        forward_rs_keep(f, 0);
        return -1;
    }
    const int32_t n_out = spec_sample_accept(smp, s->rows, s->n_vocab_tgt, seq + n_past + 1, nd, out, NULL);
    const int32_t k = n_out - 1;
    const bool ok = k == nd || forward_rs_rollback(f, k);
    forward_rs_keep(f, 0);
    if (!ok) {
        snprintf(err, errlen, "no recurrent state after position %d of the verification", k);
        return -1;
    }
    mtp_accept(s, k);
    spec_count(s, nd, k);
    return n_out;
}

int32_t spec_step(spec *s, forward_ctx *f, sampler *smp, int32_t *seq, int32_t n_past, int32_t last,
                  int32_t max, int32_t *out, char *err, size_t errlen)
{
    const int32_t nd = spec_draft(s, seq, n_past, last, max, seq + n_past + 1, err, errlen);
    if (nd <= 0)
        return nd;
    const size_t rs_bytes = forward_rs_bytes(f) ? forward_rs_bytes(f) : 1;
    if (!s->rows) { /* at the first drafts: a source that never drafts costs nothing */
        s->rows = malloc((size_t)(s->p.draft_max + 1) * (size_t)s->n_vocab_tgt * sizeof *s->rows);
    }
    if (s->rs_bytes < rs_bytes) {
        free(s->rs);
        s->rs = malloc(rs_bytes);
        s->rs_bytes = s->rs ? rs_bytes : 0;
    }
    if (!s->rows || !s->rs) {
        snprintf(err, errlen, "out of memory for the verification");
        return -1;
    }
    seq[n_past] = last;
    if (s->mtp || s->g4a)
        return step_mtp(s, f, smp, seq, n_past, nd, out, err, errlen);
    int32_t acc = 0;
    const int32_t n =
        spec_verify(f, smp, s->n_vocab_tgt, seq, n_past, nd, s->rows, s->rs, out, NULL, &acc, err, errlen);
    if (n < 0)
        return -1;
    spec_count(s, nd, acc);
    return n;
}

void spec_accept(spec *s, int32_t n_accepted)
{
    if (s->mtp || s->g4a)
        mtp_accept(s, n_accepted);
}

void spec_count(spec *s, int32_t n_drafted, int32_t n_accepted)
{
    s->st.n_drafted += n_drafted;
    s->st.n_accepted += n_accepted;
    s->st.n_verify++;
    if (s->autogate && (s->w_drafted += n_drafted) >= SPEC_AUTO_WINDOW) {
        s->w_accepted += n_accepted;
        if ((int64_t)s->w_accepted * 100 < (int64_t)SPEC_AUTO_MIN_PCT * s->w_drafted)
            s->pause = SPEC_AUTO_PAUSE;
        s->w_drafted = s->w_accepted = 0;
    } else if (s->autogate) {
        s->w_accepted += n_accepted;
    }
}

spec_stats spec_get_stats(const spec *s)
{
    return s->st;
}
