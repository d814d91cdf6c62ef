# What a sanitizer's report file is (sourced by tests/run.sh; its rules are
# checked by tests/golden/sanitize.sh).
#
# sanitize_kind FILE: prints "tracer" when FILE is only LeakSanitizer's own
# tracer failing at exit ("LeakSanitizer has encountered a fatal error", no
# ERROR, SUMMARY or runtime error line): a known intermittent fault of the
# tracer (google/sanitizers#1353), after which that process's leak check did
# not run. Prints "finding" for anything else: a report, or a file we do not
# understand (never silently passed).
sanitize_kind() {
    if grep -q 'LeakSanitizer has encountered a fatal error' "$1" &&
        ! grep -q -E 'ERROR|SUMMARY|runtime error' "$1"; then
        echo tracer
    else
        echo finding
    fi
}

# sanitize_show FILE: the lines of a finding worth reading in a summary; the
# file's head when none of them is there
sanitize_show() {
    if grep -q -E 'ERROR|SUMMARY|runtime error|#[0-4] ' "$1"; then
        grep -m 8 -E 'ERROR|SUMMARY|runtime error|#[0-4] ' "$1"
    else
        head -n 8 "$1"
    fi | sed 's/^/  /'
}
