#!/bin/sh
# End-to-end: the TUI (tmux) on each 2026 family's mini model
# (../shared/families2026/models: random weights, the real chat templates
# embedded, the 512-token stories260K vocab, so the templates' markers are
# plain text). Each model: a turn in step mode whose first step sits at the
# rendered prompt's length, which `tokscope template` with the same
# template variables and `tokscope tokenize` give (the prompt the engine
# evaluated is the one the template renders); the inspector's candidates
# for a token of the reply; then the panel's think (Qwen3/3.5: off closes an
# empty think block; Gemma 4: on opens a system turn with <|think|>) or
# effort (gpt-oss: low and high change the system message's "Reasoning:"
# line), and the next turn's prompt must change as the template says (a
# toggle that did nothing leaves the first step where it was). Random
# weights never write reasoning by themselves: on gpt-oss (the harmony
# analysis channel) and Gemma 4 (the thought channel) step mode forces a
# reply that reasons, then answers; the block is open while it thinks,
# folded at the answer, F9 and t unfold and fold it, and unfolded it shows
# the reasoning without the format's headers. One model at a time, few
# tokens each: about a minute.
. tests/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
    if in_ci; then not_ok "families2026 tui: tmux available" "tmux is a test dependency"; else echo "skip - families2026 tui (no tmux)"; fi
    exit 0
fi
. tests/e2e/lib/tmux.sh
M=$TESTDATA/families2026/models

