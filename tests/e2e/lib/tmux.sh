# Helpers for the end-to-end tests: the real binary in a detached tmux
# session of a fixed size, keys sent and the screen read with capture-pane.
# Every wait polls the screen with a timeout; nothing asserts timing.
# (Sourced by tests/e2e/*.sh after tests/lib.sh; not a test itself.)
# Set before start: E2E_COLS (the width, 120), STATE (XDG_STATE_HOME,
# $TMP/state), WRAP (a command tokscope runs under: setpriv, unshare),
# NO_COLOR_VALUE (NO_COLOR's value, empty).
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tokscope-e2e.XXXXXX")
SOCK="tokscope-e2e-$$-0"
N_START=0
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
# stops the session's server and removes its socket (tmux leaves it behind)
stop_server() {
    T kill-server >/dev/null 2>&1
    rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"
}
cleanup() {
    stop_server
    chmod -R u+w "$TMP" 2>/dev/null # a test may leave a read-only directory
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# start ARGS...: a fresh session (isolated HOME, config, state and TMPDIR)
start() {
    stop_server
    # a new server per session: a new-session racing a dying server fails
    N_START=$((N_START + 1))
    SOCK="tokscope-e2e-$$-$N_START"
    rm -f "$TMP/exit"
    mkdir -p "$TMP/home" "$TMP/cfg" "$TMP/tmp" "${STATE:-$TMP/state}"
    T new-session -d -x "${E2E_COLS:-120}" -y 40 \
        "cd '$(pwd)' && env HOME='$TMP/home' XDG_CONFIG_HOME='$TMP/cfg' XDG_STATE_HOME='${STATE:-$TMP/state}' \
         TMPDIR='$TMP/tmp' TERM=xterm-256color LANG=C.UTF-8 NO_COLOR='${NO_COLOR_VALUE:-}' ${WRAP:-} '$BIN' $*; \
         echo \$? > '$TMP/exit'; sleep 600"
    T set-option -g window-size manual >/dev/null 2>&1
}
screen() { T capture-pane -p 2>/dev/null; }
# the conversation pane: the columns left of the right column's rule
left() { screen | sed 's/│.*//'; }
# the right column (parameters, inspector), without the inspector's bars:
# after the last rule (compare settings split the pane with one more)
right() { screen | sed -n 's/^.*│//p' | sed -E 's/ *(▏|▎|▍|▌|▋|▊|▉|█)+ *$//'; }
status() { screen | grep -E '^ (idle|generating|prefill|loading|stopping|no model|waiting)' | head -n 1; }
# wait_for REGEX [SECONDS]: until the screen matches
wait_for() {
    n=$(( ${2:-15} * 20 ))
    while [ "$n" -gt 0 ]; do
        screen | grep -qE -- "$1" && return 0
        sleep 0.05
        n=$((n - 1))
    done
    return 1
}
# wait_idle [SECONDS]: until the status line says idle
wait_idle() {
    n=$(( ${1:-30} * 20 ))
    while [ "$n" -gt 0 ]; do
        status | grep -q '^ idle' && return 0
        sleep 0.05
        n=$((n - 1))
    done
    return 1
}
keys() { T send-keys "$@"; }
line() { T send-keys -l "$1"; T send-keys Enter; }
# branch_second: from the input, to the conversation (Tab), back to the
# reply's second token (Left, Left), into the inspector (Enter), to the
# second candidate (Down) and branch from it (Enter)
branch_second() { keys Tab; keys Left; keys Left; keys Enter; keys Down; keys Enter; }
result() { # NAME CONDITION-EXIT-STATUS [DETAIL]
    if [ "$2" -eq 0 ]; then ok "$1"; else
        not_ok "$1" "$3"
        echo "#   screen:"
        screen | sed 's/^/#   /' | head -n 45
    fi
}
# wait_exit [SECONDS]: until the program has exited (its status in $TMP/exit)
wait_exit() {
    n=$(( ${1:-20} * 20 ))
    while [ "$n" -gt 0 ] && [ ! -s "$TMP/exit" ]; do sleep 0.05; n=$((n - 1)); done
    [ -s "$TMP/exit" ]
}
# quit_wait: Ctrl-Q, then until the program has exited
quit_wait() {
    keys C-q
    wait_exit 10
}
