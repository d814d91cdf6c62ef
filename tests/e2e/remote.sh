#!/bin/sh
# End-to-end test of the remote backend in the real TUI (tmux) against
# tests/tools/mock_openai.py on loopback: a reply streams with the server's
# candidates in the inspector; the server killed mid-reply gives one line in
# the status line and the partial reply stays, marked "[cut: connection
# lost]"; that survives /save and a new session's /load; with the server
# back, /regen retries and gets the whole reply; step mode and the lens are
# refused with one line; /model lists the server's models as a pick list
# (Down and Enter switch); the API key from TOKSCOPE_API_KEY reaches the
# server as a bearer header and appears nowhere in --print-config, the
# saved session or the autosave directory.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
    if in_ci; then not_ok "remote: tmux and python3 available" "test dependencies"; else echo "skip - remote (no tmux or python3)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh

MOCK_PID=""
# mock [PORT]: starts the mock server (on PORT, else a free one) and sets PORT
mock() {
    rm -f "$TMP/port"
    python3 tests/tools/mock_openai.py --port "${1:-0}" --kind "${KIND:-llamacpp}" >"$TMP/port" 2>"$TMP/mock.err" &
    MOCK_PID=$!
    n=200
    while [ $n -gt 0 ] && [ ! -s "$TMP/port" ]; do sleep 0.1; n=$((n - 1)); done
    PORT=$(cat "$TMP/port")
}
mock_stop() { [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null && wait "$MOCK_PID" 2>/dev/null; MOCK_PID=""; }
trap 'mock_stop; cleanup' EXIT INT TERM

KEY=tokscope-e2e-secret-4711
mock
[ -n "$PORT" ]
result "remote: the mock server starts" $?

# ---- 1. the key stays out of --print-config ------------------------------
"$BIN" --remote "http://127.0.0.1:$PORT" --print-config >"$TMP/printed.ini" 2>&1
grep -q "^url = http://127.0.0.1:$PORT" "$TMP/printed.ini" && ! grep -q "$KEY" "$TMP/printed.ini"
result "remote: --print-config shows [remote] url, never the key" $?
printf '%s\n' "$KEY" >"$TMP/keyfile"
"$BIN" --remote "http://127.0.0.1:$PORT" --api-key-file "$TMP/keyfile" --print-config >"$TMP/printed2.ini" 2>&1
grep -q "^api_key_file = $TMP/keyfile" "$TMP/printed2.ini" && ! grep -q "$KEY" "$TMP/printed2.ini"
result "remote: --print-config names the key file, never its content" $?
"$BIN" --remote "http://127.0.0.1:$PORT" --api-key-file "$TMP/nokey" </dev/null >/dev/null 2>"$TMP/nokey.err"
[ $? -eq 2 ] && grep -q "cannot read '$TMP/nokey'" "$TMP/nokey.err"
result "remote: an unreadable key file is an error naming the file" $?

# ---- 2. a reply streams, with the server's candidates ---------------------
WRAP="TOKSCOPE_API_KEY=$KEY" start --remote "http://127.0.0.1:$PORT" --remote-model ok
wait_for 'remote: llama-server at' 20
result "remote: the status line names the server kind" $?
line "Say hello"
wait_for 'Hello, world!' 20 && wait_idle 10 && right | grep -q "server's raw probs" && right | grep -q "'?'"
result "remote: the reply streams, the inspector shows the server's candidates" $?
curl -s "http://127.0.0.1:$PORT/mock/headers" | grep -q "Bearer $KEY"
result "remote: the API key goes as a bearer header" $?

# ---- 2b. branch from an alternative: an assistant prefix to continue --------
# (the reply's second token ',' has the alternative '!': the branch sends
# "Hello!" as the assistant message the server continues)
branch_second
wait_for 'branch at token 2' 10 && wait_idle 10 &&
    curl -s "http://127.0.0.1:$PORT/mock/last" | python3 -c '
import json, sys
m = json.load(sys.stdin)["messages"]
assert m[-1] == {"role": "assistant", "content": "Hello!"}, m'
result "remote: a branch from an alternative sends the reply so far as an assistant prefix" $?
for _ in 1 2 3 4; do screen | grep -q 'focus: input' && break; keys Tab; sleep 0.2; done

# ---- 3. step mode and the lens need the local engine -----------------------
keys F6
wait_for 'step mode needs the local engine' 5
result "remote: step mode is refused with one line" $?
keys F8
wait_for 'logit lens needs the local engine' 5
result "remote: the logit lens is refused with one line" $?

# ---- 4. the server stopped mid-reply ---------------------------------------
line "/model"
wait_for 'Remote models' 5 && screen | grep -qE '> +ok +\(in use\)' && screen | grep -qE '^.* +logzero'
result "remote: /model lists the server's models as a pick list, the one in use selected" $?
keys Down Down Down Down Enter
# (the server answers at once: "asking the server for model hang" can be
# replaced before a capture sees it, so wait for the answer itself)
wait_for 'remote: llama-server at .*, model hang' 10
result "remote: Down and Enter in /model's list switch to the model chosen" $?
line "Count for me"
wait_for 'Count for me' 5 && wait_for '^ generating' 10 && sleep 0.5
mock_stop
wait_for 'remote: connection lost' 15 && wait_idle 10 && left | grep -q '\[cut: connection lost\]'
result "remote: a server stopped mid-reply: one line in the status line, the partial reply kept and marked" $?
status | grep -q 'partial reply kept, /regen retries'
result "remote: the status line says the partial reply is kept and /regen retries" $?

line "/save $TMP/cut.json"
wait_for 'saved' 5
python3 - "$TMP/cut.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
msgs = [m for c in d["conversations"] for m in c["messages"]]
cut = [m for m in msgs if m.get("role") == "assistant" and m.get("done") == 6]
assert cut and cut[-1]["content"].startswith("Hello,"), msgs
PY
result "remote: /save keeps the cut reply and its mark" $?
! grep -rq "$KEY" "$TMP/cut.json" "${STATE:-$TMP/state}"
result "remote: the key is in no saved file" $?
quit_wait

# ---- 5. a new session: /load brings it back; /regen retries ----------------
mock "$PORT"
WRAP="TOKSCOPE_API_KEY=$KEY" start --remote "http://127.0.0.1:$PORT" --remote-model ok
wait_for 'remote: llama-server at' 20
line "/load $TMP/cut.json"
wait_for "loaded $TMP" 5 && left | grep -q '\[cut: connection lost\]' && left | grep -q '^  Hello,'
result "remote: the partial reply survives a save and reload" $?
line "/regen"
wait_for 'Hello, world!' 20 && wait_idle 10
result "remote: /regen retries against the server" $?
quit_wait
mock_stop

# ---- 6. a vLLM server: the panel marks what it ignores, n_top shows the cap ----
KIND=vllm mock
start --remote "http://127.0.0.1:$PORT" --remote-model ok --n-top 30
wait_for 'remote: vllm, model ok; n_top 30 capped to the server.s 20' 20
result "remote: the status line says when the server caps n_top" $?
right | grep -q 'typical_p .*(ignored by server)' && right | grep -q 'repeat_last_n .*(ignored by server)' &&
    ! right | grep -q 'top_k .*(ignored by server)' && right | grep -q 'n_top .*30 (server: 20)'
result "remote: the panel marks the parameters vLLM ignores and the top_logprobs cap" $?
quit_wait
mock_stop
