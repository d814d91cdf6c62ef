#!/usr/bin/env python3
"""A Hugging Face hub look-alike on loopback, for tests/golden/pull.sh.

    hf_mock.py ROOT PORTFILE

Serves the repositories under ROOT (ROOT/OWNER/NAME/files...) the way the hub
does for `tokscope pull`:
  GET /api/models/OWNER/NAME/tree/main[?recursive=...]  JSON listing with
      size and lfs.oid (sha256) per file
  GET /OWNER/NAME/resolve/main/PATH  302 to /cdn/OWNER/NAME/PATH (as the hub
      redirects to its CDN), which serves the bytes with X-Linked-ETag and
      honours Range (206)
Failure modes by owner name, so that one server covers every case:
  gated/*  401 unless "Authorization: Bearer secret-token"
  cut/*    the file's body stops after half its bytes and the connection closes
           (a second request with a Range gets the rest)
  badsum/* the listing and the ETag publish a wrong sha256
  norange/* ignores Range (always 200 with the whole file)
Writes the port it listens on to PORTFILE. Requests are logged to stderr.
"""
import hashlib
import http.server
import json
import os
import re
import socketserver
import sys
import urllib.parse

ROOT = sys.argv[1]


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 16), b""):
            h.update(b)
    return h.hexdigest()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("hf_mock: %s %s\n" % (self.command, self.path))

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorized(self, owner):
        if owner != "gated":
            return True
        return self.headers.get("Authorization", "") == "Bearer secret-token"

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        path = urllib.parse.unquote(u.path)
        m = re.match(r"^/api/models/([^/]+)/([^/]+)/tree/main/?$", path)
        if m:
            return self.tree(m.group(1), m.group(2))
        m = re.match(r"^/([^/]+)/([^/]+)/resolve/main/(.+)$", path)
        if m:
            owner, name, rel = m.groups()
            if not self.authorized(owner):
                return self.send_json(401, {"error": "Access to this model is restricted"})
            if not os.path.isfile(os.path.join(ROOT, owner, name, rel)):
                return self.send_json(404, {"error": "Entry not found"})
            loc = "/cdn/%s/%s/%s" % (owner, name, urllib.parse.quote(rel))
            self.send_response(302)
            self.send_header("Location", loc)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        m = re.match(r"^/cdn/([^/]+)/([^/]+)/(.+)$", path)
        if m:
            return self.file(*m.groups())
        self.send_json(404, {"error": "Repository not found"})

    def tree(self, owner, name):
        d = os.path.join(ROOT, owner, name)
        if not os.path.isdir(d):
            return self.send_json(404, {"error": "Repository not found"})
        if not self.authorized(owner):
            return self.send_json(401, {"error": "Access to model %s/%s is restricted" % (owner, name)})
        out = []
        for base, dirs, files in os.walk(d):
            dirs.sort()
            for f in sorted(files):
                full = os.path.join(base, f)
                rel = os.path.relpath(full, d)
                oid = sha(full) if owner != "badsum" else "0" * 64
                size = os.path.getsize(full)
                out.append({"type": "file", "oid": "x" * 40, "size": size, "path": rel,
                            "lfs": {"oid": oid, "size": size, "pointerSize": 134}})
        self.send_json(200, out)

    def file(self, owner, name, rel):
        full = os.path.join(ROOT, owner, name, rel)
        if not os.path.isfile(full):
            return self.send_json(404, {"error": "Entry not found"})
        data = open(full, "rb").read()
        start = 0
        rng = self.headers.get("Range")
        code = 200
        if rng and owner != "norange":
            m = re.match(r"bytes=(\d+)-$", rng)
            start = int(m.group(1)) if m else 0
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            code = 206
        body = data[start:]
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Linked-Size", str(len(data)))
        self.send_header("X-Linked-ETag", '"%s"' % (sha(full) if owner != "badsum" else "0" * 64))
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        if owner == "cut" and start == 0:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        self.wfile.write(body)


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = S(("127.0.0.1", 0), H)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
srv.serve_forever()
