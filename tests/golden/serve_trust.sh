#!/bin/sh
# tokscope serve where it once answered otherwise than llama-server 34af94cd
# (docs/serve.md): a model without a chat template rendered with chatml; a
# conversation ending with an assistant message continued (prefill), with
# and without reasoning markers; a reply at a full context (n_ctx - prompt
# tokens: 15 under -c 256 after 241, where the engine alone draws 16);
# max_tokens 0 (one token); token ids as the prompt, mixed with strings, one
# array in an array (once a 400); what llama-server refuses. Held to what
# llama-server's code does (tests/tools/serve_trust.py): the prompt ids the
# engine evaluates (TOKSCOPE_PROMPT_LOG) against the text its
# common_chat_templates_apply_jinja writes (the conversation before the
# message with the generation prompt, the analyzer's reasoning markers, the
# message), built here with `tokscope template` and tokenized. Where
# make_trust.sh has written llama-server's own replies and prompt ids
# (tests/golden/reference/serve/trust.*.json, .ids, .sse), they are
# compared too (tests/tools/serve_ref.py trust).
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
R=tests/golden/reference/serve
TRUST="python3 tests/tools/serve_trust.py"
REFCHK="python3 tests/tools/serve_ref.py"
W=$(mktemp -d "$OUT/serve_trust.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

# ref_check PATH REQ LABEL: against llama-server's reply, when make_trust.sh wrote it
ref_check() {
    if [ -s "$R/$2.json" ]; then
        $REFCHK trust "$SPORT" "$1" "$R/$2.req" "$R/$2.json" "$3"
    else
        echo "skip - serve $3: llama-server's reply (run tests/golden/reference/serve/make_trust.sh)"
    fi
}
# want_text NAME MODEL_ARGS MESSAGES_JSON SUFFIX: the template's text of the
# messages (generation prompt added), then SUFFIX, in $W/NAME.want
want_text() {
    printf '%s' "$3" >"$W/$1.msgs.json"
    "$BIN" template $2 "$W/$1.msgs.json" >"$W/$1.want" && printf '%s' "$4" >>"$W/$1.want"
}
# chat_checks MODEL LABEL NAME...: each trust.NAME.req with its $W/NAME.want;
# llama-server's replies too unless NOREF is set (made on another model)
chat_checks() {
    model=$1 label=$2
    shift 2
    plog=$W/$label.plog
    if TOKSCOPE_PROMPT_LOG=$plog serve_start "$W/$label.log" -m "$model" --blas off; then
        for q in "$@"; do
            $TRUST chat "$SPORT" "$BIN" "$model" "$R/trust.$q.req" "$W/$q.want" "$plog"
            [ -n "${NOREF:-}" ] && continue
            ref_check /v1/chat/completions "trust.$q" "chat trust.$q ($label)"
            if [ -s "$R/trust.$q.ids" ]; then
                name="serve chat trust.$q ($label): llama-server's prompt ids"
                got=$(tail -n 1 "$plog" | sed 's/^engine //')
                if [ "$got" = "$(cat "$R/trust.$q.ids")" ]; then ok "$name"; else not_ok "$name" "$got"; fi
            fi
        done
        serve_stop
    else
        not_ok "serve trust: the server starts on $model" "$(tail -n 5 "$W/$label.log")"
    fi
}

S=$M/stories260K.gguf
if need "$S" "serve trust (stories260K)"; then
    # a 241-token prompt (BOS included) under -c 256
    python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["prompt"])' "$R/trust.ctxfull.req" \
        >"$W/p241.txt"
    # the slots' path (default --parallel 4) and the one-engine path; --blas
    # off: llama-server's bits on every CPU (where OpenBLAS runs an AVX-512
    # core, e.g. Cooperlake on an AMD with AVX512_BF16, auto hands this F32
    # model's 241-token prompt to it: token 3's logprob -0.743057 against
    # llama-server's -0.743437)
    for np in 4 1; do
        if serve_start "$W/ctx.$np.log" -m "$S" -c 256 --parallel $np --blas off; then
            $TRUST ctx "$SPORT" "$BIN" "$S" "$W/p241.txt" 256
            $TRUST max0 "$SPORT" "$BIN" "$S"
            $TRUST ids "$SPORT" "$BIN" "$S"
            ref_check /v1/completions trust.ctxfull "completion at a full context (-c 256; --parallel $np)"
            for c in max0 ids mixed nested; do
                ref_check /v1/completions trust.$c "completion $c (--parallel $np)"
            done
            serve_stop
        else
            not_ok "serve trust: the server starts on stories260K -c 256" "$(tail -n 5 "$W/ctx.$np.log")"
        fi
    done
    # no template: chatml, llama-server's fallback (CHATML_TEMPLATE_SRC, the built-in's text)
    want_text notmpl "--builtin chatml" \
        '[{"role":"system","content":"Be kind."},{"role":"user","content":"Once upon a time"}]' ""
    want_text prefill_notmpl "--builtin chatml" '[{"role":"user","content":"Tell me a story"}]' "Once upon a time"
    # a developer message is a system one (llama-server's workaround, gpt-oss's template aside)
    want_text developer "--builtin chatml" \
        '[{"role":"system","content":"Be kind."},{"role":"user","content":"Once upon a time"}]' ""
    chat_checks "$S" no-template notmpl prefill_notmpl developer
