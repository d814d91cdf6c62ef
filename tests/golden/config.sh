#!/bin/sh
# Configuration as a user sees it: --print-config shows the merged layers
# (built-in defaults < system file < $XDG_CONFIG_HOME file < --config FILE <
# options) with each value's source; a bad line, key or value in any file is
# reported as FILE:LINE and skipped, never fatal; the output reads back.
# The system layer is read by $BUILD/tests/tokscope-sysconf, a tokscope
# whose compiled-in system directory is $BUILD/test-etc.
. tests/lib.sh
BUILD=${BUILD:-build}
SYS=$BUILD/tests/tokscope-sysconf
ETC=$(cd "$BUILD" && pwd)/test-etc
W=$(mktemp -d "$OUT/config.XXXXXX") || exit 1
trap 'rm -rf "$W" "$ETC"' EXIT
mkdir -p "$ETC/tokscope" "$W/xdg/tokscope" "$W/home"
run() { env -u NO_COLOR HOME="$W/home" XDG_CONFIG_HOME="$W/xdg" "$@" >"$W/out" 2>"$W/err"; rc=$?; }
# value of key $1 (before the last " ; ", the source comment) and its source
# a key's first line: [engine] n_ctx and threads come before [serve]'s
val() { sed -n "s/^$1 = \\(.*\\) ; .*/\\1/p" "$W/out" | sed 's/ *$//' | head -n 1; }
src() { sed -n "s/^$1 = .* ; //p" "$W/out" | head -n 1; }

if [ ! -x "$SYS" ]; then not_ok "config: $SYS built" "make test-bins builds it"; exit 0; fi

run "$BIN" --print-config
name="--print-config without files: every key, each a default"
n_keys=$(grep -cE '^[a-z_]+ = ' "$W/out")
n_default=$(grep -cE '^[a-z_]+ = .*; default$' "$W/out")
if [ $rc -eq 0 ] && [ "$n_keys" -ge 30 ] && [ "$n_keys" -eq "$n_default" ] && [ ! -s "$W/err" ] &&
    grep -q "^;   $W/xdg/tokscope/tokscope.ini (absent)$" "$W/out"; then ok "$name ($n_keys keys)"
else not_ok "$name" "exit $rc, $n_keys keys, $n_default defaults" "$(head -c 300 "$W/err")"; fi

printf '[sampling]\ntemp = 0.3\ntop_k = 5\n[ui]\nmouse = true\n[engine]\nn_ctx = 100\n' >"$ETC/tokscope/tokscope.ini"
printf '; user\n[sampling]\ntop_k = 6\nwarmth = 9\n[engine]\nthreads = 3\n' >"$W/xdg/tokscope/tokscope.ini"
printf '[engine]\nn_ctx = 200\ncontext_shift = perhaps\n[chat]\nsystem = "Be brief; really."\n' >"$W/extra.ini"
run "$SYS" --config "$W/extra.ini" --temp 0.4 -t 2 --print-config
name="layers: system < user < --config < options, each value naming its source"
if [ $rc -eq 0 ] && [ "$(val temp)" = 0.4 ] && [ "$(src temp)" = "command line: --temp" ] &&
    [ "$(val top_k)" = 6 ] && [ "$(src top_k)" = "$W/xdg/tokscope/tokscope.ini:3" ] &&
    [ "$(val mouse)" = true ] && [ "$(src mouse)" = "$ETC/tokscope/tokscope.ini:5" ] &&
    [ "$(val n_ctx)" = 200 ] && [ "$(src n_ctx)" = "$W/extra.ini:2" ] &&
    [ "$(val threads)" = 2 ] && [ "$(src threads)" = "command line: -t" ] &&
    [ "$(val system)" = '"Be brief; really."' ] && [ "$(val min_p)" = 0.05 ] && [ "$(src min_p)" = default ] &&
    [ "$(val context_shift)" = true ]; then ok "$name"
else not_ok "$name" "exit $rc" "$(grep -E '^(temp|top_k|mouse|n_ctx|threads|system|context_shift) ' "$W/out")"; fi

name="a bad key or value in a file is reported as FILE:LINE and skipped, not fatal"
if grep -qx "tokscope: $W/xdg/tokscope/tokscope.ini:4: unknown key 'warmth' in \\[sampling\\] (ignored)" "$W/err" &&
    grep -q "^tokscope: $W/extra.ini:3: \\[engine\\] context_shift: 'perhaps' is not a boolean.*(ignored)$" "$W/err" &&
    [ "$(wc -l <"$W/err")" -eq 2 ]; then ok "$name"
else not_ok "$name" "$(cat "$W/err")"; fi

name="--print-config output read back with --config gives the same values"
cp "$W/out" "$W/printed.ini"
env -u NO_COLOR HOME="$W/home" XDG_CONFIG_HOME="$W/none" "$BIN" --config "$W/printed.ini" --print-config >"$W/again" 2>"$W/err2"
sed -n 's/^\([a-z_]* = .*\) ; .*/\1/p' "$W/printed.ini" | sed 's/ *$//' >"$W/a"
sed -n 's/^\([a-z_]* = .*\) ; .*/\1/p' "$W/again" | sed 's/ *$//' >"$W/b"
if [ ! -s "$W/err2" ] && [ -s "$W/a" ] && cmp -s "$W/a" "$W/b"; then ok "$name"
else not_ok "$name" "$(cat "$W/err2")" "$(diff "$W/a" "$W/b" | head -5)"; fi

name="NO_COLOR turns colours off, named as the source"
env NO_COLOR=1 HOME="$W/home" XDG_CONFIG_HOME="$W/none" "$BIN" --print-config >"$W/out" 2>/dev/null
if [ "$(val colors)" = false ] && [ "$(src colors)" = "environment: NO_COLOR" ]; then ok "$name"
else not_ok "$name" "$(grep '^colors' "$W/out")"; fi

name="a bad option value is still an error (exit 2), a missing --config FILE too"
run "$BIN" --temp hot --print-config
rc1=$rc
run "$BIN" --config "$W/nope.ini" --print-config
if [ $rc1 -eq 2 ] && [ $rc -eq 2 ] && grep -q "nope.ini" "$W/err"; then ok "$name"
else not_ok "$name" "exit $rc1 and $rc" "$(cat "$W/err")"; fi

name="--help and the man page document --print-config"
if "$BIN" -m x --help | grep -q -- '--print-config' && grep -q 'print\\-config' man/tokscope.1; then ok "$name"
else not_ok "$name"; fi
