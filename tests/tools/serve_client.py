"""A small OpenAI-style client for the tokscope serve tests (python3 stdlib only).

post(port, path, body, stream=False) -> (status, headers, json | events)
An event list holds every `data:` payload of an SSE stream, parsed; the
stream must end with `data: [DONE]` (else StreamError)."""
import http.client
import json


class StreamError(Exception):
    pass


def conn(port, timeout=60):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)


def request(port, method, path, body=None, headers=None, raw=None, timeout=60):
    """One request; returns (status, headers dict (lower-case), body bytes)."""
    c = conn(port, timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    hd = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hd, out


def read_events(r, stop_after=None):
    """Reads an SSE response: the parsed data payloads, up to [DONE]. With
    stop_after=N returns after N events (the caller then hangs up)."""
    events = []
    done = False
    buf = b""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.rstrip(b"\r\n")
        if line == b"":
            continue
        if line.startswith(b":"):
            continue  # an SSE comment
        if not line.startswith(b"data: "):
            raise StreamError("not an SSE data line: %r" % line[:80])
        payload = line[6:]
        if payload == b"[DONE]":
            done = True
            break
        events.append(json.loads(payload.decode("utf-8")))
        if stop_after is not None and len(events) >= stop_after:
            return events
        buf = b""
    if not done:
        raise StreamError("the stream ended without [DONE] after %d events" % len(events))
    if r.readline() not in (b"", b"\r\n", b"\n"):
        raise StreamError("bytes after [DONE]")
    return events


def post(port, path, body, headers=None, timeout=60):
    """POST; a streamed reply comes back as its events."""
    c = conn(port, timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=json.dumps(body).encode(), headers=h)
    r = c.getresponse()
    hd = {k.lower(): v for k, v in r.getheaders()}
    if r.status == 200 and hd.get("content-type", "").startswith("text/event-stream"):
        ev = read_events(r)
        c.close()
        return r.status, hd, ev
    out = r.read()
    c.close()
    return r.status, hd, json.loads(out.decode("utf-8")) if out else None


def stream_text(events, chat):
    """The reply text of a stream: content (and reasoning) deltas, back to back."""
    text, reasoning = "", ""
    for e in events:
        for ch in e.get("choices", []):
            if chat:
                d = ch.get("delta", {})
                text += d.get("content") or ""
                reasoning += d.get("reasoning_content") or ""
            else:
                text += ch.get("text") or ""
    return text, reasoning


def finish_of(events):
    f = [ch.get("finish_reason") for e in events for ch in e.get("choices", []) if ch.get("finish_reason")]
    return f[-1] if f else None


ENTRY_KEYS = {"token": str, "logprob": (int, float), "bytes": list, "id": int, "logit": (int, float),
              "p_raw": (int, float), "p_post": (int, float)}


def check_entry(e, top, chosen=True):
    """Problems with one logprobs entry (chat shape, tokscope's fields), [] when fine."""
    bad = []
    for k, t in ENTRY_KEYS.items():
        if not isinstance(e.get(k), t):
            bad.append("%s missing or of the wrong type in %s" % (k, json.dumps(e)[:200]))
    if bad:
        return bad
    if e["logprob"] > 0 or not (0 <= e["p_raw"] <= 1) or not (0 <= e["p_post"] <= 1):
        bad.append("probabilities out of range: %s" % json.dumps(e)[:200])
    if any(not isinstance(b, int) or b < 0 or b > 255 for b in e["bytes"]):
        bad.append("bytes not 0..255")
    if bytes(e["bytes"]).decode("utf-8", "replace") != e["token"]:
        bad.append("token %r is not its bytes %r" % (e["token"], e["bytes"]))
    if chosen:
        for k in ("entropy_raw", "entropy_post"):
            if not isinstance(e.get(k), (int, float)):
                bad.append(k + " missing")
        tl = e.get("top_logprobs")
        if not isinstance(tl, list) or len(tl) != top:
            bad.append("top_logprobs has %s entries, want %d" % (len(tl) if isinstance(tl, list) else tl, top))
        else:
            for c in tl:
                bad += check_entry(c, 0, False)
            lps = [c["logprob"] for c in tl]
            if lps != sorted(lps, reverse=True):
                bad.append("top_logprobs not in descending order")
    return bad
