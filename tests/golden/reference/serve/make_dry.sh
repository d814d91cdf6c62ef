#!/bin/sh
# Writes the reference replies tests/golden/serve_samplers.sh compares DRY
# with: llama.cpp 34af94cd's llama-server, seeded /v1/completions on the
# unchanged ../shared stories260K with the DRY penalty on (dry.*.req): its
# default sequence breakers ("\n", ":", "\"", "*"), the client's own
# (dry_sequence_breakers, one of them several tokens long) and one that never
# occurs, over a prompt whose repeats the breakers cut; dry.lastn leaves
# dry_penalty_last_n at its default (64) over 80 tokens (its window moves).
# Run from the repository root: sh tests/golden/reference/serve/make_dry.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
M=${TESTDATA:-../shared}/models
D=tests/golden/reference/serve
W=$(mktemp -d)
port=18531
. "$D/lib_ask.sh"
for c in default custom never lastn; do
    ask stories260K.gguf /v1/completions dry.$c
done
rm -rf "$W"
