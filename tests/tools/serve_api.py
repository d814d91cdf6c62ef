"""The API checks of tests/golden/serve.sh, against a running tokscope serve.

python3 serve_api.py GROUP PORT [ARGS...]; prints "ok - NAME" / "not ok - NAME" lines.
  basic PORT MODEL_ID PROMPT N EXPECTED_FILE   endpoints, completions (whole and streamed)
                                                against the greedy text, logprobs shapes
  chat PORT MESSAGES_FILE N EXPECTED_FILE [KEY] chat (whole and streamed) against the greedy text
  errors PORT                                   each 4xx case in OpenAI's error shape
  auth PORT KEY                                 401 without the key, /health open
  queue PORT                                    503 + Retry-After past --max-queue 0
  queue2 PORT                                   the same with --parallel 2: two run, the third gets 503
  hangup PORT                                   a client that hangs up mid-stream
"""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402


def report(name, problems):
    if problems:
        print("not ok - " + name)
        for p in problems[:6]:
            print("#   " + str(p)[:300])
    else:
        print("ok - " + name)


def run(name, fn):
    try:
        report(name, fn() or [])
    except Exception as e:  # noqa: BLE001 - a crash is a failed check
        report(name, ["%s: %s" % (type(e).__name__, e)])


def is_error_shape(body, status, want_status, param=None):
    bad = []
    if status != want_status:
        bad.append("status %d, want %d" % (status, want_status))
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return bad + ["no error object: %r" % (body,)]
    for k in ("message", "type", "code"):
        if k not in err:
            bad.append("error has no %s" % k)
    if not isinstance(err.get("message"), str) or not err.get("message"):
        bad.append("empty message")
    if param is not None and err.get("param") != param:
        bad.append("param %r, want %r" % (err.get("param"), param))
    return bad


