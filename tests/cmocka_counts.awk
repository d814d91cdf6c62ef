# cmocka_counts.awk LOG: "PASSED FAILED SKIPPED" of a cmocka run's output
# (tests/run.sh). Only the lines between a group's "Running N test(s)" and
# its "N test(s) run." count: after it cmocka lists the skipped and failed
# tests once more. Failed = the tests cmocka announced less those that
# passed or were skipped, so a test that died mid-run counts as failed too.
/^\[==========\] Running [0-9]+ test/ { ran += $3; in_run = 1; next }
/^\[==========\] [0-9]+ test\(s\) run/ { in_run = 0; next }
in_run && /^\[       OK \]/ { pass++ }
in_run && /^\[  SKIPPED \]/ { skip++ }
END { printf "%d %d %d\n", pass, ran - pass - skip, skip }
