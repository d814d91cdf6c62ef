#!/bin/sh
# tokscope serve's logit_bias against llama-server 34af94cd
# (tests/golden/reference/serve/bias.*, written by make_bias.sh): an object
# of ids, texts, false and a key given twice; an array of [token, bias] with
# a token twice; a seeded chat. Each bias is added to its token's logit in
# llama-server's order ahead of the chain; the logprobs stay the raw ones.
# The checks themselves: tests/tools/serve_ref.py (python3 stdlib).
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
R=tests/golden/reference/serve
REFCHK="python3 tests/tools/serve_ref.py"
if need "$M/stories260K.gguf" "serve logit_bias (stories260K)" && need "$M/tiny-spm-q8_0.gguf" "serve logit_bias (tiny-spm)"; then
    if serve_start "$OUT/serve_bias1.log" -m "$M/stories260K.gguf"; then
        $REFCHK bias "$SPORT" /v1/completions $R/bias.completion.req $R/bias.completion.json "completions (object)"
        $REFCHK bias "$SPORT" /v1/completions $R/bias.array.req $R/bias.array.json "completions (array)"
        serve_stop
    else
        not_ok "serve logit_bias: the server starts on stories260K" "$(tail -n 5 "$OUT/serve_bias1.log")"
    fi
    if serve_start "$OUT/serve_bias2.log" -m "$M/tiny-spm-q8_0.gguf"; then
        $REFCHK bias "$SPORT" /v1/chat/completions $R/bias.chat.req $R/bias.chat.json "seeded chat"
        serve_stop
    else
        not_ok "serve logit_bias: the server starts on tiny-spm" "$(tail -n 5 "$OUT/serve_bias2.log")"
    fi
fi
