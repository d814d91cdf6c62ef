#!/bin/sh
# End-to-end tests that no keystroke is lost and every typed command applies:
# typing in conversation focus, two commands in one burst, an error that
# stays until the next key, ~ in file names, ambiguous command prefixes, the
# key that closes a dialog, tabs in a paste, and the picker's first row.
# The real binary in a detached tmux session (tests/e2e/lib/tmux.sh); every
# wait polls the screen with a timeout, nothing asserts timing.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "tui-input: tmux available" "tmux is a test dependency"; else echo "skip - tui-input (no tmux)"; fi
    exit 0
fi
STORIES=$TESTDATA/models/stories260K.gguf

. tests/e2e/lib/tmux.sh
jsonq() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

need "$STORIES" "tui-input: stories260K model" || exit 0

# ---- 1. typing in conversation focus goes to the input (issue 35, item 5) ----
start -m "$STORIES" -n 8 --seed 3 --no-autosave
wait_for '^ idle ' 20
line "Once upon a time"
wait_for 'n_predict reached' 20
wait_idle 20
keys Tab
sleep 0.2
keys -l "hello"
wait_for '^> hello *$' 5 && ! screen | grep -q 'editing a message'
result "tui-input: 'hello' typed in conversation focus lands whole in the input (no edit mode)" $?
keys C-a C-k Tab
sleep 0.2
keys -l "cat"
wait_for '^> cat *$' 5 && ! screen | grep -q 'probability colours'
result "tui-input: 'cat' typed in conversation focus lands whole in the input (colours untouched)" $?
keys C-a C-k BTab
wait_for 'focus: inspector' 5
keys -l "jump"
wait_for '^> jump *$' 5
result "tui-input: 'jump' typed in inspector focus lands whole in the input" $?
keys C-a C-k Tab
sleep 0.2
keys M-e
wait_for 'editing a message' 5 && wait_for '^> Once upon a time' 2
result "tui-input: Alt-e in conversation focus edits the user message above" $?
keys Escape
wait_for 'edit cancelled' 5
keys F1
wait_for 'Alt-e' 5 && screen | grep -q 'typing goes to the input, letters are never commands'
result "tui-input: /help names Alt-e and says typing goes to the input" $?
keys Escape

# ---- 2. two slash commands in one burst both apply (item 6) ------------------
keys "/set temp 0.5" Enter "/set top_k 3" Enter
wait_for 'top_k\* +3( |$)' 5 && screen | grep -qE 'temp\* +0\.50'
result "tui-input: two slash commands sent in one burst both apply" $?
keys "/system be brief" Enter "/set top_k 5" Enter
wait_for 'top_k\* +5( |$)' 5
result "tui-input: a burst of /system then /set: the /set applies" $?
keys Escape
quit_wait

# an error typed during a reply is not replaced by the context-shift status
start -m "$STORIES" -c 64 -n -1 --seed 3 --no-autosave
wait_for '^ idle ' 20
line "Once upon a time"
wait_for 'context shift' 30
line "/set temp abc"
wait_for "temp: 'abc' is not a number" 5
sleep 1.5
screen | grep -q "temp: 'abc' is not a number" && status | grep -q '^ generating'
result "tui-input: an error typed during a reply stays, context shifts go on" $?
keys Right
wait_for 'context shift' 10
result "tui-input: after the next key the context-shift status shows again" $?
keys Escape
wait_idle 10
quit_wait

# ---- 3. paths, prefixes, dialogs, tabs (item 7) -------------------------------
start -m "$STORIES" -n 4 --seed 3 --no-autosave
wait_for '^ idle ' 20
rm -f "$TMP/home/x.json"
T set-buffer "$(printf 'a\tb')"
T paste-buffer -p
wait_for '^> a b' 5
keys Enter
wait_for 'n_predict reached' 20
wait_idle 20
line "/save ~/x.json"
wait_for 'saved ' 5 && [ -f "$TMP/home/x.json" ] && [ ! -e "$TMP/home/~" ] && [ ! -e "./~" ]
result "tui-input: /save ~/x.json writes under \$HOME" $?
[ "$(jsonq "$TMP/home/x.json" 'd["conversations"][0]["messages"][0]["content"] == "a\tb"')" = True ]
result "tui-input: a tab in pasted text stays a tab in the message" $?
line "/new"
wait_for 'conversation 2' 5
line "/load ~/x.json"
wait_for 'loaded ' 5 && left | grep -q '^  a b'
result "tui-input: /load ~/x.json reads from \$HOME" $?
line "/s"
wait_for '/s is ambiguous: .*/save.*/set.*/show' 5
result "tui-input: an ambiguous prefix lists the commands it could mean" $?
line "/sho"
wait_for 'Settings' 5
result "tui-input: a unique prefix runs its command" $?
keys Escape
quit_wait

head -c 4096 "$STORIES" >"$TMP/broken.gguf"
start -m "$TMP/broken.gguf" --no-autosave
wait_for 'Cannot load the model' 20
keys -l "hi"
wait_for '^> hi *$' 5 && ! screen | grep -q 'Cannot load the model'
result "tui-input: the first key after the load-failure dialog is not lost" $?
quit_wait

# ---- 4. the picker: Enter opens what the first row says (item 10) -------------
rm -rf "$TMP/state"
start -m "$STORIES" -n 4 --seed 3
wait_for '^ idle ' 20
line "Once upon a time"
wait_for 'n_predict reached' 20
wait_idle 20
quit_wait
mkdir -p "$TMP/home/models"
ln -sf "$(cd "$(dirname "$STORIES")" && pwd)/$(basename "$STORIES")" "$TMP/home/models/stories260K.gguf"
start
wait_for 'choose a model' 20 && wait_for '↻ Resume the last conversation' 5 &&
    wait_for 'Enter: the conversation comes back' 2
result "tui-input: the picker highlights its first row, the offer to resume" $?
keys Enter
wait_for '^ idle ' 20 && wait_for 'resumed: ' 5 && left | grep -q '^  Once upon a time'
result "tui-input: Enter in the picker opens what the first row says (resume)" $?
quit_wait

exit 0
