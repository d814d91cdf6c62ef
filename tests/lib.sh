# Helpers for shell test suites (tests/golden/*.sh, tests/e2e/*.sh).
# Each check prints "ok - NAME" or "not ok - NAME"; tests/run.sh counts them.
TESTDATA=${TOKSCOPE_TESTDATA:-../shared}
BIN=${BIN:-tokscope}
case "$BIN" in /*) ;; *) BIN="$(pwd)/$BIN" ;; esac
OUT=${OUT:-tests/out}
mkdir -p "$OUT"

# xfail_of MSG: the tests/xfail.txt entry MSG starts with (the entry, then
# the end or a space), if any.
XFAIL_LIST=${XFAIL_LIST:-tests/xfail.txt}
xfail_of() {
    [ -f "$XFAIL_LIST" ] || return 1
    grep -v '^#' "$XFAIL_LIST" | grep -v '^$' | while IFS= read -r x; do
        case "$1" in "$x" | "$x "*) echo "$x"; break ;; esac
    done | grep .
}

# A check listed in tests/xfail.txt reports "xfail - NAME" when it fails, as
# expected, and "not ok" when it passes: its mark must then go.
ok() {
    if x=$(xfail_of "$1"); then echo "not ok - $1"; echo "#   XPASS: listed in $XFAIL_LIST, remove it there"
    else echo "ok - $1"; fi
}
not_ok() {
    if x=$(xfail_of "$1"); then echo "xfail - $x"; return; fi
    echo "not ok - $1"; shift; for l in "$@"; do echo "#   $l"; done
}

# The variant builds make test makes beside the native one where this CPU
# can run them, each with kernels of its own: AVX2 (no AVX-512: Zen 2/3,
# older Intel) and AVX-512 without VNNI (Skylake-SP/X). The bit-exact
# goldens run through every one present.
AVX2=${BUILD:-build}/avx2/tokscope
SKX=${BUILD:-build}/skx/tokscope
# variants: the variant binaries present (paths as above), one per line
variants() { for v in "$AVX2" "$SKX"; do [ -x "$v" ] && echo "$v"; done; }
# build_label BIN: native, or the variant's name
build_label() {
    case "$1" in "$AVX2" | "$(pwd)/$AVX2") echo "AVX2 build" ;; "$SKX" | "$(pwd)/$SKX") echo "AVX-512 no-VNNI build" ;;
        *) echo native ;; esac
}

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
