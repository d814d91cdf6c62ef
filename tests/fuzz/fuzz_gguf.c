/* Fuzz target: the GGUF reader, then the model loader on top of it (the
 * hyperparameters, each architecture's tensor rules, the tokenizer), then,
 * for a file that loads and is small, a forward pass of three tokens (two
 * batched, one cached) and the tokenizer on a short text. The input is copied
 * to a page-aligned buffer, as a file mapping would be. Anything that loads
 * must be safe to run: the sanitizers see every read. */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "gguf/gguf.h"
#include "model/forward.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static volatile uint64_t sink; /* keeps the reads below from being optimized out */

static void walk_gguf(const gguf_ctx *g)
{
    uint64_t h = gguf_version(g) + gguf_alignment(g) + gguf_data_offset(g);
    for (int64_t i = 0; i < gguf_n_kv(g); i++) {
        gguf_str k = gguf_kv_key(g, i);
        h += k.len ? (uint8_t)k.ptr[k.len - 1] : 0;
        double d;
        gguf_str s;
        int64_t iv;
        uint64_t uv;
        bool neg;
        if (gguf_kv_as_f64(g, i, &d))
            h += (uint64_t)(d == d);
        if (gguf_kv_as_str(g, i, &s) && s.len)
            h += (uint8_t)s.ptr[s.len - 1];
        if (gguf_kv_as_int(g, i, &iv, &uv, &neg))
            h += uv;
        if (gguf_kv_type(g, i) == GGUF_VTYPE_ARRAY) {
            uint64_t n = gguf_arr_len(g, i);
            for (uint64_t j = 0; j < n && j < 64; j++) {
                if (gguf_arr_type(g, i) == GGUF_VTYPE_STRING) {
                    gguf_str e = gguf_arr_str(g, i, j);
                    h += e.len ? (uint8_t)e.ptr[e.len - 1] : 0;
                } else if (gguf_arr_type(g, i) != GGUF_VTYPE_ARRAY) {
                    h += (uint64_t)gguf_arr_i64(g, i, j) + gguf_arr_u64(g, i, j);
                    h += (uint64_t)(gguf_arr_f64(g, i, j) != 0);
                }
            }
        }
        /* lookups by the key's own name find it */
        char name[256];
        if (k.len < sizeof name) {
            memcpy(name, k.ptr, k.len);
            name[k.len] = 0;
            if (!memchr(k.ptr, 0, k.len))
                FUZZ_CHECK(gguf_find_key(g, name) >= 0, "key '%s' not found by name", name);
        }
    }
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        FUZZ_CHECK(gguf_find_tensor(g, t->name) != NULL, "tensor '%s' not found by name", t->name);
        if (t->nbytes) /* the first and last byte of every tensor are inside the input */
            h += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
    }
    sink = h;
}

static void run_model(const model *m)
{
    const tokenizer *tok = model_get_tokenizer(m);
    const model_hparams *hp = model_get_hparams(m);
    if (tok) {
        static const char text[] = "Hello world, <s> \xc3\xa9t\xc3\xa9 123\n";
        int32_t ids[64];
        int32_t n = tokenizer_encode(tok, text, sizeof text - 1, true, true, ids, 64);
        for (int32_t i = 0; i < n && i < 64; i++) {
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_n_vocab(tok), "id %d outside the vocab", ids[i]);
            char piece[64];
            tokenizer_token_to_piece(tok, ids[i], true, piece, sizeof piece);
        }
        char out[256];
        if (n > 0)
            tokenizer_detokenize(tok, ids, n < 64 ? n : 64, true, false, out, sizeof out);
    }
    /* a forward pass only for small models: its cost grows with the file,
     * and the fuzzer's inputs are small anyway */
    if (model_get_weight_bytes(m) > (8u << 20) || hp->n_layer > 64)
        return;
    forward_params fp = forward_default_params();
    fp.n_ctx = 8;
    fp.n_threads = 1;
    char err[512];
    forward_ctx *f = forward_build(m, &fp, err, sizeof err);
    if (!f)
        return;
    float *logits = malloc((size_t)hp->n_vocab * sizeof *logits);
    int32_t toks[3] = {0, 1 % hp->n_vocab, (hp->n_vocab - 1) / 2};
    if (logits && forward_eval(f, toks, 2, 0, logits, false, err, sizeof err) == 0)
        forward_eval(f, toks + 2, 1, 2, logits, false, err, sizeof err);
    free(logits);
    forward_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, size ? size : 1) != 0)
        return 0;
    memcpy(buf, data, size);
    char err[1024];
    gguf_ctx *g = gguf_open_buffer(buf, size, "fuzz.gguf", err, sizeof err);
    if (g) {
        walk_gguf(g);
        gguf_close(g);
    } else
        FUZZ_CHECK(err[0] != 0, "gguf_open_buffer failed without a message");
    model *m = model_load_buffer(buf, size, "fuzz.gguf", err, sizeof err);
    if (m) {
        run_model(m);
        model_free(m);
    } else
        FUZZ_CHECK(err[0] != 0, "model_load_buffer failed without a message");
    free(buf);
    return 0;
}
