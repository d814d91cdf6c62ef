#!/bin/sh
# tokscope serve with llama-server's further samplers against llama-server
# 34af94cd (tests/golden/reference/serve/samplers.* and dry.*, written by
# make_samplers.sh and make_dry.sh): seeded mirostat 2, top_n_sigma and XTC requests and a
# chat with XTC and mirostat give llama-server's tokens and logprobs. These
# fields were once read by nothing (a client's mirostat did nothing); what the
# engine does not run (mirostat 1, dynamic temperature, grammars) is a
# 400 naming the field. The checks: tests/tools/serve_ref.py (python3 stdlib).
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
R=tests/golden/reference/serve
REFCHK="python3 tests/tools/serve_ref.py"
if need "$M/stories260K.gguf" "serve samplers (stories260K)" && need "$M/tiny-spm-q8_0.gguf" "serve samplers (tiny-spm)"; then
    # the slots' path (default --parallel 4) and the one-engine path (--parallel 1)
    for np in 4 1; do
        if serve_start "$OUT/serve_samplers1.$np.log" -m "$M/stories260K.gguf" --parallel $np; then
            for c in mirostat sigma xtc; do
                $REFCHK samplers "$SPORT" /v1/completions $R/samplers.$c.req $R/samplers.$c.json "completions ($c, --parallel $np)"
            done
            # DRY with llama.cpp's default sequence breakers, the client's
            # (dry_sequence_breakers) and one that never occurs: three replies
            # (make_dry.sh). DRY was once a 400, then ran with no breakers;
            # lastn leaves dry_penalty_last_n at llama.cpp's default (64).
            for c in default custom never lastn; do
                $REFCHK samplers "$SPORT" /v1/completions $R/dry.$c.req $R/dry.$c.json "completions (DRY, $c breakers, --parallel $np)"
            done
            serve_stop
        else
            not_ok "serve samplers: the server starts on stories260K (--parallel $np)" "$(tail -n 5 "$OUT/serve_samplers1.$np.log")"
        fi
    done
    if serve_start "$OUT/serve_samplers2.log" -m "$M/tiny-spm-q8_0.gguf"; then
        $REFCHK samplers "$SPORT" /v1/chat/completions $R/samplers.chat.req $R/samplers.chat.json "seeded chat"
        serve_stop
    else
        not_ok "serve samplers: the server starts on tiny-spm" "$(tail -n 5 "$OUT/serve_samplers2.log")"
    fi
fi
