#!/bin/sh
# Speculative decoding in the TUI (issue 37): --spec draft -md shows the
# reply's drafts and accepted drafts in the status line ("spec A/D") and
# the reply is the one without it; /set spec off live turns it off from the
# next reply; a bad value is refused in the status line; /set spec mtp on
# a toy Qwen3.5 file with an MTP block (tests/tools/gguf_mtp.py, written
# here) drafts from the next reply, which is the one without it; Gemma 4
# with its assistant file (--spec mtp -md, tests/tools/gguf_g4assist.py,
# written here) gives the reply without it, the status line counts its
# drafts and the inspector marks, token by token, the accepted drafts and
# the tokens drawn after a rejected one.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "spec: tmux available" "tmux is a test dependency"; else echo "skip - spec (no tmux)"; fi
    exit 0
fi
STORIES=$TESTDATA/models/stories260K.gguf
. tests/e2e/lib/tmux.sh
need "$STORIES" "spec: stories260K model" || exit 0
E2E_COLS=180 # room for the messages after the status line

reply() { left | sed -n '/^Assistant/,$p' | sed '1d' | grep -v 'n_predict reached'; }
# the reply's end: its length note, then idle (idle alone may still be the
# moment before the reply starts)
replied() { wait_for 'n_predict reached' 30; wait_idle 30; }

start -m "$STORIES" -n 40 --temp 0 --template raw
wait_for '^ idle ' 20
line "Once upon a time"
replied
plain=$(reply)
quit_wait

start -m "$STORIES" -n 40 --temp 0 --template raw --spec draft -md "$STORIES"
wait_for '^ idle ' 20
line "Once upon a time"
replied
# 40 tokens: the first drawn from the prompt, then 9 verifications of 3
# drafts (4 tokens each) and one of 2 (the room n_predict leaves): 29 drafts
status | grep -qE 'spec 29/29'
result "spec: status line shows the reply's accepted/drafted (29/29, a model drafting for itself)" $? "$(status)"
[ -n "$plain" ] && [ "$(reply)" = "$plain" ]
result "spec: the reply is the one without drafts" $?
line "/set spec eagle"
wait_for "is not off, ngram, draft, mtp or auto" 10
result "spec: /set spec with an unknown kind is refused" $?
line "/set spec off"
wait_for "spec = off" 10
line "/regen"
wait_for '^ generating|^ prefill' 10
wait_idle 30
! status | grep -q '│ spec [0-9]'
result "spec: /set spec off: no drafts from the next reply" $? "$(status)"
quit_wait

Q=$TESTDATA/families2026/models/qwen35-mini-q8_0.gguf
need "$Q" "spec: qwen35-mini model" || exit 0
if ! python3 tests/tools/gguf_mtp.py "$Q" "$OUT/qwen35-mtp.gguf" 0 0.1 >"$OUT/mtp.log" 2>&1; then
    not_ok "spec: writing the MTP toy file" "$(tail -n 3 "$OUT/mtp.log")"
    exit 0
fi
start -m "$OUT/qwen35-mtp.gguf" -n 40 --temp 0 --template raw
wait_for '^ idle ' 20
line "Once upon a time there was a little girl. Once upon a time there was a"
replied
plain=$(reply)
line "/set spec mtp"
wait_for "spec = mtp" 10
line "/regen"
wait_for '^ generating|^ prefill' 10
replied
status | grep -qE '│ spec [0-9]+/[1-9][0-9]*'
result "spec: /set spec mtp: the next reply drafts with the MTP block" $? "$(status)"
[ -n "$plain" ] && [ "$(reply)" = "$plain" ]
result "spec: /set spec mtp: the reply is the one without drafts" $? "$(reply | head -c 200)"
quit_wait
rm -f "$OUT/qwen35-mtp.gguf"

G4=$TESTDATA/families2026/models/gemma4-mini-q8_0.gguf
need "$G4" "spec: gemma4-mini model" || exit 0
if ! python3 tests/tools/gguf_g4assist.py "$G4" "$OUT/g4assist.gguf" >"$OUT/g4a.log" 2>&1; then
    not_ok "spec: writing the Gemma 4 assistant file" "$(tail -n 3 "$OUT/g4a.log")"
    exit 0
fi
P4="Once upon a time there was a little girl. Once upon a time there was a"
start -m "$G4" -n 40 --temp 0 --template raw
wait_for '^ idle ' 20
line "$P4"
replied
plain=$(reply)
quit_wait
start -m "$G4" -n 40 --temp 0 --template raw --spec mtp -md "$OUT/g4assist.gguf"
wait_for '^ idle ' 20
line "$P4"
replied
status | grep -qE '│ spec [0-9]+/[1-9][0-9]*'
result "spec: gemma4 --spec mtp -md ASSISTANT: the status line shows accepted/drafted" $? "$(status)"
[ -n "$plain" ] && [ "$(reply)" = "$plain" ]
result "spec: gemma4 --spec mtp -md ASSISTANT: the reply is the one without drafts" $? "$(reply | head -c 200)"
# the token cursor over the reply: the inspector says what the
# verification did at each token
keys Tab
keys Home
seen_acc=1 seen_rej=1
for _ in $(seq 1 40); do
    sleep 0.15
    insp=$(right)
    printf '%s' "$insp" | grep -q 'drafted, accepted by the verification' && seen_acc=0
    printf '%s' "$insp" | grep -qE "drawn after the draft [0-9]+ '.*' was rejected" && seen_rej=0
    [ $seen_acc = 0 ] && [ $seen_rej = 0 ] && break
    keys Right
done
result "spec: gemma4 assistant: the inspector marks an accepted draft" $seen_acc "$(right | head -n 8)"
result "spec: gemma4 assistant: the inspector marks a token drawn after a rejected draft" $seen_rej
quit_wait
rm -f "$OUT/g4assist.gguf"
exit 0