def basic(port, model_id, prompt, n, expected_file):
    n = int(n)
    want = open(expected_file, encoding="utf-8").read()

    def health():
        st, hd, body = sc.request(port, "GET", "/health")
        o = json.loads(body) if st == 200 else {}
        n = o.get("slots_total", 0)  # 4 by default, 1 with --spec (serve_parallel.sh checks the counts)
        ok = (o.get("status") == "ok" and isinstance(n, int) and n >= 1 and
              o.get("slots_idle", -1) + o.get("slots_processing", -1) == n)
        return [] if ok else ["%d %r" % (st, body)]

    def models():
        st, hd, body = sc.request(port, "GET", "/v1/models")
        o = json.loads(body)
        bad = [] if st == 200 else ["status %d" % st]
        if o.get("object") != "list" or [m.get("id") for m in o.get("data", [])] != [model_id]:
            bad.append("models: %r" % o)
        elif o["data"][0].get("object") != "model":
            bad.append("object is not model")
        return bad

    body = {"prompt": prompt, "max_tokens": n, "temperature": 0}

    def whole():
        st, hd, o = sc.post(port, "/v1/completions", body)
        bad = [] if st == 200 else ["status %d %r" % (st, o)]
        ch = o["choices"][0]
        if ch["text"] != want:
            bad.append("text %r, want %r" % (ch["text"], want))
        if o.get("object") != "text_completion" or ch.get("finish_reason") != "length":
            bad.append("object %r finish %r" % (o.get("object"), ch.get("finish_reason")))
        u = o.get("usage", {})
        if u.get("completion_tokens") != n or u.get("total_tokens") != u.get("prompt_tokens", 0) + n:
            bad.append("usage %r" % u)
        return bad

    def streamed():
        st, hd, ev = sc.post(port, "/v1/completions", dict(body, stream=True))
        bad = [] if st == 200 else ["status %d" % st]
        text, _ = sc.stream_text(ev, False)
        if text != want:
            bad.append("text %r, want %r" % (text, want))
        if sc.finish_of(ev) != "length":
            bad.append("finish %r" % sc.finish_of(ev))
        if any(e.get("object") != "text_completion" for e in ev):
            bad.append("chunk object")
        if len({e["id"] for e in ev}) != 1:
            bad.append("chunk ids differ")
        return bad

    def legacy_logprobs():
        st, hd, o = sc.post(port, "/v1/completions", dict(body, logprobs=3))
        lp = o["choices"][0]["logprobs"]
        bad = []
        for k in ("tokens", "token_logprobs", "top_logprobs", "text_offset", "content"):
            if not isinstance(lp.get(k), list) or len(lp[k]) != n:
                bad.append("%s: %r" % (k, lp.get(k)))
        if bad:
            return bad
        if "".join(lp["tokens"]) != want:
            bad.append("tokens do not spell the text")
        if any(not isinstance(m, dict) or len(m) > 3 for m in lp["top_logprobs"]):
            bad.append("top_logprobs maps")
        offs = [0]
        for t in lp["content"][:-1]:
            offs.append(offs[-1] + len(t["bytes"]))
        if lp["text_offset"] != offs:
            bad.append("text_offset %r" % lp["text_offset"])
        for e in lp["content"]:
            bad += sc.check_entry(e, 3)
        # greedy: the chosen token is the top one, its p_post is 1
        if any(e["top_logprobs"][0]["id"] != e["id"] or e["p_post"] != 1 for e in lp["content"]):
            bad.append("greedy tokens are not the top candidates")
        return bad

    def chat_stream_logprobs():
        st, hd, ev = sc.post(port, "/v1/chat/completions",
                             {"messages": [{"role": "user", "content": prompt}], "max_tokens": 6, "stream": True,
                              "logprobs": True, "top_logprobs": 5, "temperature": 0.8, "seed": 7,
                              "stream_options": {"include_usage": True}})
        bad = [] if st == 200 and hd.get("content-type") == "text/event-stream" else ["%d %r" % (st, hd)]
        if ev[0]["choices"][0]["delta"].get("role") != "assistant":
            bad.append("first delta has no role")
        entries = [c for e in ev for ch in e["choices"] for c in ((ch.get("logprobs") or {}).get("content") or [])]
        if len(entries) != 6:
            bad.append("%d logprobs entries, want 6" % len(entries))
        for e in entries:
            bad += sc.check_entry(e, 5)
        text, _ = sc.stream_text(ev, True)
        if "".join(e["token"] for e in entries) != text:
            bad.append("entries do not spell the text")
        if ev[-1].get("choices") != [] or ev[-1].get("usage", {}).get("completion_tokens") != 6:
            bad.append("usage chunk %r" % ev[-1])
        if any(e.get("object") != "chat.completion.chunk" for e in ev):
            bad.append("chunk object")
        return bad

    def seeded():
        b = {"prompt": prompt, "max_tokens": 16, "temperature": 1.0, "top_k": 0, "top_p": 1, "min_p": 0, "seed": 42}
        a = sc.post(port, "/v1/completions", b)[2]["choices"][0]["text"]
        c = sc.post(port, "/v1/completions", dict(b, stream=True))[2]
        c = sc.stream_text(c, False)[0]
        d = sc.post(port, "/v1/completions", dict(b, seed=43))[2]["choices"][0]["text"]
        bad = [] if a == c else ["seed 42 twice: %r vs %r" % (a, c)]
        if a == d:
            bad.append("seeds 42 and 43 gave the same text %r" % a)
        return bad

    def stop_string():
        stop = want[len(want) // 3: len(want) // 3 + 3]
        st, hd, o = sc.post(port, "/v1/completions", dict(body, stop=[stop]))
        ch = o["choices"][0]
        cut = want[: want.index(stop)]
        bad = [] if ch["text"] == cut else ["text %r, want %r (stop %r)" % (ch["text"], cut, stop)]
        if ch["finish_reason"] != "stop":
            bad.append("finish %r" % ch["finish_reason"])
        st, hd, ev = sc.post(port, "/v1/completions", dict(body, stop=stop, stream=True))
        if sc.stream_text(ev, False)[0] != cut:
            bad.append("streamed text %r" % sc.stream_text(ev, False)[0])
        return bad

    def post_sampling():
        st, hd, o = sc.post(port, "/v1/chat/completions",
                            {"messages": [{"role": "user", "content": prompt}], "max_tokens": 4, "top_k": 2,
                             "temperature": 0.7, "seed": 1, "n_probs": 4, "post_sampling_probs": True})
        e = o["choices"][0]["logprobs"]["content"]
        bad = [] if len(e) == 4 else ["%d entries" % len(e)]
        for x in e:
            bad += sc.check_entry(x, 4)
            # post-sampler logprobs: the third and fourth candidates are cut by top_k 2
            if [c["p_post"] for c in x["top_logprobs"][2:]] != [0, 0]:
                bad.append("p_post of cut candidates %r" % x["top_logprobs"])
            if abs(x["logprob"] - (__import__("math").log(x["p_post"]) if x["p_post"] > 0 else -9999)) > 1e-4:
                bad.append("logprob %r is not ln p_post %r" % (x["logprob"], x["p_post"]))
        return bad

    run("serve /health answers ok", health)
    run("serve /v1/models lists the model", models)
    run("serve completion (whole) equals generate --temp 0", whole)
    run("serve completion (streamed) equals generate --temp 0", streamed)
    run("serve completion logprobs: legacy shape, tokscope fields", legacy_logprobs)
    run("serve chat stream: role, logprobs entries, usage chunk", chat_stream_logprobs)
    run("serve seed: same seed same text, streamed or not", seeded)
    run("serve stop string cuts the text, finish_reason stop", stop_string)
    run("serve n_probs + post_sampling_probs: logprob is the sampler's", post_sampling)


def chat(port, messages_file, n, expected_file, key=None):
    n = int(n)
    want = open(expected_file, encoding="utf-8").read()
    msgs = json.load(open(messages_file, encoding="utf-8"))
    hdr = {"Authorization": "Bearer " + key} if key else {}
    body = {"messages": msgs, "max_tokens": n, "temperature": 0, "logprobs": True}

    def whole():
        st, hd, o = sc.post(port, "/v1/chat/completions", body, headers=hdr)
        bad = [] if st == 200 else ["status %d %r" % (st, o)]
        m = o["choices"][0]["message"]
        if m.get("role") != "assistant" or m.get("content") != want:
            bad.append("message %r, want %r" % (m, want))
        ent = o["choices"][0]["logprobs"]["content"]
        if len(ent) != n:
            bad.append("%d entries" % len(ent))
        return bad

    def streamed():
        st, hd, ev = sc.post(port, "/v1/chat/completions", dict(body, stream=True), headers=hdr)
        text, _ = sc.stream_text(ev, True)
        bad = [] if text == want else ["text %r, want %r" % (text, want)]
        ent = [c for e in ev for ch in e["choices"] for c in ((ch.get("logprobs") or {}).get("content") or [])]
        if len(ent) != n:
            bad.append("%d entries" % len(ent))
        for e in ent:
            bad += sc.check_entry(e, 0)
        return bad

    run("serve chat (whole) equals generate --temp 0 on the rendered prompt", whole)
    run("serve chat (streamed) equals generate --temp 0 on the rendered prompt", streamed)


def errors(port):
    def raw(path, data, method="POST", headers=None):
        st, hd, body = sc.request(port, method, path, raw=data, headers=headers)
        try:
            return st, hd, json.loads(body)
        except ValueError:
            return st, hd, {"unparsed": body[:100].decode("latin-1")}

    cases = [
        ("bad JSON", "/v1/chat/completions", b'{"messages": [', 400, None),
        ("body not an object", "/v1/chat/completions", b"[1,2]", 400, None),
        ("messages missing", "/v1/chat/completions", b'{"model":"x"}', 400, "messages"),
        ("messages empty", "/v1/chat/completions", b'{"messages":[]}', 400, "messages"),
        ("messages of the wrong type", "/v1/chat/completions", b'{"messages":"hi"}', 400, "messages"),
        ("role unknown", "/v1/chat/completions", b'{"messages":[{"role":"wizard","content":"x"}]}', 400,
         "messages[0].role"),
        ("content of the wrong type", "/v1/chat/completions", b'{"messages":[{"role":"user","content":5}]}', 400,
         "messages[0].content"),
        ("temperature a string", "/v1/chat/completions",
         b'{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}', 400, "temperature"),
        ("top_p out of range", "/v1/chat/completions",
         b'{"messages":[{"role":"user","content":"x"}],"top_p":1.5}', 400, "top_p"),
        ("max_tokens not an integer", "/v1/chat/completions",
         b'{"messages":[{"role":"user","content":"x"}],"max_tokens":2.5}', 400, "max_tokens"),
        ("stream not a boolean", "/v1/chat/completions",
         b'{"messages":[{"role":"user","content":"x"}],"stream":"yes"}', 400, "stream"),
        ("stop of the wrong type", "/v1/chat/completions",
         b'{"messages":[{"role":"user","content":"x"}],"stop":7}', 400, "stop"),
        ("top_logprobs above 20", "/v1/chat/completions",
         b'{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}', 400, "top_logprobs"),
        ("n = 2", "/v1/chat/completions", b'{"messages":[{"role":"user","content":"x"}],"n":2}', 400, "n"),
        ("seed a string", "/v1/chat/completions", b'{"messages":[{"role":"user","content":"x"}],"seed":"1"}', 400,
         "seed"),
        ("prompt missing", "/v1/completions", b'{"max_tokens":3}', 400, "prompt"),
        ("prompt a number", "/v1/completions", b'{"prompt":3}', 400, "prompt"),
        ("completions logprobs a string", "/v1/completions", b'{"prompt":"a","logprobs":"3"}', 400, "logprobs"),
    ]
    for name, path, data, want, param in cases:
        run("serve 400: " + name, lambda p=path, d=data, w=want, pa=param: is_error_shape(raw(p, d)[2], raw(p, d)[0],
                                                                                          w, pa))

    def unknown_path():
        st, hd, b = raw("/v1/embeddings", b"{}")
        bad = is_error_shape(b, st, 404)
        st, hd, b = raw("/nothing", None, "GET")
        return bad + is_error_shape(b, st, 404)

    def wrong_method():
        st, hd, b = raw("/v1/chat/completions", None, "GET")
        bad = is_error_shape(b, st, 405) + ([] if hd.get("allow") == "POST" else ["Allow %r" % hd.get("allow")])
        st, hd, b = raw("/v1/models", b"{}", "POST")
        bad += is_error_shape(b, st, 405) + ([] if hd.get("allow") == "GET" else ["Allow %r" % hd.get("allow")])
        st, hd, b = raw("/health", None, "DELETE")
        return bad + is_error_shape(b, st, 405)

    def too_big():
        big = b'{"prompt":"' + b"a" * (9 << 20) + b'"}'
        st, hd, b = raw("/v1/completions", big)
        return is_error_shape(b, st, 413)

    def too_big_chunked():
        # no Content-Length: the body is counted as it comes
        s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                  b"Content-Type: application/json\r\n\r\n")
        chunk = b"a" * (1 << 20)
        try:
            for _ in range(10):
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        data = b""
        while True:
            try:
                d = s.recv(65536)
            except OSError:
                break
            if not d:
                break
            data += d
        s.close()
        head = data.split(b"\r\n", 1)[0]
        return [] if b" 413 " in head and b'"error"' in data else ["got %r" % data[:200]]

    def too_long():
        st, hd, b = sc.request(port, "POST", "/v1/completions",
                               body={"prompt": "the cat sat on the mat. " * 500, "max_tokens": 4})
        b = json.loads(b)
        bad = is_error_shape(b, st, 400)
        if b.get("error", {}).get("code") != "context_length_exceeded":
            bad.append("code %r" % b.get("error", {}).get("code"))
        return bad

    run("serve 400: a prompt longer than the context (context_length_exceeded)", too_long)
    run("serve 404: unknown paths", unknown_path)
    run("serve 405: wrong methods, with Allow", wrong_method)
    run("serve 413: a body over 8 MiB (Content-Length)", too_big)
    run("serve 413: a body over 8 MiB (chunked)", too_big_chunked)
    run("serve still answers after the errors", lambda: [] if sc.request(port, "GET", "/health")[0] == 200 else
        ["health failed"])


