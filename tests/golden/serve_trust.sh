#!/bin/sh
# tokscope serve where it once answered otherwise than llama-server 34af94cd
# (docs/serve.md), against its replies, streams and prompt ids
# (tests/golden/reference/serve/trust.*, written by make_trust.sh):
# a model without a chat template rendered with chatml; a conversation
# ending with an assistant message continued (prefill), with and without a
# <think> template; the reply's length at a full context (15 tokens, where
# the engine alone draws 16); max_tokens 0 (one token); token ids as the
# prompt, mixed with strings, and one array in an array (once a 400). The
# prompt ids: what the engine evaluates (TOKSCOPE_PROMPT_LOG) against
# llama-server's /apply-template + /tokenize. The replies:
# tests/tools/serve_ref.py trust (python3 stdlib).
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
R=tests/golden/reference/serve
REFCHK="python3 tests/tools/serve_ref.py"

# ids_check NAME REQ: the prompt the engine evaluated last equals the reference's
ids_check() {
    got=$(sed -n 's/^engine //p' "$PLOG" 2>/dev/null | tail -n 1)
    want=$(cat "$R/$2.ids")
    if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "$1"; else not_ok "$1" "prompt $got" "want   $want"; fi
}

# chat_check MODEL LABEL REQ...: each chat's reply, stream and prompt ids
chat_check() {
    model=$1 label=$2
    shift 2
    PLOG=$OUT/serve_trust.$label.plog
    rm -f "$PLOG"
    if TOKSCOPE_PROMPT_LOG=$PLOG serve_start "$OUT/serve_trust.$label.log" -m "$M/$model"; then
        for q in "$@"; do
            $REFCHK trust "$SPORT" /v1/chat/completions $R/$q.req $R/$q.json "chat $q ($label)"
            # the stream's request was the last one: the same prompt
            ids_check "serve chat $q ($label): the prompt is llama-server's (ids)" "$q"
        done
        serve_stop
    else
        not_ok "serve trust: the server starts on $model" "$(tail -n 5 "$OUT/serve_trust.$label.log")"
    fi
}

if need "$M/stories260K.gguf" "serve trust (stories260K)"; then
    # the slots' path (default --parallel 4) and the one-engine path
    for np in 4 1; do
        if serve_start "$OUT/serve_trust.ctx.$np.log" -m "$M/stories260K.gguf" -c 256 --parallel $np; then
            $REFCHK trust "$SPORT" /v1/completions $R/trust.ctxfull.req $R/trust.ctxfull.json \
                "completion at a full context (-c 256, 241-token prompt; --parallel $np)"
            for c in max0 ids mixed nested; do
                $REFCHK trust "$SPORT" /v1/completions $R/trust.$c.req $R/trust.$c.json "completion $c (--parallel $np)"
            done
            serve_stop
        else
            not_ok "serve trust: the server starts on stories260K -c 256" "$(tail -n 5 "$OUT/serve_trust.ctx.$np.log")"
        fi
    done
    chat_check stories260K.gguf no-template trust.notmpl trust.prefill_notmpl
fi
if need "$M/tiny-spm-q8_0.gguf" "serve trust (tiny-spm)"; then
    chat_check tiny-spm-q8_0.gguf tiny-spm trust.prefill
fi
if need "$M/qwen3-mini-q8_0.gguf" "serve trust (qwen3-mini)"; then
    chat_check qwen3-mini-q8_0.gguf qwen3 trust.prefill_think trust.prefill_reasoning trust.prefill_plain
fi

# what llama-server takes that is not one sequence, or refuses: 400 naming the field
if need "$M/stories260K.gguf" "serve trust refusals"; then
    if serve_start "$OUT/serve_trust.refuse.log" -m "$M/stories260K.gguf"; then
        name="serve: two prompts, an empty prompt, an id outside the vocabulary, two trailing assistant messages: 400"
        bad=""
        for b in '{"prompt":["a","b"]}' '{"prompt":[]}' '{"prompt":[[1],[2]]}' '{"prompt":[1,99999]}' \
            '{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"assistant","content":"c"}]}'; do
            case $b in *messages*) p=/v1/chat/completions want=messages ;; *) p=/v1/completions want=prompt ;; esac
            got=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$SPORT$p" -d "$b")
            case $got in *'"param":"'$want'"'*' 400') ;; *) bad="$bad [$b -> $got]" ;; esac
        done
        if [ -z "$bad" ]; then ok "$name"; else not_ok "$name" "$bad"; fi
        serve_stop
    else
        not_ok "serve trust: the server starts (refusals)" "$(tail -n 5 "$OUT/serve_trust.refuse.log")"
    fi
fi
