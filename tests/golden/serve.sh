#!/bin/sh
# tokscope serve on loopback (a free port): /health, /v1/models, completions
# and chat, whole and streamed, against `tokscope generate --temp 0` on the
# same prompt (the chat prompt rendered by `tokscope template`, tokenized with
# its special tokens); the logprobs shapes and tokscope's fields; every 4xx
# case in OpenAI's error shape; the API key (401); a full queue (503); a
# client that hangs up; the startup refusals; a clean stop on SIGTERM.
# The checks themselves: tests/tools/serve_api.py (python3 stdlib).
. tests/lib.sh
. tests/lib_serve.sh
M=$TESTDATA/models
API="python3 tests/tools/serve_api.py"

name="serve is in tokscope --help, serve --help names its options, README and man page document it"
"$BIN" --help >"$OUT/serve_help.txt" 2>&1
"$BIN" serve --help >"$OUT/serve_help2.txt" 2>&1
rc=$?
missing=""
grep -q "^  serve -m MODEL" "$OUT/serve_help.txt" || missing="$missing tokscope-help"
for o in --host --port --api-key-file --max-queue --ctx-size --threads; do
    grep -q -- "$o" "$OUT/serve_help2.txt" || missing="$missing serve-help:$o"
done
grep -q "^## tokscope serve" README.md || missing="$missing README"
grep -q "^tokscope serve -m MODEL" README.md || missing="$missing README-commands"
grep -q '^\.BI "serve' man/tokscope.1 || missing="$missing man"
for f in p_raw p_post entropy_raw entropy_post; do
    grep -q "\`$f\`" README.md || missing="$missing README:$f"
done
if [ $rc -eq 0 ] && [ -z "$missing" ]; then ok "$name"; else not_ok "$name" "exit $rc, missing:$missing"; fi

name="serve refuses a non-loopback address without an API key"
"$BIN" serve -m "$M/stories260K.gguf" --host 0.0.0.0 --port 0 >"$OUT/serve_refuse.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "without an API key" "$OUT/serve_refuse.out"; then ok "$name"
else not_ok "$name" "exit $rc" "$(head -c 200 "$OUT/serve_refuse.out")"; fi

name="serve refuses a host name (numeric addresses only) and a key file without a key"
: >"$OUT/serve_empty.key"
"$BIN" serve -m "$M/stories260K.gguf" --host localhost >"$OUT/serve_refuse2.out" 2>&1
rc1=$?
"$BIN" serve -m "$M/stories260K.gguf" --api-key-file "$OUT/serve_empty.key" >>"$OUT/serve_refuse2.out" 2>&1
rc2=$?
if [ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && grep -q "no key" "$OUT/serve_refuse2.out"; then ok "$name"
else not_ok "$name" "exit $rc1 $rc2" "$(head -c 300 "$OUT/serve_refuse2.out")"; fi

S=$M/stories260K.gguf
if need "$S" "serve on stories260K"; then
    PROMPT="Once upon a time"
    "$BIN" generate -m "$S" -p "$PROMPT" --temp 0 -n 24 >"$OUT/serve_want.txt" 2>/dev/null
    if serve_start "$OUT/serve_stories.log" -m "$S"; then
        $API basic "$SPORT" stories260K.gguf "$PROMPT" 24 "$OUT/serve_want.txt"
        $API errors "$SPORT"
        $API hangup "$SPORT"
        name="serve stops the generation of a client that hung up (streamed and whole)"
        if [ "$(grep -c "stopped (client gone)" "$OUT/serve_stories.log")" -eq 2 ]; then ok "$name"
        else not_ok "$name" "$(tail -n 3 "$OUT/serve_stories.log")"; fi
        serve_stop
        name="serve stops cleanly on SIGTERM"
        if [ "$SRC" -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $SRC"; fi
    else
        not_ok "serve starts on stories260K" "$(tail -n 5 "$OUT/serve_stories.log")"
    fi

    # one slot: a second request waits, a third finds the queue full
    if serve_start "$OUT/serve_queue.log" -m "$S" --parallel 1 --max-queue 0; then
        $API queue "$SPORT"
        serve_stop
    else
        not_ok "serve starts with --max-queue 0" "$(tail -n 5 "$OUT/serve_queue.log")"
    fi
fi

T=$M/tiny-spm-q8_0.gguf
if need "$T" "serve chat on tiny-spm (zephyr template)"; then
    printf '%s\n' '[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello there"}]' \
        >"$OUT/serve_msgs.json"
    ids=$("$BIN" template -m "$T" "$OUT/serve_msgs.json" | "$BIN" tokenize -m "$T" --special | tr ' ' ,)
    "$BIN" generate -m "$T" --tokens "$ids" --temp 0 -n 12 >"$OUT/serve_chat_want.txt" 2>/dev/null
    printf 'sk-test-%s\n' "$$" >"$OUT/serve.key"
    if serve_start "$OUT/serve_tiny.log" -m "$T" --api-key-file "$OUT/serve.key"; then
        $API chat "$SPORT" "$OUT/serve_msgs.json" 12 "$OUT/serve_chat_want.txt" "sk-test-$$"
        $API auth "$SPORT" "sk-test-$$"
        name="serve never writes the API key to its log"
        if grep -q "sk-test-$$" "$OUT/serve_tiny.log"; then not_ok "$name"; else ok "$name"; fi
        serve_stop
    else
        not_ok "serve starts on tiny-spm with a key" "$(tail -n 5 "$OUT/serve_tiny.log")"
    fi
fi