asst() { left | sed -n '/^Assistant/,$p'; }
step_pos() { status | sed -n 's/^ waiting: step at pos \([0-9]*\).*/\1/p'; }
force() { # TEXT: step mode forces its tokens; until the engine waits at a later position
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
# prompt_len MODEL [--var NAME=VALUE]...: the tokens of "Hi" rendered by the
# model's template with those variables (what the first step's position
# must be). `template -m` renders bos_token as the vocab's BOS text, which
# the engine leaves out (the tokenizer adds BOS): a leading one goes.
printf '[{"role": "user", "content": "Hi"}]' >"$TMP/hi.json"
prompt_len() {
    pm=$1
    shift
    bos=$("$BIN" info -m "$pm" 2>/dev/null | sed -n "s/^ *bos *[0-9]* '\(.*\)'\$/\1/p" | head -n 1)
    bre=$(printf '%s' "$bos" | sed 's/[][\.*^$/]/\\&/g') # GNU sed keeps a missing last newline missing
    "$BIN" template -m "$pm" "$@" "$TMP/hi.json" 2>/dev/null | sed "1s/^$bre//" | "$BIN" tokenize -m "$pm" 2>/dev/null |
        wc -w
}
# turn: /clear, "Hi" in step mode; sets $pos (the first step's position)
turn() {
    wait_idle 10
    line "/clear"
    wait_for 'Type a message and press Enter' 5
    line "Hi"
    wait_for '^ waiting: step at pos' 20
    pos=$(step_pos)
}
# panel HINT RIGHTS: focus the parameters, Up until the selected row's hint
# says HINT (enable_thinking: think, reasoning_effort: effort), Right RIGHTS
# times, back to the input
panel() {
    keys Tab Tab
    wait_for 'focus: parameters' 5
    i=0
    while [ $i -lt 20 ] && ! wait_for "$1" 1; do keys Up; i=$((i + 1)); done # each Up drawn before the next
    i=0
    while [ $i -lt "$2" ]; do keys Right; i=$((i + 1)); done
    keys Escape
    wait_for 'focus: input' 5
}
# the inspector shows the candidates of the reply's first token
inspect() { # NAME
    keys Tab
    wait_for 'focus: conversation' 5
    keys Home
    wait_for 'Inspector: token 1/' 5 && right | grep -qE '^ +2 +[0-9]+ ' && right | grep -qE '^ +3 +[0-9]+ '
    result "families2026 $1: the inspector shows the top-k candidates of a reply token" $?
    keys Escape
    wait_for 'focus: input' 5
}
# the unfolded block shows the reasoning, not the format's markers or headers
no_headers() { ! asst | sed 1d | grep -qE 'analysis|assistant|final|<\||\|>|thought'; }

for f in ${FAMILIES2026_TUI:-qwen3moe-mini-q8_0 qwen35-mini-q8_0 qwen35moe-mini-q8_0 gptoss-mini-mxfp4 gemma4-mini-q8_0 gemma4moe-mini-q8_0}; do
    model=$M/$f.gguf
    need "$model" "families2026 $f: the TUI" || continue
    name=${f%%-*}
    start -m "$model" -n 200 --temp 0 --seed 7
    wait_for '^ idle ' 30
    result "families2026 $name: the TUI opens the model" $?
    keys F6
    wait_for 'step mode on' 5
    turn
    want=$(prompt_len "$model")
    [ -n "$pos" ] && [ "$pos" -eq "$want" ]
    result "families2026 $name: the first step sits at the rendered prompt's length (think/effort auto: $want)" $? "pos $pos"
    case $name in
    gptoss | gemma4 | gemma4moe)
        if [ "$name" = gptoss ]; then
            open='<|channel|>analysis<|message|>' close='<|end|><|start|>assistant<|channel|>final<|message|>'
        else
            open='<|channel>thought' close='<channel|>'
        fi
        force "$open"
        force " Two and two make four."
        wait_for 'Two and two make four' 10 && asst | grep -q '▾ thinking…' && no_headers
        result "families2026 $name: forced reasoning streams inside an open block, no header shown" $?
        force "$close"
        force " Four."
        wait_for '▸ thinking · [0-9]+ tokens' 10 && ! asst | grep -q 'Two and two' && asst | grep -q '^  Four\.'
        result "families2026 $name: once the answer starts the block is folded" $?
        keys Escape
        wait_idle 10
        keys F9
        wait_for 'thinking unfolded' 5 && asst | grep -q 'Two and two make four' && no_headers
        result "families2026 $name: F9 unfolds the reasoning, without the format's markers" $?
        keys Tab
        wait_for 'focus: conversation' 5
        keys M-t
        wait_for 'thinking folded' 5 && ! asst | grep -q 'Two and two'
        result "families2026 $name: Alt-t folds it again" $?
        keys Escape
        wait_for 'focus: input' 5
        ;;
    *)
        keys Enter
        keys Enter
        wait_for '^ waiting: step at pos' 10
        keys Escape
        wait_idle 10
        ;;
    esac
    inspect "$name"
    case $name in
    gptoss)
        panel reasoning_effort 1 # effort auto -> low
        wait_for 'effort = low' 5
        turn
        want=$(prompt_len "$model" --var reasoning_effort=low)
        [ "$pos" -eq "$want" ] && [ "$want" -ne "$(prompt_len "$model")" ]
        result "families2026 $name: effort low changes the next prompt as the template says ($want tokens)" $? "pos $pos"
        keys Escape
        wait_idle 10
        panel reasoning_effort 2 # low -> medium -> high
        wait_for 'effort = high' 5
        turn
        want=$(prompt_len "$model" --var reasoning_effort=high)
        [ "$pos" -eq "$want" ] && [ "$want" -ne "$(prompt_len "$model" --var reasoning_effort=low)" ]
        result "families2026 $name: effort high changes it again ($want tokens)" $? "pos $pos"
        ;;
    gemma4 | gemma4moe)
        panel enable_thinking 1 # think auto -> on
        wait_for 'think = on' 5
        turn
        want=$(prompt_len "$model" --var enable_thinking=true)
        [ "$pos" -eq "$want" ] && [ "$want" -ne "$(prompt_len "$model")" ]
        result "families2026 $name: think on changes the next prompt as the template says ($want tokens)" $? "pos $pos"
        ;;
    *)
        panel enable_thinking 2 # think auto -> on -> off
        wait_for 'think = off' 5
        turn
        want=$(prompt_len "$model" --var enable_thinking=false)
        [ "$pos" -eq "$want" ] && [ "$want" -ne "$(prompt_len "$model")" ]
        result "families2026 $name: think off changes the next prompt as the template says ($want tokens)" $? "pos $pos"
        ;;
    esac
    keys Escape
    wait_idle 10
    quit_wait
done
