# Checks the model-family suites share (tests/golden/families.sh and
# families2026.sh); sourced after tests/lib.sh, with $W a scratch folder.

# golden_py FILE CODE: runs CODE with L = the golden file's JSON lines
golden_py() {
    python3 -c "import json,sys
L=[json.loads(l) for l in open(sys.argv[1])]
$2" "$1"
}

# greedy_text NAME MODEL GOLDEN [generate options]: `generate --temp 0` on
# the golden's prompt ids prints the golden's greedy text
greedy_text() {
    name=$1 model=$2 g=$3
    shift 3
    need "$model" "$name" && need "$g" "$name" || return 0
    ids=$(golden_py "$g" "print(','.join(map(str, L[0]['prompt_tokens'])))")
    n=$(golden_py "$g" "print(len(L[-1]['generated']))")
    "$BIN" generate -m "$model" --tokens "$ids" --temp 0 -n "$n" -c 512 "$@" >"$W/gen.txt" 2>"$W/gen.err"
    rc=$?
    # The golden's text went through JSON: bytes of a split UTF-8
    # sequence became U+FFFD, one or more of them; compare with every
    # run of those as one.
    if [ $rc -eq 0 ] && python3 -c "import json,re,sys
want=json.loads(open(sys.argv[1]).read().splitlines()[-1])['text']
got=open(sys.argv[2],'rb').read().decode('utf-8','replace')
f=lambda s: re.sub('\ufffd+','\ufffd',s)
sys.exit(0 if f(want)==f(got) and len(got)>0 else 1)" "$g" "$W/gen.txt"; then ok "$name"
    else not_ok "$name" "exit $rc" "$(head -c 200 "$W/gen.err")"; fi
}

# refuses NAME FILE TEXT: generate exits 1 with exactly one line on stderr
# that contains TEXT, and nothing on stdout
refuses() {
    "$BIN" generate -m "$2" -p "Hello" -n 4 >"$W/out" 2>"$W/err"
    rc=$?
    if [ $rc -eq 1 ] && [ ! -s "$W/out" ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -qF -- "$3" "$W/err"; then
        ok "$1: $(cat "$W/err")"
    else not_ok "$1" "exit $rc, want 1 with one line containing: $3" "$(head -n 3 "$W/err")"; fi
}

# info_has NAME MODEL PATTERN...: every pattern is a line of `info`
info_has() {
    name=$1 model=$2
    shift 2
    need "$model" "$name" || return 0
    "$BIN" info "$model" >"$W/info.txt" 2>&1 || { not_ok "$name" "info failed"; return 0; }
    for p in "$@"; do
        grep -qE -- "$p" "$W/info.txt" || { not_ok "$name" "missing: $p"; return 0; }
    done
    ok "$name"
}
