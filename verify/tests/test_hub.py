#!/usr/bin/python3
"""ml_run --hf ORG/REPO[:QUANT] against a stand-in hub on loopback (verify/hub_stub.py), end to end.

The real ml_run (under the preset's emulator: Wine for the win-* presets, which then downloads through
WinHTTP) runs with HF_ENDPOINT at the stub and ML_CACHE in a fresh folder per test:
- the text of `--hf ... -n 8 --temp 0` equals that of the local stories260K.gguf; the default quant
  order skips a split Q4_K_M and takes F32; the listing comes in pages (Link: rel="next");
- a second run (and --offline) makes no request at all;
- a connection cut halfway through the body: the second attempt sends Range and resumes; the file's
  SHA-256 is hashlib's; a .part left by an earlier run is resumed from its length;
- a gated repository: 401 without the token, one line naming HF_TOKEN; a wrong token refused; the
  right token (HF_TOKEN) works, is never printed, and never sent to the bytes' other origin;
- 404: a missing quant lists the GGUF files there are; a missing repository is named; a split file
  is refused by name;
- a checksum mismatch: one line, and neither the file nor its .part is left;
- --offline with an empty cache names what is missing, without a request; the default cache folder
  ($XDG_CACHE_HOME or ~/.cache + legacy-ml; under Wine %LOCALAPPDATA%\legacy-ml);
- no network (a closed port; a host name that cannot resolve): one line, quickly;
- files of every SHA-256 padding edge length (0, 55, 56, 63, 64, 65, 119, 120, 1000 bytes) download,
  i.e. hub/sha256.cc agrees with hashlib on them.
ml_bench and ml_server take --hf too (native presets: ML_BENCH, ML_SERVER).
Environment: ML_RUN, ML_BENCH, ML_SERVER (optional), ML_EMULATOR ('|'-separated), ML_SHARED, ML_SOURCE.
"""
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

