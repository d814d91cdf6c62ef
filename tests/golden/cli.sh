#!/bin/sh
# The command line of every subcommand and of the TUI (app/cli.c): a bad
# option or value is named in one line (not the whole usage) that points to
# --help, with exit status 2; an option takes the same values wherever it is
# accepted (the TUI's ranges: --top-k -3 and -n -1 are fine); a run-time
# error is exit status 1 in every subcommand (tokscope(1), EXIT STATUS).
. tests/lib.sh
M=$TESTDATA/models/stories260K.gguf
G=$TESTDATA/golden/logits/stories260K.once.jsonl
W=$(mktemp -d "$OUT/cli.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
printf '[{"role": "user", "content": "hi"}]\n' >"$W/msgs.json"

# usage_error NAME REGEX ARGS...: exit 2, and stderr is exactly one line,
# "tokscope[ CMD]: <REGEX>; see 'tokscope[ CMD] --help'", nothing on stdout
usage_error() {
    name=$1 want=$2
    shift 2
    "$BIN" "$@" >"$W/out" 2>"$W/err" </dev/null
    rc=$?
    case "$1" in -*) cmd="tokscope" ;; *) cmd="tokscope $1" ;; esac
    if [ $rc -eq 2 ] && [ ! -s "$W/out" ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
        grep -qx -- "$cmd: $want; see '$cmd --help'" "$W/err"; then ok "$name"
    else not_ok "$name" "exit $rc (want 2)" "$(head -n 3 "$W/err")"; fi
}

# ---- the cases of issue 35, in every subcommand that takes the option --------
usage_error "generate --bogus: names the option" "unknown option '--bogus'" generate -m "$M" -p x --bogus
usage_error "logits --bogus: names the option" "unknown option '--bogus'" logits -m "$M" -p x --bogus
usage_error "compare --bogus: names the option" "unknown option '--bogus'" compare -m "$M" "$G" --bogus
usage_error "tokenize --bogus: names the option" "unknown option '--bogus'" tokenize -m "$M" --bogus
usage_error "template --bogus: names the option" "unknown option '--bogus'" template --bogus "$W/msgs.json"
usage_error "info --bogus: names the option" "unknown option '--bogus'" info --bogus "$M"
usage_error "bench --bogus: names the option" "unknown option '--bogus'" bench -m "$M" --bogus
usage_error "serve --bogus: names the option" "unknown option '--bogus'" serve -m "$M" --bogus
usage_error "pull --bogus: names the option" "unknown option '--bogus'" pull --bogus a/b
usage_error "tui --bogus: names the option" "unknown option '--bogus'" --bogus

N_WANT="want an integer in -1\.\.1000000 (tokens to generate; -1 = no limit)"
usage_error "generate -n abc: names the value and the range" "invalid value 'abc' for -n: $N_WANT" generate -m "$M" -p x -n abc
usage_error "generate --n-predict abc: names the option as typed" "invalid value 'abc' for --n-predict: $N_WANT" generate -m "$M" -p x --n-predict abc
usage_error "tui -n abc: the same message as generate" "invalid value 'abc' for -n: $N_WANT" -m "$M" -n abc
usage_error "logits -n abc: names the value and the range" \
    "invalid value 'abc' for -n: want an integer in 0\.\.1048576 (greedy tokens to generate)" logits -m "$M" -p x -n abc
usage_error "bench -n abc: names the value" "invalid value 'abc' for -n: want N,\.\. (0 to 16777216) (generated tokens)" bench -m "$M" -n abc

P_WANT="want a number in 0\.\.1 (nucleus mass; 1 = off)"
usage_error "generate --top-p 2: names the value and the range" "invalid value '2' for --top-p: $P_WANT" generate -m "$M" -p x --top-p 2
usage_error "tui --top-p 2: the same message as generate" "invalid value '2' for --top-p: $P_WANT" -m "$M" --top-p 2
usage_error "generate --top-p=abc: the =VALUE form too" "invalid value 'abc' for --top-p: $P_WANT" generate -m "$M" -p x --top-p=abc

usage_error "logits -k abc: names the value and the range" \
    "invalid value 'abc' for -k: want an integer in 0\.\.16777216 (logits listed per position)" logits -m "$M" -p x -k abc
usage_error "compare --top abc: names the value and the range" \
    "invalid value 'abc' for --top: want an integer in 0\.\.16777216 (positions to list)" compare -m "$M" "$G" --top abc

K_WANT="want an integer <= 1000000 (keep the k most likely; <= 0 = off)"
usage_error "generate --top-k abc: names the value and the range" "invalid value 'abc' for --top-k: $K_WANT" generate -m "$M" -p x --top-k abc
usage_error "tui --top-k abc: the same message as generate" "invalid value 'abc' for --top-k: $K_WANT" -m "$M" --top-k abc

