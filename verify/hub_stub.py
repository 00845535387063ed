#!/usr/bin/python3
"""A stand-in for the Hugging Face hub on loopback, for verify/tests/test_hub.py (standard library only).

  hub_stub.py CONFIG.json      prints "port N" on stdout once it listens on 127.0.0.1:N (N from the config,
                               0 = any free port; the bytes on a second port), then serves until killed

It answers the endpoints and headers hub/hub.cc relies on, as the hub does (docs/hub.md):

  GET /api/models/{org}/{repo}/tree/{revision}[?recursive=true][&cursor=K]
      a JSON array of {"type": "file", "oid", "size", "path", "lfs": {"oid": sha256, "size", "pointerSize"}}
      in pages of `page_size` entries; a further page is named by `Link: <url>; rel="next"`
  GET /{org}/{repo}/resolve/{revision}/{path}
      302 to the bytes, at http://127.0.0.1:{cdn_port}/cdn/{sha256}[-cut] (a second listening port: another
      origin, as the hub's CDN is another host, so the client must not send Authorization there), with X-Linked-Etag
      ("sha256", quoted), X-Linked-Size, ETag, X-Repo-Commit and Location
  GET /cdn/{sha256}[-cut] the bytes: Content-Length, Accept-Ranges, ETag; "Range: bytes=N-" gets 206 and
                        Content-Range; a file marked "cut" sends half its body on the first whole-file GET
                        and closes the connection
  401 (X-Error-Code: GatedRepo) for a gated repository without its token, 404 (RepoNotFound /
  EntryNotFound) for what does not exist.

CONFIG: {"port": 0, "page_size": 2, "repos": {"org/name": {"token": null or "secret",
         "files": {"path": {"source": FILE, "cut": false, "listed_sha256": null or a wrong sum}}}}}
GET /_stats (not counted) returns {"requests": n, "log": [{"path", "range", "auth"}...]}.
"""
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATS = {"requests": 0, "log": []}
CUT_DONE = set()


def load(config):
    repos = {}
    blobs = {}
    for name, repo in config["repos"].items():
        entries = []
        for path, f in repo["files"].items():
            with open(f["source"], "rb") as fh:
                data = fh.read()
            sha = hashlib.sha256(data).hexdigest()
            key = sha + ("-cut" if f.get("cut") else "")  # a cut file's bytes apart from the same bytes uncut
            blobs[key] = {"data": data, "cut": bool(f.get("cut")), "sha": sha}
            listed = f.get("listed_sha256") or sha
            entry = {"type": "file", "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                     "size": len(data), "path": path}
            if not path.endswith((".md", ".json")):  # as on the hub: big files are LFS objects
                entry["lfs"] = {"oid": listed, "size": len(data), "pointerSize": 134}
            entries.append((path, entry, key, listed))
        repos[name] = {"token": repo.get("token"), "entries": entries}
    return repos, blobs


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: a cut is a closed connection

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, code, kind, message):
        self.send(code, json.dumps({"error": message}).encode(), [("Content-Type", "application/json"),
                                                                   ("X-Error-Code", kind)])

    def authorized(self, repo):
        token = repo["token"]
        return token is None or self.headers.get("Authorization") == "Bearer " + token

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if path == "/_stats":
            with LOCK:
                self.send(200, json.dumps(STATS).encode(), [("Content-Type", "application/json")])
            return
        with LOCK:
            STATS["requests"] += 1
            STATS["log"].append({"path": path, "range": self.headers.get("Range"),
                                 "auth": self.headers.get("Authorization") is not None,
                                 "host": self.headers.get("Host")})
        parts = path.split("/")
        if path.startswith("/api/models/") and len(parts) >= 7 and parts[5] == "tree":
            return self.tree("/".join(parts[3:5]), parts[6], urllib.parse.parse_qs(url.query))
        if len(parts) >= 6 and parts[3] == "resolve":
            return self.resolve("/".join(parts[1:3]), parts[4], "/".join(parts[5:]))
        if len(parts) == 3 and parts[1] == "cdn":
            return self.cdn(parts[2])
        self.error(404, "NotFound", "no such endpoint")

    def tree(self, name, revision, query):
        repo = REPOS.get(name)
        if repo is None:
            return self.error(404, "RepoNotFound", "Repository not found")
        if not self.authorized(repo):
            return self.error(401, "GatedRepo", "Access to model %s is restricted" % name)
        if revision != "main":
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + revision)
        entries = [e for _, e, _, _ in repo["entries"]]
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start:start + PAGE_SIZE]
        headers = [("Content-Type", "application/json")]
        if start + PAGE_SIZE < len(entries):
            nxt = "/api/models/%s/tree/%s?recursive=true&cursor=%d" % (name, revision, start + PAGE_SIZE)
            headers.append(("Link", '<http://127.0.0.1:%d%s>; rel="next"' % (PORT, nxt)))
        self.send(200, json.dumps(page).encode(), headers)

    def resolve(self, name, revision, file):
        repo = REPOS.get(name)
        if repo is None:
            return self.error(404, "RepoNotFound", "Repository not found")
        if not self.authorized(repo):
            return self.error(401, "GatedRepo", "Access to model %s is restricted" % name)
        for path, entry, key, listed in repo["entries"]:
            if path == file and revision == "main":
                self.send(302, b"", [("Location", "http://127.0.0.1:%d/cdn/%s" % (CDN_PORT, key)),
                                     ("X-Linked-Etag", '"%s"' % listed), ("X-Linked-Size", str(entry["size"])),
                                     ("ETag", '"%s"' % entry["oid"]), ("X-Repo-Commit", "0" * 40)])
                return
        self.error(404, "EntryNotFound", "%s does not exist on \"%s\"" % (file, revision))

    def cdn(self, key):
        blob = BLOBS.get(key)
        if blob is None:
            return self.error(404, "NotFound", "no such object")
        data, sha = blob["data"], blob["sha"]
        rng = self.headers.get("Range")
        common = [("Accept-Ranges", "bytes"), ("ETag", '"%s"' % sha), ("Content-Type", "application/octet-stream")]
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                return self.send(416, b"", common + [("Content-Range", "bytes */%d" % len(data))])
            return self.send(206, data[start:], common + [("Content-Range", "bytes %d-%d/%d" % (
                start, len(data) - 1, len(data)))])
        with LOCK:
            cut = blob["cut"] and key not in CUT_DONE
            if cut:
                CUT_DONE.add(key)
        if cut:  # headers for the whole file, half the body, then the connection closes
            self.send_response(200)
            for k, v in common:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send(200, data, common)


def main(argv):
    global REPOS, BLOBS, PAGE_SIZE, PORT, CDN_PORT
    with open(argv[1]) as f:
        config = json.load(f)
    REPOS, BLOBS = load(config)
    PAGE_SIZE = int(config.get("page_size", 1000))
    server = ThreadingHTTPServer(("127.0.0.1", int(config.get("port", 0))), Handler)
    server.daemon_threads = True
    PORT = server.server_address[1]
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    cdn.daemon_threads = True
    CDN_PORT = cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    print("port %d" % PORT, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
