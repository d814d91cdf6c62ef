#!/bin/sh
# Writes the reference replies tests/golden/serve_trust.sh compares with:
# llama.cpp 34af94cd's llama-server (greedy, logprobs) on unchanged ../shared
# models, for what tokscope serve once answered otherwise (docs/serve.md):
#   trust.notmpl, trust.prefill_notmpl  stories260K has no chat template:
#                 llama-server renders chat with chatml (CHATML_TEMPLATE_SRC)
#   trust.prefill*  a conversation ending with an assistant message is
#                 continued (prefill): tiny-spm (no reasoning), qwen3-mini
#                 (<think>: content, reasoning alone, content alone)
#   trust.developer  a developer message (llama-server: a system one)
#   trust.ctxfull  a 241-token prompt under -c 256: the reply's length at a
#                 full context (15 tokens)
#   trust.max0    max_tokens 0 (llama-server generates one token)
#   trust.ids, trust.mixed, trust.nested  token ids as the prompt, mixed
#                 with strings, one array in an array
# For each chat: REQ.ids, the prompt llama-server evaluates (/apply-template,
# then /tokenize with BOS as a prompt gets it), and REQ.sse, its stream.
# Run from the repository root: sh tests/golden/reference/serve/make_trust.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
M=${TESTDATA:-../shared}/models
D=tests/golden/reference/serve
W=$(mktemp -d)
port=18561
. "$D/lib_ask.sh"
CTX=256 ask stories260K.gguf /v1/completions trust.ctxfull
for c in max0 ids mixed nested; do
    ask stories260K.gguf /v1/completions trust.$c
done
# MODEL REQ...: the replies, streams and prompt ids of chats on one server
chats() {
    model=$1
    shift
    "$R/llama-server" -m "$M/$model" -c 512 -t 2 -np 1 --port $port >"$W/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q ok && break
        sleep 1
    done
    for q in "$@"; do
        curl -s -o "$D/$q.json" "http://127.0.0.1:$port/v1/chat/completions" -d @"$D/$q.req"
        python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o["stream"]=True; print(json.dumps(o))' "$D/$q.req" |
            curl -sN -o "$D/$q.sse" "http://127.0.0.1:$port/v1/chat/completions" -d @-
        curl -s "http://127.0.0.1:$port/apply-template" -d @"$D/$q.req" |
            python3 -c 'import json,sys; print(json.dumps({"content": json.load(sys.stdin)["prompt"], "add_special": True, "parse_special": True}))' |
            curl -s "http://127.0.0.1:$port/tokenize" -d @- | sed -n 's/.*"tokens":\[\([0-9,]*\)\].*/\1/p' >"$D/$q.ids"
    done
    kill $pid
    wait $pid 2>/dev/null
    port=$((port + 1))
}
chats stories260K.gguf trust.notmpl trust.prefill_notmpl trust.developer
chats tiny-spm-q8_0.gguf trust.prefill
chats qwen3-mini-q8_0.gguf trust.prefill_think trust.prefill_reasoning trust.prefill_plain
rm -rf "$W"
