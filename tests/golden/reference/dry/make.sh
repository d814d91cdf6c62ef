#!/bin/sh
# Writes the DRY processed breakers tests/unit/test_sampler.c compares with
# (test_dry_breakers_ref): dry_breakers_ref.c, linked to llama.cpp 34af94cd's
# libllama, for llama.cpp's default breakers and two of several tokens, on
# the unchanged ../shared stories260K (SPM) and smollm-mini-q8_0 (BPE):
# <model>.txt, one "head tail..." line per breaker entry, sorted, no duplicates.
# Run from anywhere: sh tests/golden/reference/dry/make.sh
set -eu
REF=${REF:-/work/ref}
HERE=$(cd "$(dirname "$0")" && pwd)
M=${M:-$HERE/../../../../../shared/models}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
gcc -O1 -Wall -I"$REF/include" -I"$REF/ggml/include" "$HERE/dry_breakers_ref.c" -o "$TMP/ref" \
    -L"$REF/build/bin" -lllama -Wl,-rpath,"$REF/build/bin"
for model in stories260K smollm-mini-q8_0; do
    "$TMP/ref" "$M/$model.gguf" "
" ":" '"' "*" " said" "sat on the mat" 2>/dev/null | LC_ALL=C sort -u >"$HERE/$model.txt"
done
