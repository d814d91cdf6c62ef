#!/bin/sh
# The test runner's own counting (tests/run.sh, tests/cmocka_counts.awk) on
# real cmocka output: a program built here with passing, failing and skipped
# tests in two groups, and one that dies mid-run. A miscount would hide a
# failure or, as a skip once did (cmocka lists each skipped test twice),
# make the total negative and the run red for nothing.
. tests/lib.sh
W=$(mktemp -d "$OUT/runner.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
cat >"$W/t.c" <<'C'
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
static void pass(void **s) { (void)s; assert_true(1); }
static void failing(void **s) { (void)s; assert_int_equal(1, 2); }
static void skipped(void **s) { (void)s; skip(); }
static void crash(void **s) { (void)s; if (getenv("CRASH")) _exit(3); }
int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "";
    const struct CMUnitTest a[] = {cmocka_unit_test(pass), cmocka_unit_test(skipped), cmocka_unit_test(pass),
                                   cmocka_unit_test(skipped)};
    const struct CMUnitTest b[] = {cmocka_unit_test(pass), cmocka_unit_test(failing), cmocka_unit_test(skipped)};
    const struct CMUnitTest c[] = {cmocka_unit_test(pass), cmocka_unit_test(crash), cmocka_unit_test(pass)};
    int r = 0;
    if (strchr(which, 'a')) r |= cmocka_run_group_tests(a, NULL, NULL);
    if (strchr(which, 'b')) r |= cmocka_run_group_tests(b, NULL, NULL);
    if (strchr(which, 'c')) r |= cmocka_run_group_tests(c, NULL, NULL);
    return r;
}
C
if ! cc -o "$W/t" "$W/t.c" -lcmocka >"$W/cc.log" 2>&1; then
    not_ok "runner: a cmocka program builds" "$(cat "$W/cc.log")"; exit 0
fi
# counts ARGS WANT: the awk's "passed failed skipped" for the program's output
counts() {
    args=$1 want=$2
    "$W/t" "$args" >"$W/log" 2>&1
    got=$(awk -f tests/cmocka_counts.awk "$W/log")
    if [ "$got" = "$want" ]; then ok "runner: cmocka groups '$args' ${CRASH:+(crash) }count as $want"
    else not_ok "runner: cmocka groups '$args' ${CRASH:+(crash) }count as $want" "got: $got" "$(cat "$W/log")"; fi
}
counts a "2 0 2"
counts b "1 1 1"
counts ab "3 1 3"
counts c "3 0 0"
CRASH=1 counts c "1 2 0"
CRASH=1 counts ac "3 2 2"
