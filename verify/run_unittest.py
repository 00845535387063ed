#!/usr/bin/python3
"""Runs a Python unittest suite for CTest so that a skip is seen as one (plain unittest exits 0).

  run_unittest.py FILE.py     the tests of one module (e.g. verify/tests/test_cli.py)
  run_unittest.py DIR         the test*.py modules found in DIR (unittest discover -s DIR)
  run_unittest.py DIR --except NAME.py ...
                              the same without the named modules (CTest runs them as entries of their own)

The output is unittest's verbose one line per test. Exit status: 1 when a test failed or none
ran (none found); 77 (the suite's SKIP_RETURN_CODE: CTest reports it "Skipped") when any test was skipped,
each listed as `*** SKIPPED unittest <test id>: <reason>`; 0 otherwise. Outside CI a skip stays a skip;
tools/test_matrix.sh fails the preset under CI=true unless verify/allowed_skips.txt allows
`<ctest name>/<test id>` for that preset.
"""
import importlib.util
import os
import sys
import unittest

SKIP = 77


def load(path, skip=()):
    loader = unittest.TestLoader()
    if os.path.isdir(path):
        suite = unittest.TestSuite()
        found = set()
        for name in sorted(os.listdir(path)):
            if name.startswith("test") and name.endswith(".py"):
                found.add(name)
                if name not in skip:
                    suite.addTests(loader.discover(path, pattern=name))
        missing = set(skip) - found
        if missing:
            raise SystemExit("run_unittest.py: --except %s: no such module in %s" % (" ".join(sorted(missing)), path))
        return suite
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return loader.loadTestsFromModule(module)


def main(argv):
    skip = argv[3:]
    if len(argv) < 2 or (len(argv) > 2 and (argv[2] != "--except" or not skip or not os.path.isdir(argv[1]))):
        print(__doc__, file=sys.stderr)
        return 2
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(load(argv[1], skip))
    sys.stdout.flush()
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0 and not result.skipped:
        print("run_unittest.py: no test ran in %s" % argv[1])
        return 1
    if result.skipped:
        print("\n*** %d SKIPPED in %s (%s):" % (len(result.skipped), argv[1],
              "fails CI unless verify/allowed_skips.txt allows it" if os.environ.get("CI") == "true"
              else "a skip, not a pass"))
        for test, reason in result.skipped:
            print("*** SKIPPED unittest %s: %s" % (test.id(), reason))
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
