"""Environment documents for the `flagpole serve` integration suite.

`make_document()` builds a Flagsmith environment document (the wire format the Edge Proxy serves
at `/api/v1/environment-document/` and the Flagsmith Python SDK 6.3.0 maps in
`flagsmith/mappers.py`) that exercises what the proxy must get right:

- feature ids NOT in document order, and values of every JSON type (string, int, float, bool,
  null, a float spelled as a string);
- multivariate features whose variant ids are NOT in document order (variants must be picked by
  id, not by position), one whose variants have no id (uuid ordering), a multivariate segment
  override;
- segment overrides with competing priorities (lower number wins, first segment wins ties);
- a segment that matches WITHOUT an identity (a rule on `$.environment.name`) and an `IS_NOT_SET`
  segment: both must leave `/flags` unchanged (it is the environment's defaults: no segments) but change
  identity flags;
- a PERCENTAGE_SPLIT segment;
- identity overrides (one of them on the server-only feature);
- a server-key-only feature (`project.server_key_only_feature_ids`);
- `project.hide_disabled_flags` on or off, and disabled features.

`revision` changes a few values and `updated_at` so that successive versions are distinguishable;
everything else is deterministic, so tests can compute the expected answers with the reference
engine (see serve_expect.py).
"""

from __future__ import annotations

import copy
import datetime as _dt
import uuid

# 2024-06-01T12:00:00Z is a Saturday: If-Modified-Since must read "Sat, 01 Jun 2024 12:00:00 GMT".
BASE_UPDATED_AT = _dt.datetime(2024, 6, 1, 12, 0, 0, tzinfo=_dt.timezone.utc)

# Feature ids (deliberately not increasing in document order).
F_PLAIN = 40
F_INT = 3
F_BOOL = 27
F_FLOAT_STR = 21
F_FLOAT = 22
F_NULL_DISABLED = 5
F_MV = 11
F_MV_UUID = 12
F_SEGMENT_TARGET = 31
F_ENV_NAME_TARGET = 14
F_NO_PLAN = 15
F_IDENTITY_TARGET = 16
F_DISABLED_STRING = 17
F_SERVER_ONLY = 9
F_LONG_TEXT = 50

OVERRIDDEN_USER = "overridden-user"
VIP_USER = "vip-user"


def updated_at_for(revision: int) -> _dt.datetime:
    return BASE_UPDATED_AT + _dt.timedelta(minutes=revision)


def imf_fixdate(when: _dt.datetime) -> str:
    """RFC 9110 IMF-fixdate, e.g. 'Sat, 01 Jun 2024 12:00:00 GMT' (locale independent)."""
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    when = when.astimezone(_dt.timezone.utc)
    return (
        f"{days[when.weekday()]}, {when.day:02d} {months[when.month - 1]} {when.year:04d} "
        f"{when.hour:02d}:{when.minute:02d}:{when.second:02d} GMT"
    )


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=(0x0000_0000_0000_4000_8000_0000_0000_0000 | n)))


def _feature(fid: int, name: str, mv: bool = False) -> dict:
    return {"id": fid, "name": name, "type": "MULTIVARIATE" if mv else "STANDARD"}


def _fs(fid, name, enabled, value, django_id, *, mv_values=None, priority=None, mv=False):
    return {
        "feature": _feature(fid, name, mv=mv or bool(mv_values)),
        "enabled": enabled,
        "feature_state_value": value,
        "django_id": django_id,
        "featurestate_uuid": _uuid(django_id),
        "feature_segment": None if priority is None else {"priority": priority},
        "multivariate_feature_state_values": mv_values or [],
    }


def _mv(mv_id, weight, value, option_id, key=None, uuid_n=None):
    option = {"id": option_id, "value": value}
    if key is not None:
        option["key"] = key
    return {
        "id": mv_id,
        "mv_fs_value_uuid": _uuid(uuid_n if uuid_n is not None else 500000 + option_id),
        "percentage_allocation": weight,
        "multivariate_feature_option": option,
    }


def _cond(operator, prop, value):
    return {"operator": operator, "property_": prop, "value": value}


def _segment(sid, name, conditions, feature_states, rule_type="ALL"):
    return {
        "id": sid,
        "name": name,
        "rules": [{"type": rule_type, "conditions": conditions, "rules": []}],
        "feature_states": feature_states,
    }


def _identity_override(identifier, api_key, features, n):
    return {
        "identifier": identifier,
        "identity_uuid": _uuid(900000 + n),
        "created_date": "2024-05-01T00:00:00.000000Z",
        "environment_api_key": api_key,
        "django_id": None,
        "identity_features": features,
        "identity_traits": [],
    }


