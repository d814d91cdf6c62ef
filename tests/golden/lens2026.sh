#!/bin/sh
# The logit lens on the 2026 families (issue 28), against llama.cpp on the
# mini models of ../shared/families2026 cut to their first blocks by
# tests/tools/gguf_cut.py (gemma4's shared-KV count, per-layer embeddings and
# rope_freqs, qwen35's hybrid layout; the bytes are checked against the
# MD5SUMS the reference ran on). Those reference runs were made with
# /work/ref/refrun on an AVX2 build (tests/golden/reference/README.md,
# lens2026/), which rounds differently from the AVX-512 build the goldens
# come from after some position. So for each run in lens2026/RUNS:
#  - compare --lens-layer L on the whole file, held to the gap measured there
#    (MAX-DIFF, MAX-KL, MIN-TOP1: 5e-6 where the AVX2 run is our numbers);
#  - logits --lens-layer L prints the reference's numbers (to 2e-6) on the
#    first EXACT positions, where the AVX2 run still agrees bit for bit;
#  - logits --lens-layer L on the whole file and logits on the cut file give
#    the same bytes (no AVX2 in that one: both are ours);
#  - batched runs: logits --lens lists, at every prompt position, block L's
#    top as --lens-layer L.
. tests/lib.sh
R=tests/golden/reference/lens2026
M=$TESTDATA/families2026/models
W=$(mktemp -d "$OUT/lens2026.XXXXXX") || exit 1
. tests/lib_lens.sh
LENS_DIR=$W

# shellcheck disable=SC2034 # the case names the prompt in RUNS; the file holds it
grep -v '^#' "$R/RUNS" | while read -r name model blocks case mode maxdiff maxkl mintop1 exact; do
    full=$M/$model.gguf
    label="lens2026 $name ($model, $blocks blocks, $mode, AVX2 reference)"
    need "$full" "$label" || continue
    cut=$W/$model.cut$blocks.gguf
    lens_cut "$label" "$full" "$cut" "$blocks" "$R/MD5SUMS" || continue
    ref=$R/$name.jsonl
    copt=""
    [ "$mode" = one-by-one ] && copt=--one-by-one
    tol="--max-diff $maxdiff"
    [ "$maxkl" != - ] && tol="$tol --max-kl $maxkl"
    [ "$mintop1" != - ] && tol="$tol --min-top1 $mintop1"
    what="within the measured AVX2 gap, max|d| $maxdiff"
    [ "$maxdiff" = 0.000005 ] && what="bit-exact"
    # shellcheck disable=SC2086 # the option lists are meant to split
    if "$BIN" compare -m "$full" --lens-layer "$blocks" --top 3 $copt "$ref" $tol >"$W/lens.cmp" 2>&1; then
        ok "$label: compare --lens-layer $blocks ($what) $(tail -n 1 "$W/lens.cmp")"
    else
        not_ok "$label: compare --lens-layer $blocks ($what)" "$(tail -n 6 "$W/lens.cmp")"
    fi
    toks=$(head -n 1 "$ref" | sed 's/.*"prompt_tokens":\[\([0-9,]*\)\].*/\1/')
    "$BIN" logits -m "$full" --tokens "$toks" -n 12 -k 10 $copt --lens-layer "$blocks" >"$W/lens.ours" 2>"$W/lens.err"
    python3 - "$ref" "$W/lens.ours" "$exact" >"$W/lens.diff" 2>&1 <<'PY'
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
ours = [json.loads(l) for l in open(sys.argv[2])]
n = len(ref) if sys.argv[3] == "all" else 1 + int(sys.argv[3])
assert len(ours) >= n, "%d lines, want %d" % (len(ours), n)
for a, b in zip(ref[1:n], ours[1:n]):
    if "pos" not in a:
        break
    assert a["token_in"] == b["token_in"] and a["argmax"] == b["argmax"], (a["pos"], "tokens")
    assert [t[0] for t in a["top"]] == [t[0] for t in b["top"]], (a["pos"], "top ids")
    assert max(abs(x[1] - y[1]) for x, y in zip(a["top"], b["top"])) <= 2e-6, (a["pos"], "top logits")
    assert abs(a["lse"] - b["lse"]) <= 2e-6, (a["pos"], "lse")
PY
    if [ $? -eq 0 ]; then ok "$label: logits --lens-layer $blocks prints the reference's numbers on positions < $exact"
    else not_ok "$label: logits --lens-layer $blocks prints the reference's numbers on positions < $exact" "$(tail -n 3 "$W/lens.diff")"; fi
    lens_same_as_cut "$label" "$W/lens.ours" "$cut" "$toks" "$copt"
    [ "$mode" = batch ] && lens_all_blocks "$label" "$full" "$toks" "$blocks" "$W/lens.ours"
    rm -f "$cut"
done

# MTP (NextN) blocks are the last ones and never run: gguf_cut keeps them out
# of any cut and sets nextn_predict_layers to 0 in the cut file
Q=$M/qwen35moe-mini-q8_0.gguf
if need "$Q" "lens2026 gguf_cut and MTP blocks"; then
    python3 tests/tools/gguf_mutate.py "$Q" "$W/mtp.gguf" --set-u32 qwen35moe.nextn_predict_layers 1
    python3 tests/tools/gguf_cut.py "$W/mtp.gguf" "$W/mtp.cut8.gguf" 8 >"$W/cut.log" 2>&1
    [ $? -ne 0 ] && grep -q "1..7: the last 1 blocks are MTP layers" "$W/cut.log"
    r=$?; [ $r -eq 0 ] && ok "lens2026 gguf_cut refuses to keep a file's MTP block" || not_ok "lens2026 gguf_cut refuses to keep a file's MTP block" "$(cat "$W/cut.log")"
    python3 tests/tools/gguf_cut.py "$W/mtp.gguf" "$W/mtp.cut4.gguf" 4 >"$W/cut.log" 2>&1 &&
        python3 tests/tools/gguf_cut.py "$Q" "$W/plain.cut4.gguf" 4 >>"$W/cut.log" 2>&1 &&
        python3 tests/tools/gguf_mutate.py "$W/plain.cut4.gguf" "$W/want.cut4.gguf" --set-u32 qwen35moe.nextn_predict_layers 0
    if cmp -s "$W/mtp.cut4.gguf" "$W/want.cut4.gguf"; then ok "lens2026 gguf_cut sets nextn_predict_layers to 0 in a cut"
    else not_ok "lens2026 gguf_cut sets nextn_predict_layers to 0 in a cut" "$(tail -n 3 "$W/cut.log")"; fi
fi
rm -rf "$W"
exit 0
