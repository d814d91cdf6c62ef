# Helpers for shell test suites (tests/golden/*.sh, tests/e2e/*.sh).
# Each check prints "ok - NAME" or "not ok - NAME"; tests/run.sh counts them.
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BIN=${BIN:-tokscope}
case "$BIN" in /*) ;; *) BIN="$(pwd)/$BIN" ;; esac
OUT=${OUT:-tests/out}
mkdir -p "$OUT"

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

in_ci() { [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; }

# need FILE NAME: true when FILE exists. Otherwise a failure in CI, a skip elsewhere.
need() {
    [ -e "$1" ] && return 0
    if in_ci; then not_ok "$2" "test data missing: $1"; else echo "skip - $2 (missing $1)"; fi
    return 1
}

# check NAME CMD...: runs CMD, ok when it exits 0.
check() {
    name=$1; shift
    if "$@" >"$OUT/last.log" 2>&1; then ok "$name"; else not_ok "$name" "$(tail -n 5 "$OUT/last.log")"; fi
}