def auth(port, key):
    def check():
        bad = []
        st, hd, b = sc.request(port, "GET", "/health")
        if st != 200:
            bad.append("/health without a key: %d" % st)
        for hdr in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer " + key + "x"},
                    {"Authorization": key}):
            st, hd, b = sc.request(port, "GET", "/v1/models", headers=hdr)
            bad += is_error_shape(json.loads(b), st, 401)
            st, hd, b = sc.request(port, "POST", "/v1/completions", body={"prompt": "a", "max_tokens": 1},
                                   headers=hdr)
            bad += is_error_shape(json.loads(b), st, 401)
        st, hd, b = sc.request(port, "GET", "/v1/models", headers={"Authorization": "Bearer " + key})
        if st != 200:
            bad.append("the right key: %d" % st)
        return bad

    run("serve 401 without the API key, /health open", check)


def queue(port):
    def check():
        # one request runs (a long one, read slowly), nothing may wait: the next gets 503
        c = sc.conn(port)
        c.request("POST", "/v1/completions", body=json.dumps(
            {"prompt": "Once", "max_tokens": 2000, "stream": True, "temperature": 1, "seed": 3}).encode(),
            headers={"Content-Type": "application/json"})
        r = c.getresponse()
        first = sc.read_events(r, stop_after=1)
        st, hd, b = sc.request(port, "POST", "/v1/completions", body={"prompt": "x", "max_tokens": 1})
        bad = is_error_shape(json.loads(b), st, 503)
        if hd.get("retry-after") is None:
            bad.append("no Retry-After")
        rest = sc.read_events(r)
        c.close()
        if not first or sc.finish_of(rest) not in ("length", "stop"):
            bad.append("the running request did not finish: %r" % (rest[-1:],))
        st, hd, b = sc.request(port, "POST", "/v1/completions", body={"prompt": "x", "max_tokens": 1})
        if st != 200:
            bad.append("after it: %d" % st)
        return bad

    run("serve 503 + Retry-After when the queue is full", check)


