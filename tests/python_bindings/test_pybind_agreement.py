"""The `flagpole` package agrees flag by flag with the Flagsmith Python SDK 6.3.0's local
evaluation (`Flagsmith(environment_key="ser.x", offline_mode=True,
offline_handler=LocalFileHandler(path))`) on the same generated documents (segments,
multivariate splits, identity overrides; see tests/differential/gen_document.py).

Per identity and feature: `enabled`, the value *with its Python type*, and the feature id; the
environment flags likewise. Where the SDK raises, flagpole must raise `EvaluationError`.
Both evaluate lazily, so each way of reading is compared: `all_flags()`; every feature read on
its own from a fresh `Flags` (`get_flag`, which evaluates that feature only); one feature read
before `all_flags()` on the same `Flags` (the SDK then lists it first and keeps its value), and
read again after; and `get_identity_flags_batch` against `all_flags()`.
FLAGPOLE_PYBIND_DOCS documents (default 6) x FLAGPOLE_PYBIND_IDENTITIES identities (default
100), seeded from FLAGPOLE_DIFF_SEED like the differential suite.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
import requests

import common
import compare
import flagpole_python as flagpole
import gen_document

N_DOCS = int(os.environ.get("FLAGPOLE_PYBIND_DOCS") or 6)
N_IDENTITIES = int(os.environ.get("FLAGPOLE_PYBIND_IDENTITIES") or 100)


def _flag(f: Any) -> dict:
    return {"enabled": f.enabled, "value": f.value, "id": f.feature_id}


def _flags_dict(flags: Any) -> dict:
    return {f.feature_name: _flag(f) for f in flags.all_flags()}


def _one_outcome(fn) -> dict:
    """A single flag read: the flag, or the exception."""
    try:
        return {"ok": {"flag": _flag(fn())}}
    except Exception as exc:  # noqa: BLE001
        return {"error": exc}


def _typed(f: Any) -> tuple:
    """A flag's fields with their Python types (so that 1 and True differ)."""
    return tuple((type(v).__name__, v) for v in (f.enabled, f.value, f.feature_id))


def _read_then_all(flags: Any, name: str) -> dict:
    """One feature read, then `all_flags()`, then the same feature again, on one `Flags`."""
    out: dict = {}
    for step, read in (("first", lambda: flags.get_flag(name)), ("all", flags.all_flags),
                       ("again", lambda: flags.get_flag(name))):
        try:
            got = read()
            out[step] = [(f.feature_name, _typed(f)) for f in got] if step == "all" else _typed(got)
        except Exception as exc:  # noqa: BLE001
            out[step] = type(exc).__name__ if isinstance(exc, flagpole.EvaluationError) else "raises"
    return out


def _normalise_errors(sequence: dict) -> dict:
    """The SDK raises the engine's own exceptions where flagpole raises EvaluationError."""
    return {k: ("EvaluationError" if v == "raises" else v) for k, v in sequence.items()}


def _sdk_client(path: str):
    from flagsmith import Flagsmith
    from flagsmith.offline_handlers import LocalFileHandler

    return Flagsmith(environment_key="ser.x", offline_mode=True,
                     offline_handler=LocalFileHandler(path))


def _outcome(fn) -> dict:
    try:
        return {"ok": _flags_dict(fn())}
    except Exception as exc:  # noqa: BLE001
        return {"error": exc}


def _diff(sdk: dict, ours: dict) -> list[str]:
    if "error" in sdk or "error" in ours:
        if "error" in sdk and isinstance(ours.get("error"), flagpole.EvaluationError):
            return []
        return [f"SDK {sdk} vs ours {ours}"]
    out: list[str] = []
    want, got = sdk["ok"], ours["ok"]
    if list(want) != list(got):
        out.append(f"feature names/order: SDK {list(want)} vs ours {list(got)}")
    for name in want.keys() & got.keys():
        out += compare.diff_values(want[name], got[name], name)
    return out


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    def refuse(*args, **kwargs):  # pragma: no cover - would be a harness bug
        raise RuntimeError("the SDK attempted a network request")

    monkeypatch.setattr(requests.Session, "send", refuse)


