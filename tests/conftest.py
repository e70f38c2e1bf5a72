"""Rules every suite shares (tests/pytest.ini makes tests/ the root, so this file always applies).

A test that needs a tool this machine lacks (Go, Java with Maven, curl, Chromium, Node, a Python
package) calls `pytest.skip` saying what is missing. Run by hand, that is a skip, and the end of the
run says so loudly (a banner with the count; `scripts/test.sh` adds `-rs` for each reason). With
`CI=true` every skip is turned into a failure here, in one place, so CI cannot be green while a
suite did not run; the suites themselves need no CI-specific code.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """CI=true (or 1/yes): what GitHub Actions, GitLab CI and .ci/run set."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail_instead(report) -> None:
    report.outcome = "failed"
    report.longrepr = (f"did not run, and CI=true makes that a failure: {_skip_reason(report)}\n"
                       "(install what is missing; scripts/test.sh lists the tools each suite needs)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        _fail_instead(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci():
        _fail_instead(report)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons = sorted({_skip_reason(r) for r in skipped})
    terminalreporter.section(f"{len(skipped)} TESTS DID NOT RUN", sep="!", red=True, bold=True)
    for reason in reasons:
        terminalreporter.write_line(f"  - {reason}", red=True)
    terminalreporter.write_line("These skips are failures under CI=true; install what they name.", bold=True)
