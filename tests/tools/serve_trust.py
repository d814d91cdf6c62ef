"""tokscope serve where it once answered otherwise than llama-server
34af94cd, held to what llama-server's code does (tests/golden/serve_trust.sh;
where make_trust.sh has written llama-server's own replies, serve_ref.py
trust compares with them too). python3 stdlib.

python3 serve_trust.py ctx PORT BIN MODEL PROMPT_FILE N_CTX
  a greedy completion without max_tokens at a full context: n_ctx - prompt
  tokens (llama-server stops there; the engine alone draws one more), finish
  "length", the text generate gives for that many tokens.
python3 serve_trust.py max0 PORT BIN MODEL
  max_tokens 0: one token, "length", generate's first token.
python3 serve_trust.py ids PORT BIN MODEL
  the prompt as token ids, mixed with strings, one array in an array: the
  reply (text, ids, logprobs) of the same prompt as a string.
python3 serve_trust.py chat PORT BIN MODEL REQ_FILE WANT_FILE PLOG
  a chat: the prompt the engine evaluates (PLOG's last line) is WANT_FILE's
  text tokenized (BOS as the vocabulary asks, special tokens parsed), and
  when the conversation ends with an assistant message, the whole reply's
  content (or reasoning) starts with that message's text, and the stream's
  deltas hold the same (llama-server's stream starts with that text too).
Prints "ok - NAME" / "not ok - NAME" lines."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402
from serve_api import run  # noqa: E402


def gen(bin_, model, prompt, n, ctx=None):
    cmd = [bin_, "generate", "-m", model, "-p", prompt, "-n", str(n), "--temp", "0"]
    if ctx:
        cmd += ["-c", str(ctx)]
    return subprocess.run(cmd, capture_output=True, check=True).stdout.decode("utf-8", "replace")


def completion(port, body):
    st, _, o = sc.post(int(port), "/v1/completions", body)
    if st != 200:
        raise AssertionError("status %d %r" % (st, o))
    return o


def ctx(port, bin_, model, prompt_file, n_ctx):
    prompt = open(prompt_file, encoding="utf-8").read()
    n_ctx = int(n_ctx)

    def check():
        o = completion(port, {"prompt": prompt, "temperature": 0, "logprobs": 1})
        u, ch = o["usage"], o["choices"][0]
        want_n = n_ctx - u["prompt_tokens"]
        bad = []
        if u["completion_tokens"] != want_n:
            bad.append("%d tokens after a %d-token prompt, want %d (n_ctx - prompt)" %
                       (u["completion_tokens"], u["prompt_tokens"], want_n))
        if ch["finish_reason"] != "length":
            bad.append("finish_reason %r" % ch["finish_reason"])
        want = gen(bin_, model, prompt, want_n, n_ctx)
        if ch["text"] != want:
            bad.append("text %r, generate's %r" % (ch["text"], want))
        return bad
    run("serve: at a full context a reply holds n_ctx - prompt tokens (llama-server's stop), generate's text", check)


def max0(port, bin_, model):
    def check():
        o = completion(port, {"prompt": "Once upon a time", "max_tokens": 0, "temperature": 0})
        ch = o["choices"][0]
        bad = []
        if o["usage"]["completion_tokens"] != 1 or ch["finish_reason"] != "length":
            bad.append("%d tokens, %r" % (o["usage"]["completion_tokens"], ch["finish_reason"]))
        want = gen(bin_, model, "Once upon a time", 1)
        if ch["text"] != want:
            bad.append("text %r, generate's %r" % (ch["text"], want))
        return bad
    run("serve: max_tokens 0 gives one token, as llama-server", check)


def ids(port, bin_, model):
    text = "Once upon a time"
    toks = [int(t) for t in subprocess.run([bin_, "tokenize", "-m", model, "-p", text], capture_output=True,
                                           check=True).stdout.split()]
    body = {"max_tokens": 12, "temperature": 0, "logprobs": 2}
    want = completion(port, dict(body, prompt=text))

    def same(prompt):
        o = completion(port, dict(body, prompt=prompt))
        g, w = o["choices"][0], want["choices"][0]
        bad = []
        if g["text"] != w["text"]:
            bad.append("text %r, the string prompt's %r" % (g["text"], w["text"]))
        ge = [(e["id"], e["logprob"]) for e in g["logprobs"]["content"]]
        we = [(e["id"], e["logprob"]) for e in w["logprobs"]["content"]]
        if ge != we:
            bad.append("logprobs %r, the string prompt's %r" % (ge[:3], we[:3]))
        if o["usage"]["prompt_tokens"] != len(toks):
            bad.append("prompt_tokens %d, want %d" % (o["usage"]["prompt_tokens"], len(toks)))
        return bad
    # BOS + "Once upon" "a" "time": the ids; a string first: BOS as for a string
    run("serve: a prompt of token ids %r is the string's prompt (once a 400)" % toks, lambda: same(toks))
    run("serve: one array of ids in an array", lambda: same([toks]))
    head = subprocess.run([bin_, "tokenize", "-m", model, "-p", "Once upon"], capture_output=True,
                          check=True).stdout.split()
    rest = toks[len(head):]
    run("serve: a string then ids (%r), llama-server's tokenize_mixed" % (["Once upon"] + rest),
        lambda: same(["Once upon"] + rest))


def chat(port, bin_, model, req_file, want_file, plog):
    port = int(port)
    body = json.load(open(req_file, encoding="utf-8"))
    name = os.path.basename(req_file)
    want_ids = subprocess.run([bin_, "tokenize", "-m", model, "--special"], input=open(want_file, "rb").read(),
                              capture_output=True, check=True).stdout.decode().split()
    if len(want_ids) > 1 and want_ids[0] == want_ids[1]:  # the template wrote BOS: one BOS, as both servers
        want_ids = want_ids[1:]

    def prompt_ids():
        st, _, o = sc.post(port, "/v1/chat/completions", body)
        if st != 200:
            return ["status %d %r" % (st, o)]
        got = open(plog).read().splitlines()[-1].split(" ", 1)[1].split(",")
        return [] if got == want_ids else ["prompt %s, want %s" % (",".join(got), ",".join(want_ids))]
    run("serve chat %s: the prompt llama-server's code writes" % name, prompt_ids)
    last = body["messages"][-1]
    if last["role"] != "assistant":
        return

    def reply():
        st, _, o = sc.post(port, "/v1/chat/completions", body)
        st2, _, ev = sc.post(port, "/v1/chat/completions", dict(body, stream=True))
        if st != 200 or st2 != 200:
            return ["status %d %d" % (st, st2)]
        m = o["choices"][0]["message"]
        text, reasoning = sc.stream_text(ev, True)
        pre_c, pre_r = last.get("content") or "", last.get("reasoning_content") or ""
        bad = []
        if pre_c and not m["content"].startswith(pre_c):
            bad.append("content %r does not start with %r" % (m["content"], pre_c))
        if not pre_c and pre_r and not (m.get("reasoning_content") or "").startswith(pre_r):
            bad.append("reasoning %r does not start with %r" % (m.get("reasoning_content"), pre_r))
        # the stream holds it too (llama-server's does): its deltas are the whole reply
        if (text, reasoning) != (m["content"], m.get("reasoning_content") or ""):
            bad.append("stream %r, whole %r" % ((text, reasoning), (m["content"], m.get("reasoning_content"))))
        return bad
    run("serve chat %s: a whole reply and its stream start with the continued message's text" % name, reply)


if __name__ == "__main__":
    modes = {"ctx": ctx, "max0": max0, "ids": ids, "chat": chat}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](*sys.argv[2:])
