#!/bin/sh
# tokscope serve's ignore_eos against llama-server 34af94cd
# (tests/golden/reference/serve/: its replies, the requests, and the checksums
# of the two model copies its make.sh ran on, written again here by
# gguf_mutate.py): the end-of-generation set holds the token the model picks
# first, so a greedy reply with ignore_eos passes over the top token and
# runs to max_tokens, the logprobs still showing the raw distribution.
# The checks themselves: tests/tools/serve_ref.py (python3 stdlib).
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
R=tests/golden/reference/serve
REFCHK="python3 tests/tools/serve_ref.py"
if need "$M/stories260K.gguf" "serve ignore_eos (stories260K)" && need "$M/tiny-spm-q8_0.gguf" "serve ignore_eos (tiny-spm)"; then
    python3 tests/tools/gguf_mutate.py "$M/stories260K.gguf" "$OUT/stories-eos.gguf" \
        --set-u32 tokenizer.ggml.eos_token_id 432 >/dev/null
    python3 tests/tools/gguf_mutate.py "$M/tiny-spm-q8_0.gguf" "$OUT/tiny-eot.gguf" \
        --set-u32 tokenizer.ggml.eot_token_id 18233 >/dev/null
    name="serve ignore_eos: the model copies are the bytes the reference ran on"
    if (cd "$OUT" && md5sum -c --quiet "$OLDPWD/$R/MD5SUMS") >"$OUT/serve_eos_md5.log" 2>&1; then ok "$name"
    else not_ok "$name" "$(head -n 3 "$OUT/serve_eos_md5.log")"; fi
    if serve_start "$OUT/serve_eos1.log" -m "$OUT/stories-eos.gguf"; then
        $REFCHK eos "$SPORT" /v1/completions $R/ignore_eos.completion.req $R/ignore_eos.completion.json completions
        serve_stop
    else
        not_ok "serve ignore_eos: the server starts on stories260K" "$(tail -n 5 "$OUT/serve_eos1.log")"
    fi
    if serve_start "$OUT/serve_eos2.log" -m "$OUT/tiny-eot.gguf"; then
        $REFCHK eos "$SPORT" /v1/chat/completions $R/ignore_eos.chat.req $R/ignore_eos.chat.json "chat completions"
        serve_stop
    else
        not_ok "serve ignore_eos: the server starts on tiny-spm" "$(tail -n 5 "$OUT/serve_eos2.log")"
    fi
fi
