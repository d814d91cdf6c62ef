/* llama.cpp 34af94cd's DRY processed breakers for one model: the steps of
 * src/llama-sampler.cpp's get_overlapping_token_sequences (as
 * llama_sampler_init_dry calls it: the string cut to 40 bytes, tails to 20
 * tokens) over libllama's own llama_detokenize (one token, unparse_special)
 * and llama_tokenize (no BOS, no special tokens), which is what that code
 * calls through vocab.detokenize({id}, true) and vocab.tokenize(s, false,
 * false). Prints one line per (head, tail): "head tail..." (make.sh sorts
 * and dedups them, as the multimap's duplicates change nothing).
 * Usage: dry_breakers_ref MODEL BREAKER... */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m)
        return 1;
    const struct llama_vocab *v = llama_model_get_vocab(m);
    const int nv = llama_vocab_n_tokens(v);
    static char word[65536];
    llama_token tail[256];
    for (int b = 2; b < argc; b++) {
        char str[41];
        snprintf(str, sizeof str, "%s", argv[b]); /* MAX_CHAR_LEN 40 */
        const size_t sl = strlen(str);
        for (llama_token id = 0; id < nv; id++) {
            int wl = llama_detokenize(v, &id, 1, word, (int)sizeof word, false, true);
            if (wl < 0)
                return 1;
            if (memmem(word, (size_t)wl, str, sl)) {
                printf("%d\n", id);
                continue;
            }
            for (size_t pos = 0; pos < (size_t)wl; pos++) {
                if (word[pos] != str[0])
                    continue;
                size_t i;
                int match = 1;
                for (i = 1; i < sl && i + pos < (size_t)wl; ++i)
                    if (word[pos + i] != str[i]) {
                        match = 0;
                        break;
                    }
                if (!match)
                    continue;
                int nt = llama_tokenize(v, str + i, (int)(sl - i), tail, 256, false, false);
                if (nt < 0)
                    return 1;
                if (nt > 20) /* MAX_SEQ_LEN */
                    nt = 20;
                printf("%d", id);
                for (int k = 0; k < nt; k++)
                    printf(" %d", tail[k]);
                printf("\n");
            }
        }
    }
    llama_model_free(m);
    return 0;
}
