# Checks shared by the logit-lens suites (tests/golden/lens.sh on ../shared's
# models, tests/golden/lens2026.sh on the 2026 minis). Each writes its
# scratch files under $LENS_DIR and prints ok/not ok lines (tests/lib.sh).

# lens_cut LABEL FULL CUT BLOCKS MD5SUMS: cuts FULL to its first BLOCKS
# blocks (tests/tools/gguf_cut.py) into CUT, whose bytes must be the ones the
# reference ran on (MD5SUMS); true when they are. A failure is reported and
# CUT is gone.
lens_cut() {
    if ! python3 tests/tools/gguf_cut.py "$2" "$3" "$4" >"$LENS_DIR/cut.log" 2>&1; then
        not_ok "$1: gguf_cut" "$(tail -n 3 "$LENS_DIR/cut.log")"
        return 1
    fi
    want=$(grep " $(basename "$3")\$" "$5" | cut -d' ' -f1)
    got=$(md5sum <"$3" | cut -d' ' -f1)
    if [ "$want" != "$got" ]; then
        not_ok "$1: cut file bytes" "gguf_cut wrote md5 $got, the reference ran on $want"
        rm -f "$3"
        return 1
    fi
}

# lens_same_as_cut LABEL OURS CUT TOKENS OPTS: OURS (logits
# --lens-layer on the whole file, -n 12 -k 10 OPTS) holds the same
# bytes as logits on the cut file
lens_same_as_cut() {
    # shellcheck disable=SC2086 # OPTS is meant to split
    "$BIN" logits -m "$3" --tokens "$4" -n 12 -k 10 $5 >"$LENS_DIR/lens.cut" 2>&1
    if cmp -s "$2" "$LENS_DIR/lens.cut"; then ok "$1: the same bytes as logits on the cut file"
    else not_ok "$1: the same bytes as logits on the cut file" "$(diff "$2" "$LENS_DIR/lens.cut" | head -n 4)"; fi
}

# lens_all_blocks LABEL FULL TOKENS BLOCKS OURS: logits --lens (every block)
# gives, at every prompt position, block BLOCKS's top as --lens-layer BLOCKS
# did in OURS, and its last block is the model's own output
lens_all_blocks() {
    "$BIN" logits -m "$2" --tokens "$3" -n 4 -k 10 --lens >"$LENS_DIR/lens.all" 2>&1
    python3 - "$LENS_DIR/lens.all" "$5" "$4" "$(echo "$3" | tr ',' '\n' | wc -l)" \
        >"$LENS_DIR/lens.diff" 2>&1 <<'PY'
import json, sys
allb = [json.loads(l) for l in open(sys.argv[1])]
one = [json.loads(l) for l in open(sys.argv[2])]
L, n_prompt = int(sys.argv[3]), int(sys.argv[4])
for a, b in zip(allb[1:1 + n_prompt], one[1:1 + n_prompt]):
    e = a["lens"][L - 1]
    assert e["layer"] == L and e["top"] == b["top"] and e["argmax"] == b["argmax"] and e["lse"] == b["lse"], a["pos"]
    assert a["lens"][-1]["top"] == a["top"], a["pos"]  # the last block is the model's own
PY
    if [ $? -eq 0 ]; then ok "$1: logits --lens, block $4 = --lens-layer $4 at every prompt position"
    else not_ok "$1: logits --lens, block $4 = --lens-layer $4 at every prompt position" "$(tail -n 3 "$LENS_DIR/lens.diff")"; fi
}
