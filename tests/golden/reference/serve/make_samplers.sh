#!/bin/sh
# Writes the reference replies tests/golden/serve_samplers.sh compares with:
# llama.cpp 34af94cd's llama-server with its further samplers (samplers.*.req:
# seeded requests with mirostat 2, top_n_sigma, XTC; a chat with XTC and
# mirostat), on unchanged ../shared models (stories260K, tiny-spm-q8_0).
# Run from the repository root: sh tests/golden/reference/serve/make_samplers.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
M=${TESTDATA:-../shared}/models
D=tests/golden/reference/serve
W=$(mktemp -d)
port=18491
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
ask stories260K.gguf /v1/completions samplers.mirostat
ask stories260K.gguf /v1/completions samplers.sigma
ask stories260K.gguf /v1/completions samplers.xtc
ask tiny-spm-q8_0.gguf /v1/chat/completions samplers.chat
rm -rf "$W"
