"""pytest configuration of the differential suite (see README.md in this directory)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import common

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from serve_harness import required_binary  # noqa: E402


def pytest_report_header(config):
    return [
        f"flagpole differential: FLAGPOLE_DIFF_SEED={common.SEED} FLAGPOLE_DIFF_CASES={common.N_CASES} "
        f"binary={common.binary_path()}",
    ]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    terminalreporter.section("flagpole differential summary")
    terminalreporter.write_line(f"seed: FLAGPOLE_DIFF_SEED={common.SEED} (cases: {common.N_CASES})")
    for line in common.REPORT:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def flagpole_bin() -> str:
    return required_binary()
