#!/bin/sh
# The logit lens against the reference. `tokscope logits --lens-layer L`
# gives the logits of the output norm and head on the residual after the
# first L blocks: what the file cut to L blocks gives. tests/tools/gguf_cut.py
# cuts the shared models (the bytes are checked against the MD5SUMS the
# reference ran on), and llama.cpp ran the cut files
# (tests/golden/reference/lens, RUNS lists them). For each run:
#  - compare --lens-layer L on the whole file against the reference, bit for bit;
#  - logits --lens-layer L on the whole file prints the reference's numbers
#    (and greedy continuation) and the same bytes as logits on the cut file;
#  - logits --lens lists, at every position, block L's top as --lens-layer L.
. tests/lib.sh
R=tests/golden/reference/lens
. tests/lib_lens.sh
LENS_DIR=$OUT
CUT="python3 tests/tools/gguf_cut.py"

grep -v '^#' "$R/RUNS" | while read -r name model blocks case mode; do
    full=$TESTDATA/models/$model.gguf
    label="lens $name ($model, $blocks blocks, $mode)"
    need "$full" "$label" || continue
    cut=$OUT/$model.cut$blocks.gguf
    lens_cut "$label" "$full" "$cut" "$blocks" "$R/MD5SUMS" || continue
    ref=$R/$name.jsonl
    copt=""; lopt=""
    [ "$mode" = one-by-one ] && { copt=--one-by-one; lopt=--one-by-one; }
    [ "$mode" = last ] && lopt=--last
    if "$BIN" compare -m "$full" --lens-layer "$blocks" --top 3 $copt "$ref" --max-diff 0.000005 >"$OUT/lens.cmp" 2>&1; then
        ok "$label: compare --lens-layer $blocks (bit-exact) $(tail -n 1 "$OUT/lens.cmp")"
    else
        not_ok "$label: compare --lens-layer $blocks (bit-exact)" "$(tail -n 6 "$OUT/lens.cmp")"
    fi
    toks=$(head -n 1 "$ref" | sed 's/.*"prompt_tokens":\[\([0-9,]*\)\].*/\1/')
    "$BIN" logits -m "$full" --tokens "$toks" -n 12 -k 10 $lopt --lens-layer "$blocks" >"$OUT/lens.ours" 2>"$OUT/lens.err"
    python3 - "$ref" "$OUT/lens.ours" >"$OUT/lens.diff" 2>&1 <<'PY'
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
ours = [json.loads(l) for l in open(sys.argv[2])]
assert len(ref) == len(ours), "%d lines vs %d" % (len(ref), len(ours))
for a, b in zip(ref, ours):
    a.pop("text_hex", None)
    for k in a:
        if k == "top":
            assert [t[0] for t in a[k]] == [t[0] for t in b[k]], (a["pos"], "top ids")
            assert max(abs(x[1] - y[1]) for x, y in zip(a[k], b[k])) <= 2e-6, (a["pos"], "top logits")
        elif k == "lse":
            assert abs(a[k] - b[k]) <= 2e-6, (a["pos"], "lse")
        else:
            assert a[k] == b[k], (k, a[k], b[k])
PY
    result=$?
    if [ $result -eq 0 ]; then ok "$label: logits --lens-layer $blocks prints the reference's lines"
    else not_ok "$label: logits --lens-layer $blocks prints the reference's lines" "$(tail -n 3 "$OUT/lens.diff")"; fi
    lens_same_as_cut "$label" "$OUT/lens.ours" "$cut" "$toks" "$lopt"
    [ "$mode" = batch ] && lens_all_blocks "$label" "$full" "$toks" "$blocks" "$OUT/lens.ours"
    rm -f "$cut"
done

# Bad input: a clear message and a non-zero exit, never a crash.
M=$TESTDATA/models/stories260K.gguf
if need "$M" "lens: bad arguments"; then
    "$BIN" logits -m "$M" -p "x" --lens-layer 6 >"$OUT/lens.out" 2>&1
    [ $? -ne 0 ] && grep -q "5 blocks" "$OUT/lens.out"
    r=$?; [ $r -eq 0 ] && ok "lens: --lens-layer past the model's blocks is refused" || not_ok "lens: --lens-layer past the model's blocks is refused" "$(cat "$OUT/lens.out")"
    "$BIN" logits -m "$M" -p "x" --lens --last >"$OUT/lens.out" 2>&1
    [ $? -eq 2 ] && grep -q "not with" "$OUT/lens.out"
    r=$?; [ $r -eq 0 ] && ok "lens: --lens with --last is refused" || not_ok "lens: --lens with --last is refused" "$(cat "$OUT/lens.out")"
    "$BIN" logits -m "$M" -p "x" --lens-layer 0 >"$OUT/lens.out" 2>&1
    [ $? -eq 2 ]
    r=$?; [ $r -eq 0 ] && ok "lens: --lens-layer 0 is refused" || not_ok "lens: --lens-layer 0 is refused"
    $CUT "$M" "$OUT/bad.gguf" 9 >"$OUT/lens.out" 2>&1
    [ $? -ne 0 ] && grep -q "1..5" "$OUT/lens.out"
    r=$?; [ $r -eq 0 ] && ok "lens: gguf_cut refuses more blocks than the model has" || not_ok "lens: gguf_cut refuses more blocks than the model has" "$(cat "$OUT/lens.out")"
fi
exit 0