RUN = os.environ.get("ML_RUN", "")
BENCH = os.environ.get("ML_BENCH", "")
SERVER = os.environ.get("ML_SERVER", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
SHARED = os.environ.get("ML_SHARED", "")
SOURCE = os.environ.get("ML_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GGUF = os.path.join(SHARED, "models", "stories260K", "stories260K.gguf")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
TOKEN = "hf_stubSecretToken4711"
LENGTHS = [0, 55, 56, 63, 64, 65, 119, 120, 1000]
GEN = ["-n", "8", "--temp", "0", "-i", "Once upon a time"]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Hub(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RUN or not os.path.exists(RUN):
            raise unittest.SkipTest("ML_RUN is not set to a built ml_run")
        if not os.path.exists(GGUF):
            raise unittest.SkipTest("*** %s is missing: the --hf tests need the shared stories260K.gguf "
                                    "(-DML_SHARED_DIR=...)" % GGUF)
        cls.tmp = tempfile.mkdtemp(prefix="ml_hub_")
        data = os.path.join(cls.tmp, "data")
        os.makedirs(data)
        cls.blobs = {}
        for n in LENGTHS:
            p = os.path.join(data, "len-%d.bin" % n)
            with open(p, "wb") as f:
                f.write(os.urandom(n))
            cls.blobs[n] = p
        garbage = os.path.join(data, "garbage.gguf")
        with open(garbage, "wb") as f:
            f.write(os.urandom(70000))
        readme = os.path.join(data, "README.md")
        with open(readme, "w") as f:
            f.write("# a stub repository\n")
        g = {"source": GGUF}
        config = {"port": 0, "page_size": 2, "repos": {
            "stub/stories260K-GGUF": {"files": {
                "README.md": {"source": readme},
                "stories260K-F32.gguf": g,
                "stories260K-Q4_K_M-00001-of-00002.gguf": {"source": garbage},
                "stories260K-Q4_K_M-00002-of-00002.gguf": {"source": garbage}}},
            "stub/cut-GGUF": {"files": {"stories260K-F32.gguf": {"source": GGUF, "cut": True}}},
            "stub/gated-GGUF": {"token": TOKEN, "files": {"stories260K-F32.gguf": g}},
            "stub/bad-GGUF": {"files": {"model-Q8_0.gguf": {"source": garbage, "listed_sha256": "ab" * 32}}},
            "stub/lengths": {"files": {"len-%d.bin" % n: {"source": p} for n, p in cls.blobs.items()}}}}
        cfg = os.path.join(cls.tmp, "config.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        cls.stub = subprocess.Popen([PY, os.path.join(SOURCE, "verify", "hub_stub.py"), cfg],
                                    stdout=subprocess.PIPE, text=True)
        line = cls.stub.stdout.readline()
        if not line.startswith("port "):
            cls.stub.kill()
            raise AssertionError("hub_stub.py did not start: %r" % line)
        cls.endpoint = "http://127.0.0.1:%d" % int(line.split()[1])
        cls.local_text = cls.run_prog(cls, RUN, [GGUF] + GEN, cache=os.path.join(cls.tmp, "unused")).stdout

    @classmethod
    def tearDownClass(cls):
        cls.stub.kill()
        cls.stub.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="cache_", dir=self.tmp)

    def stats(self):
        with urllib.request.urlopen(self.endpoint + "/_stats") as r:
            return json.load(r)

    def run_prog(self, prog, args, cache=None, env=None, endpoint=None, timeout=300):
        e = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        e.update({"ML_CACHE": cache or self.cache, "HF_ENDPOINT": endpoint or self.endpoint})
        e.update(env or {})
        e = {k: v for k, v in e.items() if v is not None}  # env={"ML_CACHE": None} unsets it
        return subprocess.run(EMU + [prog] + args, capture_output=True, env=e, timeout=timeout)

    def ml_run(self, *args, **kw):
        return self.run_prog(RUN, list(args), **kw)

    def lines(self, r):
        return [ln for ln in r.stderr.decode(errors="replace").splitlines() if ln.strip()]

    def test_hostile_listing_is_one_line(self):
        """A listing whose members have other types, or that is not an array at all: one line, no crash."""
        import http.server
        import threading
        for body, code, needle in (('[{"type":5,"path":"a.gguf"}]', 6, "has no GGUF file"),
                                   ('[{"type":"file","path":7,"size":"x","lfs":[1]}]', 6, "has no GGUF file"),
                                   ('[{"type":"file","path":"m.gguf","size":-3,"lfs":{"oid":5,"size":1.5}}]', 6,
                                    "its GGUF files: m.gguf"),
                                   ('{"a":1}', 2, "is not a JSON array"), ("not json", 2, "is not a JSON array")):
            data = body.encode()

            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

                def log_message(self, *a):
                    pass

            srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            try:
                r = self.ml_run("--hf", "org/repo:q8_0", endpoint="http://127.0.0.1:%d" % srv.server_address[1])
            finally:
                srv.shutdown()
            self.assertEqual(r.returncode, code, (body, r.stderr))
            self.assertEqual(len(self.lines(r)), 1, (body, r.stderr))
            self.assertIn(needle, r.stderr.decode(errors="replace"), body)

    def assert_one_line_failure(self, r, *needles):
        err = r.stderr.decode(errors="replace")
        self.assertNotEqual(r.returncode, 0, err)
        self.assertEqual(r.stdout, b"")
        last = self.lines(r)[-1]
        for n in needles:
            self.assertIn(n, last, err)
        return last

    def cached_files(self):
        out = []
        for root, _, files in os.walk(self.cache):
            out += [os.path.relpath(os.path.join(root, f), self.cache) for f in files]
        return sorted(out)

    def test_download_runs_the_same_text_then_the_cache_makes_no_request(self):
        r = self.ml_run("--hf", "stub/stories260K-GGUF", *GEN)
        err = r.stderr.decode(errors="replace")
        self.assertEqual(r.returncode, 0, err)
        self.assertEqual(r.stdout, self.local_text)  # the default order: Q4_K_M is split, F32 is taken
        self.assertIn("SHA-256 verified", err)
        got = os.path.join(self.cache, "hub", "stub", "stories260K-GGUF", "main", "files", "stories260K-F32.gguf")
        self.assertEqual(sha256(got), sha256(GGUF))
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(os.path.dirname(got)), "listing.json")))
        self.assertFalse([f for f in self.cached_files() if f.endswith((".part", ".tmp"))])
        before = self.stats()["requests"]
        for extra in ([], ["--offline"]):
            r2 = self.ml_run("--hf", "stub/stories260K-GGUF:f32", *GEN, *extra)
            self.assertEqual(r2.returncode, 0, r2.stderr.decode(errors="replace"))
            self.assertEqual(r2.stdout, self.local_text)
        self.assertEqual(self.stats()["requests"], before, "a cached model must not touch the network")

    def test_listing_pages_follow_link_next(self):
        self.ml_run("--hf", "stub/stories260K-GGUF:F32", "-n", "1")
        pages = [x for x in self.stats()["log"] if x["path"].endswith("/tree/main")]
        self.assertGreaterEqual(len(pages), 2)  # 4 files in pages of 2

    def test_resume_after_a_cut(self):
        r = self.ml_run("--hf", "stub/cut-GGUF:F32", *GEN)
        err = r.stderr.decode(errors="replace")
        self.assertEqual(r.returncode, 0, err)
        self.assertEqual(r.stdout, self.local_text)
        self.assertIn("trying again", err)
        ranges = [x["range"] for x in self.stats()["log"] if x["path"].startswith("/cdn/") and x["range"]]
        self.assertTrue(ranges, "the second attempt must send Range")
        self.assertNotEqual(ranges[-1], "bytes=0-")
        got = os.path.join(self.cache, "hub", "stub", "cut-GGUF", "main", "files", "stories260K-F32.gguf")
        self.assertEqual(sha256(got), hashlib.sha256(open(GGUF, "rb").read()).hexdigest())

    def test_resume_a_part_left_by_an_earlier_run(self):
        files = os.path.join(self.cache, "hub", "stub", "stories260K-GGUF", "main", "files")
        os.makedirs(files)
        data = open(GGUF, "rb").read()
        half = len(data) // 3
        with open(os.path.join(files, "stories260K-F32.gguf.part"), "wb") as f:
            f.write(data[:half])
        n = len(self.stats()["log"])
        r = self.ml_run("--hf", "stub/stories260K-GGUF:F32", *GEN)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        self.assertEqual(r.stdout, self.local_text)
        self.assertIn(b"resuming at", r.stderr)
        ranges = [x["range"] for x in self.stats()["log"][n:] if x["path"].startswith("/cdn/")]
        self.assertEqual(ranges, ["bytes=%d-" % half])
        self.assertEqual(sha256(os.path.join(files, "stories260K-F32.gguf")), hashlib.sha256(data).hexdigest())
        self.assertFalse(os.path.exists(os.path.join(files, "stories260K-F32.gguf.part")))

    def test_gated_repository_and_the_token(self):
        r = self.ml_run("--hf", "stub/gated-GGUF", *GEN)
        self.assert_one_line_failure(r, "stub/gated-GGUF", "401", "HF_TOKEN")
        r = self.ml_run("--hf", "stub/gated-GGUF", "--hf-token", "hf_wrongToken0815", *GEN)
        last = self.assert_one_line_failure(r, "401", "refused")
        self.assertNotIn(b"hf_wrongToken0815", r.stderr + r.stdout)
        self.assertNotIn("hf_wrong", last)
        self.assertFalse([f for f in self.cached_files() if "gguf" in f], self.cached_files())
        n = len(self.stats()["log"])
        r = self.ml_run("--hf", "stub/gated-GGUF", *GEN, env={"HF_TOKEN": TOKEN})
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        self.assertEqual(r.stdout, self.local_text)
        self.assertNotIn(TOKEN.encode(), r.stderr + r.stdout)
        log = self.stats()["log"][n:]
        self.assertTrue(all(x["auth"] for x in log if not x["path"].startswith("/cdn/")))
        self.assertFalse([x for x in log if x["path"].startswith("/cdn/") and x["auth"]],
                         "Authorization must not go to another origin")

    def test_missing_quant_lists_the_files(self):
        r = self.ml_run("--hf", "stub/stories260K-GGUF:Q5_K_S", *GEN)
        self.assert_one_line_failure(r, "stub/stories260K-GGUF", "Q5_K_S", "stories260K-F32.gguf")

    def test_missing_repository_and_file(self):
        r = self.ml_run("--hf", "stub/no-such-GGUF", *GEN)
        self.assert_one_line_failure(r, "stub/no-such-GGUF", "404")
        r = self.ml_run("--hf", "stub/stories260K-GGUF", "--hf-file", "nope.gguf", *GEN)
        self.assert_one_line_failure(r, "nope.gguf", "stories260K-F32.gguf")

    def test_split_file_refused_by_name(self):
        r = self.ml_run("--hf", "stub/stories260K-GGUF:q4_k_m", *GEN)
        self.assert_one_line_failure(r, "stories260K-Q4_K_M-00001-of-00002.gguf", "split")

    def test_checksum_mismatch_deletes_the_file(self):
        r = self.ml_run("--hf", "stub/bad-GGUF:Q8_0", *GEN)
        self.assert_one_line_failure(r, "model-Q8_0.gguf", "SHA-256 mismatch", "deleted")
        self.assertFalse([f for f in self.cached_files() if "model-Q8_0" in f], self.cached_files())

    def test_offline_with_an_empty_cache(self):
        before = self.stats()["requests"]
        r = self.ml_run("--hf", "stub/stories260K-GGUF", "--hf-file", "stories260K-F32.gguf", "--offline", *GEN)
        self.assert_one_line_failure(r, "--offline", "stories260K-F32.gguf", "not in the cache")
        r = self.ml_run("--hf", "stub/stories260K-GGUF:F32", "--offline", *GEN)
        self.assert_one_line_failure(r, "--offline", "stub/stories260K-GGUF", "listing.json")
        self.assertEqual(self.stats()["requests"], before)

    def test_no_network(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        t = time.time()
        r = self.ml_run("--hf", "stub/stories260K-GGUF", *GEN, endpoint="http://127.0.0.1:%d" % port)
        self.assert_one_line_failure(r, "cannot connect to 127.0.0.1:%d" % port)
        self.assertEqual(len(self.lines(r)), 1, r.stderr)
        self.assertLess(time.time() - t, 60)
        self.assertEqual(self.cached_files(), [])  # nothing written
        # DNS: a name that cannot exist (RFC 6761's .invalid)
        r = self.ml_run("--hf", "stub/stories260K-GGUF", *GEN, endpoint="http://no-such-host.invalid")
        self.assert_one_line_failure(r, "cannot connect to no-such-host.invalid")
        self.assertEqual(len(self.lines(r)), 1, r.stderr)

    def test_sha256_edge_lengths_agree_with_hashlib(self):
        for n in LENGTHS:
            r = self.ml_run("--hf", "stub/lengths", "--hf-file", "len-%d.bin" % n, *GEN)
            err = r.stderr.decode(errors="replace")
            self.assertIn("SHA-256 verified", err, "length %d" % n)  # then it is no model: it fails to load
            got = os.path.join(self.cache, "hub", "stub", "lengths", "main", "files", "len-%d.bin" % n)
            self.assertEqual(sha256(got), sha256(self.blobs[n]))

    def test_default_cache_folder(self):
        if EMU and "wine" in EMU[0]:  # Wine sets %LOCALAPPDATA% itself (C:\users\<user>\AppData\Local)
            r = self.ml_run("--hf", "stub/stories260K-GGUF", "--offline", *GEN, env={"ML_CACHE": None})
            self.assert_one_line_failure(r, "AppData\\Local\\legacy-ml/hub/stub/stories260K-GGUF/main/listing.json")
            return
        xdg = os.path.join(self.cache, "xdg")
        r = self.ml_run("--hf", "stub/stories260K-GGUF:F32", *GEN, env={"ML_CACHE": None, "XDG_CACHE_HOME": xdg})
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        self.assertTrue(os.path.exists(os.path.join(xdg, "legacy-ml", "hub", "stub", "stories260K-GGUF", "main",
                                                    "files", "stories260K-F32.gguf")))
        home = os.path.join(self.cache, "home")
        r = self.ml_run("--hf", "stub/stories260K-GGUF", "--offline", *GEN,
                        env={"ML_CACHE": None, "XDG_CACHE_HOME": None, "HOME": home})
        self.assert_one_line_failure(r, os.path.join(home, ".cache", "legacy-ml", "hub"))

    def test_help_tells_the_options(self):
        r = self.ml_run("--help")
        out = r.stdout.decode()
        for s in ("--hf ORG/REPO[:QUANT]", "Q4_K_M Q4_0 Q8_0", "--hf-file", "--hf-token", "--hf-endpoint",
                  "--offline", "HF_TOKEN", "ML_CACHE"):
            self.assertIn(s, out)

    def test_bad_names(self):
        for spec in ("noslash", "a/b/c", "../x", "org/repo:Q4 K"):
            r = self.ml_run("--hf", spec, *GEN)
            self.assert_one_line_failure(r, "--hf")
            self.assertEqual(r.returncode, 6)

    @unittest.skipUnless(BENCH, "ML_BENCH not set")
    def test_ml_bench_takes_hf(self):
        r = self.run_prog(BENCH, ["decode", "--hf", "stub/stories260K-GGUF:F32", "-t", "1", "-n", "4", "--tsv"])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        self.assertIn(b"decode\t", r.stdout)
        self.assertIn(b"stories260K-F32.gguf", r.stdout)

    @unittest.skipUnless(SERVER, "ML_SERVER not set (no ml_server in this build)")
    def test_ml_server_takes_hf(self):
        r = self.run_prog(SERVER, ["--hf", "stub/stories260K-GGUF:Q5_K_S"])
        self.assert_one_line_failure(r, "ml_server:", "Q5_K_S", "stories260K-F32.gguf")
        e = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        e.update({"ML_CACHE": self.cache, "HF_ENDPOINT": self.endpoint})
        p = subprocess.Popen(EMU + [SERVER, "--hf", "stub/stories260K-GGUF:F32", "--port", "0"], env=e,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            port = None
            for line in p.stderr:
                if "listening on http://127.0.0.1:" in line:
                    port = int(line.split("127.0.0.1:")[1].split()[0].strip("/,)"))
                    break
            self.assertIsNotNone(port, "ml_server did not start")
            with urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % port, timeout=30) as resp:
                self.assertIn(b"stories260K-F32.gguf", resp.read())
        finally:
            p.terminate()
            p.wait(timeout=30)


if __name__ == "__main__":
    unittest.main()