fi
T=$M/tiny-spm-q8_0.gguf
if need "$T" "serve trust (tiny-spm)"; then
    want_text prefill "-m $T" '[{"role":"user","content":"Tell me a story"}]' "Once upon"
    chat_checks "$T" tiny-spm prefill
fi
Q=$M/qwen3-mini-q8_0.gguf
if need "$Q" "serve trust (qwen3-mini)"; then
    # the markers llama.cpp's analyzer finds in Qwen3's template: "<think>\n" and "\n</think>\n\n"
    U='[{"role":"user","content":"What is 2+2?"}]'
    want_text prefill_think "-m $Q" "$U" "<think>
Add them.
</think>

The answer"
    want_text prefill_reasoning "-m $Q" "$U" "<think>
Let me add"
    want_text prefill_plain "-m $Q" "$U" "<think>

</think>

It is"
    # a 151k vocabulary: the softmax's sum, in another order than llama-server's,
    # moves every logprob of a position alike, by about 1e-4 (the tokens are equal)
    REF_TOL=3e-4
    export REF_TOL
    chat_checks "$Q" qwen3 prefill_think prefill_reasoning prefill_plain
    unset REF_TOL
fi

# the templates llama-server continues in code of its own (chat.cpp): Qwen3.5's
# (its Qwen3-Coder code: the same markers as Qwen3's), gpt-oss's and Gemma 4's
# (fixed headers after the conversation without a generation prompt)
F=$TESTDATA/families2026/models
NOREF=1 # the references were made on qwen3-mini
U='[{"role":"user","content":"What is 2+2?"}]'
if need "$F/qwen35-mini-q8_0.gguf" "serve trust (qwen35-mini)"; then
    # its generation prompt opens <think>: the code writes its own header instead
    want_text prefill_think "-m $F/qwen35-mini-q8_0.gguf --no-generation-prompt" "$U" "<|im_start|>assistant
<think>
Add them.
</think>

The answer"
    want_text prefill_reasoning "-m $F/qwen35-mini-q8_0.gguf --no-generation-prompt" "$U" "<|im_start|>assistant
<think>
Let me add"
    chat_checks "$F/qwen35-mini-q8_0.gguf" qwen35 prefill_think prefill_reasoning
fi
if need "$F/gptoss-mini-mxfp4.gguf" "serve trust (gptoss-mini)"; then
    H="<|start|>assistant<|channel|>analysis<|message|>"
    want_text prefill_think "-m $F/gptoss-mini-mxfp4.gguf --no-generation-prompt" "$U" \
        "${H}Add them.<|end|><|start|>assistant<|channel|>final<|message|>The answer"
    want_text prefill_reasoning "-m $F/gptoss-mini-mxfp4.gguf --no-generation-prompt" "$U" "${H}Let me add"
    chat_checks "$F/gptoss-mini-mxfp4.gguf" gptoss prefill_think prefill_reasoning
fi
if need "$F/gemma4-mini-q8_0.gguf" "serve trust (gemma4-mini)"; then
    want_text prefill_think "-m $F/gemma4-mini-q8_0.gguf --no-generation-prompt" "$U" "<|turn>model
<|channel>thought
Add them.<channel|>The answer"
    want_text prefill_plain "-m $F/gemma4-mini-q8_0.gguf --no-generation-prompt" "$U" "<|turn>model
<|channel>thought
<channel|>It is"
    chat_checks "$F/gemma4-mini-q8_0.gguf" gemma4 prefill_think prefill_plain
fi

# what is not one sequence, or llama-server refuses: 400 naming the field
if need "$S" "serve trust refusals"; then
    if serve_start "$W/refuse.log" -m "$S"; then
        name="serve: two prompts, an empty prompt, two arrays, an id outside the vocabulary, two trailing assistant messages: 400"
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
        not_ok "serve trust: the server starts (refusals)" "$(tail -n 5 "$W/refuse.log")"
    fi
fi
