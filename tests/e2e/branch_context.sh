#!/bin/sh
# A branch continues the context it branched from, exactly as shown: after a
# reply, /template chatml (or /set think off on a Qwen3.5 toy) applies from
# the next new turn only; a branch from an alternative at step 3 of the reply
# is evaluated on the prompt that reply had, so the step keeps its position
# and its distribution (the inspector's pos line and candidate rows), and a
# Qwen3.5 reply started inside <think> keeps its thinking block.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "branch context: tmux available" "tmux is a test dependency"; else echo "skip - branch context (no tmux)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh

turn() { wait_for '^ (generating|prefill)' 2; wait_idle 30; }
# step_view K: the inspector at token K of the reply: its pos line's
# position, then the candidate rows without the cursor mark
step_view() {
    wait_for "Inspector: token $1/" 5 || return 1
    right | sed -n "/Inspector: token $1\\//,\$p" | sed -n 's/^ *pos \([0-9]*\) .*/pos \1/p' | head -n 1
    right | sed -n "/Inspector: token $1\\//,\$p" | grep -E '^[> ] *[0-9]+ +[0-9]+ ' | cut -c2-
}
# to_token K N: in the conversation, the cursor from the reply's last token (N) to token K
to_token() {
    keys Tab
    wait_for 'focus: conversation' 5
    keys End
    i=$2; while [ "$i" -gt "$1" ]; do keys Left; i=$((i - 1)); done
}

# branch_after NAME MODEL COMMAND ARGS...: a reply of 12 tokens, COMMAND,
# then a branch from the second candidate at step 3 (RELOAD=1: the session
# saved and loaded back between the reply and COMMAND)
branch_after() {
    name=$1
    model=$2
    cmd=$3
    shift 3
    need "$model" "branch context ($name): model" || return 0
    start -m "$model" -n 12 --temp 0 --seed 7 "$@"
    wait_for '^ idle ' 20
    line "Hi"
    turn
    to_token 3 12
    before=$(step_view 3)
    think_before=$(left | grep -c '^ *▾* *thinking')
    keys Escape
    wait_for 'focus: input' 5
    if [ -n "${RELOAD:-}" ]; then
        line "/save $TMP/$name.json"
        wait_for 'saved' 5
        line "/clear"
        wait_for 'conversation cleared' 5
        line "/load $TMP/$name.json"
        wait_for "loaded $TMP" 5
    fi
    line "$cmd"
    sleep 0.3
    to_token 3 12
    keys Enter
    wait_for 'focus: inspector' 5
    keys Down
    keys Enter
    wait_for 'branch at token 3' 10
    turn
    left | grep -q '^Assistant ‹2/2›'
    result "branch context ($name): the branch is version 2/2" $?
    [ "$(left | grep -c '^ *▾* *thinking')" = "$think_before" ]
    result "branch context ($name): the reasoning block is shown as before ($think_before)" $?
    keys Escape
    to_token 3 12
    after=$(step_view 3)
    [ -n "$before" ] && [ "$(echo "$before" | head -n 1)" = "$(echo "$after" | head -n 1)" ]
    result "branch context ($name): after '$cmd' the branch's step keeps its position" $? \
        "before: $(echo "$before" | head -n 1) / after: $(echo "$after" | head -n 1)"
    [ "$(echo "$before" | tail -n +2)" = "$(echo "$after" | tail -n +2)" ]
    result "branch context ($name): ... and its distribution (the candidate rows)" $? \
        "before:$NL$(echo "$before" | head -n 4)${NL}after:$NL$(echo "$after" | head -n 4)"
    quit_wait
}
NL='
'

branch_after template "$TESTDATA/models/smollm-mini-q8_0.gguf" "/template chatml"
# under the sanitizer build (make test's asan/ part) the first case only: the
# others take the same code paths with other settings, a minute of CI
[ "${SANITIZED:-}" = 1 ] && exit 0
branch_after think "$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf" "/set think off"
# the settings a reply was made with are saved with it
RELOAD=1 branch_after "think, saved and loaded" "$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf" "/set think off"
exit 0
