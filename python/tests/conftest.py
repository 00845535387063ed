"""pytest for CTest (cmake/Tests.cmake, python.binding): a skipped test makes the run exit 77 (the
entry's SKIP_RETURN_CODE) and is listed as `*** SKIPPED unittest <id>: <reason>`, the line
verify/check_skips.py reads (verify/run_unittest.py prints the same for unittest suites)."""
import pytest

from common import chatml_gguf

_skipped = []


@pytest.fixture(scope="session")
def chatml(tmp_path_factory):
    """(path, template) of the random ChatML GGUF (common.chatml_gguf), made once per run."""
    return chatml_gguf(str(tmp_path_factory.mktemp("chatml")))


def pytest_runtest_logreport(report):
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append((report.nodeid.replace("::", "."), reason))


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _skipped:
        for nodeid, reason in _skipped:
            print("\n*** SKIPPED unittest %s: %s" % (nodeid, reason))
        session.exitstatus = 77
