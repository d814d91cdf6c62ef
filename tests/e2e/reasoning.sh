#!/bin/sh
# End-to-end test of reasoning in the real TUI (tmux), with the Qwen3 mini
# model (random weights, the real Qwen3 chat template with <think>). Random
# weights never write <think> on their own, so step mode forces the reply's
# text: "<think>", a sentence of reasoning, "</think>", an answer, the way a
# thinking model's tokens arrive. Checked: the reasoning shows under an open
# "thinking" line while it streams and is folded once the answer starts; F9
# and t unfold and fold it; the token cursor reaches the tokens inside the
# folded block (the inspector's token numbers are the reply's); the reasoning
# is kept by /save and /load; think and effort in the parameter panel and
# /set; think off changes the prompt (Qwen3's template closes an empty think
# block in it: the first step sits 4 tokens later) and the reply then has no
# reasoning. The 2026 models themselves (gpt-oss's harmony channels, Gemma
# 4's thought channel, the think/effort template variables on each) are
# e2e/families2026's.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "reasoning: tmux available" "tmux is a test dependency"; else echo "skip - reasoning (no tmux)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh
QWEN3=$TESTDATA/models/qwen3-mini-q8_0.gguf
need "$QWEN3" "reasoning: qwen3-mini model" || exit 0

# the conversation pane's text from the first "Assistant" label on
asst() { left | sed -n '/^Assistant/,$p'; }
step_pos() { status | sed -n 's/^ waiting: step at pos \([0-9]*\).*/\1/p'; }
# force TEXT: step mode forces its tokens; until the engine waits at a later position
force() {
    fp=$(step_pos)
    T send-keys -l "$1"
    keys Enter
    n=200
    while [ $n -gt 0 ]; do
        np=$(step_pos)
        [ -n "$np" ] && [ "$np" != "$fp" ] && return 0
        sleep 0.05
        n=$((n - 1))
    done
    return 1
}

# ---- 1. a reply that thinks: open while it thinks, folded at the answer ------
start -m "$QWEN3" -n 64 --temp 0 --seed 7
wait_for '^ idle ' 20
keys F6
wait_for 'step mode on' 5
line "What is 2+2?"
wait_for '^ waiting: step at pos' 20
p_auto=$(step_pos)
force "<think>"
wait_for '▾ thinking' 10
result "reasoning: <think> opens a 'thinking' block, unfolded while the model thinks" $?
force " Two and two make four."
wait_for 'Two and two make four' 10 && asst | grep -q '▾ thinking…'
result "reasoning: the reasoning streams inside the open block" $?
force "</think>"
force " Four."
wait_for '▸ thinking · [0-9]+ tokens' 10 && ! asst | grep -q 'Two and two make four' && asst | grep -q '^  Four\.'
result "reasoning: once the answer starts the block is folded (the answer shows, the reasoning does not)" $?
keys Escape
wait_idle 10
keys F9
wait_for 'thinking unfolded' 5 && asst | grep -q '▾ thinking · ' && asst | grep -q 'Two and two make four' &&
    asst | grep -q '^  Four\.'
result "reasoning: F9 unfolds the reasoning" $?
# dimmed: the reasoning line is drawn with another attribute than the answer
sgr() { T capture-pane -p -e | grep -F "$1" | head -n 1 | sed 's/│.*//' | grep -o "$(printf '\033')\\[[0-9;]*m" | tr -d '\033' | tr '\n' ' '; }
[ -n "$(T capture-pane -p -e | grep -F 'Two and two')" ] && [ "$(sgr 'Two and two')" != "$(sgr 'Four.')" ]
result "reasoning: the reasoning is set apart (another attribute than the answer)" $? "$(sgr 'Two and two') / $(sgr 'Four.')"
keys F9
wait_for 'thinking folded' 5 && ! asst | grep -q 'Two and two make four'
result "reasoning: F9 folds it again" $?

# ---- 2. the token cursor inside the folded block -------------------------------
keys Tab
wait_for 'focus: conversation' 5
keys Home
wait_for 'Inspector: token 1/' 5 && asst | grep -q 'cursor inside; F9 unfolds'
result "reasoning: Home puts the cursor on the first token, inside the folded block (the inspector shows it)" $?
n_all=$(right | sed -n 's/.*Inspector: token 1\/\([0-9]*\).*/\1/p' | head -n 1)
keys End
wait_for "Inspector: token $n_all/$n_all" 5
result "reasoning: End: the last token is number $n_all of the reply (indices unchanged by the fold)" $?
keys M-t
wait_for 'thinking unfolded' 5 && asst | grep -q 'Two and two make four'
result "reasoning: Alt-t (conversation focus) unfolds too" $?
keys Home
wait_for 'Inspector: token 1/' 5 && ! asst | grep -q 'cursor inside'
result "reasoning: unfolded, the cursor is on the block's text" $?
keys Escape
wait_for 'focus: input' 5

# ---- 3. saves keep it ---------------------------------------------------------
line "/save $TMP/think.json"
wait_for 'saved' 5
grep -qE '"reasoning":[[:space:]]*"Two and two make four."' "$TMP/think.json" &&
    grep -qE '"answer":[[:space:]]*"Four."' "$TMP/think.json"
result "reasoning: /save writes the reasoning and the answer apart" $?
quit_wait
start -m "$QWEN3" -n 64 --temp 0 --seed 7
wait_for '^ idle ' 20
line "/load $TMP/think.json"
wait_for 'Four\.' 10 && asst | grep -q 'thinking · '
result "reasoning: /load brings the reasoning block back" $?
quit_wait

# ---- 4. think and effort: the panel, /set, the prompt --------------------------
start -m "$QWEN3" -n 64 --temp 0 --seed 7
wait_for '^ idle ' 20
keys Tab Tab
wait_for 'focus: parameters' 5
keys Up
wait_for 'reasoning_effort' 5
keys Right Right Right
wait_for 'effort = high' 5 && right | grep -qE '^ *effort\* +high'
result "reasoning: the panel's effort row steps auto -> low -> medium -> high" $?
keys Up Right Right
wait_for 'think = off' 5 && right | grep -qE '^ *think\* +off'
result "reasoning: the panel's think row steps auto -> on -> off" $?
keys Escape
line "/set think auto"
wait_for 'think = auto' 5 && right | grep -qE '^ *think +auto'
result "reasoning: /set think auto" $?
keys F6
wait_for 'step mode on' 5
line "What is 2+2?"
wait_for '^ waiting: step at pos' 20
p_auto=$(step_pos)
keys Escape
wait_idle 10
line "/clear"
line "/set think off"
wait_for 'think = off' 5
line "What is 2+2?"
wait_for '^ waiting: step at pos' 20
p_off=$(step_pos)
[ -n "$p_auto" ] && [ -n "$p_off" ] && [ "$p_off" -eq $((p_auto + 4)) ]
result "reasoning: think off: the prompt closes an empty think block (first step at pos $p_off, not $p_auto)" $?
force "Four."
wait_for 'Four\.' 10 && ! asst | grep -q 'thinking'
result "reasoning: think off: the reply is all answer" $?
keys Escape
wait_idle 10
line "/show"
wait_for 'reasoning: think; think off, effort high' 5
result "reasoning: /show names the template's reasoning style and the settings" $?
keys Escape
quit_wait
