"""The `flagpole` package's API: the SDK-shaped `Flags`/`Flag` (lazy, as the SDK's), the batch
call, trait conversion by type (bool before int, big ints, None, the SDK's envelopes), clear
exceptions (bad document, bad trait type, unknown feature), `explain`, and the packaging (stubs
and `py.typed` installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flagpole_python as flagpole

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "environment.json"


def _doc(conditions: list, value="seg") -> dict:
    return {
        "api_key": "k", "name": "n",
        "feature_states": [{"django_id": 1, "feature": {"id": 42, "name": "f", "type": "STANDARD"},
                            "enabled": False, "feature_state_value": "default",
                            "multivariate_feature_state_values": []}],
        "project": {"segments": [{
            "id": 1, "name": "s",
            "rules": [{"type": "ALL", "rules": [], "conditions": conditions}],
            "feature_states": [{"django_id": 2, "feature": {"id": 42, "name": "f", "type": "STANDARD"},
                                "enabled": True, "feature_state_value": value,
                                "feature_segment": {"priority": 0},
                                "multivariate_feature_state_values": []}]}]},
        "identity_overrides": [],
    }


def _value(env: flagpole.Environment, traits) -> object:
    return env.get_identity_flags("u", traits).get_feature_value("f")


def test_flags_look_like_the_sdks():
    env = flagpole.Environment.from_path(EXAMPLE)
    flags = env.get_identity_flags("alice", {"plan": "enterprise", "seats": 120})
    all_flags = flags.all_flags()
    assert [f.feature_name for f in all_flags] == env.feature_names() == flags.feature_names()
    assert len(flags) == len(all_flags) and "max_projects" in flags and "nope" not in flags
    flag = flags.get_flag("max_projects")
    assert (flag.enabled, flag.value, flag.feature_id, flag.is_default) == (True, 1000, 3, False)
    assert flags.is_feature_enabled("max_projects") is True
    assert flags.get_feature_value("max_projects") == 1000
    assert "max_projects" in repr(flag)
    env_flags = env.get_environment_flags()
    assert env_flags.get_feature_value("max_projects") == 10
    assert env.api_key == "example_client_key" and env.name


def test_unknown_features_raise_or_use_the_default_handler():
    env = flagpole.Environment.from_path(EXAMPLE)
    with pytest.raises(flagpole.FeatureNotFoundError, match="Feature does not exist: nope"):
        env.get_identity_flags("a").get_flag("nope")
    with pytest.raises(flagpole.FlagpoleError):
        env.get_environment_flags().is_feature_enabled("nope")

    class Default:
        enabled, value, is_default = True, "fallback", True

    client = flagpole.Flagpole(environment=env, default_flag_handler=lambda name: Default())
    assert client.get_identity_flags("a").get_feature_value("nope") == "fallback"
    assert client.get_environment_flags().is_feature_enabled("nope") is True


def test_traits_are_converted_by_type():
    eq_true = flagpole.Environment.from_dict(_doc([{"operator": "EQUAL", "property_": "t", "value": "true"}]))
    assert _value(eq_true, {"t": True}) == "seg"
    assert _value(eq_true, {"t": 1}) == "default"  # bool is tested before int
    eq_one = flagpole.Environment.from_dict(_doc([{"operator": "EQUAL", "property_": "t", "value": "1"}]))
    assert _value(eq_one, {"t": 1}) == "seg"
    assert _value(eq_one, {"t": 1.0}) == "seg"
    assert _value(eq_one, {"t": "1"}) == "seg"
    big = flagpole.Environment.from_dict(_doc([{"operator": "GREATER_THAN", "property_": "t",
                                                "value": str(2**64)}]))
    assert _value(big, {"t": 2**64 + 1}) == "seg"
    assert _value(big, {"t": 2**64}) == "default"
    assert _value(big, {"t": -(2**70)}) == "default"
    not_set = flagpole.Environment.from_dict(_doc([{"operator": "IS_NOT_SET", "property_": "t", "value": None}]))
    assert _value(not_set, {"t": None}) == "seg"
    assert _value(not_set, {}) == "seg"
    assert _value(not_set, None) == "seg"
    assert _value(not_set, {"t": "x"}) == "default"
    assert _value(not_set, {"t": {"value": "x", "transient": True}}) == "default"  # SDK envelope


@pytest.mark.parametrize("traits, message", [
    ({"t": [1, 2]}, 'trait "t": unsupported value type list'),
    ({"t": b"x"}, 'trait "t": unsupported value type bytes'),
    ({"t": object()}, 'trait "t": unsupported value type object'),
    ({"t": {"transient": True}}, 'trait "t": a dict value must be an envelope'),
    ({1: "x"}, "trait names must be str"),
    ([("t", 1)], "traits must be a dict"),
])
def test_bad_traits_are_type_errors(traits, message):
    env = flagpole.Environment.from_path(EXAMPLE)
    with pytest.raises(TypeError, match=message):
        env.get_identity_flags("u", traits)


@pytest.mark.parametrize("load, message", [
    (lambda: flagpole.Environment.from_bytes(b"{not json"), "not JSON"),
    (lambda: flagpole.Environment.from_bytes(b"[]"), "must be a JSON object"),
    (lambda: flagpole.Environment.from_bytes(b'{"name": "x"}'), "api_key"),
    (lambda: flagpole.Environment.from_dict({"api_key": "k", "name": "n", "feature_states": 3}),
     "feature_states"),
    (lambda: flagpole.Environment.from_dict({"api_key": float("nan")}), "not valid JSON"),
    # JSON objects that are not documents, whichever way they are loaded, naming what is missing.
    (lambda: flagpole.Environment.from_bytes(b'{"api_key": "k", "hello": 1}'), r"\$\.feature_states"),
    (lambda: flagpole.Environment.from_dict({"api_key": "k", "feature_states": []}), r"\$\.project"),
    (lambda: flagpole.Environment.from_dict({"api_key": "k", "feature_states": [], "project": {}}),
     r"\$\.project\.segments"),
    (lambda: flagpole.Environment.from_path("/nonexistent/env.json"), "cannot read"),
])
def test_bad_documents_are_document_errors(load, message):
    with pytest.raises(flagpole.DocumentError, match=message):
        load()


def test_dicts_load_as_their_json_would_and_bad_ones_name_the_problem():
    # A dict is read as JSON text where it can be; a value nested deeper than a JSON parser
    # takes still loads (as a tree), and what JSON cannot say is refused with its path.
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    deep: object = 1
    for _ in range(200):
        deep = [deep]
    doc["feature_states"][0]["feature_state_value"] = deep
    name = doc["feature_states"][0]["feature"]["name"]
    env = flagpole.Environment.from_dict(doc)
    assert env.get_environment_flags().get_feature_value(name) == deep
    assert env.name == doc["name"] and env.api_key == doc["api_key"]
    for bad, message in [({**doc, 1: "x"}, r"\$: keys must be str, not int"),
                         ({**doc, "name": float("inf")}, r'\$\["name"\]: inf is not valid JSON'),
                         ({**doc, "name": object()}, r'\$\["name"\]: object is not a JSON value')]:
        with pytest.raises(flagpole.DocumentError, match=message):
            flagpole.Environment.from_dict(bad)


def test_engine_errors_are_evaluation_errors_when_a_flag_is_read():
    # As in the SDK 6.3.0, `get_identity_flags` evaluates nothing: reading raises.
    env = flagpole.Environment.from_dict(_doc([{"operator": "REGEX", "property_": "t", "value": "(["}]))
    flags = env.get_identity_flags("u", {"t": "x"})
    for read in (lambda: flags.get_flag("f"), flags.all_flags, lambda: flags.is_feature_enabled("f")):
        with pytest.raises(flagpole.EvaluationError, match="raises"):
            read()
    with pytest.raises(flagpole.FeatureNotFoundError):
        flags.get_flag("nope")
    [batched] = env.get_identity_flags_batch([("u", {"t": "x"})])
    with pytest.raises(flagpole.EvaluationError, match="raises"):
        batched.all_flags()
    assert env.get_environment_flags().get_feature_value("f") == "default"


def test_flags_are_lazy_and_memoised_like_the_sdks():
    env = flagpole.Environment.from_path(EXAMPLE)
    traits = {"plan": "enterprise", "seats": 120, "app_version": "2.3.1", "country": "US"}
    whole = {f.feature_name: (f.enabled, f.value, f.reason)
             for f in env.get_identity_flags("alice", traits).all_flags()}
    names = env.feature_names()
    # Each feature read on its own gives the whole evaluation's flag.
    for name in names:
        flag = env.get_identity_flags("alice", traits).get_flag(name)
        assert (flag.enabled, flag.value, flag.reason) == whole[name]
    # Flags read before all_flags() are listed first, in read order (as the SDK lists them).
    flags = env.get_identity_flags("alice", traits)
    first, second = names[-1], names[2]
    assert flags.get_feature_value(first) == whole[first][1]
    assert flags.is_feature_enabled(second) == whole[second][0]
    listed = [f.feature_name for f in flags.all_flags()]
    assert listed == [first, second] + [n for n in names if n not in (first, second)]
    assert [f.feature_name for f in flags.all_flags()] == listed
    assert flags.get_flag(names[0]).value == whole[names[0]][1]


def test_batch_evaluates_many_identities():
    env = flagpole.Environment.from_path(EXAMPLE)
    identities = [("alice", {"plan": "enterprise", "seats": 120}), ["bob", None], "carol",
                  ("vip-customer", {"country": "FR"})]
    batch = env.get_identity_flags_batch(identities)
    assert len(batch) == len(identities)
    for item, flags in zip(identities, batch):
        identifier, traits = (item, None) if isinstance(item, str) else item
        want = [(f.feature_name, f.enabled, f.value) for f in env.get_identity_flags(identifier, traits).all_flags()]
        assert [(f.feature_name, f.enabled, f.value) for f in flags.all_flags()] == want
        assert flags.get_feature_value("max_projects") == env.get_identity_flags(identifier, traits).get_feature_value("max_projects")
    assert env.get_identity_flags_batch([]) == []
    assert len(env.get_identity_flags_batch(iter([("a", {}), ("b", {})]))) == 2
    client = flagpole.Client(environment=env, default_flag_handler=lambda name: "fallback")
    [flags] = client.get_identity_flags_batch([("alice", {})])
    assert flags.get_flag("nope") == "fallback"
    for bad, message in [([("a",)], "pair"), ([3], "pair"), ([(3, {})], "identifier must be a str"),
                         ([("a", [1])], "traits must be a dict"), (5, "not iterable")]:
        with pytest.raises(TypeError, match=message):
            env.get_identity_flags_batch(bad)



def test_the_gil_is_released_only_for_work_worth_a_hand_off():
    """`all_flags()` releases the GIL when the document's estimated evaluation cost (made at
    compile time from its features and segment conditions) reaches the threshold; a batch when
    its length times it does. The forced variants exist for the benchmark and answer the same."""
    threshold = flagpole._GIL_RELEASE_THRESHOLD_NS
    example = flagpole.Environment.from_path(EXAMPLE)
    assert 0 < example._evaluation_cost_ns < threshold
    one = _doc([{"operator": "EQUAL", "property_": "plan", "value": "pro"}] * 2)
    many = json.loads(json.dumps(one))
    template = many["feature_states"][0]
    many["feature_states"] = [
        {**template, "django_id": i, "feature": {"id": i, "name": f"f{i}", "type": "STANDARD"}}
        for i in range(1, 400)] + [template]
    small, large = flagpole.Environment.from_dict(one), flagpole.Environment.from_dict(many)
    assert small._evaluation_cost_ns < threshold <= large._evaluation_cost_ns
    for env in (example, small, large):
        for identifier, traits in [("u", {"plan": "pro"}), ("v", None)]:
            want = [(f.feature_name, f.enabled, f.value, f.reason)
                    for f in env.get_identity_flags(identifier, traits).all_flags()]
            for gil in ("release", "hold", "auto"):
                got = [(f.feature_name, f.enabled, f.value, f.reason)
                       for f in env._get_identity_flags_gil(identifier, traits, gil=gil).all_flags()]
                assert got == want
    with pytest.raises(ValueError, match="gil must be"):
        example._get_identity_flags_gil("u", gil="always")


def test_explain_reads_well():
    env = flagpole.Environment.from_path(EXAMPLE)
    text = env.explain("alice", {"plan": "enterprise", "seats": 120, "country": "US"})
    assert text.startswith('Identity "alice"')
    for word in ("FLAG", "REASON", "DECIDED BY", "max_projects", "SEGMENTS", "enterprise"):
        assert word in text
    assert "match" in flagpole.Client(environment=env).explain("bob")


def test_client_arguments_are_checked():
    with pytest.raises(ValueError, match="environment_key"):
        flagpole.Flagpole()
    with pytest.raises(ValueError, match="server-side key"):
        flagpole.Flagpole("client-key", "http://127.0.0.1:9/api/v1/")


def test_stubs_and_py_typed_are_installed():
    package = Path(flagpole.__file__).parent
    assert (package / "py.typed").is_file()
    stub = (package / "__init__.pyi").read_text()
    for name in ("class Environment", "class Flagpole", "class Flags", "def get_identity_flags",
                 "def get_identity_flags_batch",
                 "class DocumentError", "Client = Flagpole"):
        assert name in stub
    assert json.loads(json.dumps(flagpole.__version__))
