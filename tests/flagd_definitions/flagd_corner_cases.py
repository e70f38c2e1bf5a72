"""Hand-written flag files from flagd's documentation and its edge cases, each with contexts."""

from __future__ import annotations

CTX = [
    {},
    {"targetingKey": "user-1", "email": "ada@example.com", "version": "2.1.0", "age": 21},
    {"targetingKey": "user-2", "email": "bob@test.org", "version": "v1.9", "age": "17"},
    {"targetingKey": "", "email": None, "version": 3},
]

CASES = [
    # The docs' targeting example: a shared evaluator, a sem_ver and a fractional rollout.
    ({
        "$evaluators": {"internal": {"ends_with": [{"var": "email"}, "@example.com"]}},
        "metadata": {"flagSetId": "docs", "version": 1},
        "flags": {
            "new-welcome": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off",
                            "targeting": {"if": [{"$ref": "internal"}, "on", "off"]},
                            "metadata": {"version": 2}},
            "header-color": {"state": "ENABLED",
                             "variants": {"red": "#f00", "blue": "#00f", "green": "#0f0"},
                             "defaultVariant": "red",
                             "targeting": {"fractional": [["red", 50], ["blue", 30], ["green", 20]]}},
            "bucket-by-email": {"state": "ENABLED", "variants": {"a": 1, "b": 2}, "defaultVariant": "a",
                                "targeting": {"fractional": [{"var": "email"}, ["a", 1], ["b", 1]]}},
            "new-api": {"state": "ENABLED", "variants": {"yes": True, "no": False}, "defaultVariant": "no",
                        "targeting": {"if": [{"sem_ver": [{"var": "version"}, ">=", "2.0.0"]}, "yes", "no"]}},
            "boolean-named": {"state": "ENABLED", "variants": {"true": "T", "false": "F"},
                              "defaultVariant": False,
                              "targeting": {">=": [{"var": "age"}, 18]}},
            "no-default": {"state": "ENABLED", "variants": {"x": 1}, "defaultVariant": None},
            "no-default-rule": {"state": "ENABLED", "variants": {"x": 1.0},
                                "targeting": {"if": [{"==": [{"var": "age"}, 21]}, "x", None]}},
            "disabled": {"state": "DISABLED", "variants": {"on": True}, "defaultVariant": "on"},
            "unknown-default": {"state": "ENABLED", "variants": {"on": True}, "defaultVariant": "gone"},
            "unknown-result": {"state": "ENABLED", "variants": {"on": True}, "defaultVariant": "on",
                               "targeting": {"var": "email"}},
            "null-variant": {"state": "ENABLED", "variants": {"on": None, "off": 0}, "defaultVariant": "off",
                             "targeting": {"if": [{"var": "email"}, "on", "off"]}},
            "divide": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off",
                       "targeting": {"if": [{">": [{"/": [10, {"var": "age"}]}, 0.4]}, "on", "off"]}},
            "flag-key": {"state": "ENABLED", "variants": {"mine": "m", "other": "o"}, "defaultVariant": "other",
                         "targeting": {"if": [{"==": [{"var": "$flagd.flagKey"}, "flag-key"]}, "mine", "other"]}},
            "timestamp": {"state": "ENABLED", "variants": {"past": 1, "future": 2}, "defaultVariant": "past",
                          "targeting": {"if": [{">": [{"var": "$flagd.timestamp"}, 1700000000]}, "future", "past"]}},
            "unknown-op": {"state": "ENABLED", "variants": {"on": True}, "defaultVariant": "on",
                           "targeting": {"no_such_op": [1]}},
            "objects": {"state": "ENABLED", "variants": {"cfg": {"a": [1, 2.5, "x"]}, "list": [1, 2]},
                        "defaultVariant": "cfg", "targeting": {"if": [{"in": ["@test", {"var": "email"}]}, "list"]}},
        },
    }, CTX),
    # Lists and objects compare by identity in the reference (Python's `is`): a value of the
    # context read twice is one object, even an empty one; two literals never are.
    ({
        "flags": {
            "same-list": {"state": "ENABLED", "variants": {"true": "same", "false": "other"},
                          "defaultVariant": "false", "targeting": {"==": [{"var": "tags"}, {"var": "tags"}]}},
            "not-same-list": {"state": "ENABLED", "variants": {"true": "differ", "false": "same"},
                              "defaultVariant": "same", "targeting": {"!=": [{"var": "tags"}, {"var": "tags"}]}},
            "same-object": {"state": "ENABLED", "variants": {"true": "same", "false": "other"},
                            "defaultVariant": "false", "targeting": {"==": [{"var": "prefs"}, {"var": "prefs"}]}},
            "literal-lists": {"state": "ENABLED", "variants": {"true": "same", "false": "other"},
                              "defaultVariant": "false", "targeting": {"==": [[], []]}},
        },
    }, [{"tags": [], "prefs": {}}, {"tags": ["a"], "prefs": {"k": 1}}, {"tags": []}, {}]),
    # Files the reference refuses: both must refuse them.
    ({"flags": {"f": {"state": "ON", "variants": {"a": 1}}}}, CTX[:1]),
    ({"flags": {"f": {"state": "ENABLED", "variants": {}}}}, CTX[:1]),
    ({"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": 5}}}, CTX[:1]),
    ({"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "metadata": {"k": [1]}}}}, CTX[:1]),
    ({"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "colour": "red"}}}, CTX[:1]),
    ({"metadata": [], "flags": {}}, CTX[:1]),
    # No flags at all is a valid (empty) file.
    ({"metadata": {"flagSetId": "empty"}}, CTX[:2]),
]