def test_identity_flags_agree_with_the_flagsmith_sdk(tmp_path: Path):
    compared = single_reads = 0
    failures: list[str] = []
    for n in range(N_DOCS):
        rng = random.Random(f"flagpole-pybind:{common.SEED}:{n}")
        doc, identities = gen_document.gen_document(rng, N_IDENTITIES)
        path = tmp_path / f"doc{n}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        try:
            sdk = _sdk_client(str(path))
        except Exception as exc:  # noqa: BLE001
            with pytest.raises(flagpole.DocumentError):
                flagpole.Environment.from_path(path)
            common.REPORT.append(f"pybind: document #{n}: the SDK cannot load it ({exc!r})")
            continue
        env = flagpole.Environment.from_path(path)
        failures += [f"doc #{n} environment flags: {d}" for d in _diff(
            _outcome(sdk.get_environment_flags), _outcome(env.get_environment_flags))]
        names = env.feature_names()
        batch = env.get_identity_flags_batch([(i["identifier"], i["traits"]) for i in identities])
        for ident, batched in zip(identities, batch):
            identifier, traits = ident["identifier"], ident["traits"]
            where = f"doc #{n} identity {identifier!r} traits {traits!r}"
            want = _outcome(lambda: sdk.get_identity_flags(identifier, traits))
            got = _outcome(lambda: env.get_identity_flags(identifier, traits))
            held = _outcome(lambda: env._get_identity_flags_gil(identifier, traits, gil="hold"))
            released = _outcome(lambda: env._get_identity_flags_gil(identifier, traits, gil="release"))
            compared += 1
            for d in (_diff(want, got) + _diff(want, held) + _diff(want, released)
                      + _diff(want, _outcome(lambda: batched))):
                failures.append(f"{where}: {d}")
            for name in names:
                one_want = _one_outcome(lambda: sdk.get_identity_flags(identifier, traits).get_flag(name))
                one_got = _one_outcome(lambda: env.get_identity_flags(identifier, traits).get_flag(name))
                single_reads += 1
                failures += [f"{where}: get_flag({name!r}) alone: {d}" for d in _diff(one_want, one_got)]
            if names:
                name = rng.choice(names)
                sdk_sequence = _normalise_errors(_read_then_all(sdk.get_identity_flags(identifier, traits), name))
                our_sequence = _read_then_all(env.get_identity_flags(identifier, traits), name)
                if sdk_sequence != our_sequence:
                    failures.append(f"{where}: get_flag({name!r}), all_flags(), get_flag again: "
                                    f"SDK {sdk_sequence} vs ours {our_sequence}")
    common.REPORT.append(f"pybind: {compared} identities and {single_reads} single-flag reads "
                         f"compared with the Flagsmith SDK, {len(failures)} differences")
    assert compared >= 500 or N_DOCS * N_IDENTITIES < 500
    assert not failures, (f"{len(failures)} differences (replay: FLAGPOLE_DIFF_SEED={common.SEED}); "
                          "first ones:\n" + "\n".join(failures[:10]))


def test_loading_by_path_bytes_and_dict_agree(tmp_path: Path):
    rng = random.Random(f"flagpole-pybind-load:{common.SEED}")
    doc, identities = gen_document.gen_document(rng, 30)
    text = json.dumps(doc, ensure_ascii=False)
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    envs = [flagpole.Environment.from_path(path), flagpole.Environment.from_path(str(path)),
            flagpole.Environment.from_bytes(text.encode()), flagpole.Environment.from_bytes(text),
            flagpole.Environment.from_dict(doc), flagpole.Environment.from_dict(json.loads(text)),
            flagpole.Client(environment=flagpole.Environment.from_dict(doc))]
    for ident in identities:
        outcomes = [_outcome(lambda: e.get_identity_flags(ident["identifier"], ident["traits"]))
                    for e in envs]
        for o in outcomes[1:]:
            assert not _diff(outcomes[0], o)