def make_document(
    api_key: str,
    *,
    name: str = "Serve Test Environment",
    env_id: int = 1001,
    hide_disabled_flags: bool = False,
    revision: int = 0,
    identity_overrides: bool = True,
    extra_identity_overrides: list | None = None,
) -> dict:
    r = revision
    mv_values = [
        # ids deliberately NOT in document order: 9003 comes first in the document but sorts last
        _mv(9003, 30, "variant_c", 703, key="c"),
        _mv(9001, 30, "variant_a", 701, key="a"),
        _mv(9002, 30, "variant_b", 702, key="b"),
    ]
    mv_uuid_values = [
        # no ids: priority is the uuid as an integer; document order is the reverse of uuid order
        _mv(None, 33.3, "uuid_third", 713, uuid_n=30),
        _mv(None, 33.3, "uuid_second", 712, uuid_n=20),
        _mv(None, 33.3, "uuid_first", 711, uuid_n=10),
    ]
    feature_states = [
        _fs(F_PLAIN, "plain_string", True, f"hello-r{r}", 2001),
        _fs(F_INT, "integer_feature", True, 1234 + r, 2002),
        _fs(F_BOOL, "bool_value", True, True, 2003),
        _fs(F_FLOAT_STR, "float_as_string", True, "12.34", 2004),
        _fs(F_FLOAT, "float_value", True, 2.5, 2005),
        _fs(F_NULL_DISABLED, "null_disabled", False, None, 2006),
        _fs(F_MV, "mv_feature", True, "control_value", 2007, mv_values=mv_values),
        _fs(F_MV_UUID, "mv_uuid_feature", True, "uuid_control", 2008, mv_values=mv_uuid_values),
        _fs(F_SEGMENT_TARGET, "segment_target", False, "default", 2009),
        _fs(F_ENV_NAME_TARGET, "env_name_target", False, "env-default", 2010),
        _fs(F_NO_PLAN, "no_plan_banner", True, "has-plan", 2011),
        _fs(F_IDENTITY_TARGET, "identity_target", False, "nobody", 2012),
        _fs(F_DISABLED_STRING, "disabled_string", False, "x", 2013),
        _fs(F_SERVER_ONLY, "server_only_secret", True, f"secret-r{r}", 2014),
        _fs(
            F_LONG_TEXT,
            "long_text",
            True,
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
            "incididunt ut labore et dolore magna aliqua. " * 3,
            2015,
        ),
    ]
    segments = [
        # Competing priorities on segment_target: pro (2) < adult (1); adult and germany tie at 1 →
        # adult wins (first in document order).
        _segment(
            301,
            "plan_pro",
            [_cond("EQUAL", "plan", "pro")],
            [_fs(F_SEGMENT_TARGET, "segment_target", True, "pro", 3001, priority=2)],
        ),
        _segment(
            302,
            "adults",
            [_cond("GREATER_THAN_INCLUSIVE", "age", "18")],
            [_fs(F_SEGMENT_TARGET, "segment_target", True, "adult", 3002, priority=1)],
        ),
        _segment(
            303,
            "germany",
            [_cond("EQUAL", "country", "DE")],
            [
                _fs(F_SEGMENT_TARGET, "segment_target", True, "germany", 3003, priority=1),
                _fs(F_INT, "integer_feature", True, 49, 3004, priority=5),
            ],
        ),
        # Matches without any identity: must NOT change /flags (environment defaults only).
        _segment(
            304,
            "this_environment",
            [_cond("EQUAL", "$.environment.name", name)],
            [_fs(F_ENV_NAME_TARGET, "env_name_target", True, "env-segment", 3005, priority=10)],
        ),
        # Matches an identity without the trait (and would match a trait-less /flags evaluation).
        _segment(
            305,
            "no_plan",
            [_cond("IS_NOT_SET", "plan", None)],
            [_fs(F_NO_PLAN, "no_plan_banner", False, "no-plan", 3006, priority=3)],
        ),
        # Multivariate segment override, variant ids again out of order.
        _segment(
            306,
            "beta",
            [_cond("EQUAL", "beta", "true")],
            [
                _fs(
                    F_MV,
                    "mv_feature",
                    True,
                    "beta_control",
                    3007,
                    priority=0,
                    mv_values=[
                        _mv(9102, 50, "beta_b", 802, key="beta_b"),
                        _mv(9101, 25, "beta_a", 801, key="beta_a"),
                    ],
                )
            ],
        ),
        _segment(
            307,
            "forty_percent",
            [_cond("PERCENTAGE_SPLIT", "", "40")],
            [_fs(F_BOOL, "bool_value", False, False, 3008, priority=4)],
        ),
        _segment(
            308,
            "semver_and_regex",
            [
                _cond("GREATER_THAN_INCLUSIVE", "app_version", "2.0.0:semver"),
                _cond("REGEX", "email", r".*@example\.com$"),
            ],
            [_fs(F_FLOAT, "float_value", True, 9.75, 3009, priority=0)],
            rule_type="ANY",
        ),
    ]
    overrides = []
    if identity_overrides:
        overrides = [
            _identity_override(
                OVERRIDDEN_USER,
                api_key,
                [
                    _fs(F_IDENTITY_TARGET, "identity_target", True, "for-you", 4001),
                    _fs(F_SERVER_ONLY, "server_only_secret", True, "secret-for-you", 4002),
                    _fs(F_DISABLED_STRING, "disabled_string", False, "still-off", 4003),
                ],
                1,
            ),
            _identity_override(
                VIP_USER,
                api_key,
                [_fs(F_SEGMENT_TARGET, "segment_target", True, "vip", 4004)],
                2,
            ),
        ]
    for i, (identifier, features) in enumerate(extra_identity_overrides or []):
        overrides.append(_identity_override(identifier, api_key, features, 100 + i))

    return {
        "id": env_id,
        "api_key": api_key,
        "name": name,
        "updated_at": updated_at_for(revision).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "allow_client_traits": True,
        "hide_sensitive_data": False,
        "hide_disabled_flags": None,
        "use_identity_composite_key_for_hashing": True,
        "use_identity_overrides_in_local_eval": True,
        "project": {
            "id": 77,
            "name": "Serve Test Project",
            "hide_disabled_flags": hide_disabled_flags,
            "enable_realtime_updates": False,
            "server_key_only_feature_ids": [F_SERVER_ONLY],
            "organisation": {
                "id": 7,
                "name": "Serve Test Org",
                "feature_analytics": False,
                "stop_serving_flags": False,
                "persist_trait_data": True,
            },
            "segments": segments,
        },
        "feature_states": feature_states,
        "identity_overrides": overrides,
        # Real documents carry extra fields; they must be ignored (and kept in the served document).
        "segment_overrides": [],
    }


