#!/usr/bin/python3
"""The skip gate of tools/test_matrix.sh: every test of a preset that did not run must be allowed.

  check_skips.py PRESET WORKFLOW_LOG BUILD_DIR [ALLOW_LIST]

Reads the "The following tests did not run:" list of ctest in WORKFLOW_LOG (each test once:
`(Skipped)` = exit 77 / SKIP_RETURN_CODE, `(Disabled)` = the DISABLED property). A skipped test
whose output (BUILD_DIR/Testing/Temporary/LastTest.log) lists unittest skips
(verify/run_unittest.py: `*** SKIPPED unittest <id>: <reason>`) stands for those skips, named
`<ctest name>/<id>`; otherwise for itself. Each must match a line of ALLOW_LIST (default
verify/allowed_skips.txt): `<preset glob> <test glob> <reason>` (fnmatch globs, no spaces).

Prints one bracketed note for the preset's summary line (nothing when every test ran), e.g.
`[skips allowed: 1 (cli/test_cli.Misuse.test_invalid_utf8_prompt: node passes argv ...)]`.
Exit status 1 when a skip is not allowed and CI=true; outside CI such skips are reported, loudly,
and the exit status is 0.
"""
import fnmatch
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UNITTEST_SKIP = re.compile(r"^\*\*\* SKIPPED unittest (.+?): (.*)$")
DID_NOT_RUN = re.compile(r"^\s+\d+ - (\S+) \((Skipped|Disabled)\)\s*$")


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def not_run(log_lines):
    """(name, Skipped|Disabled) of ctest's last "did not run" list."""
    tests = []
    for line in log_lines:
        if line.startswith("The following tests did not run:"):
            tests = []
            continue
        m = DID_NOT_RUN.match(line)
        if m:
            tests.append((m.group(1), m.group(2)))
    return tests


def outputs(last_test_log):
    """{test name: its output lines} from ctest's LastTest.log."""
    out, name, lines, inside = {}, None, [], False
    for line in last_test_log:
        m = re.match(r"^\d+/\d+ Test: (.+)$", line)
        if m:
            name, lines, inside = m.group(1), [], False
        elif line == "Output:" and name:
            inside = True
        elif line == "<end of output>" and name:
            out[name], inside = lines, False
        elif inside and not line.startswith("-----"):
            lines.append(line)
    return out


def allow_list(path):
    entries = []
    for n, line in enumerate(read(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            sys.exit("%s:%d: want `<preset glob> <test glob> <reason>`: %s" % (path, n, line))
        entries.append(tuple(parts))
    return entries


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    preset, log, build = argv[1], argv[2], argv[3]
    allow = allow_list(argv[4] if len(argv) == 5 else os.path.join(HERE, "allowed_skips.txt"))
    per_test = outputs(read(os.path.join(build, "Testing", "Temporary", "LastTest.log")))
    items = []  # (name, kind)
    for name, kind in not_run(read(log)):
        subs = [UNITTEST_SKIP.match(l) for l in per_test.get(name, [])] if kind == "Skipped" else []
        subs = [m.group(1) for m in subs if m]
        items += [("%s/%s" % (name, s), "unittest skip") for s in subs] or [(name, kind)]
    allowed, refused = {}, []  # allowed: reason -> names
    for name, kind in items:
        for p_glob, t_glob, reason in allow:
            if fnmatch.fnmatchcase(preset, p_glob) and fnmatch.fnmatchcase(name, t_glob):
                allowed.setdefault(reason, []).append(name)
                break
        else:
            refused.append("%s (%s)" % (name, kind))
    notes = []
    if allowed:
        notes.append("[skips allowed: %d (%s)]" % (sum(len(v) for v in allowed.values()),
                     "; ".join("%s: %s" % (", ".join(v), r) for r, v in allowed.items())))
    ci = os.environ.get("CI") == "true"
    if refused:
        notes.append("[%d SKIPPED, %s: %s]" % (len(refused), "not allowed under CI=true" if ci else
                     "would fail CI (verify/allowed_skips.txt)", ", ".join(refused)))
    print("  ".join(notes))
    return 1 if refused and ci else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
