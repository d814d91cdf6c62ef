#!/usr/bin/env python3
"""A mock OpenAI-compatible server for the remote backend's tests (stdlib
only, threaded, loopback). It plays canned streams and failures; the
request's "model" picks the scenario:

  ok          four tokens with logprobs and top_logprobs, then [DONE]
  reasoning   reasoning_content deltas, then content
  crlf        the ok stream with CRLF line ends, comments and one event per
              write cut in the middle of lines
  cut         two tokens, then the connection closes (no [DONE])
  hang        two tokens, then nothing for 60 s (timeouts, stop, a server
              killed mid-reply)
  slow        one token every 0.3 s, 40 of them
  error_event one token, then llama-server's "error: {...}" line
  logzero     one token whose other candidates have p 0, sent as llama-server
              sends log(0): -3.4028234663852886e+38
  http401 http404 http429 http500 http503
              that status with an OpenAI-style error body
Anything else streams "ok". With "post_sampling_probs": true in a request
to --kind llamacpp, the tokens carry "prob"/"top_probs" instead of
"logprob"/"top_logprobs", as llama-server sends them. A request whose last
message is an assistant's (a branch's prefix) to --kind llamacpp gets that
prefix echoed at the start of the first content delta, as llama-server
streams it (its logprobs only for the new token).
--kind sets /v1/models' owned_by (llamacpp,
vllm, library, tokscope, or none); llamacpp also answers /props. The last
request's body is at GET /mock/last, its headers at GET /mock/headers.

usage: mock_openai.py [--port N] [--kind K] [--models a,b]  (prints the port)
"""
import argparse
import json
import math
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LAST = {"body": b"{}", "headers": {}}
LOCK = threading.Lock()
ARGS = None


def chunk(content=None, reasoning=None, lp=None, finish=None, usage=None):
    delta = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    ch = {"index": 0, "delta": delta, "finish_reason": finish}
    if lp is not None:
        ch["logprobs"] = {"content": lp}
    o = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [ch]}
    if usage:
        o["usage"] = usage
        o["choices"] = []
    return o


def lp_entry(tok, logprob, tops):
    return {"token": tok, "logprob": logprob, "bytes": list(tok.encode()),
            "top_logprobs": [{"token": t, "logprob": l, "bytes": list(t.encode())} for t, l in tops]}


TOKENS = [("Hello", -0.1, [("Hello", -0.1), ("Hi", -2.5), ("Hey", -3.0)]),
          (",", -0.2, [(",", -0.2), ("!", -1.8), (" there", -4.0)]),
          (" world", -0.3, [(" world", -0.3), (" there", -1.5), (" you", -2.9)]),
          ("!", -0.05, [("!", -0.05), (".", -3.2), ("?", -5.0)])]


def post_entry(tok, l, tops):
    """llama-server's shape with post_sampling_probs (probabilities, no logprobs)"""
    e = lp_entry(tok, l, tops)
    del e["logprob"], e["top_logprobs"]
    e["prob"] = round(math.exp(l), 6)
    e["top_probs"] = [{"token": t, "prob": round(math.exp(x), 6), "bytes": list(t.encode())} for t, x in tops]
    return e


def token_chunks(n=None, post=False, echo=""):
    out = []
    for tok, l, tops in TOKENS[:n]:
        out.append(chunk(content=echo + tok, lp=[(post_entry if post else lp_entry)(tok, l, tops)]))
        echo = ""
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, status, obj):
        b = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        if status == 429:
            self.send_header("Retry-After", "2")
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        if self.path == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": ARGS.kind, "max_model_len": 4096}
                    for m in ARGS.models.split(",")]
            if ARGS.kind == "none":
                for d in data:
                    del d["owned_by"]
            self.send_json(200, {"object": "list", "data": data})
        elif self.path == "/props" and ARGS.kind == "llamacpp":
            self.send_json(200, {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1})
        elif self.path == "/mock/last":
            with LOCK:
                b = LAST["body"]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)
        elif self.path == "/mock/headers":
            with LOCK:
                h = LAST["headers"]
            self.send_json(200, h)
        else:
            self.send_json(404, {"error": {"message": "no such endpoint", "type": "not_found"}})

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def raw(self, b):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
        self.wfile.flush()

    def event(self, obj, eol="\n"):
        s = "data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + eol + eol
        self.raw(s.encode())

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        with LOCK:
            LAST["body"] = body
            LAST["headers"] = {k: v for k, v in self.headers.items()}
        if self.path != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": "no such endpoint"}})
            return
        try:
            req = json.loads(body)
        except ValueError:
            self.send_json(400, {"error": {"message": "bad JSON"}})
            return
        sc = req.get("model", "ok")
        if sc.startswith("http"):
            st = int(sc[4:])
            msgs = {401: "Invalid API key", 404: "The model 'http404' does not exist",
                    429: "Too many requests", 500: "Internal error", 503: "Service unavailable"}
            self.send_json(st, {"error": {"message": msgs.get(st, "error"), "code": st}})
            return
        llama = ARGS.kind == "llamacpp"
        self.post = llama and req.get("post_sampling_probs") is True
        msgs = req.get("messages") or [{}]
        self.echo = msgs[-1].get("content", "") if llama and msgs[-1].get("role") == "assistant" else ""
        self.start_stream()
        try:
            self.play(sc)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def play(self, sc):
        usage = {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
        if sc == "reasoning":
            for r in ["Let me", " think."]:
                self.event(chunk(reasoning=r))
            for c in token_chunks():
                self.event(c)
            self.event(chunk(finish="stop"))
            self.event("[DONE]")
        elif sc == "crlf":
            s = ": keep-alive\r\n\r\n"
            for c in token_chunks():
                s += "data: " + json.dumps(c) + "\r\n\r\n"
            s += "data: " + json.dumps(chunk(finish="stop")) + "\r\n\r\ndata: [DONE]\r\n\r\n"
            b = s.encode()
            for i in range(0, len(b), 7):
                self.raw(b[i:i + 7])
                time.sleep(0.001)
        elif sc == "cut":
            for c in token_chunks(2):
                self.event(c)
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        elif sc == "hang":
            for c in token_chunks(2):
                self.event(c)
            time.sleep(60)
        elif sc == "slow":
            for i in range(40):
                self.event(chunk(content=" t%d" % i, lp=[lp_entry(" t%d" % i, -0.5, [(" t%d" % i, -0.5)])]))
                time.sleep(0.3)
            self.event(chunk(finish="length"))
            self.event("[DONE]")
        elif sc == "logzero":
            # smollm-mini on a real llama-server: p 0 sent as the float's lowest
            e = lp_entry("\n", 0.0, [("\n", 0.0), (" chestnut", 0.0), ("cut", 0.0)])
            for t in e["top_logprobs"][1:]:
                t["logprob"] = -3.4028234663852886e+38
            self.event(chunk(content="\n", lp=[e]))
            self.event(chunk(finish="stop"))
            self.event("[DONE]")
        elif sc == "error_event":
            for c in token_chunks(1):
                self.event(c)
            self.raw(b'error: {"code": 500, "message": "slot unavailable", "type": "server_error"}\n\n')
        else:
            for c in token_chunks(post=self.post, echo=self.echo):
                self.event(c)
            self.event(chunk(finish="stop"))
            self.event(chunk(usage=usage))
            self.event("[DONE]")
        self.end_stream()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--kind", default="llamacpp")
    ap.add_argument("--models", default="ok,reasoning,crlf,cut,hang,slow,error_event,logzero")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
