#!/bin/sh
# End-to-end test of explore mode in the real TUI (tmux): branching from
# another candidate and generating again from a token, versions of a reply
# and of an edited message, step mode (draw, forced text, undo, a picked
# candidate), the logit lens, the entropy strip, compare settings, saving
# and loading branches, a mouse click on a token. Greedy sampling where the
# text itself is checked.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "explore: tmux available" "tmux is a test dependency"; else echo "skip - explore (no tmux)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh
STORIES=$TESTDATA/models/stories260K.gguf
need "$STORIES" "explore: stories260K model" || exit 0

# the text of the first assistant reply in the pane (strip lines left out)
reply() { left | sed -n '/^Assistant/,/^ *$/p' | sed '1d' | grep -v '[▁▂▃▄▅▆▇█]' | sed 's/ *$//' | grep . ; }
# turn: after a message or a key that starts a reply, until it is done (a
# short reply may finish before "generating" is ever drawn)
turn() { wait_for '^ (generating|prefill)' 2; wait_idle 30; }
# the inspector's title line
insp_title() { right | grep -E '(Inspector|Lens|Step):' | head -n 1; }

# ---- 1. branch from another candidate; versions -----------------------------
start -m "$STORIES" -n 24 --temp 0 --seed 7
wait_for '^ idle ' 20
line "Once upon a time"
turn
old=$(reply)
keys Tab
wait_for 'focus: conversation' 5
i=0; while [ $i -lt 10 ]; do keys Left; i=$((i + 1)); done
wait_for 'Inspector: token 14/24' 5
keys Enter
wait_for 'focus: inspector' 5 && right | grep -qE '^> +1 '
result "explore: Enter on a token puts the inspector's cursor on its chosen row" $?
keys Down
wait_for '^> +2 ' 5
keys Enter
wait_for 'branch at token 14' 10
turn
new=$(reply)
left | grep -q '^Assistant ‹2/2›' && [ -n "$new" ] && [ "$new" != "$old" ]
result "explore: Enter on another candidate branches: a new reply, marked ‹2/2›" $?
[ "$(printf '%s\n' "$new" | head -c 30)" = "$(printf '%s\n' "$old" | head -c 30)" ]
result "explore: the branch keeps the reply's text before the token" $? "old: $old / new: $new"
keys '<'
wait_for '^Assistant ‹1/2›' 5 && [ "$(reply)" = "$old" ]
result "explore: < shows the first version again (its text unchanged)" $?
keys '>'
wait_for '^Assistant ‹2/2›' 5 && [ "$(reply)" = "$new" ]
result "explore: > back to the branch" $?
# the chosen candidate itself: generated again from there, greedy gives the same text
keys End Left Left Left Enter
wait_for 'focus: inspector' 5
keys Enter
wait_for 'generating again from token' 10
turn
left | grep -q '^Assistant ‹3/3›' && [ "$(reply)" = "$new" ]
result "explore: Enter on the chosen candidate generates again from there (greedy: the same text, ‹3/3›)" $?

# ---- 2. edit an earlier message: the old version stays ----------------------
keys Escape
wait_for 'focus: input' 5
keys Tab
wait_for 'focus: conversation' 5
keys M-e
wait_for '^> Once upon a time' 5 && wait_for 'editing a message' 5 && left | grep -qE '^You *$'
result "explore: Alt-e puts the user message into the input, the conversation unchanged" $?
T send-keys -l " there was a cat"
keys Enter
wait_for 'sent as version 2/2' 10
turn
left | grep -q '^You ‹2/2›' && left | grep -q '^  Once upon a time there was a cat'
result "explore: the edited message is sent as version 2/2 and answered" $?
keys Tab
wait_for 'focus: conversation' 5
keys '<'
wait_for '^You ‹1/2›' 5 && left | grep -q '^Assistant ‹3/3›' && ! left | grep -q 'there was a cat'
result "explore: < on the reply below goes to the message's first version, with its branches" $?
keys Escape

# ---- 3. save and load the branches -----------------------------------------
line "/save $TMP/branches.json"
wait_for "saved" 5
python3 - "$TMP/branches.json" <<'PY' >/dev/null 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tokscope"] == 2
m = d["conversations"][0]["messages"]
assert m[0]["version"] == 0 and len(m[0]["versions"]) == 2 and m[0]["versions"][0] is None
assert m[1]["version"] == 2 and len(m[1]["versions"]) == 3
assert len(m[1]["tokens"]) == 24 and len(m[1]["tokens"][0][9]) == 10
PY
result "explore: /save writes the versions and the tokens (format 2)" $?
line "/clear"
wait_for 'conversation cleared' 5
line "/load $TMP/branches.json"
wait_for "loaded $TMP" 5
left | grep -q '^You ‹1/2›' && left | grep -q '^Assistant ‹3/3›' && [ "$(reply)" = "$new" ]
result "explore: /load restores the versions shown and the others" $?
keys Tab
wait_for 'focus: conversation' 5
keys '<'
wait_for '^Assistant ‹2/3›' 5 && [ "$(reply)" = "$new" ] && keys '<' && wait_for '^Assistant ‹1/3›' 5 && [ "$(reply)" = "$old" ]
result "explore: the loaded versions switch as before" $?
right | grep -qE '^ +1 +[0-9]+ '
result "explore: the loaded reply's tokens fill the inspector" $?
keys Escape
quit_wait

