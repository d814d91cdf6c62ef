#!/bin/sh
# The issue's final check of the remote backend: the TUI in --remote mode
# against `tokscope serve` on the same model and seed sees the same tokens
# and the same top-k (token, logit, raw and post-sampler probabilities: serve
# sends the engine's own numbers as extension fields) as the TUI on the
# local model (with --template chatml: serve's fallback for a model without a
# chat template). Greedy, and sampled at temperature 0.8 from the same seed.
# The inspector's id column is left out: the remote backend numbers tokens
# itself (it has the server's texts, not its vocabulary).
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "remote_serve: tmux available" "tmux is a test dependency"; else echo "skip - remote_serve (no tmux)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh
MODEL=$TESTDATA/models/stories260K.gguf
need "$MODEL" "remote_serve: stories260K model" || exit 0

SERVE_PID=""
trap '[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; cleanup' EXIT INT TERM
"$BIN" serve -m "$MODEL" --port 0 -t 1 2>"$TMP/serve.err" &
SERVE_PID=$!
n=300
while [ $n -gt 0 ] && ! grep -q 'listening on' "$TMP/serve.err"; do sleep 0.1; n=$((n - 1)); done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$TMP/serve.err")
[ -n "$URL" ]
result "remote_serve: tokscope serve starts" $? "$(cat "$TMP/serve.err")"

# the reply's text and the inspector's rows (rank, token, logit, raw%, post%)
snap() {
    left | sed -n '/^Assistant/,$p' | sed '/^──/,$d' | sed -n '2,$p' | sed 's/ *$//' | grep -v '^$' >"$1.text"
    right | grep -E '^ *[0-9]+ +-?[0-9]+ ' | awk '{ $2 = ""; print }' >"$1.top"
}
# one turn: "Once upon a time" with ARGS, then a snapshot into FILE
turn() {
    out=$1
    shift
    start --no-autosave -n 12 "$@"
    wait_for '^ idle ' 30
    line "Once upon a time"
    wait_for 'Assistant [0-9]+ tokens|Assistant \[n_predict reached\]' 30 && wait_idle 20
    snap "$out"
    quit_wait
}

for mode in "--temp 0" "--temp 0.8 --seed 42"; do
    name=$(echo "$mode" | tr -c 'a-z0-9\n' _)
    # shellcheck disable=SC2086
    # stories260K has no chat template: serve renders chat with chatml, as
    # llama-server does; the local TUI does with --template chatml (raw without)
    turn "$TMP/local_$name" -m "$MODEL" --template chatml $mode
    # shellcheck disable=SC2086
    turn "$TMP/remote_$name" --remote "$URL" $mode
    [ -s "$TMP/local_$name.text" ] && [ -s "$TMP/local_$name.top" ] &&
        cmp -s "$TMP/local_$name.text" "$TMP/remote_$name.text"
    result "remote_serve ($mode): the reply's tokens are the local engine's" $? \
        "local: $(cat "$TMP/local_$name.text") / remote: $(cat "$TMP/remote_$name.text")"
    cmp -s "$TMP/local_$name.top" "$TMP/remote_$name.top"
    result "remote_serve ($mode): the inspector's top-k (token, logit, raw%, post%) is the local engine's" $? \
        "$(diff "$TMP/local_$name.top" "$TMP/remote_$name.top" | head -n 12)"
done
