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
. "$D/lib_ask.sh"
ask stories260K.gguf /v1/completions samplers.mirostat
ask stories260K.gguf /v1/completions samplers.sigma
ask stories260K.gguf /v1/completions samplers.xtc
ask tiny-spm-q8_0.gguf /v1/chat/completions samplers.chat
rm -rf "$W"
