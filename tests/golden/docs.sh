#!/bin/sh
# README.md, docs/ and the man page against each other and the program:
# every relative link of README.md and docs/*.md names a file that exists
# and, with an #anchor, a heading there (GitHub's slugs); every docs/*.md is
# linked from the README; the README's quick start starts with make run and
# make test; every subcommand of `tokscope --help` is in the README's command
# list and has its own paragraph in the man page, whose text names every
# option its --help lists; every architecture of engine/model/arch_*.c has
# its row in docs/architecture.md; and no page says a model family is not
# runnable yet while tests/xfail.txt marks none. The checks themselves:
# tests/tools/doc_check.py (python3 stdlib).
. tests/lib.sh
DOC="python3 tests/tools/doc_check.py"

name="docs: every relative link and #anchor of README.md and docs/*.md resolves"
if out=$($DOC links README.md docs/*.md); then ok "$name"; else not_ok "$name" "$(echo "$out" | head -n 5)"; fi

name="docs: every docs/*.md is linked from README.md"
if out=$($DOC indexed README.md docs); then ok "$name"; else not_ok "$name" "$out"; fi

name="docs: every architecture of engine/model has its row in docs/architecture.md"
if out=$($DOC archrows docs/architecture.md engine/model); then ok "$name"; else not_ok "$name" "$out"; fi

name="docs: the README's quick start starts with make run, then make test"
first=$(sed -n '/^## Quick start/,/^## /p' README.md | sed -n '/^```/,/^```/p' | grep -v '^```' | head -n 2 | awk '{print $1, $2}' | tr '\n' ';')
if [ "$first" = "make run;make test;" ]; then ok "$name"; else not_ok "$name" "first commands: $first"; fi

name="docs: no page calls a family not runnable while tests/xfail.txt marks none"
marked=$(grep -v '^#' tests/xfail.txt | grep -c .)
said=$(grep -il 'not runnable' README.md docs/*.md)
if [ "$marked" -gt 0 ] || [ -z "$said" ]; then ok "$name"; else not_ok "$name" "says so: $said"; fi

"$BIN" --help >"$OUT/docs_help.txt" 2>&1
subs=$(sed -n '/^subcommands:/,/^$/p' "$OUT/docs_help.txt" | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
name="docs: tokscope --help lists subcommands"
if [ -n "$subs" ]; then ok "$name"; else not_ok "$name" "$(head -c 300 "$OUT/docs_help.txt")"; fi
for s in $subs; do
    name="docs: subcommand $s is in the README's command list and has its own man page paragraph"
    missing=""
    grep -q "^tokscope $s " README.md || missing="$missing README"
    # a .TP before it, or man renders it inside the paragraph before
    awk -v s="$s" 'prev == ".TP" && index($0, ".BI \"" s " ") == 1 { found = 1 } { prev = $0 } END { exit !found }' \
        man/tokscope.1 || missing="$missing man"
    if [ -z "$missing" ]; then ok "$name"; else not_ok "$name" "missing:$missing"; fi

    name="docs: every option of tokscope $s --help is in the man page"
    "$BIN" "$s" --help >"$OUT/docs_help_$s.txt" 2>&1
    missing=""
    for o in $(grep -oE '(^|[ ,[])--?[a-zA-Z][a-zA-Z0-9-]*' "$OUT/docs_help_$s.txt" | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u); do
        m=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
        grep -q -- "$m\\b" man/tokscope.1 || missing="$missing $o"
    done
    if [ -z "$missing" ]; then ok "$name"; else not_ok "$name" "missing:$missing"; fi
done

name="docs: every option of the TUI's --help is in the man page"
"$BIN" -m model.gguf --help >"$OUT/docs_help_tui.txt" 2>&1
missing=""
for o in $(grep -oE '(^|[ ,[])--?[a-zA-Z][a-zA-Z0-9-]*' "$OUT/docs_help_tui.txt" | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u); do
    m=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
    grep -q -- "$m\\b" man/tokscope.1 || missing="$missing $o"
done
if [ -s "$OUT/docs_help_tui.txt" ] && [ -z "$missing" ]; then ok "$name"; else not_ok "$name" "missing:$missing"; fi
