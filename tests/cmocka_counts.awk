# cmocka_counts.awk LOG: "PASSED FAILED SKIPPED" of a cmocka run's output
# (tests/run.sh). Failed = the tests cmocka ran less those that passed or
# were skipped, so a test that crashed mid-run counts as failed too.
/^\[==========\] Running [0-9]+ test/ { ran += $3 }
/^\[       OK \]/ { pass++ }
/^\[  SKIPPED \]/ { skip++ }
END { printf "%d %d %d\n", pass, ran - pass - skip, skip }
