#!/bin/sh
# What the TUI costs generation: the real TUI, driven in tmux, against
# `tokscope generate` on the same model, prompt and token count, the two
# alternating pass by pass (the machine's speed drifts; alternating keeps
# the drift out of the ratio). Prints each pass and the median ratio
# TUI / generate of the generation speed. A benchmark, not a test: part of
# `make bench`, never of `make test`.
#
#   sh tests/tui_overhead.sh [MODEL]     (default: the TinyLlama-1.1B-shaped
#                                         Q4_0 file make bench writes)
# TUI_BENCH_N tokens per reply (200), TUI_BENCH_PASSES (5), BENCH_THREADS.
. tests/lib_cpu.sh
BUILD=${BUILD:-build}
BIN=${BIN:-./tokscope}
case "$BIN" in /*) ;; *) BIN="$(pwd)/${BIN#./}" ;; esac
MODEL=${1:-$BUILD/bench-models/tinyllama-1.1b-q4_0.gguf}
N=${TUI_BENCH_N:-200}
PASSES=${TUI_BENCH_PASSES:-5}
THREADS=${BENCH_THREADS:-$(nproc)}
PROMPT="Tell me a long story about a lighthouse keeper."

[ -f "$MODEL" ] || { echo "tui_overhead: no model $MODEL (make bench writes it)"; exit 0; }
command -v tmux >/dev/null 2>&1 || { echo "tui_overhead: tmux not installed"; exit 0; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tokscope-tuibench.XXXXXX")
SOCK="tokscope-tuibench-$$"
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server >/dev/null 2>&1; rm -rf "$TMP"' EXIT INT TERM

# The same tokens both ways: greedy, no end-of-turn (a random-weight model
# rarely ends, but a real one might), the chat template in both.
gen_tps() {
    "$BIN" generate -m "$MODEL" --chat -p "$PROMPT" -n "$N" --temp 0 -t "$THREADS" 2>"$TMP/gen.err" >/dev/null ||
        { sed 's/^/  /' "$TMP/gen.err" >&2; return 1; }
    sed -n 's/.*generation: \([0-9]*\) tokens in [0-9.]* s (\([0-9.]*\) tok\/s).*/\1 \2/p' "$TMP/gen.err"
}

# CPU ticks (utime + stime) of one task: /proc/PID/stat or /proc/PID/task/TID/stat
ticks() { sed 's/^.*) //' "$1" 2>/dev/null | awk '{ print $12 + $13 }'; }
# the TUI's UI thread (its main thread), its engine's threads, the tmux server
cpu_split() {
    u=$(ticks "/proc/$1/task/$1/stat") e=0
    for f in /proc/"$1"/task/*/stat; do
        case "$f" in "/proc/$1/task/$1/stat") continue ;; esac
        e=$((e + $(ticks "$f")))
    done
    echo "$u $e $(ticks "/proc/$2/stat")"
}

status() { T capture-pane -p 2>/dev/null | grep -E '^ (idle|generating|prefill|loading|stopping)' | head -n 1; }

tui_tps() {
    mkdir -p "$TMP/home" "$TMP/cfg" "$TMP/state"
    T new-session -d -x 160 -y 48 \
        "env HOME='$TMP/home' XDG_CONFIG_HOME='$TMP/cfg' XDG_STATE_HOME='$TMP/state' TERM=xterm-256color \
         LANG=C.UTF-8 '$BIN' -m '$MODEL' --temp 0 --n-predict $N -t $THREADS --no-autosave; sleep 60"
    i=0
    until status | grep -q '^ idle'; do
        i=$((i + 1)); [ $i -gt 600 ] && { echo "tui_overhead: the TUI did not load" >&2; return 1; }
        sleep 0.1
    done
    tpid=$(pgrep -P "$(T display -p '#{pane_pid}')" -x tokscope)
    spid=$(T display -p '#{pid}')
    c0=$(cpu_split "$tpid" "$spid")
    T send-keys -l "$PROMPT"
    T send-keys Enter
    # Polling is not free: each capture-pane is a tmux client process and a
    # copy of the pane, on the cores the engine uses, and `generate` has no
    # poller. So sleep through most of the reply (its length from the pass's
    # `generate` speed, $1), then poll once a second; the TUI times the reply
    # itself, so when the poll notices the end does not change the figure.
    sleep "$(awk -v n="$N" -v r="$1" 'BEGIN { printf "%.1f", (r > 0 ? 1 + 0.9 * n / r : 1) }')"
    i=0
    until status | grep -q '^ idle'; do
        i=$((i + 1)); [ $i -gt 600 ] && { echo "tui_overhead: no reply" >&2; return 1; }
        sleep 1
    done
    # the status line: "... | tg 57.4 t/s"; the reply's token count from /show is
    # not needed: n-predict fixes it (an early end of turn is reported below)
    s=$(status)
    c1=$(cpu_split "$tpid" "$spid")
    T kill-server >/dev/null 2>&1
    # "tok/s ui-ticks engine-ticks tmux-ticks" over the reply (prefill included)
    echo "$(echo "$s" | sed -n 's/.*tg \([0-9.]*\) t\/s.*/\1/p') $c0 $c1" |
        awk 'NF == 7 { print $1, $5 - $2, $6 - $3, $7 - $4 }'
}

echo "TUI overhead: $(basename "$MODEL"), $N tokens, $THREADS threads, $PASSES passes," \
    "$(cpu_name)"
: >"$TMP/ratios"
: >"$TMP/cpu"
p=1
while [ $p -le "$PASSES" ]; do
    g=$(gen_tps) || exit 1
    gn=${g% *} gt=${g#* }
    [ "$gn" = "$N" ] || echo "  (generate stopped after $gn tokens)"
    tc=$(tui_tps "$gt") || exit 1
    [ -n "$tc" ] || { echo "tui_overhead: the TUI's status line showed no tg speed" >&2; exit 1; }
    set -- $tc
    t=$1
    r=$(awk -v a="$t" -v b="$gt" 'BEGIN { printf "%.4f", a / b }')
    echo "$r" >>"$TMP/ratios"
    echo "$2 $3 $4" >>"$TMP/cpu"
    printf '  pass %d: generate %6.2f tok/s, TUI %6.2f tok/s, TUI/generate %.3f; CPU ticks UI %s, tmux %s, engine %s\n' \
        $p "$gt" "$t" "$r" "$2" "$4" "$3"
    p=$((p + 1))
done
sort -n "$TMP/ratios" | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "  median TUI/generate %.3f (overhead %.1f %%)\n", m, (1 - m) * 100 }'
# What the noise above cannot hide: the CPU the UI thread and tmux took
# while the engine's threads worked (ticks of 1/100 s, summed over passes).
awk '{ u += $1; e += $2; x += $3 } END {
    printf "  CPU: UI thread %d + tmux %d ticks against the engine'"'"'s %d (%.1f %%)\n", u, x, e, 100 * (u + x) / (e > 0 ? e : 1) }' "$TMP/cpu"
