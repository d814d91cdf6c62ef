#!/bin/sh
# One chat prompt for every path: the TUI (the engine's SUBMIT), `generate
# --chat`, `logits --chat` and `serve` build the same prompt token ids for the
# same message, on three templates (a forced built-in, a model's own Jinja
# template, a model without one: raw), the message ending in a newline. serve
# renders a model without a template with chatml (llama-server's fallback):
# it builds the ids the other paths build with --template chatml. Each
# path writes the ids it is about to evaluate to TOKSCOPE_PROMPT_LOG
# (chat/chat_prompt.h); logits' own prompt_tokens line is checked against it.
# (The TUI's compare settings send the same SUBMIT; `tokscope compare` builds
# no prompt: it feeds a golden file's ids.)
. tests/lib.sh
. tests/lib_serve.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "prompt: tmux available" "tmux is a test dependency"; else echo "skip - prompt (no tmux)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh
M=$TESTDATA/models
MSG="What is 2+2?"
NL='
'

# ids WHO LOG: the last ids WHO logged
ids() { sed -n "s/^$1 //p" "$2" | tail -n 1; }

# same_prompt NAME MODEL [--template T]: every path, one message "$MSG\n"
same_prompt() {
    name=$1
    model=$2
    shift 2
    need "$model" "prompt $name: model" || return 0
    log=$TMP/$name.log
    rm -f "$log"
    TOKSCOPE_PROMPT_LOG=$log "$BIN" generate -m "$model" --chat "$@" -p "$MSG$NL" -n 1 --temp 0 >/dev/null 2>&1
    TOKSCOPE_PROMPT_LOG=$log "$BIN" logits -m "$model" --chat "$@" -p "$MSG$NL" -n 0 >"$TMP/$name.logits" 2>/dev/null
    want=$(ids logits "$log")
    own=$(head -n 1 "$TMP/$name.logits" | sed -n 's/.*"prompt_tokens":\[\([0-9,]*\)\].*/\1/p')
    [ -n "$want" ] && [ "$want" = "$own" ]
    result "prompt $name: logits --chat prints the ids it logs" $? "log: $want / printed: $own"
    [ "$(ids generate "$log")" = "$want" ]
    result "prompt $name: generate --chat builds the ids logits --chat does" $? "generate: $(ids generate "$log") / logits: $want"

    WRAP="env TOKSCOPE_PROMPT_LOG=$log" start -m "$model" "$@" -n 1 --temp 0
    wait_for '^ idle ' 20
    T send-keys -l "$MSG"
    keys M-Enter
    keys Enter
    wait_for '^ (generating|prefill)' 2
    wait_idle 30
    [ "$(ids engine "$log")" = "$want" ]
    result "prompt $name: the TUI (the engine's SUBMIT) builds the same ids" $? "tui: $(ids engine "$log") / logits: $want"
    quit_wait

    # serve has no --template: it uses the model's own, and chatml for a model
    # without one (llama-server's fallback; the other paths continue such a
    # model's text raw, unless --template chatml: SERVE_TOO=1 compares it)
    case " $* " in *" --template "*)
        if [ -z "${SERVE_TOO:-}" ]; then
            echo "skip - prompt $name: serve (it has no --template: it uses the model's own)"
            return 0
        fi ;;
    esac
    if [ -n "${NO_SERVE:-}" ]; then
        echo "skip - prompt $name: serve (a model without a template gets chatml there, not raw)"
        return 0
    fi
    rm -f "$log.serve"
    if ! TOKSCOPE_PROMPT_LOG=$log.serve serve_start "$TMP/$name.serve.err" -m "$model"; then
        not_ok "prompt $name: serve starts" "$(tail -n 3 "$TMP/$name.serve.err")"
        return 0
    fi
    python3 - "$SPORT" "$MSG$NL" >"$TMP/$name.serve.out" 2>&1 <<'PY'
import json, sys, urllib.request
body = {"messages": [{"role": "user", "content": sys.argv[2]}], "max_tokens": 1, "temperature": 0}
req = urllib.request.Request("http://127.0.0.1:%s/v1/chat/completions" % sys.argv[1], json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=60))["usage"]["prompt_tokens"])
PY
    serve_stop
    got=$(ids engine "$log.serve")
    n=$(echo "$want" | tr ',' '\n' | grep -c .)
    [ "$got" = "$want" ] && [ "$(cat "$TMP/$name.serve.out")" = "$n" ]
    result "prompt $name: serve builds the same ids (usage.prompt_tokens $n)" $? \
        "serve: $got ($(cat "$TMP/$name.serve.out")) / logits: $want"
}

same_prompt chatml "$M/tiny-spm-q8_0.gguf" --template chatml
same_prompt model-jinja "$M/smollm-mini-q8_0.gguf"
same_prompt qwen35 "$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf"
NO_SERVE=1 same_prompt raw "$M/stories260K.gguf"
SERVE_TOO=1 same_prompt chatml-fallback "$M/stories260K.gguf" --template chatml
exit 0