# ---- 4. step mode ------------------------------------------------------------
start -m "$STORIES" -n 40 --temp 0 --seed 7
wait_for '^ idle ' 20
keys F6
wait_for 'step mode on' 5 && screen | head -n 1 | grep -q ' step focus: input'
result "explore: F6 turns step mode on (the title bar says so)" $?
line "Once upon a time"
wait_for '^ waiting: step at pos 5' 20 && insp_title | grep -q 'Step: next token' && screen | grep -q 'EnterDraw'
result "explore: step mode waits before the first token (status, inspector, keys)" $?
keys Enter
wait_for '^ waiting: step at pos 6' 10
result "explore: Enter on an empty line lets the sampler draw one token" $?
T send-keys -l " the big dog"
keys Enter
wait_for 'big dog' 10 && wait_for '^ waiting: step at pos ([7-9]|[1-9][0-9])' 5
result "explore: typed text is forced into the reply" $?
p1=$(status | sed -n 's/^ waiting: step at pos \([0-9]*\).*/\1/p')
keys BSpace
wait_for "^ waiting: step at pos $((p1 - 1))" 10 && ! reply | grep -q 'big dog'
result "explore: Backspace takes the last token back (one position)" $? "pos was $p1"
keys Tab
wait_for 'focus: inspector' 5
keys Down Down
wait_for '^> +3 ' 5
pick=$(right | sed -n "s/^> *3 *[0-9]* '\\([^']*\\)'.*/\\1/p")
keys Enter
wait_for "^ waiting: step at pos $p1" 10 && reply | tr -d '\n' | grep -qF -- "$(echo "$pick" | sed 's/^ //')"
result "explore: Enter on the inspector's third row takes that candidate ('$pick')" $?
keys Escape
wait_idle 10 && left | grep -q '\[stopped\]'
result "explore: Esc ends a step-mode reply" $?
keys F6
wait_for 'step mode off' 5
quit_wait

# ---- 5. logit lens ------------------------------------------------------------
start -m "$STORIES" -n 12 --temp 0 --seed 7
wait_for '^ idle ' 20
line "Once upon a time"
turn
keys Tab
wait_for 'focus: conversation' 5
keys Home Right Right
keys F8
wait_for 'top-1 from block [1-5] of 5' 10
r=$(right)
n=$(printf '%s\n' "$r" | grep -cE '^ L[1-5]\*? ')
marked=$(printf '%s\n' "$r" | grep -cE '^ L[1-5]\* ')
last=$(printf '%s\n' "$r" | sed -n "s/^ L5\\*\\{0,1\\} *\\('[^']*'\\).*/\\1/p")
chosen=$(printf '%s\n' "$r" | sed -n "s/^ chosen \\('[^']*'\\):.*/\\1/p")
[ "$n" -eq 5 ] && [ "$marked" -eq 1 ] && [ -n "$last" ] && [ "$last" = "$chosen" ]
result "explore: F8 shows the lens: blocks L1..L5, one marked, L5's top-1 is the chosen token" $? \
    "rows=$n marked=$marked last=$last chosen=$chosen"
first=$(printf '%s\n' "$r" | sed -n 's/.*top-1 from block \([0-9]\) of 5.*/\1/p')
printf '%s\n' "$r" | grep -qE "^ L${first}\\* "
result "explore: the marked block is the one the header names" $?
keys Right
wait_for 'Lens: token 4/12' 5 && wait_for 'top-1 from block|never top-1' 10
result "explore: moving the cursor asks the lens of that step" $?
keys F8
wait_for '│  +#  +id token' 5
result "explore: F8 again shows the candidates" $?
keys Escape

# ---- 6. entropy strip -----------------------------------------------------------
keys F7
wait_for 'entropy strip: entropy' 5
n_text=$(reply | wc -l)
n_strip=$(left | grep -cE '^  [▁▂▃▄▅▆▇█ ]*[▁▂▃▄▅▆▇█][▁▂▃▄▅▆▇█ ]*$')
[ "$n_text" -ge 1 ] && [ "$n_strip" -eq "$n_text" ]
result "explore: F7 draws a strip line under every reply line ($n_strip of $n_text)" $?
line "/set n_predict 60"
line "/regen"
turn
keys Tab
wait_for 'focus: conversation' 5
keys Home ']'
# the inspector follows the selection at the next frame: poll, do not sleep
n=100
while :; do
    h=$(right | sed -n 's/^ entropy raw \([0-9.]*\).*/\1/p')
    awk -v h="$h" 'BEGIN { exit !(h != "" && h >= 2.0) }' && break
    n=$((n - 1)); [ $n -le 0 ] && break
    sleep 0.05
