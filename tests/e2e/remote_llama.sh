#!/bin/sh
# The remote backend against a REAL llama-server (llama.cpp's, built from
# the reference commit): runs when LLAMA_SERVER names its binary (default
# /work/ref/build/bin/llama-server when that is executable) and prints skip
# lines otherwise (CI has no llama.cpp). On loopback with tiny-spm-q8_0 (its
# zephyr template; random weights whose distributions are not one-hot):
#   - the server is recognised (llama-server in the status line);
#   - greedy: the TUI in --remote mode writes the local engine's reply, and
#     the inspector's top-k (token and raw%) is the local engine's;
#   - at temperature 0.8 from one seed: the local engine's reply;
#   - at temperature 0.8 from one seed, after /probs post: the inspector
#     shows the server's post-sampler numbers (post% filled, raw% "-"),
#     the local engine's post% for the same step;
#   - a branch from an alternative: the server continues the reply so far
#     plus the alternative, and the prefix it streams back is not shown twice;
#   - the server killed mid-reply: the status line says so, the partial
#     reply stays, marked.
. tests/lib.sh

LLAMA_SERVER=${LLAMA_SERVER:-/work/ref/build/bin/llama-server}
if [ ! -x "$LLAMA_SERVER" ]; then
    echo "skip - remote_llama (no llama-server: set LLAMA_SERVER to its binary)"
    exit 0
fi
if ! command -v tmux >/dev/null 2>&1; then
    echo "skip - remote_llama (no tmux)"
    exit 0
fi
. tests/e2e/lib/tmux.sh
MODEL=$TESTDATA/models/tiny-spm-q8_0.gguf
need "$MODEL" "remote_llama: tiny-spm-q8_0 model" || exit 0

