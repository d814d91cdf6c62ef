#!/bin/sh
# tokscope serve reads the [serve] section of tokscope.ini (app/config.c):
# the system file < $XDG_CONFIG_HOME's < --config FILE < the command line.
# An unknown [serve] key or a bad value stops serve (exit 2, naming the file,
# line and key); the other sections' problems are only reported.
. tests/lib.sh
. tests/lib_serve.sh
S=$TESTDATA/models/stories260K.gguf
W="$OUT/serve_config"
rm -rf "$W"
mkdir -p "$W/xdg/tokscope" "$W/home"
# runs serve with only the test's configuration files
sv() { env HOME="$W/home" XDG_CONFIG_HOME="$W/xdg" "$BIN" serve "$@"; }

name="serve: a bad [serve] value exits 2 naming the file, line and key"
printf '[serve]\nport = 8081\nparallel = lots\n' >"$W/bad.ini"
sv -m "$S" --config "$W/bad.ini" >"$W/bad.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "bad.ini:3: \[serve\] parallel: 'lots' is not 1..256" "$W/bad.out"; then ok "$name"
else not_ok "$name" "exit $rc" "$(head -c 300 "$W/bad.out")"; fi

name="serve: an unknown [serve] key exits 2 naming it"
printf '[serve]\nparalel = 2\n' >"$W/typo.ini"
sv -m "$S" --config "$W/typo.ini" >"$W/typo.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "typo.ini:2: unknown key 'paralel' in \[serve\]" "$W/typo.out"; then ok "$name"
else not_ok "$name" "exit $rc" "$(head -c 300 "$W/typo.out")"; fi

name="serve: a bad value in another section is reported, not fatal"
printf '[ui]\ncolors = maybe\n[serve]\nport = 9\n' >"$W/other.ini"
sv -m "$S" --config "$W/other.ini" --print-config >"$W/other.out" 2>"$W/other.err"
rc=$?
if [ $rc -eq 0 ] && grep -q "other.ini:2: \[ui\] colors" "$W/other.err" && grep -q "^port = 9 " "$W/other.out"
then ok "$name"; else not_ok "$name" "exit $rc" "$(head -c 300 "$W/other.err")"; fi

name="serve --print-config: the command line beats --config beats the user's file"
printf '[serve]\nparallel = 2\nmax_queue = 7\nkv_max_mb = 9\nmodel = %s\n' "$S" >"$W/xdg/tokscope/tokscope.ini"
printf '[serve]\nparallel = 3\nmax_queue = 5\n' >"$W/cfg.ini"
sv --config "$W/cfg.ini" --max-queue 4 --print-config >"$W/print.out" 2>&1
got=$(sed -n '/^\[serve\]/,$p' "$W/print.out" | grep -E '^(parallel|max_queue|kv_max_mb) ' | sed 's/  */ /g')
want="max_queue = 4 ; command line: --max-queue
parallel = 3 ; $W/cfg.ini:2
kv_max_mb = 9 ; $W/xdg/tokscope/tokscope.ini:4"
if [ "$got" = "$want" ]; then ok "$name"; else not_ok "$name" "$got"; fi

if need "$S" "serve with [serve] keys on stories260K"; then
    # serve_start's own --port 0 and -t 1 beat the file; -m comes from it
    export HOME="$W/home" XDG_CONFIG_HOME="$W/xdg"
    slots() {
        python3 -c 'import sys; sys.path.insert(0, "tests/tools"); import serve_client as sc, json
o = json.loads(sc.request(sys.argv[1], "GET", "/health")[2]); print(o["slots_total"])' "$SPORT" 2>&1
    }
    name="serve: [serve] model and parallel from the user's file (2 slots, queue 7)"
    if serve_start "$W/a.log" && h=$(slots) && serve_stop && [ "$h" = 2 ] && grep -q "queue 7, 2 slots" "$W/a.log"
    then ok "$name"; else not_ok "$name" "slots ${h:-?}" "$(tail -n 3 "$W/a.log")"; kill "$SPID" 2>/dev/null; fi
    name="serve: --parallel 1 on the command line beats [serve] parallel"
    if serve_start "$W/b.log" --config "$W/cfg.ini" --parallel 1 && h=$(slots) && serve_stop && [ "$h" = 1 ] &&
        grep -q "queue 5, 1 slot," "$W/b.log"
    then ok "$name"; else not_ok "$name" "slots ${h:-?}" "$(tail -n 3 "$W/b.log")"; kill "$SPID" 2>/dev/null; fi
fi