done
awk -v h="$h" 'BEGIN { exit !(h != "" && h >= 2.0) }'
result "explore: ] moves the inspector to an uncertain token (entropy $h >= 2 nats)" $?
keys Escape
line "/strip prob"
wait_for 'entropy strip: probability' 5
line "/strip off"
wait_for 'entropy strip: off' 5 && ! left | grep -qE '^  [▁▂▃▄▅▆▇█ ]*[▁▂▃▄▅▆▇█][▁▂▃▄▅▆▇█ ]*$'
result "explore: /strip off removes the strip" $?
quit_wait

# ---- 7. compare settings ------------------------------------------------------
start -m "$STORIES" -n 20 --temp 0 --seed 7
wait_for '^ idle ' 20
line "/compare temp 1.5 seed 3"
wait_for 'compare: A the panel' 5 && wait_for 'B: temp 1.5 seed 3' 5
result "explore: /compare splits the pane (A: the panel's parameters, B: temp 1.5 seed 3)" $?
line "Once upon a time"
wait_for 'B Inspector: latest step' 5
turn
wait_for '│Assistant \[n_predict reached\]' 20
asst=$(screen | grep -c 'Assistant \[n_predict reached\] 20')
[ "$asst" -ge 1 ] && screen | grep -qE '│Assistant'
result "explore: a message goes to both sides, each answers" $?
# the first step of each side: the same raw distribution
keys Tab
wait_for 'focus: conversation' 5
keys Home
sleep 0.3
a_top=$(right | sed -n '/A Inspector/,/B Inspector/p' | awk '$1 == "1" && $2 ~ /^[0-9]+$/ { print $2, $(NF-1); exit }')
keys C-w Home
sleep 0.3
b_top=$(right | sed -n '/B Inspector/,$p' | awk '$1 == "1" && $2 ~ /^[0-9]+$/ { print $2, $(NF-1); exit }')
[ -n "$a_top" ] && [ "$a_top" = "$b_top" ]
result "explore: both sides' first step has the same raw distribution (shared prompt: $a_top)" $? "A: $a_top B: $b_top"
keys Escape
line "/compare off"
wait_for 'compare off \(side B' 5 && ! screen | grep -q 'B: temp'
result "explore: /compare off closes the split" $?
quit_wait

# ---- 8. a mouse click on a token ------------------------------------------------
start -m "$STORIES" -n 24 --temp 0 --seed 7 --mouse
wait_for '^ idle ' 20
line "Once upon a time"
turn
row=$(screen | grep -n '^Assistant' | head -n 1 | cut -d: -f1)
# SGR mouse press and release on the reply's first line, column 5 (1-based)
keys -l "$(printf '\033[<0;5;%dM\033[<0;5;%dm' $((row + 1)) $((row + 1)))"
wait_for 'Inspector: token [1-3]/24' 5 && wait_for 'focus: conversation' 2
result "explore: --mouse: a click on a token selects it for the inspector" $?
quit_wait

# ---- 9. the other architectures: branch, lens, a step, with their chat templates ----
# (Qwen3.5's recurrent state goes back through checkpoints: the status line counts them)
for rel in models/qwen2-mini-q4_k_m models/qwen3-mini-q8_0 models/gemma3-mini-q8_0 models/phi3-mini-q8_0 \
           families2026/models/qwen35-mini-q8_0; do
    fam=${rel##*/}
    name="explore: $fam: branch from another candidate, the lens, a step"
    need "$TESTDATA/$rel.gguf" "$name" || continue
    blocks=$("$BIN" info "$TESTDATA/$rel.gguf" 2>/dev/null | awk '/^  layers/ { print $2 }')
    # qwen35: its name and checkpoints make the status line longer; the messages after it need room
    case $fam in qwen35*) E2E_COLS=140 ;; *) E2E_COLS=120 ;; esac
    start -m "$TESTDATA/$rel.gguf" -n 10 --temp 0 --seed 3
    wait_for '^ idle ' 20
    line "Hello there"
    turn
    ckpt_rc=0
    case $fam in
    qwen35*) status | grep -qE ' ckpt 1 [0-9.]+[KMG] ' || ckpt_rc=1 ;;
    *) status | grep -q ' ckpt ' && ckpt_rc=1 ;;
    esac
    result "explore: $fam: the status line counts state checkpoints for a recurrent model alone" $ckpt_rc \
        "$(status)"
    keys Tab
    wait_for 'focus: conversation' 5
    keys Left Left Left Enter
    wait_for 'focus: inspector' 5
    keys Down Enter
    wait_for 'branch at token' 10
    turn
    left | grep -q '^Assistant ‹2/2›'
    rc=$?
    keys F8
    wait_for "top-1 from block [0-9]+ of $blocks|never top-1" 10 || rc=1
    [ "$(right | grep -cE '^ L[0-9]+\*? ')" -ge 3 ] || rc=1
    keys F8
    wait_for 'logit lens off' 5
    keys Escape
    wait_for 'focus: input' 5
    keys F6
    wait_for 'step mode on' 5 || rc=1
    line "Go on"
    wait_for '^ waiting: step at pos' 20 || rc=1
    keys Enter
    wait_for '^ waiting: step at pos' 10 || rc=1
    keys Escape
    wait_idle 10 || rc=1
    result "$name" $rc "blocks=$blocks"
    quit_wait
done
exit 0
