// The Gemma 4 assistant's draft logits from llama.cpp 34af94cd's own code
// (tests/golden/reference/mtp/make_gemma4.sh builds and runs it): the target
// decodes the prompt (one batch), the assistant's context shares its cache
// (ctx_other, LLAMA_CONTEXT_TYPE_MTP) and decodes the sampled token with the
// target's h_nextn of the last prompt token, then each draft with its own,
// all at the position after the prompt, as common_speculative's draft-mtp
// does with shared memory.
//   g4assist_logits TARGET ASSISTANT STEPS TOKEN...
// prints "prompt N TOKEN...", "last T" and per step "step I draft D" and the
// logits' bits in hex.
#include "llama.h"
#include "llama-ext.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
static int argmax(const float *x, int n) { int b = 0; for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i; return b; }
int main(int argc, char **argv) {
    if (argc < 5) return 2;
    llama_backend_init();
    auto mp = llama_model_default_params();
    llama_model *mt = llama_model_load_from_file(argv[1], mp);
    llama_model *ma = llama_model_load_from_file(argv[2], mp);
    int steps = atoi(argv[3]);
    std::vector<llama_token> toks;
    for (int i = 4; i < argc; i++) toks.push_back(atoi(argv[i]));
    auto cp = llama_context_default_params();
    cp.n_ctx = 4096; cp.n_threads = 2; cp.n_threads_batch = 2;
    llama_context *ct = llama_init_from_model(mt, cp);
    auto cpd = cp; cpd.ctx_type = LLAMA_CONTEXT_TYPE_MTP; cpd.ctx_other = ct; cpd.n_rs_seq = 0;
    llama_context *cd = llama_init_from_model(ma, cpd);
    if (!ct || !cd) { fprintf(stderr, "ctx\n"); return 1; }
    llama_set_embeddings_nextn(ct, true, false);
    llama_set_embeddings_nextn(cd, true, true);
    const int n = (int)toks.size();
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(mt));
    const int ne = llama_model_n_embd(mt);
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) { b.token[i] = toks[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = i == n - 1; }
    b.n_tokens = n;
    if (llama_decode(ct, b)) return 1;
    int last = argmax(llama_get_logits_ith(ct, n - 1), nv);
    std::vector<float> h(llama_get_embeddings_nextn_ith(ct, n - 1), llama_get_embeddings_nextn_ith(ct, n - 1) + ne);
    llama_batch bd = llama_batch_init(1, ne, 1);
    bd.token = (llama_token *)malloc(sizeof(llama_token));
    int tok = last;
    printf("prompt %d", n);
    for (int i = 0; i < n; i++) printf(" %d", toks[i]);
    printf("\nlast %d\n", last);
    for (int s = 0; s < steps; s++) {
        bd.token[0] = tok; bd.pos[0] = n; bd.n_seq_id[0] = 1; bd.seq_id[0][0] = 0; bd.logits[0] = 1; bd.n_tokens = 1;
        memcpy(bd.embd, h.data(), ne * sizeof(float));
        if (llama_decode(cd, bd)) { fprintf(stderr, "decode dft\n"); return 1; }
        const float *lg = llama_get_logits_ith(cd, 0);
        int d = argmax(lg, nv);
        printf("step %d draft %d", s, d);
        for (int i = 0; i < nv; i++) { unsigned u; memcpy(&u, &lg[i], 4); printf(" %08x", u); }
        printf("\n");
        const float *hn = llama_get_embeddings_nextn_ith(cd, 0);
        h.assign(hn, hn + ne);
        tok = d;
    }
    return 0;
}
