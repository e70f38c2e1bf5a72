"""pytest configuration of the Python bindings suite (tests/python_bindings, see README.md).

Makes the differential suite's generators importable (``gen_document``, ``compare``) and provides
``upstream``: a fake upstream HTTP server on 127.0.0.1 (see ``pybind_support``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))

import pybind_support  # noqa: E402


@pytest.fixture
def upstream() -> Iterator[pybind_support.Upstream]:
    state, server = pybind_support.serve()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
