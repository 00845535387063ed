#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time and prints one line: executions, coverage
(libFuzzer's cov = covered edges, ft = features), corpus size and crashes. The CI fuzz runs of
the fuzz preset (cmake/fuzz.cmake, tests fuzz.run.<target>) are this script.

    run_fuzz.py FUZZER --name NAME --seconds S --max-len N --seeds DIR... --work DIR

The working corpus is WORK/corpus (kept between runs; the committed seeds are only read), the
artifacts go to WORK/artifacts. Exit status 1 when libFuzzer found a crash, a leak, a timeout
(an input running over 10 s: a hang) or an out-of-memory (over 2 GB), or did not report its
statistics; the line then names the artifact and how to keep it as a regression input.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time

FAILURE_KINDS = ("crash", "leak", "timeout", "oom")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fuzzer")
    ap.add_argument("--name", required=True)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--seeds", nargs="+", default=[])
    ap.add_argument("--work", required=True)
    ap.add_argument("--log", help="libFuzzer's output (default WORK/fuzz.log)")
    a = ap.parse_args()

    corpus = os.path.join(a.work, "corpus")
    artifacts = os.path.join(a.work, "artifacts")
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    before = set(glob.glob(os.path.join(artifacts, "*")))
    log_path = a.log or os.path.join(a.work, "fuzz.log")
    cmd = [a.fuzzer, "-max_total_time=%d" % a.seconds, "-max_len=%d" % a.max_len, "-timeout=10",
           "-rss_limit_mb=2048", "-print_final_stats=1", "-use_value_profile=1",
           "-artifact_prefix=" + artifacts + "/", corpus] + [d for d in a.seeds if os.path.isdir(d)]
    env = dict(os.environ)
    # Leaks are findings too; symbolized stacks make the log useful.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    t0 = time.time()
    with open(log_path, "wb") as log:
        try:
            r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                               timeout=a.seconds + 300)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = "killed after %d s" % (a.seconds + 300)
    secs = time.time() - t0
    with open(log_path, "rb") as f:
        text = f.read().decode("utf-8", "replace")

    execs = re.search(r"stat::number_of_executed_units:\s*(\d+)", text)
    # the last status line: "#N  DONE  cov: C ft: F corp: K/..." (or the last pulse/NEW line)
    status = re.findall(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", text, re.M)
    new = [p for p in set(glob.glob(os.path.join(artifacts, "*"))) - before
           if os.path.basename(p).split("-")[0] in FAILURE_KINDS]
    cov, ft, corp = status[-1][1:] if status else ("?", "?", "?")
    n = int(execs.group(1)) if execs else (int(status[-1][0]) if status else 0)
    line = ("fuzz.run.%s: %d executions in %.0f s (%.0f/s), cov %s, ft %s, corpus %s inputs, "
            "crashes %d" % (a.name, n, secs, n / secs if secs > 0 else 0, cov, ft, corp, len(new)))
    print(line)
    failed = bool(new) or rc != 0 or not execs
    if failed:
        print("fuzz.run.%s: FAILED (libFuzzer exit %s); log: %s" % (a.name, rc, log_path))
        tail = text.strip().splitlines()[-40:]
        print("\n".join("  | " + t for t in tail))
        for p in sorted(new):
            print("fuzz.run.%s: artifact %s\n  reproduce: %s %s\n  keep it: copy it to "
                  "fuzz/regressions/%s/ once fixed (fuzz.replay.%s replays that folder)"
                  % (a.name, p, a.fuzzer, p, a.name, a.name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
