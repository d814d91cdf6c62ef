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
. "$D/lib_ask.sh"
ask stories260K.gguf /v1/completions bias.completion
ask stories260K.gguf /v1/completions bias.array
ask tiny-spm-q8_0.gguf /v1/chat/completions bias.chat
rm -rf "$W"