# other kinds of mistakes, named the same way
usage_error "generate -n (no value): says it needs one" "option '-n' needs a value" generate -m "$M" -p x -n
usage_error "generate --temp (no value): says it needs one" "option '--temp' needs a value" generate -m "$M" -p x --temp
usage_error "generate --chat=1: says it takes none" "option '--chat' takes no value" generate -m "$M" -p x --chat=1
usage_error "generate --top: names both options it could be" "ambiguous option '--top' (--top-k, --top-p)" generate -m "$M" -p x --top 3
usage_error "generate --seed -5: names the value" \
    "invalid value '-5' for --seed: want random or an integer in 0\.\.4294967295 (sampling seed; random (or -1) = fresh)" \
    generate -m "$M" -p x --seed -5
usage_error "generate without -m: says so" "-m MODEL is required" generate -p x
usage_error "generate with -p and --tokens: says so" "give the prompt as -p TEXT or as --tokens LIST (one of the two)" \
    generate -m "$M" -p x --tokens 1
usage_error "generate: an extra operand is named" "unexpected argument 'extra'" generate -m "$M" -p x extra
usage_error "compare -ctk q2: llama.cpp's spelling, named as typed" \
    "invalid value 'q2' for -ctk: want f16, q8_0, q4_0 or f32 (KV cache type of keys)" compare -m "$M" "$G" -ctk q2
usage_error "serve --port 70000: names the range" \
    "invalid value '70000' for --port: want an integer in 0\.\.65535 (TCP port; 0 = any free port)" serve -m "$M" --port 70000
usage_error "tui --temp hot: names the value" "invalid value 'hot' for --temp: want a number <= 5 (temperature; <= 0 = greedy)" --temp hot

# ---- the same values everywhere: what --help and the TUI accept runs ---------
name="generate --top-k -3 runs (<= 0 is off, as --help says)"
if need "$M" "$name"; then
    "$BIN" generate -m "$M" -p "Once" -n 4 --top-k -3 --seed 1 >"$W/out" 2>"$W/err"
    rc=$?
    "$BIN" generate -m "$M" -p "Once" -n 4 --top-k 0 --seed 1 >"$W/want" 2>/dev/null
    if [ $rc -eq 0 ] && [ -s "$W/out" ] && cmp -s "$W/out" "$W/want"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(cat "$W/err")"; fi

    name="generate -n -1 runs until the context is full (no limit)"
    "$BIN" generate -m "$M" -p "Once" -n -1 -c 32 --temp 0 >"$W/out" 2>"$W/err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q 'generation: 31 tokens.*stop: context full' "$W/err"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(tail -n 2 "$W/err")"; fi
fi
name="tui --top-k -3 and -n -1 are accepted: top_k 0 (off), n_predict -1"
env HOME="$W/home" XDG_CONFIG_HOME="$W/none" "$BIN" --top-k -3 -n -1 --print-config >"$W/out" 2>"$W/err"
rc=$?
if [ $rc -eq 0 ] && grep -q '^top_k = 0 .*; command line: --top-k$' "$W/out" &&
    grep -q '^n_predict = -1 .*; command line: -n$' "$W/out"; then ok "$name"
else not_ok "$name" "exit $rc" "$(cat "$W/err")"; fi

# ---- exit status: 2 for a usage error, 1 for a run-time error, everywhere ----
# (tokenize and template said 1 for both)
usage_error "tokenize without -m: usage error, exit 2" "-m MODEL is required" tokenize -p x
usage_error "template without MESSAGES.json: usage error, exit 2" "MESSAGES.json is required" template --builtin chatml
usage_error "template --var without =: usage error, exit 2" \
    "invalid value 'x' for --var: want NAME=VALUE (a template variable)" template --builtin chatml --var x "$W/msgs.json"
usage_error "template -m and --template: usage error, exit 2" "use either -m or --template, not both" \
    template -m "$M" --template "$W/t.jinja" "$W/msgs.json"
usage_error "template --date 2020: usage error, exit 2" \
    "invalid value '2020' for --date: want YYYY-MM-DD (today's date in the template)" template --date 2020 "$W/msgs.json"

