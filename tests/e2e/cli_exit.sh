#!/bin/sh
# The TUI's exit status (tokscope(1), EXIT STATUS): 1 after "Cannot load the
# model" (it was 0), 0 after a normal quit. Driven in tmux like tests/e2e/tui.sh.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "tui: tmux available" "tmux is a test dependency"; else echo "skip - e2e/cli_exit (no tmux)"; fi
    exit 0
fi
STORIES=$TESTDATA/models/stories260K.gguf
need "$STORIES" "e2e/cli_exit: test model" || exit 0
. tests/e2e/lib/tmux.sh

# quit_until_exit: Ctrl-Q until the program has exited (a dialog may take the first)
quit_until_exit() {
    for _ in 1 2 3; do
        keys C-q
        wait_exit 5 && return 0
    done
    return 1
}

# a file that is a GGUF by name only: the engine refuses it while loading
head -c 4096 /dev/urandom >"$TMP/broken.gguf"
start -m "$TMP/broken.gguf"
wait_for 'Cannot load the model' 20
shown=$?
quit_until_exit
rc=$(cat "$TMP/exit" 2>/dev/null)
[ $shown -eq 0 ] && [ "$rc" = 1 ]
result "tui: quitting after 'Cannot load the model' exits 1 (got ${rc:-none})" $?

start -m "$STORIES"
wait_for '^ idle ' 20
quit_until_exit
rc=$(cat "$TMP/exit" 2>/dev/null)
[ "$rc" = 0 ]
result "tui: a normal quit exits 0 (got ${rc:-none})" $?
