"""pytest configuration of the differential suite (see README.md in this directory)."""

from __future__ import annotations

import os

import pytest

import common


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
    path = common.binary_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"flagpole binary not found (or not executable) at {path}. Build it with "
            "`cargo build --release -p flagpole` from the repository root, or point FLAGPOLE_BIN at it.",
            pytrace=False,
        )
    return str(path)
