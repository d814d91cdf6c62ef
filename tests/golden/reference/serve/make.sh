#!/bin/sh
# Writes the reference replies tests/golden/serve_eos.sh compares with:
# llama.cpp 34af94cd's llama-server, greedy, with ignore_eos, on two copies
# of ../shared models whose end-of-generation set holds the token the model
# picks first (gguf_mutate.py: stories260K with eos_token_id 432 ",", the
# first token after "Once upon a time"; tiny-spm-q8_0 with eot_token_id
# 18233, the first token of its chat reply; eot rather than eos, which the
# zephyr template writes into the prompt). So the reply without ignore_eos
# ends at once, and with it the chain must pass over the token the raw
# distribution puts first. MD5SUMS: the copies' bytes, which the suite
# writes again and checks. The requests: ignore_eos.*.req.
# nul.*.ids: the prompt llama-server evaluates for nul.*.req, a completion
# and a chat whose assistant reply holds a NUL ("\u0000", a byte token's):
# /tokenize of the prompt (the chat's from /apply-template), as
# tests/golden/serve_bytes.sh holds tokscope's prompt log to.
# Run from the repository root: sh tests/golden/reference/serve/make.sh
# (REF=/work/ref/build/bin by default, TESTDATA=../shared).
set -u
R=${REF:-/work/ref/build/bin}
M=${TESTDATA:-../shared}/models
D=tests/golden/reference/serve
W=$(mktemp -d)
python3 tests/tools/gguf_mutate.py "$M/stories260K.gguf" "$W/stories-eos.gguf" \
    --set-u32 tokenizer.ggml.eos_token_id 432 || exit 1
python3 tests/tools/gguf_mutate.py "$M/tiny-spm-q8_0.gguf" "$W/tiny-eot.gguf" \
    --set-u32 tokenizer.ggml.eot_token_id 18233 || exit 1
(cd "$W" && md5sum stories-eos.gguf tiny-eot.gguf) >"$D/MD5SUMS"
port=18461
. "$D/lib_ask.sh"
ask "$W/stories-eos.gguf" /v1/completions ignore_eos.completion
ask "$W/tiny-eot.gguf" /v1/chat/completions ignore_eos.chat
ids() { sed -n 's/.*"tokens":\[\([0-9,]*\)\].*/\1/p' | tr -d '\n'; echo; }
serve_start "$M/stories260K.gguf"
python3 -c 'import json,sys; print(json.dumps({"content": json.load(open(sys.argv[1]))["prompt"], "add_special": True, "parse_special": True}))' \
    "$D/nul.completion.req" | curl -s "http://127.0.0.1:$port/tokenize" -d @- | ids >"$D/nul.completion.ids"
serve_stop
serve_start "$M/tiny-spm-q8_0.gguf"
curl -s "http://127.0.0.1:$port/apply-template" -d @"$D/nul.chat.req" |
    python3 -c 'import json,sys; print(json.dumps({"content": json.load(sys.stdin)["prompt"], "add_special": True, "parse_special": True}))' |
    curl -s "http://127.0.0.1:$port/tokenize" -d @- | ids >"$D/nul.chat.ids"
serve_stop
rm -rf "$W"
cat "$D/MD5SUMS"