# runtime NAME ARGS...: exit 1 (a file that is not there)
runtime() {
    name=$1
    shift
    HF_ENDPOINT=http://127.0.0.1:9 TOKSCOPE_PULL_STALL=2 "$BIN" "$@" >"$W/out" 2>"$W/err" </dev/null
    rc=$?
    if [ $rc -eq 1 ] && [ -s "$W/err" ]; then ok "$name"; else not_ok "$name" "exit $rc (want 1)" "$(head -n 3 "$W/err")"; fi
}
NO=$W/no-such-model.gguf
runtime "generate, a missing model: exit 1" generate -m "$NO" -p x
runtime "logits, a missing model: exit 1" logits -m "$NO" -p x
runtime "compare, a missing golden file: exit 1" compare -m "$NO" "$W/no.jsonl"
runtime "tokenize, a missing model: exit 1" tokenize -m "$NO" -p x
runtime "template, a missing messages file: exit 1" template --builtin chatml "$W/no.json"
runtime "info, a missing model: exit 1" info "$NO"
runtime "bench, a missing model: exit 1" bench -m "$NO" -r 1
runtime "serve, a missing model: exit 1" serve -m "$NO" --port 0
runtime "pull, a hub that does not answer: exit 1" pull owner/repo -o "$W/pulled"
runtime "tui, a missing model: exit 1" -m "$NO"

# ---- the man page: every subcommand and variable is an entry of its own ------
name="man page: pull and TOKSCOPE_API_KEY are entries of their own (.TP), groff has no warning"
if command -v groff >/dev/null 2>&1; then
    groff -man -Tutf8 -ww man/tokscope.1 2>"$W/groff.err" | sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g' >"$W/man.txt"
    if [ ! -s "$W/groff.err" ] && grep -q '^       pull REPO' "$W/man.txt" && grep -q '^       TOKSCOPE_API_KEY$' "$W/man.txt" &&
        grep -q '^       serve -m MODEL' "$W/man.txt"; then ok "$name"
    else not_ok "$name" "$(head -n 3 "$W/groff.err")" "$(grep -n 'pull REPO\|TOKSCOPE_API_KEY' "$W/man.txt")"; fi
else echo "skip - $name (no groff)"; fi

# ---- DRY on the command line: llama.cpp's options, llama-server's replies ----
# --dry-sequence-breaker as llama.cpp's: repeatable, the first one clears the
# default breakers, "none" clears them all. generate with the DRY options of
# tests/golden/reference/serve/dry.{custom,default,never}.req (seed 1) gives
# llama-server 34af94cd's replies to them (make_dry.sh): its breakers ("cat",
# ".", "sat on"), the defaults, and none then "~". The option was missing:
# DRY's breakers were reachable through serve alone.
R=tests/golden/reference/serve
if need "$M" "generate --dry-*"; then
    DRYP=$(python3 -c "import json;print(json.load(open('$R/dry.custom.req'))['prompt'], end='')")
    dry_gen() { # REF ARGS...: generate's text equals the reference reply's
        ref=$1
        shift
        "$BIN" generate -m "$M" -p "$DRYP" -n 30 --temp 1 --seed 1 --top-k 0 --dry-multiplier 0.5 --dry-base 1.75 \
            --dry-allowed-length 1 --dry-penalty-last-n 128 "$@" >"$W/dry.out" 2>"$W/dry.err"
        python3 -c "import json,sys; sys.exit(open(sys.argv[2],encoding='utf-8').read() != json.load(open(sys.argv[1]))['choices'][0]['text'])" \
            "$R/dry.$ref.json" "$W/dry.out"
    }
    check_dry() { # NAME REF ARGS...
        name=$1
        shift
        if dry_gen "$@"; then ok "$name"; else not_ok "$name" "$(cat "$W/dry.out")" "$(head -n 2 "$W/dry.err")"; fi
    }
    check_dry "generate --dry-sequence-breaker (three, the defaults cleared): llama-server's reply" \
        custom --dry-sequence-breaker cat --dry-sequence-breaker . --dry-sequence-breaker "sat on"
    check_dry "generate --dry-multiplier without breakers: llama.cpp's default breakers, llama-server's reply" default
    check_dry "generate --dry-sequence-breaker none clears them, a later one adds: llama-server's reply" \
        never --dry-sequence-breaker cat --dry-sequence-breaker none --dry-sequence-breaker "~"
fi
usage_error "generate --dry-multiplier 200: names the range" \
    "invalid value '200' for --dry-multiplier: want a number in 0\.\.100 (DRY penalty strength; 0 = off)" \
    generate -m "$M" -p x --dry-multiplier 200
usage_error "generate: a 17th --dry-sequence-breaker is refused" "more than 16 DRY sequence breakers" \
    generate -m "$M" -p x $(for i in $(seq 1 17); do printf -- '--dry-sequence-breaker b%d ' "$i"; done)
usage_error "tui: a 17th --dry-sequence-breaker is refused" "more than 16 DRY sequence breakers" \
    -m "$M" $(for i in $(seq 1 17); do printf -- '--dry-sequence-breaker b%d ' "$i"; done)
