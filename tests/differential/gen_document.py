"""Seeded random environment DOCUMENTS (the wire format of `/api/v1/environment-document/`, as the
Flagsmith Python SDK 6.3.0 maps it in `flagsmith/mappers.py`) and identities.

A document has MULTIVARIATE feature states (mv values with ids and/or uuids, int and float
allocations), project segments whose rules use ``property_`` (conditions drawn by the context
generator against a sample identity, so they are often true), segment feature states with
``feature_segment.priority`` and identity overrides. Identities mix every trait type and include
the overridden identifiers.

Entry points: ``gen_document(rng)`` -> (document, identities).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import gen_context

API_KEYS = ["n9fbf9h3v4fFgH3U3ngWhb", "env-key", "ünï-key", "k"]
DOC_TRAITS = ["age", "plan", "version", "score", "flag", "x y", "ünï", "email", "n"]
DOC_FEATURE_NAMES = ["banner", "checkout", "mv_feature", "dark mode", "ünï", "limit", "beta", "colour"]


def _uuid(r: random.Random) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def _fs_value(r: random.Random) -> Any:
    """feature_state_value: string | int | bool | null (floats are stored as strings)."""
    x = r.random()
    if x < 0.45:
        return r.choice(["foo", "bar", "", "12.34", "007", "ünï", "True", '{"a": 1}', "1e5"])
    if x < 0.7:
        return r.choice([0, 1, 42, -7, 2**53 + 1, 10**20])
    if x < 0.85:
        return r.choice([True, False])
    if x < 0.95:
        return None
    return r.choice([1.5, 1.0, -0.0])  # not produced by Core, but valid JSON


class _DocGen:
    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.trait_pool: dict[str, list] = {}
        self.features: list[dict] = []  # {"id", "name", "type"}
        self.next_id = 1000

    def nid(self) -> int:
        self.next_id += self.r.randint(1, 50)
        return self.next_id

    # -- identities ---------------------------------------------------------------------------
    def trait_domains(self) -> None:
        g = gen_context._Gen(self.r, 0.0)
        for name in self.r.sample(DOC_TRAITS, self.r.randint(3, len(DOC_TRAITS))):
            self.trait_pool[name] = [g.trait_value() for _ in range(self.r.randint(2, 6))]

    def traits(self) -> dict:
        out = {}
        for name, values in self.trait_pool.items():
            if self.r.random() < 0.75:
                out[name] = self.r.choice(values)
        if self.r.random() < 0.1:
            out["other"] = self.r.choice([None, 1, "x", True, 2.5])
        return out

    # -- feature states -----------------------------------------------------------------------
    def mv_values(self) -> list:
        weight_sets = [[50, 50], [30, 30, 40], [33.33, 33.33, 33.34], [100], [0, 100], [25, 25],
                       [10.5, 20, 0], [50.0, 50.0], [33.33, 33.33, 33.33], [1e-05]]
        out = []
        for w in self.r.choice(weight_sets):
            mv: dict = {"percentage_allocation": w,
                        "multivariate_feature_option": {"id": self.nid(), "value": _fs_value(self.r)}}
            x = self.r.random()
            if x < 0.6:
                mv["id"] = self.nid() if self.r.random() < 0.9 else self.r.randint(1, 5000)
                mv["mv_fs_value_uuid"] = _uuid(self.r)
            elif x < 0.8:
                mv["id"] = None
                mv["mv_fs_value_uuid"] = _uuid(self.r)
            else:
                mv["mv_fs_value_uuid"] = _uuid(self.r)
            k = self.r.random()
            if k < 0.4:
                mv["multivariate_feature_option"]["key"] = self.r.choice(["variant_a", "variant_b", "control", "v"])
            elif k < 0.5:
                mv["multivariate_feature_option"]["key"] = None
            out.append(mv)
        self.r.shuffle(out)
        return out

    def feature_state(self, feat: dict, segment_priority: Any = "NONE") -> dict:
        fs: dict = {
            "feature": dict(feat),
            "enabled": self.r.random() < 0.6,
            "feature_state_value": _fs_value(self.r),
            "featurestate_uuid": _uuid(self.r),
            "feature_segment": None,
            "multivariate_feature_state_values": [],
        }
        x = self.r.random()
        if x < 0.6:
            fs["django_id"] = self.nid()
        elif x < 0.7:
            fs["django_id"] = 0  # falsy: the uuid is used as the hashing key
        elif x < 0.85:
            fs["django_id"] = None
        if feat["type"] == "MULTIVARIATE" and self.r.random() < 0.85:
            fs["multivariate_feature_state_values"] = self.mv_values()
        if segment_priority != "NONE":
            fs["feature_segment"] = {"priority": segment_priority}
        if self.r.random() < 0.2:
            fs["environment"] = 1
            fs["identity"] = None
        return fs

    # -- segments -----------------------------------------------------------------------------
    def condition(self, sample_identity: dict) -> dict:
        g = gen_context._Gen(self.r, 0.0)
        g.partial_ctx = {"environment": {"key": self.api_key, "name": self.name}, "identity": sample_identity}
        g.features = {}
        while True:
            c = g.condition()
            if c["operator"] in gen_context.OPERATORS and not str(c["property"] or "").startswith("$.flags"):
                break
        cond = {"operator": c["operator"], "property_": c["property"], "value": c["value"]}
        if cond["operator"] == "IN" and isinstance(cond["value"], list):
            # documents carry strings; a real list only appears via the identity-override mapping
            cond["value"] = ",".join(str(v) for v in cond["value"])
        if cond["operator"] in ("IS_SET", "IS_NOT_SET") and self.r.random() < 0.5:
            cond["value"] = None
        if cond["operator"] == "PERCENTAGE_SPLIT" and cond["value"] is None:
            cond["value"] = "50"
        return cond

    def rule(self, depth: int) -> dict:
        rule: dict = {"type": self.r.choice(["ALL", "ALL", "ANY", "NONE"]), "conditions": [], "rules": []}
        for _ in range(self.r.choice([0, 1, 1, 2, 3])):
            rule["conditions"].append(self.condition({"identifier": "sample", "traits": self.traits()}))
        if depth < 3 and self.r.random() < 0.3:
            rule["rules"] = [self.rule(depth + 1) for _ in range(self.r.randint(1, 2))]
        return rule

    def segment(self) -> dict:
        sid = self.nid()
        fss = []
        for feat in self.r.sample(self.features, min(len(self.features), self.r.choice([0, 1, 1, 2, 3]))):
            fss.append(self.feature_state(feat, segment_priority=self.r.choice([0, 1, 2, 3, 0, 1, 10])))
        return {
            "id": sid,
            "name": self.r.choice(["segment_one", "segment_two", "beta users", "ünï", "identity_overrides", "s"]),
            "rules": [self.rule(1) for _ in range(self.r.choice([0, 1, 1, 1, 2]))],
            "feature_states": fss,
        }

    # -- identity overrides -------------------------------------------------------------------
    def identity_override(self, identifier: str) -> dict:
        feats = self.r.sample(self.features, min(len(self.features), self.r.choice([0, 1, 1, 2])))
        return {
            "identifier": identifier,
            "identity_uuid": _uuid(self.r),
            "created_date": "2024-01-01T00:00:00.000000+00:00",
            "environment_api_key": self.api_key,
            "django_id": None,
            "identity_features": [
                {"feature": dict(f), "enabled": self.r.random() < 0.5, "feature_state_value": self.r.choice(["io", 1, True, None, ""]),
                 "featurestate_uuid": _uuid(self.r), "django_id": None, "feature_segment": None,
                 "multivariate_feature_state_values": []}
                for f in feats
            ],
            "identity_traits": [],
        }

    # -- whole document -----------------------------------------------------------------------
    def document(self, n_identities: int) -> tuple[dict, list]:
        r = self.r
        self.api_key = r.choice(API_KEYS)
        self.name = r.choice(["Test Environment", "", "prod"])
        self.trait_domains()
        for name in r.sample(DOC_FEATURE_NAMES, r.randint(2, 7)):
            self.features.append({"id": self.nid(), "name": name,
                                  "type": r.choice(["STANDARD", "MULTIVARIATE", "MULTIVARIATE"])})
        override_ids = [f"override-{i}" for i in range(r.randint(0, 6))] + (["007"] if r.random() < 0.3 else [])
        doc = {
            "id": r.randint(1, 99999),
            "api_key": self.api_key,
            "name": self.name,
            "updated_at": "2024-07-14T16:12:00.000000Z",
            "allow_client_traits": True,
            "hide_sensitive_data": False,
            "hide_disabled_flags": None,
            "use_identity_composite_key_for_hashing": False,
            "use_identity_overrides_in_local_eval": bool(override_ids),
            "project": {
                "id": r.randint(1, 9999), "name": "project", "hide_disabled_flags": False,
                "enable_realtime_updates": False, "server_key_only_feature_ids": [],
                "organisation": {"id": 13, "name": "org", "feature_analytics": False,
                                 "stop_serving_flags": False, "persist_trait_data": True},
                "segments": [self.segment() for _ in range(r.randint(0, 6))],
            },
            "feature_states": [self.feature_state(f) for f in self.features],
            "identity_overrides": [self.identity_override(i) for i in override_ids],
            "segment_overrides": [],
        }
        identities = []
        for i in range(n_identities):
            x = r.random()
            if override_ids and x < 0.2:
                identifier = r.choice(override_ids)
            elif x < 0.35:
                identifier = r.choice(gen_context.IDENTIFIERS)
            else:
                identifier = f"user_{r.randint(0, 10**6)}"
            identities.append({"identifier": identifier, "traits": self.traits()})
        return doc, identities


def gen_document(rng: random.Random, n_identities: int = 60) -> tuple[dict, list]:
    return _DocGen(rng).document(n_identities)
