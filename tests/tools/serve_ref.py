"""tokscope serve against llama-server 34af94cd's replies to the same request
(tests/golden/reference/serve/, written by its make.sh); python3 stdlib.

python3 serve_ref.py eos PORT PATH REQ_FILE REF_FILE LABEL
  the request (ignore_eos on) whole: the reference's text, finish reason,
  completion tokens, token ids and top ids, logprobs within 1e-4 (the
  softmax is summed in another order); streamed: the same text; with
  ignore_eos off: the turn ends at once (the token the reply passes over
  ends the turn, so the check can fail); a non-boolean ignore_eos: 400.
python3 serve_ref.py bias PORT PATH REQ_FILE REF_FILE LABEL
  the request (with logit_bias) whole against the reference as above;
  without its logit_bias the reply is another (the bias is what the
  reference followed, so the check can fail); a token id outside the
  vocabulary and a bias that is neither a number nor false: 400 naming
  logit_bias (llama-server drops such entries silently).
python3 serve_ref.py samplers PORT PATH REQ_FILE REF_FILE LABEL
  a seeded request with llama-server's further samplers (mirostat, top_n_sigma,
  XTC, DRY and its sequence breakers) whole against the reference as above;
  without them the reply is another (they were once ignored, so the check can
  fail); mirostat 1, dynatemp, a grammar (not run by tokscope) and an empty
  dry_sequence_breakers (llama-server's error too): 400 naming them.
python3 serve_ref.py trust PORT PATH REQ_FILE REF_FILE LABEL
  the request whole (cache_prompt false: a fresh start's bits, as the
  reference's) against the reference as above, and reasoning_content but
  for its trailing blanks (tokscope trims them); where the reference has a
  stream (REQ.sse beside REF_FILE), tokscope's stream gives its deltas'
  text (content, and reasoning but for its trailing blanks).
Prints "ok - NAME" / "not ok - NAME" lines."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402
from serve_api import is_error_shape, run  # noqa: E402

TOL = float(os.environ.get("REF_TOL", "1e-4"))  # REF_TOL: a large vocabulary's sum moves logprobs more


def reply_text(o, chat):
    ch = o["choices"][0]
    return ch["message"]["content"] if chat else ch["text"]


def entries(o):
    lp = o["choices"][0].get("logprobs") or {}
    return lp.get("content") or []


def compare(got, want, chat):
    bad = []
    if reply_text(got, chat) != reply_text(want, chat):
        bad.append("text %r, reference %r" % (reply_text(got, chat), reply_text(want, chat)))
    gf, wf = got["choices"][0]["finish_reason"], want["choices"][0]["finish_reason"]
    if gf != wf:
        bad.append("finish_reason %r, reference %r" % (gf, wf))
    gn, wn = got["usage"]["completion_tokens"], want["usage"]["completion_tokens"]
    if gn != wn:
        bad.append("completion_tokens %d, reference %d" % (gn, wn))
    ge, we = entries(got), entries(want)
    if len(ge) != len(we):
        bad.append("%d logprobs entries, reference %d" % (len(ge), len(we)))
    for i, (g, w) in enumerate(zip(ge, we)):
        if g["id"] != w["id"] or abs(g["logprob"] - w["logprob"]) > TOL:
            bad.append("token %d: %d %.6f, reference %d %.6f" % (i, g["id"], g["logprob"], w["id"], w["logprob"]))
        gt = [(t["id"], t["logprob"]) for t in g["top_logprobs"]]
        wt = [(t["id"], t["logprob"]) for t in w["top_logprobs"]]
        if [t[0] for t in gt] != [t[0] for t in wt] or any(abs(a[1] - b[1]) > TOL for a, b in zip(gt, wt)):
            bad.append("token %d top: %r, reference %r" % (i, gt, wt))
    return bad


def load(port, path, req_file, ref_file):
    """port as a number, chat or not, the request, the reference's reply, and
    the check of the request's whole reply against the reference's."""
    port = int(port)
    chat = path.endswith("/chat/completions")
    body = json.load(open(req_file, encoding="utf-8"))
    want = json.load(open(ref_file, encoding="utf-8"))

    def whole():
        st, _, o = sc.post(port, path, body)
        return ["status %d %r" % (st, o)] if st != 200 else compare(o, want, chat)
    return port, chat, body, want, whole


def eos(port, path, req_file, ref_file, label):
    port, chat, body, want, whole = load(port, path, req_file, ref_file)
    name = "serve %s with ignore_eos" % label

    def streamed():
        st, _, ev = sc.post(port, path, dict(body, stream=True))
        if st != 200:
            return ["status %d" % st]
        text, _ = sc.stream_text(ev, chat)
        bad = [] if text == reply_text(want, chat) else ["text %r" % text]
        if sc.finish_of(ev) != "length":
            bad.append("finish_reason %r" % sc.finish_of(ev))
        return bad

    def off():
        st, _, o = sc.post(port, path, dict(body, ignore_eos=False))
        if st != 200:
            return ["status %d %r" % (st, o)]
        bad = [] if o["choices"][0]["finish_reason"] == "stop" else ["finish_reason %r" % o["choices"][0]]
        if o["usage"]["completion_tokens"] != 0:
            bad.append("completion_tokens %d" % o["usage"]["completion_tokens"])
        return bad

    def refused():
        st, _, o = sc.post(port, path, dict(body, ignore_eos="yes"))
        return is_error_shape(o, st, 400, "ignore_eos")

    run(name + ": llama-server 34af94cd's reply (tokens, top tokens, logprobs)", whole)
    run(name + ", streamed: the same text, to the length limit", streamed)
    run(name + " off: the reply ends at the end-of-generation token it passed over", off)
    run(name + " not a boolean: 400 naming it", refused)


def bias(port, path, req_file, ref_file, label):
    port, chat, body, want, whole = load(port, path, req_file, ref_file)
    name = "serve %s with logit_bias" % label

    def without():
        st, _, o = sc.post(port, path, {k: v for k, v in body.items() if k != "logit_bias"})
        if st != 200:
            return ["status %d %r" % (st, o)]
        return ["the same reply without the bias: %r" % reply_text(o, chat)] if reply_text(o, chat) == reply_text(
            want, chat) else []

    def refused():
        bad = []
        for lb in ({"99999999": 1}, [[-1, 1]], {"5": "x"}, [[5]], 7):
            st, _, o = sc.post(port, path, dict(body, logit_bias=lb))
            bad += ["%r: %s" % (lb, b) for b in is_error_shape(o, st, 400, "logit_bias")]
        return bad

    run(name + ": llama-server 34af94cd's reply (tokens, top tokens, logprobs)", whole)
    run(name + " left out: another reply", without)
    run(name + ": an id outside the vocabulary, a bad value or shape: 400 naming it", refused)


SAMPLER_FIELDS = ("mirostat", "mirostat_tau", "mirostat_eta", "top_n_sigma", "xtc_probability", "xtc_threshold",
                  "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers")


def samplers(port, path, req_file, ref_file, label):
    port, chat, body, want, whole = load(port, path, req_file, ref_file)
    name = "serve %s with %s" % (label, ", ".join(k for k in SAMPLER_FIELDS if k in body))

    def without():
        st, _, o = sc.post(port, path, {k: v for k, v in body.items() if k not in SAMPLER_FIELDS})
        if st != 200:
            return ["status %d %r" % (st, o)]
        return ["the same reply without them: %r" % reply_text(o, chat)] if reply_text(o, chat) == reply_text(
            want, chat) else []

    def refused():
        bad = []
        for k, v in (("mirostat", 1), ("dynatemp_range", 0.5), ("grammar", "root ::= \"a\""),
                     ("dry_sequence_breakers", [])):
            st, _, o = sc.post(port, path, dict(body, **{k: v}))
            bad += ["%s %r: %s" % (k, v, b) for b in is_error_shape(o, st, 400, k)]
        return bad

    run(name + ": llama-server 34af94cd's reply (tokens, top tokens, logprobs)", whole)
    run(name + " left out: another reply", without)
    run(name + ": what tokscope does not run (mirostat 1, dynatemp, grammar) and an empty dry_sequence_breakers (as llama-server): 400 naming it", refused)


def sse_text(path):
    """The content and reasoning deltas of a stream saved as it came."""
    events = []
    for line in open(path, encoding="utf-8"):
        if line.startswith("data: ") and line.strip() != "data: [DONE]":
            events.append(json.loads(line[6:]))
    return sc.stream_text(events, True)


def trust(port, path, req_file, ref_file, label):
    port, chat, body, want, whole0 = load(port, path, req_file, ref_file)
    name = "serve %s" % label

    def whole():
        # cache_prompt false: the bits of a fresh start, as the reference's
        # first request had (the checks before left the prompt in the cache)
        st, _, o = sc.post(port, path, dict(body, cache_prompt=False))
        if st != 200:
            return ["status %d %r" % (st, o)]
        bad = compare(o, want, chat)
        if chat:  # the reasoning's trailing blanks: tokscope trims them (docs/serve.md)
            g = o["choices"][0]["message"].get("reasoning_content") or ""
            w = want["choices"][0]["message"].get("reasoning_content") or ""
            if g != w.rstrip():
                bad.append("reasoning_content %r, reference %r" % (g, w))
        return bad

    run(name + ": llama-server 34af94cd's reply (text, finish, tokens, top tokens, logprobs)", whole)
    sse = ref_file[:-len(".json")] + ".sse"
    if chat and os.path.exists(sse):
        def streamed():
            st, _, ev = sc.post(port, path, dict(body, stream=True))
            if st != 200:
                return ["status %d" % st]
            got, want_s = sc.stream_text(ev, True), sse_text(sse)
            want_s = (want_s[0], want_s[1].rstrip())
            return [] if got == want_s else ["stream %r, reference %r" % (got, want_s)]
        run(name + ", streamed: llama-server's deltas (content, reasoning)", streamed)


if __name__ == "__main__":
    modes = {"eos": eos, "bias": bias, "samplers": samplers, "trust": trust}
    if len(sys.argv) != 7 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](*sys.argv[2:])
