"""pytest configuration of the flagd definitions differential suite (see README.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flagd_diff_common import N_FILES, REPO, REPORT, SEED  # noqa: E402


def pytest_report_header(config):
    return [f"flagd definitions differential: FLAGPOLE_FLAGD_DIFF_SEED={SEED} FLAGPOLE_FLAGD_DIFF_FILES={N_FILES}"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    terminalreporter.section("flagd definitions differential summary")
    terminalreporter.write_line(f"seed: FLAGPOLE_FLAGD_DIFF_SEED={SEED} (files: {N_FILES})")
    for line in REPORT:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def flagpole_bin() -> str:
    path = Path(os.environ.get("FLAGPOLE_BIN") or REPO / "target" / "release" / "flagpole")
    if not path.is_file():
        pytest.fail(f"flagpole binary not found at {path}: `cargo build --release -p flagpole` "
                    "or point FLAGPOLE_BIN at it.", pytrace=False)
    return str(path)


@pytest.fixture(scope="session")
def reference_python() -> str:
    """The Python of the reference's own venv (scripts/test.sh makes .venv-flagd-reference)."""
    path = Path(os.environ.get("FLAGPOLE_FLAGD_REFERENCE_PYTHON") or REPO / ".venv-flagd-reference" / "bin" / "python")
    if not path.is_file():
        pytest.skip(f"the reference's venv is missing ({path}): scripts/test.sh makes it from "
                    "tests/flagd_definitions/requirements-reference.txt")
    return str(path)
