#!/bin/sh
# A reply is bytes: a NUL in it (a byte token's, "\u0000" in JSON) reaches
# the prompt whole when the client sends the conversation back. tokscope
# serve's prompt (TOKSCOPE_PROMPT_LOG, what the engine evaluates) against
# llama-server 34af94cd's for the same requests (tests/golden/reference/serve/
# nul.*: a completion, and a chat with the NUL in the assistant's reply,
# rendered by the model's template), and the replies are well-formed.
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
R=tests/golden/reference/serve
# nul_check NAME MODEL PATH KIND
nul_check() {
    rm -f "$OUT/serve_bytes.$4.ids"
    if TOKSCOPE_PROMPT_LOG="$OUT/serve_bytes.$4.ids" serve_start "$OUT/serve_bytes.$4.log" -m "$M/$2"; then
        st=$(curl -s -o "$OUT/serve_bytes.$4.json" -w '%{http_code}' "http://127.0.0.1:$SPORT$3" -d @"$R/nul.$4.req")
        serve_stop
        got=$(sed -n 's/^engine //p' "$OUT/serve_bytes.$4.ids" 2>/dev/null)
        want=$(cat "$R/nul.$4.ids")
        if [ "$st" = 200 ] && [ "$got" = "$want" ] && python3 -m json.tool "$OUT/serve_bytes.$4.json" >/dev/null; then
            ok "$1"
        else
            not_ok "$1" "status $st" "prompt $got" "want   $want"
        fi
    else
        not_ok "$1: the server starts" "$(tail -n 5 "$OUT/serve_bytes.$4.log")"
    fi
}
if need "$M/stories260K.gguf" "serve NUL bytes (stories260K)" && need "$M/tiny-spm-q8_0.gguf" "serve NUL bytes (tiny-spm)"; then
    nul_check "serve: a completion prompt with a NUL is evaluated whole (llama-server's ids)" \
        stories260K.gguf /v1/completions completion
    nul_check "serve: a chat whose assistant reply holds a NUL gets the template's prompt with it (llama-server's ids)" \
        tiny-spm-q8_0.gguf /v1/chat/completions chat
    # the same conversation through `tokscope template` (what generate --tokens is fed with in the tests)
    python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["messages"], open(sys.argv[2], "w"))' \
        "$R/nul.chat.req" "$OUT/serve_bytes.msgs.json"
    got=$("$BIN" template -m "$M/tiny-spm-q8_0.gguf" "$OUT/serve_bytes.msgs.json" |
        "$BIN" tokenize -m "$M/tiny-spm-q8_0.gguf" --special | tr ' ' ,)
    name="template | tokenize: a NUL in a reply reaches the prompt whole (llama-server's ids)"
    if [ "$got" = "$(cat "$R/nul.chat.ids")" ]; then ok "$name"; else not_ok "$name" "$got"; fi
    got=$("$BIN" template --builtin chatml "$OUT/serve_bytes.msgs.json" | od -An -c | tr -d ' \n')
    name="template --builtin: a NUL in a reply is written with the bytes after it"
    case "$got" in *'a\0btail<|im_end|>'*) ok "$name" ;; *) not_ok "$name" "$got" ;; esac
fi