SRV_PID=""
srv_stop() { [ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null; SRV_PID=""; }
trap 'srv_stop; cleanup' EXIT INT TERM
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
srv_start() {
    "$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -t 1 -c 4096 -np 1 >"$TMP/srv.log" 2>&1 &
    SRV_PID=$!
    n=300
    while [ $n -gt 0 ] && ! curl -sf "$URL/health" >/dev/null 2>&1; do sleep 0.1; n=$((n - 1)); done
    curl -sf "$URL/health" >/dev/null 2>&1
}
srv_start
result "remote_llama: llama-server starts on loopback" $? "$(tail -n 5 "$TMP/srv.log")"

# the reply's text; the inspector's rows as "rank token raw% post%"
# (the token may hold spaces: the fields between id and the three numbers)
snap() {
    left | sed -n '/^Assistant/,$p' | sed '/^──/,$d' | sed -n '2,$p' | sed 's/ *$//' | grep -v '^$' >"$1.text"
    right | grep -E '^ *[0-9]+ +-?[0-9]+ ' |
        awk '{ t = ""; for (i = 3; i <= NF - 3; i++) t = t " " $i; print $1, t, $(NF - 1), $NF }' >"$1.top"
}
# turn FILE ARGS...: "Once upon a time" with ARGS (and MORE, a command typed
# first), then a snapshot into FILE
turn() {
    out=$1
    shift
    start --no-autosave -n 12 "$@"
    wait_for '^ idle ' 30
    [ -n "${MORE:-}" ] && line "$MORE" && sleep 0.3
    line "Once upon a time"
    wait_for 'Assistant [0-9]+ tokens|Assistant \[n_predict reached\]' 30 && wait_idle 20
    snap "$out"
    screen >"$out.screen"
    quit_wait
}

# ---- greedy: the same reply and raw top-k ------------------------------------
turn "$TMP/local_greedy" -m "$MODEL" --temp 0
turn "$TMP/remote_greedy" --remote "$URL" --temp 0
grep -q '(llama-server)' "$TMP/remote_greedy.screen" && grep -q "server's raw probs" "$TMP/remote_greedy.screen"
result "remote_llama: the server is recognised as llama-server, its numbers labelled" $? \
    "$(grep -i 'server' "$TMP/remote_greedy.screen" | head -n 3)"
[ -s "$TMP/local_greedy.text" ] && cmp -s "$TMP/local_greedy.text" "$TMP/remote_greedy.text"
result "remote_llama (greedy): the reply is the local engine's" $? \
    "local: $(cat "$TMP/local_greedy.text") / remote: $(cat "$TMP/remote_greedy.text")"
# raw%: the server's softmax over all logits, as the local engine's; post% is
# "-" remotely (one kind per request)
awk '{ $NF = ""; print }' "$TMP/local_greedy.top" >"$TMP/lg"
awk '{ $NF = ""; print }' "$TMP/remote_greedy.top" >"$TMP/rg"
[ -s "$TMP/lg" ] && cmp -s "$TMP/lg" "$TMP/rg" && awk '$NF != "-" { exit 1 }' "$TMP/remote_greedy.top"
result "remote_llama (greedy): the inspector shows the server's raw top-k, the local engine's, post '-'" $? \
    "$(diff "$TMP/lg" "$TMP/rg" | head -n 8) $(head -n 3 "$TMP/remote_greedy.top")"

# ---- /probs post: the server's post-sampler numbers ---------------------------
# The fourth step's post-sampler probabilities of a seeded reply are
# compared row by row (seed 42: the same first three tokens, p 0.88, then
# single candidates).
S="--temp 0.8 --seed 42 -n 4"
# shellcheck disable=SC2086
turn "$TMP/local_seed" -m "$MODEL" $S
# shellcheck disable=SC2086
MORE="/probs post" turn "$TMP/remote_seed" --remote "$URL" $S
grep -q "server's post probs" "$TMP/remote_seed.screen" &&
    awk '$(NF - 1) != "-" || $NF == "-" { exit 1 }' "$TMP/remote_seed.top" && [ -s "$TMP/remote_seed.top" ]
result "remote_llama: after /probs post the inspector is labelled post, post% filled, raw% '-'" $? \
    "$(head -n 3 "$TMP/remote_seed.top")"
# the server lists the candidates with p > 0 after its samplers: each of
# them has the local engine's post% (raw order = post order for these)
[ "$(wc -l <"$TMP/remote_seed.top")" -ge 2 ] &&
    awk 'NR == FNR { p[$1 FS $2] = $NF; next } { k = $1 FS $2; if (!(k in p) || p[k] != $NF) { print "differs:", $0, p[k]; bad = 1 } } END { exit bad }' \
        "$TMP/local_seed.top" "$TMP/remote_seed.top" >"$TMP/post.diff"
result "remote_llama: the server's post-sampler probabilities are the local engine's post%" $? \
    "$(head -n 5 "$TMP/post.diff") local: $(head -n 4 "$TMP/local_seed.top") remote: $(head -n 4 "$TMP/remote_seed.top")"

# ---- seeded: the same reply ---------------------------------------------------
# tokscope draws as llama.cpp does (std::mt19937, its uniform_real_distribution
# and the dist sampler's running sum), so one seed gives the server's reply
turn "$TMP/local_seed7" -m "$MODEL" --temp 0.8 --seed 7
turn "$TMP/remote_seed7" --remote "$URL" --temp 0.8 --seed 7
[ -s "$TMP/local_seed7.text" ] && cmp -s "$TMP/local_seed7.text" "$TMP/remote_seed7.text"
result "remote_llama (temp 0.8, seed 7): the reply is the local engine's" $? \
    "local: $(cat "$TMP/local_seed7.text") / remote: $(cat "$TMP/remote_seed7.text")"

# ---- branch from an alternative: llama-server continues the assistant prefix --
# (it streams the prefix back at the start of its first delta: shown once)
start --no-autosave -n 6 --remote "$URL" --temp 0
wait_for '^ idle ' 30
line "Once upon a time"
wait_for 'Assistant [0-9]+ tokens|Assistant \[n_predict reached\]' 30 && wait_idle 20
branch_second
wait_for 'branch at token' 10 && wait_idle 20
reply=$(left | sed -n '/^Assistant/,$p' | sed '/^──/,$d' | sed -n '2,$p' | tr -d '\n')
[ "$(printf '%s' "$reply" | grep -o 'deeper' | wc -l)" -eq 1 ]
result "remote_llama: a branch continues the assistant prefix, shown once" $? "reply: $reply"
quit_wait

# ---- the server killed mid-reply ---------------------------------------------
start --no-autosave -n 3000 --remote "$URL" --temp 0.8 --seed 1
wait_for '^ idle ' 30
line "Once upon a time"
wait_for '^ generating' 20 && wait_for 'Assistant' 5
kill -STOP "$SRV_PID" # no more tokens: the reply is cut wherever it is now
srv_stop
wait_for 'remote: connection lost' 15 && wait_idle 10 && left | grep -q '\[cut: connection lost\]'
result "remote_llama: llama-server killed mid-reply: one line in the status line, the partial reply kept and marked" $?
quit_wait