def queue2(port):
    def check():
        # two requests run side by side (long ones, read slowly), nothing may wait: the third gets 503
        cs, rs, bad = [], [], []
        for k in range(2):
            c = sc.conn(port)
            c.request("POST", "/v1/completions", body=json.dumps(
                {"prompt": "Once", "max_tokens": 2000, "stream": True, "temperature": 1, "seed": 3 + k}).encode(),
                headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if not sc.read_events(r, stop_after=1):
                bad.append("request %d did not start" % k)
            cs.append(c)
            rs.append(r)
        st, hd, b = sc.request(port, "POST", "/v1/completions", body={"prompt": "x", "max_tokens": 1})
        bad += is_error_shape(json.loads(b), st, 503)
        for k in range(2):
            rest = sc.read_events(rs[k])
            cs[k].close()
            if sc.finish_of(rest) not in ("length", "stop"):
                bad.append("running request %d did not finish: %r" % (k, rest[-1:]))
        st, hd, b = sc.request(port, "POST", "/v1/completions", body={"prompt": "x", "max_tokens": 1})
        if st != 200:
            bad.append("after them: %d" % st)
        return bad

    run("serve --parallel 2: two run at once, the third gets 503 with --max-queue 0", check)


def hangup(port):
    def check():
        c = sc.conn(port)
        c.request("POST", "/v1/chat/completions", body=json.dumps(
            {"messages": [{"role": "user", "content": "Once"}], "max_tokens": 2000, "stream": True,
             "temperature": 1, "seed": 5}).encode(), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        ev = sc.read_events(r, stop_after=2)
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        time.sleep(0.5)
        st, hd, o = sc.post(port, "/v1/completions", {"prompt": "Once", "max_tokens": 4})
        return [] if len(ev) == 2 and st == 200 else ["events %d, next status %d" % (len(ev), st)]

    def whole():
        # a client waiting for a whole reply hangs up: its generation stops too
        s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
        body = json.dumps({"prompt": "Once", "max_tokens": 2000, "temperature": 1, "seed": 9}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        time.sleep(0.3)
        s.close()
        time.sleep(0.5)
        st, hd, o = sc.post(port, "/v1/completions", {"prompt": "Once", "max_tokens": 4})
        return [] if st == 200 else ["next status %d" % st]

    run("serve a client that hangs up mid-stream: the next request is served", check)
    run("serve a client that hangs up while waiting for a whole reply: the next request is served", whole)


if __name__ == "__main__":
    group, port, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    {"basic": basic, "chat": chat, "errors": errors, "auth": auth, "queue": queue, "queue2": queue2,
     "hangup": hangup}[group](
        port, *args)
    sys.stdout.flush()
    _ = threading