def override_features(value: str) -> list:
    """identity_features for an extra identity override that sets identity_target to `value`."""
    return [_fs(F_IDENTITY_TARGET, "identity_target", True, value, 4100)]


def paginate(document: dict, n_pages: int) -> list[dict]:
    """Split `identity_overrides` over `n_pages` pages; every page repeats the top-level fields."""
    overrides = document["identity_overrides"]
    pages = []
    per = max(1, -(-len(overrides) // n_pages))
    for i in range(n_pages):
        page = copy.deepcopy(document)
        page["identity_overrides"] = copy.deepcopy(overrides[i * per : (i + 1) * per])
        pages.append(page)
    return pages


# A spread of identities with mixed trait types for the comparison tests (SDK interop, identity
# endpoints). Deterministic.
def mixed_identities(n: int = 60) -> list[tuple[str, dict]]:
    plans = ["pro", "free", None, "enterprise", "PRO"]
    countries = ["DE", "US", "FR", None]
    out: list[tuple[str, dict]] = [
        (OVERRIDDEN_USER, {}),
        (VIP_USER, {"plan": "pro", "age": 40}),
        ("Overridden-User", {}),  # identity overrides match the identifier exactly
    ]
    for i in range(n):
        traits: dict = {}
        plan = plans[i % len(plans)]
        if plan is not None:
            traits["plan"] = plan
        if i % 3 == 0:
            traits["age"] = 10 + (i * 7) % 50  # int
        elif i % 3 == 1:
            traits["age"] = str(10 + (i * 5) % 50)  # numeric string
        else:
            traits["age"] = 17.5 + (i % 4)  # float
        country = countries[i % len(countries)]
        if country is not None:
            traits["country"] = country
        if i % 4 == 0:
            traits["beta"] = True
        elif i % 4 == 1:
            traits["beta"] = "true"
        elif i % 4 == 2:
            traits["beta"] = False
        if i % 5 == 0:
            traits["app_version"] = f"{i % 4}.{i % 10}.0"
        if i % 6 == 0:
            traits["email"] = f"user{i}@example.com"
        elif i % 6 == 3:
            traits["email"] = f"user{i}@other.org"
        out.append((f"user-{i:03d}-{'abcdefghij'[i % 10]}", traits))
    return out


def post_identity_body(identifier, traits: dict) -> dict:
    """`POST /api/v1/identities/` body as the SDKs send it."""
    return {"identifier": identifier,
            "traits": [{"trait_key": k, "trait_value": v} for k, v in traits.items()]}
