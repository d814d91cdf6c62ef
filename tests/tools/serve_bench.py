"""Aggregate generation throughput of an OpenAI-compatible server (stdlib only).

python3 serve_bench.py [--ban-bytes MODEL.gguf] PORT CLIENTS [TOKENS] [ROUNDS]

Starts CLIENTS streaming /v1/completions requests at once (each its own short
prompt, temperature 0, "ignore_eos": true and max_tokens TOKENS, default 64,
so every reply has the same length on tokscope serve and llama-server alike),
ROUNDS times (default 2). Prints one line per round and a summary line:

  clients C tokens T aggregate A tok/s ttft p50 X p99 Y s latency p50 X p99 Y s

aggregate = every streamed token of the round / the round's wall time; time
to first token and latency per request, from the moment its request is sent.
A benchmark (README / docs/serve.md), not a test: it asserts nothing but that
every reply ran to TOKENS tokens (finish_reason "length").

--ban-bytes MODEL.gguf: every request also carries llama-server's
"logit_bias" with false (never) for the model's byte tokens <0x80>..<0xFF>
(read from the file's tokenizer.ggml.tokens). llama-server 34af94cd parses
every reply's text as UTF-8 (common_chat_parse, on /completion and
/v1/completions alike) and cancels a reply that holds invalid UTF-8 ("unparsed
Content-only output"), which a model with random weights produces often;
without those byte tokens a reply is always valid UTF-8 and runs to TOKENS.
tokscope serve takes logit_bias as llama-server does (golden/serve_bias), so
both servers generate the same greedy replies.
"""
import http.client
import json
import struct
import sys
import threading
import time

PROMPTS = ["Once upon a time", "The little dog", "Tom and Sue went", "One day, a bird",
           "In a small town", "The sun was", "A girl named Lily", "Max had a ball"]


BIAS = []  # [[token id, False], ...]: --ban-bytes


def byte_token_ids(path):
    """Ids of the tokens named <0x80>..<0xFF> in a GGUF file's tokenizer.ggml.tokens."""
    f = open(path, "rb")

    def take(fmt):
        n = struct.calcsize(fmt)
        return struct.unpack("<" + fmt, f.read(n))[0]

    def string():
        return f.read(take("Q"))
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(t):
        if t == 8:
            string()
        elif t == 9:
            et, n = take("I"), take("Q")
            for _ in range(n):
                skip(et)
        else:
            f.seek(sizes[t], 1)
    if f.read(4) != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    take("I")
    take("Q")
    n_kv = take("Q")
    for _ in range(n_kv):
        k, t = string(), take("I")
        if k == b"tokenizer.ggml.tokens" and t == 9:
            et, n = take("I"), take("Q")
            toks = [string() for _ in range(n)]
            return [i for i, s in enumerate(toks)
                    if len(s) == 6 and s.startswith(b"<0x") and s.endswith(b">") and int(s[3:5], 16) >= 0x80]
        skip(t)
    sys.exit("%s: no tokenizer.ggml.tokens" % path)


def one(port, i, tokens, out):
    req = {"prompt": PROMPTS[i % len(PROMPTS)] + " " * (i // len(PROMPTS)),
           "max_tokens": tokens, "temperature": 0, "stream": True, "ignore_eos": True}
    if BIAS:
        req["logit_bias"] = BIAS
    body = json.dumps(req)
    t0 = time.monotonic()
    ttft, fin = None, None
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    for raw in r:
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        ch = ev.get("choices") or [{}]
        if ch[0].get("text") and ttft is None:
            ttft = time.monotonic() - t0
        fin = ch[0].get("finish_reason") or fin
    c.close()
    # a reply that ran to max_tokens (finish_reason "length") has TOKENS tokens;
    # streamed chunks are not counted, as servers may join tokens in one chunk
    out[i] = (ttft if ttft is not None else float("nan"), time.monotonic() - t0, tokens if fin == "length" else 0)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    args = sys.argv[1:]
    if args[:1] == ["--ban-bytes"]:
        BIAS.extend([t, False] for t in byte_token_ids(args[1]))
        if len(BIAS) != 128:
            sys.exit("%s: %d byte tokens <0x80>..<0xFF>, not 128" % (args[1], len(BIAS)))
        args = args[2:]
    port, clients = int(args[0]), int(args[1])
    tokens = int(args[2]) if len(args) > 2 else 64
    rounds = int(args[3]) if len(args) > 3 else 2
    aggs, ttfts, lats, short = [], [], [], 0
    for rnd in range(rounds):
        out = [None] * clients
        th = [threading.Thread(target=one, args=(port, i, tokens, out)) for i in range(clients)]
        t0 = time.monotonic()
        for t in th:
            t.start()
        for t in th:
            t.join()
        wall = time.monotonic() - t0
        got = sum(o[2] for o in out)
        short += sum(1 for o in out if o[2] < tokens)
        aggs.append(got / wall)
        ttfts += [o[0] for o in out]
        lats += [o[1] for o in out]
        print("round %d: %d tokens in %.2f s, %.1f tok/s" % (rnd + 1, got, wall, got / wall))
    print("clients %d tokens %d aggregate %.1f tok/s (best %.1f) ttft p50 %.3f p99 %.3f s latency p50 %.2f p99 %.2f s%s"
          % (clients, tokens, sum(aggs) / len(aggs), max(aggs), pct(ttfts, 50), pct(ttfts, 99), pct(lats, 50),
             pct(lats, 99), "" if not short else " (%d replies short of %d tokens)" % (short, tokens)))
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
