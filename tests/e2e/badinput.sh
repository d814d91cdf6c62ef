#!/bin/sh
# Bad input in the TUI, driven in tmux like tests/e2e/tui.sh: a conversation
# longer than the context under both policies (refused with a message, or
# context shift), a reply that outgrows the context, and the model file
# truncated while the TUI generates from it (message naming the file, the
# terminal given back, exit status 1; never death by SIGBUS).
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "tui: tmux available" "tmux is a test dependency"; else echo "skip - e2e/badinput (no tmux)"; fi
    exit 0
fi
STORIES=$TESTDATA/models/stories260K.gguf
need "$STORIES" "e2e/badinput: test model" || exit 0

E2E_COLS=240
. tests/e2e/lib/tmux.sh
LONG="Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friend Ben. One day they saw a big red ball."

# ---- a conversation longer than the context ----------------------------------
start -m "$STORIES" -c 32 --no-context-shift --temp 0
wait_for '^ idle ' 20
line "$LONG"
# the engine says "the conversation (N tokens) does not fit the context (32
# tokens)"; the TUI's status line shows it or, as it does today, "context full (0/32)"
wait_for 'does not fit the context \(32 tokens\)|context full \(0/32\)' 20 && screen | grep -q 'Assistant \[error\]'
result "tui --no-context-shift: a message longer than the context is refused with a message" $?
wait_idle 10
line "/quit"

start -m "$STORIES" -c 32 --temp 0 -n 8
wait_for '^ idle ' 20
line "$LONG"
wait_for 'context shift: dropped [0-9]+ tokens' 20 && wait_for 'Assistant \[n_predict reached\] 8 tokens' 20
result "tui: with context shift (the default) a message longer than the context keeps its end, the reply comes" $?
line "/quit"

# ---- a reply that outgrows the context ----------------------------------------
start -m "$STORIES" -c 32 --no-context-shift --temp 0 -n 100 --repeat-penalty 1.3
wait_for '^ idle ' 20
line "Once upon a time"
wait_for 'Assistant \[context full\]' 30
result "tui --no-context-shift: a reply stops at a full context and says so" $?
line "/quit"

start -m "$STORIES" -c 32 --temp 0 -n 100 --repeat-penalty 1.3
wait_for '^ idle ' 20
line "Once upon a time"
wait_for 'Assistant \[n_predict reached\] 100 tokens' 30 && screen | grep -qE 'context shift: dropped'
result "tui: with context shift a reply goes on past the context" $?
line "/quit"

# ---- the model file truncated while generating --------------------------------
cp "$STORIES" "$TMP/model.gguf"
start -m "$TMP/model.gguf" -n -1 --repeat-penalty 1.3 -c 2048
wait_for '^ idle ' 20
line "Once upon a time"
wait_for '^ generating' 20
truncate -s 4096 "$TMP/model.gguf"
wait_exit 20
rc=$(cat "$TMP/exit" 2>/dev/null)
sleep 0.2
[ "$rc" = 1 ] && screen | grep -qF "tokscope: $TMP/model.gguf: the model file was truncated or changed while in use" &&
    ! screen | grep -qE '^ (idle|generating)'
result "tui: the model truncated while generating: message naming it, terminal back, exit 1 (got ${rc:-none})" $?

# ---- a configuration file with mistakes ----------------------------------------
mkdir -p "$TMP/cfg/tokscope"
printf '[sampling]\ntemp = 0.3\nwarmth = 2\n[engine]\ncontext_shift = perhaps\n' >"$TMP/cfg/tokscope/tokscope.ini"
start -m "$STORIES"
wait_for '^ idle ' 20 && wait_for 'temp\*? +0\.30' 2
started=$?
# and inside the TUI, which covers what was printed before it
wait_for "config: 2 problems \\(all listed on stderr\\); the first: .*tokscope.ini:3: unknown key 'warmth'" 5
noted=$?
line "/quit"
wait_exit 10
# the reports were printed before the TUI took the screen: they are there after it
[ $started -eq 0 ] && [ $noted -eq 0 ] && [ "$(cat "$TMP/exit")" = 0 ] &&
    screen | grep -q "tokscope.ini:3: unknown key 'warmth' in \[sampling\] (ignored)" &&
    screen | grep -q "tokscope.ini:5: \[engine\] context_shift: 'perhaps' is not a boolean"
result "tui: a config file with an unknown key and a bad value: reported as FILE:LINE (on stderr and in the TUI), the TUI runs with the rest" $?
rm -f "$TMP/cfg/tokscope/tokscope.ini"
