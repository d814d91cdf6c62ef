#!/bin/sh
# tests/run.sh's reading of sanitizer report files (tests/lib_sanitize.sh):
# a report or an unknown file is a finding; only LeakSanitizer's tracer
# failing at exit, with nothing else in the file, is not.
. tests/lib.sh
. tests/lib_sanitize.sh
W=$(mktemp -d "$OUT/sanitize.XXXXXX") || exit 1

cat >"$W/tracer" <<'R'
Tracer caught signal 11: addr=0x0 pc=0x7f52a1c3b8b0 sp=0x7f529b7fecd0
==7505==LeakSanitizer has encountered a fatal error.
==7505==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1
==7505==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)
R
cat >"$W/leak" <<'R'
=================================================================
==7506==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 24 byte(s) in 1 object(s) allocated from:
    #0 0x7f0 in malloc
    #1 0x55a in remote_start engine/remote/remote.c:120
SUMMARY: AddressSanitizer: 24 byte(s) leaked in 1 allocation(s).
R
# a tracer failure after a leak report is still the leak
{ cat "$W/leak"; cat "$W/tracer"; } >"$W/leak_then_tracer"
cat >"$W/unknown" <<'R'
==7507==WARNING: ASan is ignoring requested __asan_handle_no_return: stack type: default top: 0x7ffd; bottom 0x7f12; size: 0x00eb (1011)
False positive error reports may follow
R
printf '' >"$W/empty"

kind_is() { # NAME FILE WANT
    got=$(sanitize_kind "$2")
    if [ "$got" = "$3" ]; then ok "$1"; else not_ok "$1" "got $got, want $3"; fi
}
kind_is "sanitizer file: the tracer failing alone is not a finding" "$W/tracer" tracer
kind_is "sanitizer file: a leak report is a finding" "$W/leak" finding
kind_is "sanitizer file: a leak report then the tracer failing is a finding" "$W/leak_then_tracer" finding
kind_is "sanitizer file: an unknown warning is a finding" "$W/unknown" finding
kind_is "sanitizer file: an empty file is a finding" "$W/empty" finding

# what the summary shows: the report's key lines, or an unknown file's head
s=$(sanitize_show "$W/leak")
case "$s" in *"ERROR: LeakSanitizer"*SUMMARY*) ok "sanitizer summary: a leak's ERROR and SUMMARY lines" ;;
*) not_ok "sanitizer summary: a leak's ERROR and SUMMARY lines" "$s" ;; esac
s=$(sanitize_show "$W/unknown")
case "$s" in *"__asan_handle_no_return"*) ok "sanitizer summary: an unknown file's head" ;;
*) not_ok "sanitizer summary: an unknown file's head" "shown: [$s]" ;; esac
rm -rf "$W"
