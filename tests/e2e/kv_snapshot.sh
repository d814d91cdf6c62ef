#!/bin/sh
# End-to-end tests of KV snapshots beside session files (issue 38): /save
# writes NAME.kv beside NAME.json; a new tokscope --resume'd on it restores
# the cache (the status line says so) and the next turn evaluates only the
# new message ("its N tokens kept, none evaluated again"), with the reply an
# uninterrupted session gives; other settings or a damaged snapshot are not
# used, said why, and the conversation is evaluated again with the same
# reply; the autosave keeps one beside its session and removes orphans.
# On a transformer (stories260K) and a Gated DeltaNet model (qwen35-mini).
# The real binary in a detached tmux session; every wait polls the screen.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "kv_snapshot: tmux available" "tmux is a test dependency"; else echo "skip - kv_snapshot (no tmux)"; fi
    exit 0
fi
QWEN35=$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf
STORIES=$TESTDATA/models/stories260K.gguf

E2E_COLS=260 # room in the status line for the messages
. tests/e2e/lib/tmux.sh
# the last reply's lines in the conversation pane (from its "Assistant" line to the blank line after it)
last_reply() { left | awk '/^Assistant/ { buf = ""; on = 1 } on { buf = buf $0 "\n"; if ($0 ~ /^ *$/) on = 0 } END { printf "%s", buf }' | sed 's/ *$//'; }
done_re='^Assistant \[(n_predict reached|end of turn)\]'
# turn TEXT: sends it and waits for its reply to end
turn() {
    line "$1"
    n=0
    while [ $n -lt 400 ]; do # until a second finished reply shows (or the first, for turn 1)
        [ "$(left | grep -cE "$done_re")" -ge "$2" ] && break
        sleep 0.05
        n=$((n + 1))
    done
    wait_idle 20
}

check_model() { # LABEL MODEL ARGS...
    label=$1 model=$2
    shift 2
    args="-m $model --temp 0 -n 12 $*"
    rm -rf "$TMP/state" "$TMP"/S.*

    # the uninterrupted session: two turns
    start $args --no-autosave
    wait_for '^ idle ' 30
    turn "Once upon a time" 1
    turn "The end" 2
    last_reply >"$TMP/ref.txt"
    quit_wait
    [ -s "$TMP/ref.txt" ]
    result "kv_snapshot $label: the uninterrupted second reply" $?

    # turn 1, /save: the snapshot beside the file
    start $args
    wait_for '^ idle ' 30
    turn "Once upon a time" 1
    line "/save $TMP/S.json"
    wait_for "KV snapshot saved: [0-9]+ tokens" 10 && [ -s "$TMP/S.json" ] && [ -s "$TMP/S.kv" ]
    result "kv_snapshot $label: /save writes S.kv beside S.json and says so" $? "$(ls -l "$TMP" | head)"
    quit_wait
    sessions=$(ls "$TMP/state/tokscope/sessions/" 2>/dev/null)
    echo "$sessions" | grep -q '\.json$' && echo "$sessions" | grep -q '\.kv$'
    result "kv_snapshot $label: the autosave keeps a snapshot beside its session" $? "$sessions"

    # a new process resumes it: restored, turn 2 evaluates only the new message, same reply
    start $args --no-autosave --resume="$TMP/S.json"
    wait_for '^ idle ' 30 && wait_for 'resumed: 2 messages \(S\.json\); KV snapshot restored: [0-9]+ tokens' 10
    result "kv_snapshot $label: --resume restores the snapshot (status line)" $?
    line "The end"
    wait_for "$USED_RE" 30
    result "kv_snapshot $label: the next turn evaluates none of the restored tokens again$USED_NOTE" $?
    turn "" 2 >/dev/null 2>&1 || true
    last_reply | cmp -s - "$TMP/ref.txt"
    result "kv_snapshot $label: the reply after the restore is the uninterrupted one" $? \
        "$(last_reply | diff "$TMP/ref.txt" - | head -n 8)"
    quit_wait

    # other settings: not used, said why, evaluated again (the same reply: the threads change no bits here)
    start $args -t 1 --no-autosave --resume="$TMP/S.json"
    wait_for '^ idle ' 30 &&
        wait_for 'KV snapshot not used \(the conversation is evaluated again\): the thread count differs \([0-9]+ then, 1 now\)' 10
    result "kv_snapshot $label: -t 1 does not use it and says why" $?
    quit_wait

    # a flipped byte: refused, said so, and the conversation evaluated again gives the same reply
    python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0x10
open(sys.argv[1], "wb").write(b)' "$TMP/S.kv"
    start $args --no-autosave --resume="$TMP/S.json"
    wait_for '^ idle ' 30 && wait_for 'KV snapshot not used .*damaged \(checksum mismatch\)' 10
    result "kv_snapshot $label: a damaged snapshot is refused with a message" $?
    turn "The end" 2
    ! screen | grep -q 'KV snapshot used' && last_reply | cmp -s - "$TMP/ref.txt"
    result "kv_snapshot $label: ... and the conversation, evaluated again, gives the same reply" $? \
        "$(last_reply | diff "$TMP/ref.txt" - | head -n 8)"
    quit_wait

    # --no-save-kv: /save writes no snapshot and removes the stale one
    start $args --no-autosave --no-save-kv
    wait_for '^ idle ' 30
    line "/save $TMP/S.json"
    wait_for "saved $TMP/S\.json" 10 && [ ! -e "$TMP/S.kv" ]
    result "kv_snapshot $label: --no-save-kv: /save removes the stale snapshot beside the file" $?
    quit_wait
}

if need "$STORIES" "kv_snapshot: stories260K model"; then
    USED_RE='KV snapshot used: its [0-9]+ tokens kept, none evaluated again' USED_NOTE=
    check_model stories "$STORIES"
    # an orphan snapshot in the sessions directory goes at the next start
    mkdir -p "$TMP/state/tokscope/sessions"
    echo x >"$TMP/state/tokscope/sessions/20000101-000000-1.kv"
    start -m "$STORIES"
    wait_for '^ idle ' 30
    [ ! -e "$TMP/state/tokscope/sessions/20000101-000000-1.kv" ]
    result "kv_snapshot: a snapshot whose session file is gone is removed" $?
    quit_wait
fi
if need "$QWEN35" "kv_snapshot: qwen35-mini model"; then
    # the tiny model's reply holds bytes that are not UTF-8: the conversation
    # renders them as U+FFFD, so its tokens differ from the reply's from
    # there on, in the uninterrupted session as well
    USED_RE='KV snapshot used(: its [0-9]+ tokens kept, none evaluated again| in part: the conversation.s tokens differ from it at position [0-9]+ of [0-9]+)'
    USED_NOTE=" (up to where the rendered reply differs from its tokens)"
    check_model qwen35 "$QWEN35" --template raw
fi
