#!/bin/sh
# Writes the reference replies tests/golden/serve_bias.sh compares with:
# llama.cpp 34af94cd's llama-server with logit_bias (bias.*.req: an object
# with ids, texts, false and a key given twice; an array of [token, bias]
# pairs with a token twice, a text and a digit string; a seeded chat), on
# unchanged ../shared models (stories260K, tiny-spm-q8_0).
# Run from the repository root: sh tests/golden/reference/serve/make_bias.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
M=${TESTDATA:-../shared}/models
D=tests/golden/reference/serve
W=$(mktemp -d)
port=18481
ask() { # MODEL PATH REQ
    "$R/llama-server" -m "$M/$1" -c 512 -t 2 -np 1 --port $port >"$W/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q ok && break
        sleep 1
    done
    curl -s -o "$D/$3.json" "http://127.0.0.1:$port$2" -d @"$D/$3.req"
    kill $pid
    wait $pid 2>/dev/null
    port=$((port + 1))
}
ask stories260K.gguf /v1/completions bias.completion
ask stories260K.gguf /v1/completions bias.array
ask tiny-spm-q8_0.gguf /v1/chat/completions bias.chat
rm -rf "$W"
