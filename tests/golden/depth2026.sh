#!/bin/sh
# The hybrid 2026 families deep into a sequence, against the reference
# (issue 28): qwen35 and qwen35moe minis (Gated DeltaNet layers with a
# recurrent state) on a 600-token prompt (two ubatches of the reference's
# 512: the conv and delta-rule states carried from one to the next), then 12
# greedy tokens, and on a 20-token prompt followed by 300 greedy tokens,
# each alone (past the 256 tokens after which the engine checkpoints the
# state). tests/golden/reference/depth2026/RUNS lists them. They come from
# the AVX2 build of llama.cpp (/work/ref/refrun), whose rounding leaves the
# AVX-512 one's (tokscope's) at a position and then grows through the
# recurrent state, so each run is held to the gap measured (MAX-DIFF,
# MAX-KL, MIN-TOP1) and checked to 2e-6 on the positions before EXACT.
. tests/lib.sh
R=tests/golden/reference/depth2026
M=$TESTDATA/families2026/models
W=$(mktemp -d "$OUT/depth2026.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

grep -v '^#' "$R/RUNS" | while read -r name model n maxdiff maxkl mintop1 exact; do
    label="depth2026 $name (AVX2 reference)"
    need "$M/$model.gguf" "$label" || continue
    ref=$R/$name.jsonl
    if "$BIN" compare -m "$M/$model.gguf" --top 3 -t 2 -c 1024 "$ref" --max-diff "$maxdiff" --max-kl "$maxkl" \
        --min-top1 "$mintop1" >"$W/cmp.out" 2>&1; then
        ok "$label: within its measured gap (max|d| $maxdiff) $(tail -n 1 "$W/cmp.out")"
    else
        not_ok "$label: within its measured gap (max|d| $maxdiff)" "$(tail -n 6 "$W/cmp.out")"
    fi
    toks=$(head -n 1 "$ref" | sed 's/.*"prompt_tokens":\[\([0-9,]*\)\].*/\1/')
    "$BIN" logits -m "$M/$model.gguf" --tokens "$toks" -n "$n" -k 10 -t 2 -c 1024 >"$W/ours.jsonl" 2>"$W/ours.err"
    if python3 - "$ref" "$W/ours.jsonl" "$exact" >"$W/diff.out" 2>&1 <<'PY'; then
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
ours = [json.loads(l) for l in open(sys.argv[2])]
n = 1 + int(sys.argv[3])
assert len(ours) >= n, "%d lines, want %d" % (len(ours), n)
for a, b in zip(ref[1:n], ours[1:n]):
    assert a["token_in"] == b["token_in"] and a["argmax"] == b["argmax"], (a["pos"], "tokens")
    assert [t[0] for t in a["top"]] == [t[0] for t in b["top"]], (a["pos"], "top ids")
    assert max(abs(x[1] - y[1]) for x, y in zip(a["top"], b["top"])) <= 2e-6, (a["pos"], "top logits")
    assert abs(a["lse"] - b["lse"]) <= 2e-6, (a["pos"], "lse")
PY
        ok "$label: the reference's numbers on positions < $exact"
    else
        not_ok "$label: the reference's numbers on positions < $exact" "$(tail -n 3 "$W/diff.out")"
    fi
done
exit 0
