"""Seeded random generator of evaluation contexts (the reference's `EvaluationContext`,
`flag_engine/context/types.py`) for the differential test.

Every context is small (<= 6 features, <= 6 segments, rule depth <= 3) so that a mismatch stays
readable, and biased towards conditions that are TRUE (condition values are frequently derived
from the value the condition's property actually resolves to), so that both branches of every
operator are exercised.

About 5% of the contexts (``raise_rate``) get one deliberately raising construct (an input on
which the reference raises) injected in a segment that is always evaluated.

Entry points: ``case_rng(seed, index)`` and ``gen_context(rng)``; ``spelled_json.dumps(ctx)`` is
the single JSON spelling fed to both sides.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from typing import Any

from flag_engine.segments.evaluator import get_context_value, get_enriched_context

from spelled_json import dumps

OPERATORS = [
    "EQUAL",
    "NOT_EQUAL",
    "GREATER_THAN",
    "GREATER_THAN_INCLUSIVE",
    "LESS_THAN",
    "LESS_THAN_INCLUSIVE",
    "CONTAINS",
    "NOT_CONTAINS",
    "REGEX",
    "PERCENTAGE_SPLIT",
    "MODULO",
    "IS_SET",
    "IS_NOT_SET",
    "IN",
]
COMPARATORS = OPERATORS[:6]
UNKNOWN_OPERATORS = ["BETWEEN", "equal", "SEMVER_EQUAL", "", "NOT_IN"]

# ---------------------------------------------------------------------------------------------
# Value pools
# ---------------------------------------------------------------------------------------------

STR_VALUES = [
    "", "a", "abc", "Hello World", "hello", "007", "1.50", "-0", " 1", "1e5", "+1", "1.", ".5",
    "0x10", "ünïcödé", "٣", "42", "-7", "1.10", "0.3", "-0.0", "True", "true", "false", "False",
    "None", "a,b", " b", "x y", "[1, 2]", "NaN", "inf", "1_000", "ß", "日本語", "a\nb",
    "\u00a042", "tab\t", "🙂",
]
SEMVER_STR_VALUES = [
    "1.2.3", "1.2.3-beta.1+build", "1.2.3\n", "2.0.0", "1.10.0", "1.2.3-alpha", "1.2.3-beta.1",
    "10.0.0-rc.1", "1.2.3+build.5", "0.0.0", "1.2", "v1.2.3", "01.2.3", "1.2.3-0", "1.2.3-",
    "1.2.3-alpha.beta", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.2.3 ", "1.2.3\n\n",
]
INT_VALUES = [0, 1, -1, 7, 2, 3, 10, 42, 100, -42, 12345, 2**53 + 1, 2**63, 2**64 + 5, -(2**70), 10**30]
FLOAT_VALUES = [
    1.0, -0.0, 0.0, 1e16, 1e-05, 1.5, 42.0, 0.3, -1.5, 1.1, 3.14159, 1e300, 123456789.123,
    0.1, 2.5, -7.25, 1e15, 1e22, 5e-324, 100.0, 50.0,
]
FEATURE_VALUES_EXTRA: list[Any] = ["foo", "bar", "", 0, 1, 1.0, -0.0, True, False, None, 2**65, 1e16, "ünï"]

IDENTIFIERS = [
    "user-1", "user-2", "007", "1.50", "ünïcödé", "a b", "identity_4692", "True", "-0", "42",
    "0cfd0d72-7a3d-4e38-9c1b-2b3f6d5a1e10", "x,y", "",
]
TRAIT_NAMES = [
    "age", "plan", "version", "score", "flag", "x y", "ünï", "n", "empty", "ratio",
    "$.identity.identifier", "$.environment.name", "$['identity']", "$", "$.bad[",
]
FEATURE_NAMES = ["f0", "f1", "f2", "f3", "f4", "f5", "my feature", "ünï", "A"]
SEGMENT_NAMES = ["segment_one", "segment_two", "s", "beta users", "identity_overrides", "ünï seg", ""]
VARIANT_KEYS = ["variant_a", "variant_b", "control", "", "v1", "ünï"]

CRAFTED_COMPARATOR_VALUES = [
    " 42 ", "+42", "4_2", "42.0", "42", "41", "43", "inf", "-inf", "nan", "NaN", "False", "false",
    "FALSE", "0", "1", "True", "true", "", "1e1", "10", "-1", "0.0", "-0.0", "1_000", "1__0",
    "_1", "0x10", "None", "abc", "a", "٣", "7", "007", "1.5", "1.50", "0.3", "1e16", "1e-05",
    "1e+16", "Infinity", "-0", "\u00a07 ", "1.0", "hello", "Hello World", "ß",
]
SEMVER_CONDITION_VALUES = [
    "1.2.3:semver", "1.2.3-beta.1:semver", "1.2.4:semver", "1.2.3+other:semver", "1.2:semver",
    "v1.2.3:semver", "2.0.0:semver", "1.10.0:semver", "1.2.3-alpha:semver", ":semver",
    "1.2.3-beta.1+build:semver", "1.2.3:SEMVER", "1.2.3\n:semver", "01.2.3:semver",
    "1.2.3-0:semver", "1.2.2:semver", "0.0.0:semver", "1.0.0-alpha.1:semver",
    "1.0.0-alpha.beta:semver", "10.0.0-rc.1:semver",
]
REGEX_POOL = [
    ".*", "^a", "a", "abc", "\\d+", "\\d+$", "^\\d+$", "1\\.10$", "1\\.1$", "[a-z]+", "(?i)HELLO",
    "hello$", "True", "False", "None", "1e\\+16", "1\\.0", "-0\\.0", "\\w+", "\\s", "^$", "$",
    "(a)\\1", "(?=a)", "a(?!b)", "\\Aa", "a\\Z", ".+\\n", "[[:alpha:]]", "ü", "\\bb", "x{2}",
    "(?P<n>a)(?P=n)", "a|b", "^(?:user)-\\d", "\\u00fc", "[^\\W\\d]", "(?s).*", "\\$", "\\.",
    "^7$", "^42", "1\\.2\\.3", "^-?\\d", "[٣]", "\\d", "(?x) a b c",
]
REGEX_EXOTIC = [
    "a{,2}b", "(?<=a)b", "(?<!a)b", "(?#comment)a", "a{2}?", "a++", "(?>a+)b", "(?i:A)b", "(?a)\\w+",
    "\\x41", "\\101", "\\0", "[\\d-z]", "\\N{LATIN SMALL LETTER U WITH DIAERESIS}", "(?i)ß", "(?i)SS",
    "(?i)ü", "\\W", "\\S+\\Z", "^\\s*$", "(?m)^b", "(?s)a.b", "(?x)a # c", "[^]]", "[]a]", "a|",
    "()", "(?:)", "\\B", "\\Bb", "[\\w&&\\d]", "[a-z--b]", "\\U0001F642", "🙂", ".{1}$", "(a)(?(1)b|c)",
    "\\ba\\b", "[\\s\\S]", "(?u)\\w", "\\d{4,}", "\\z", "\\p{L}", "\\h", "\\G", "x*?$",
]
JSONPATH_EXOTIC = [
    "$.identity.traits.*", "$.identity.traits[*]", "$.identity['traits']['age']", "$.identity.traits['age', 'plan']",
    "$.features[?length(@.name) > 1].name", "$.features[?match(@.name, 'f[0-9]')].name",
    "$.features[?search(@.name, '1')].value", "$.features[?@.value == 1].name", "$.features[?@.value == 1.0].name",
    "$.features[?@.value == true].name", "$.features[?@.enabled == false].key", "$.features[?!@.variants].name",
    "$.features[?count(@.variants[*]) > 1].name", "$.features.*.variants[0].value", "$.features.*.variants[-1].weight",
    "$.features.*.variants[0:1].key", "$.features.*.variants[::-1].value", "$.segments.*.rules[0].type",
    "$.segments.*.overrides[-1].name", "$.segments[*].name", "$..conditions[0].operator", "$..traits.age",
    "$..[0].value", "$..*", "$.identity.traits[?@ == 'yes']", "$.identity.traits[?@ < 10.5]",
    "$.identity.traits[?@ == 42]", "$.identity.traits[?@ == null]", "$.identity.traits[?value(@) == 'a']",
    "$.identity .identifier", "$.identity.identifier ", "$ .identity.key", "$.identity.traits['\\u00fcn\\u00ef']",
    "$.identity.traits[\"x y\"]", "$.identity.traits['a\\'b']", "$.environment['key','name']",
    "$.identity.traits[?@ > 1 && @ < 100]", "$.identity.traits[?(@ == 'yes')]", "$.features.f0['value']",
    "$.identity.traits.ünï", "$.environment.name.length", "$.identity.traits[?@ == 1e1]", "$[0]",
    "$.identity.traits[?@ in ['a']]", "$.features[?@.priority].name", "$.identity.traits['x y'][0]",
]
BAD_REGEXES = ["(", "[a-", "*a", "a{2,1}", "(?P<x", "\\"]
MODULO_POOL = [
    "2|0", "2|1", "3|2", "0.1|0.1", "2.5|0.5", " 2 | 1 ", "a|b", "2", "2|1|0", "", "|", "1e1|0",
    "inf|1", "nan|0", "-3|-1", "3|-2", "0.5|0", "1_0|0", "٣|1", "2|0.0", "2|-0.0", "-inf|-1",
    "7|0", "10|2", "1|0",
]
ZERO_DIVISOR_MODULO = ["0|0", "0.0|1", "-0|0", "0_0|0"]
PERCENT_POOL = [
    "0", "100", "50", "50.5", " 50 ", "1e2", "inf", "-inf", "nan", "-1", "abc", "", "99.99",
    "26.59531906381276", "1_0", "75", "25", "10", "90", "100.0", "٥٠",
]
JSON_IN_STRINGS = [
    '["a", 1, true, 1.0, null]', "[1, 2, 3]", '["7", "42"]', "[]", "[1.0, 1e16, -0.0]",
    "[[1, 2]]", '["True", "False"]', "[not json", "[1,2", "[true]", '[0.3, "0.3"]',
]


def pystr(v: Any) -> str:
    return str(v)


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"flagpole-diff:{seed}:{index}")


_SHORTHAND = re.compile(r"^[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*$")


def jp_member(name: str) -> str:
    """A JSONPath segment selecting member ``name``."""
    if _SHORTHAND.match(name):
        return "." + name
    return "[" + json.dumps(name, ensure_ascii=False).replace("'", "\\'") + "]"


class _Gen:
    def __init__(self, rng: random.Random, raise_rate: float) -> None:
        self.r = rng
        self.raise_rate = raise_rate
        self.partial_ctx: dict = {}
        self.features: dict = {}
        self.dep_mode = False

    # -- helpers --------------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def choice(self, seq):
        return self.r.choice(seq)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    # -- scalars --------------------------------------------------------------------------------
    def trait_value(self) -> Any:
        x = self.r.random()
        if x < 0.30:
            return self.choice(STR_VALUES)
        if x < 0.40:
            return self.choice(SEMVER_STR_VALUES)
        if x < 0.60:
            return self.choice(INT_VALUES) if self.chance(0.6) else self.r.randint(-20, 200)
        if x < 0.80:
            return self.choice(FLOAT_VALUES) if self.chance(0.7) else round(self.r.uniform(-100, 100), 2)
        if x < 0.92:
            return self.chance(0.5)
        return None

    def feature_value(self) -> Any:
        x = self.r.random()
        if x < 0.4:
            return self.choice(FEATURE_VALUES_EXTRA)
        if x < 0.6:
            return self.choice(STR_VALUES)
        if x < 0.75:
            return self.choice(INT_VALUES)
        if x < 0.9:
            return self.choice(FLOAT_VALUES)
        return self.chance(0.5)

    # -- identity -------------------------------------------------------------------------------
    def identity(self) -> Any:
        x = self.r.random()
        if x < 0.07:
            return "ABSENT"
        if x < 0.10:
            return None
        if x < 0.13:
            return {}
        ident: dict = {}
        if self.chance(0.7):
            ident["identifier"] = self.choice(IDENTIFIERS)
        else:
            ident["identifier"] = f"user_{self.r.randint(0, 999)}"
        y = self.r.random()
        if y < 0.05:
            pass  # no traits key
        elif y < 0.08:
            ident["traits"] = None
        elif y < 0.12:
            ident["traits"] = {}
        else:
            traits: dict = {}
            for _ in range(self.r.randint(1, 6)):
                traits[self.choice(TRAIT_NAMES)] = self.trait_value()
            ident["traits"] = traits
        k = self.r.random()
        if k < 0.6:
            pass
        elif k < 0.68:
            ident["key"] = None
        elif k < 0.76:
            ident["key"] = ""
        else:
            ident["key"] = self.choice(["32103813", "007", "custom-key", "k", "1.50", "ünï"])
        if self.chance(0.2):
            # key order variations (the enriched key keeps the position of an existing key)
            items = list(ident.items())
            self.r.shuffle(items)
            ident = dict(items)
        return ident

    # -- features -------------------------------------------------------------------------------
    def variants(self) -> list:
        weight_sets = [
            [100], [50, 50], [30, 30, 40], [33.33, 33.33, 33.34], [33.33, 33.33, 33.33], [0, 100],
            [100, 0], [25, 0, 25, 50], [50.0, 50.0], [1e-05, 99.99999], [10, 20], [60, 60], [0],
            [12.5, 12.5, 75], [100.0], [0.0, 50, 50], [30], [20, 20, 20, 20, 20], [49.99, 0.02],
        ]
        weights = list(self.choice(weight_sets))
        n = len(weights)
        pmode = self.r.random()
        if pmode < 0.4:
            prios = list(range(1, n + 1))
            self.r.shuffle(prios)
        elif pmode < 0.6:
            prios = [self.r.choice([0, 1])] * n  # ties keep document order
        elif pmode < 0.8:
            prios = [self.r.getrandbits(128) for _ in range(n)]  # uuid-int style
        else:
            prios = [self.r.randint(-5, 5) for _ in range(n)]
        out = []
        for w, p in zip(weights, prios):
            v: dict = {"value": self.feature_value(), "weight": w, "priority": p}
            if self.chance(0.7):
                v["key"] = self.choice(VARIANT_KEYS)
            if self.chance(0.2):
                items = list(v.items())
                self.r.shuffle(items)
                v = dict(items)
            out.append(v)
        return out

    def metadata(self) -> Any:
        x = self.r.random()
        if x < 0.45:
            return "ABSENT"
        if x < 0.55:
            return {}
        if x < 0.9:
            return {"id": self.r.randint(1, 99999)}
        return {"id": self.r.randint(1, 99), "extra": [1, {"a": None, "b": 1.0}], "x": "ünï"}

    def feature_context(self, name: str, override: bool) -> dict:
        key_kind = self.r.random()
        if key_kind < 0.6:
            key = str(self.r.randint(1, 99999))
        elif key_kind < 0.8:
            key = self.uuid()
        elif key_kind < 0.9:
            key = ""
        else:
            key = "78986"
        fc: dict = {"key": key, "name": name, "enabled": self.chance(0.6), "value": self.feature_value()}
        if self.chance(0.35):
            fc["variants"] = self.variants()
        if override:
            p = self.r.random()
            if p < 0.25:
                pass
            elif p < 0.9:
                fc["priority"] = self.choice([0, 1, 2, 3, -1, 0, 1, 10**20, -(2**63), 5])
            else:
                fc["priority"] = self.choice([0.5, 1.5, -0.0, 1e300, 2.0])
        elif self.chance(0.05):
            fc["priority"] = self.r.randint(0, 3)
        md = self.metadata()
        if md != "ABSENT":
            fc["metadata"] = md
        return fc

    # -- conditions -----------------------------------------------------------------------------
    def jsonpath(self) -> str:
        ident = self.partial_ctx.get("identity")
        traits = list(((ident or {}).get("traits") or {}).keys()) if isinstance(ident, dict) else []
        fnames = list(self.features.keys())
        options = [
            "$.identity.identifier", "$.identity.key", "$.environment.name", "$.environment.key",
            "$.identity.identifier", "$.identity.key", "$.environment.name", "$.environment.key",
            "$..name", "$..enabled", "$..value", "$.bad[", "$.identity", "$.identity.traits",
            "$.segments.1.name", "$.segments['1'].name", "$.features.*.value", "$.flags.*.enabled",
            "$.identity.traits[0]", "$.Identity.identifier", "$.identity.traits['x y']",
            "$.identity['identifier']", "$.features[?@.enabled == true].name",
            "$.identity.traits[?@ > 10]", "$.environment.*", "$.identity.traits.missing",
        ]
        if self.chance(0.35):
            options = list(JSONPATH_EXOTIC)
        if traits:
            t = self.choice(traits)
            options += ["$.identity.traits" + jp_member(t)] * 6
        if fnames:
            f = self.choice(fnames)
            attr = self.choice(["value", "enabled", "name", "key", "variants", "priority"])
            options += ["$.features" + jp_member(f) + "." + attr] * 3
        return self.choice(options)

    def flags_path(self) -> tuple[str, Any]:
        names = list(self.features.keys()) + ["ghost"]
        name = self.choice(names)
        attr = self.choice(["enabled", "enabled", "value", "variant", "reason", "name"])
        if self.chance(0.1):
            prop = "$.flags['" + name + "']." + attr if "'" not in name else "$.flags" + jp_member(name) + "." + attr
        else:
            prop = "$.flags" + jp_member(name) + "." + attr
        fc = self.features.get(name)
        if fc is None:
            return prop, None
        approx = {
            "enabled": fc["enabled"],
            "value": fc["value"],
            "name": fc["name"],
            "variant": self.choice([None, "control", "variant_a"]),
            "reason": self.choice(["STATIC", "DEFAULT", "TARGETING_MATCH; segment=s", "ERROR; code=CIRCULAR_DEPENDENCY"]),
        }[attr]
        return prop, approx

    def prop(self, operator: str) -> tuple[Any, Any]:
        """Return (property, approximate coerced context value)."""
        if operator == "PERCENTAGE_SPLIT":
            x = self.r.random()
            if x < 0.35:
                return "", None
            if x < 0.42:
                return None, None
        ident = self.partial_ctx.get("identity")
        traits = ((ident or {}).get("traits") or {}) if isinstance(ident, dict) else {}
        x = self.r.random()
        if self.dep_mode and x < 0.4:
            return self.flags_path()
        x = self.r.random()
        if traits and x < 0.68:
            prop = self.choice(list(traits.keys()))
        elif x < 0.72:
            prop = self.choice(["missing", "Age", "nope"])
        elif x < 0.9:
            prop = self.jsonpath()
        elif x < 0.94 and self.features:
            return self.flags_path()
        else:
            prop = self.choice(["$", "$['identity']", "$.bad[", "", "$['flags']['f0']['enabled']", "$.identity.traits['x y']"])
        try:
            cv = get_context_value(get_enriched_context(self.partial_ctx), prop)
        except Exception:  # pragma: no cover - defensive; only used for biasing
            cv = None
        return prop, cv

    def related(self, cv: Any) -> list:
        """Condition strings related to a coerced context value (to make conditions TRUE often)."""
        if cv is None:
            return list(CRAFTED_COMPARATOR_VALUES)
        if isinstance(cv, bool):
            return ["True", "true", "False", "false", "FALSE", "0", "1", ""]
        if isinstance(cv, int):
            s = str(cv)
            out = [s, s, f" {s} ", f"+{s}" if cv >= 0 else s, s + ".0", str(cv + 1), str(cv - 1),
                   s.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))]
            if len(s.lstrip("-")) > 1:
                digits = s.lstrip("-")
                out.append(("-" if cv < 0 else "") + digits[0] + "_" + digits[1:])
            out.append("0" + s if cv >= 0 else s)
            return out
        if isinstance(cv, float):
            return [repr(cv), repr(cv), repr(cv + 1), repr(cv - 1), "inf", "nan", "1e1", f"{cv:.3e}",
                    repr(cv) + " ", f"{cv:f}", str(int(cv)) if abs(cv) < 1e18 else "1"]
        # str
        out = [cv, cv, cv + "a", cv[:-1], cv.upper(), cv.lower(), "", cv[1:]]
        if re.match(r"^\d+\.\d+\.\d+", cv):
            base = cv.split("-")[0].split("+")[0].strip()
            out += [cv.strip() + ":semver", base + ":semver", self.choice(SEMVER_CONDITION_VALUES)]
        return out

    def condition_value(self, operator: str, cv: Any) -> Any:
        r = self.r
        if operator in COMPARATORS:
            x = r.random()
            if x < 0.04:
                return None
            if x < 0.5:
                return self.choice(self.related(cv))
            if x < 0.85:
                return self.choice(CRAFTED_COMPARATOR_VALUES)
            return self.choice(SEMVER_CONDITION_VALUES)
        if operator in ("CONTAINS", "NOT_CONTAINS"):
            x = r.random()
            if x < 0.03:
                return None
            if isinstance(cv, str) and x < 0.55:
                if not cv:
                    return ""
                i = r.randint(0, len(cv) - 1)
                j = r.randint(i, len(cv))
                return cv[i:j]
            if x < 0.65:
                return self.choice(SEMVER_CONDITION_VALUES)
            return self.choice(CRAFTED_COMPARATOR_VALUES + ["a", "b", "l", "World", "ü"])
        if operator == "REGEX":
            x = r.random()
            if x < 0.03:
                return None
            if cv is not None and x < 0.35:
                s = pystr(cv)
                k = r.randint(0, len(s))
                return self.choice(["^" + re.escape(s), re.escape(s[:k]), re.escape(s) + "$", s[:k]]) if s else ".*"
            return self.choice(REGEX_POOL) if self.chance(0.7) else self.choice(REGEX_EXOTIC)
        if operator == "MODULO":
            x = r.random()
            if x < 0.03:
                return None
            if isinstance(cv, (int, float)) and not isinstance(cv, bool) and abs(cv) < 1e300 and x < 0.5:
                d = self.choice([2, 3, 5, 7, 10, 0.5, 2.5, -3, 1.5])
                try:
                    rem = float(cv) % d
                except OverflowError:  # pragma: no cover
                    return "2|0"
                fmt_d = self.choice([str(d), f" {d} "])
                return f"{fmt_d}|{rem!r}" if self.chance(0.7) else f"{fmt_d}|{int(rem) if rem == int(rem) else rem}"
            if isinstance(cv, bool) and x < 0.5:
                return self.choice(["2|1", "2|0", "1|0"])
            return self.choice(MODULO_POOL)
        if operator == "IN":
            return self.in_value(cv)
        if operator == "PERCENTAGE_SPLIT":
            if self.chance(0.3):
                return str(round(r.uniform(0, 100), r.choice([0, 1, 2])))
            return self.choice(PERCENT_POOL)
        if operator in ("IS_SET", "IS_NOT_SET"):
            return self.choice([None, "", "x", "true"])
        return self.choice(["", "x", None, "1"])

    def in_value(self, cv: Any) -> Any:
        r = self.r
        items: list = []
        if cv is not None and self.chance(0.6):
            items.append(self.choice([pystr(cv), pystr(cv), json.dumps(cv), pystr(cv).lower()]))
        for _ in range(r.randint(0, 3)):
            items.append(self.choice(["a", "b", "7", "42", "1.5", "True", "true", "", " b", "user-1", "007", "1.0", "ünï"]))
        r.shuffle(items)
        x = r.random()
        if x < 0.4:
            sep = self.choice([",", ",", ", "])
            return sep.join(str(i) for i in items)
        if x < 0.6:
            # real array, with non-string items sometimes
            arr: list = list(items)
            for _ in range(r.randint(0, 2)):
                arr.insert(r.randint(0, len(arr)), self.choice([1, 7, 42, True, False, None, 1.0, 1.5, -0.0, 1e16, [1, 2], 2**64]))
            if isinstance(cv, (int, float)) and not isinstance(cv, bool) and self.chance(0.5):
                arr.append(cv)  # a real number item, stringified with str()
            return arr
        if x < 0.85:
            if self.chance(0.5):
                arr = list(items)
                if isinstance(cv, (int, float, bool)) and self.chance(0.5):
                    arr.append(cv)
                if self.chance(0.3):
                    arr.append(self.choice([1, True, None, 1.0, -0.0, 1e16, [1, 2]]))
                return json.dumps(arr, ensure_ascii=self.chance(0.5))
            return self.choice(JSON_IN_STRINGS)
        return self.choice(["", ",", "a, b", "a,b", "[not json,7", " [1]", "7", "True", "user-1,007"])

    def condition(self) -> dict:
        if self.chance(0.03):
            op = self.choice(UNKNOWN_OPERATORS)
        else:
            op = self.choice(OPERATORS)
        prop, cv = self.prop(op)
        cond = {"property": prop, "operator": op, "value": self.condition_value(op, cv)}
        if self.chance(0.15):
            items = list(cond.items())
            self.r.shuffle(items)
            cond = dict(items)
        return cond

    # -- rules / segments -----------------------------------------------------------------------
    def rule(self, depth: int) -> dict:
        rtype = self.choice(["ALL", "ALL", "ANY", "ANY", "NONE"])
        rule: dict = {"type": rtype}
        if not self.chance(0.08):
            rule["conditions"] = [self.condition() for _ in range(self.r.choice([0, 1, 1, 1, 2, 2, 3]))]
        if depth < 3 and self.chance(0.35):
            rule["rules"] = [self.rule(depth + 1) for _ in range(self.r.randint(0, 2))]
        elif self.chance(0.3):
            rule["rules"] = []
        return rule

    def segment(self, seg_key: str) -> dict:
        seg: dict = {"key": seg_key, "name": self.choice(SEGMENT_NAMES)}
        x = self.r.random()
        if x < 0.15:
            seg["key"] = self.choice(["", str(self.r.randint(1, 9)), "other"])
        if self.chance(0.08):
            seg["rules"] = []
        else:
            seg["rules"] = [self.rule(1) for _ in range(self.r.choice([1, 1, 1, 2, 2, 3]))]
        if not self.chance(0.08):
            names = list(self.features.keys())
            ovs = []
            for _ in range(self.r.choice([0, 1, 1, 1, 2, 3])):
                name = self.choice(names) if names and self.chance(0.9) else "ghost"
                ovs.append(self.feature_context(name, override=True))
            seg["overrides"] = ovs
        md = self.r.random()
        if md < 0.45:
            seg["metadata"] = {"id": self.r.randint(1, 999), "source": "api"}
        elif md < 0.55:
            seg["metadata"] = {}
        return seg

    def identity_override_segment(self) -> dict:
        ident = self.partial_ctx.get("identity")
        ids = self.r.sample(IDENTIFIERS, self.r.randint(0, 3))
        if isinstance(ident, dict) and "identifier" in ident and self.chance(0.6):
            ids.insert(self.r.randint(0, len(ids)), ident["identifier"])
        names = list(self.features.keys())
        ovs = []
        for name in self.r.sample(names, min(len(names), self.r.randint(1, 2))):
            ovs.append({
                "key": "", "name": name, "enabled": self.chance(0.5), "value": self.feature_value(),
                "priority": self.choice([-(2**63), -10**18, -(10**40)]), "metadata": {"id": self.r.randint(1, 99)},
            })
        return {
            "key": "", "name": "identity_overrides",
            "rules": [{"type": "ALL", "conditions": [
                {"property": "$.identity.identifier", "operator": "IN", "value": ids}]}],
            "overrides": ovs, "metadata": {"source": "identity_overrides"},
        }

    # -- whole context --------------------------------------------------------------------------
    def context(self) -> dict:
        r = self.r
        env = {"key": self.choice(["n9fbf9h3v4fFgH3U3ngWhb", "env", "", "ünï", "007", "k e y"]),
               "name": self.choice(["Test Environment", "", "prod", "ünïcödé", "42"])}
        ctx: dict = {"environment": env}
        ident = self.identity()
        if ident != "ABSENT":
            ctx["identity"] = ident
        self.dep_mode = self.chance(0.15)
        features: dict = {}
        for name in r.sample(FEATURE_NAMES, r.randint(0 if self.chance(0.05) else 1, 6)):
            features[name] = self.feature_context(name, override=False)
        self.features = features
        if not (self.chance(0.03) and not features):
            ctx["features"] = features
        self.partial_ctx = dict(ctx)
        if self.chance(0.95):
            segments: dict = {}
            n = r.randint(0, 6)
            for i in range(n):
                if self.chance(0.1):
                    segments[f"io-{i}"] = self.identity_override_segment()
                    continue
                sk = self.choice([str(i + 1), str(r.randint(1, 10**6)), f"seg-{i}"])
                while sk in segments:
                    sk += "x"
                segments[sk] = self.segment(sk)
            ctx["segments"] = segments
        if self.chance(0.02):
            ctx["flags"] = {"f0": {"enabled": True, "name": "f0", "reason": "STATIC", "value": 1, "variant": None}}
        if self.chance(self.raise_rate):
            inject_error(ctx, r)
        if self.chance(0.2):
            items = list(ctx.items())
            r.shuffle(items)
            ctx = dict(items)
        return ctx


# ---------------------------------------------------------------------------------------------
# Deliberately raising constructs (inputs on which the reference raises)
# ---------------------------------------------------------------------------------------------

ERROR_KINDS = [
    "invalid_regex", "modulo_zero", "modulo_overflow", "percentage_split_null", "in_null",
    "variant_no_priority", "missing_property", "bad_rule_type", "feature_key_mismatch",
    "huge_numeric_trait",
]


def _ensure_identity(ctx: dict) -> dict:
    ident = ctx.get("identity")
    if not isinstance(ident, dict) or not ident:
        ident = {"identifier": "user-err", "traits": {}}
        ctx["identity"] = ident
    if not isinstance(ident.get("traits"), dict):
        ident["traits"] = {}
    return ident


def inject_error(ctx: dict, r: random.Random, kind: str | None = None) -> str:
    """Add one construct that makes the reference raise. Returns the kind."""
    kind = kind or r.choice(ERROR_KINDS)
    cond: dict
    rule_type = "ALL"
    if kind == "invalid_regex":
        cond = {"property": "$.environment.name", "operator": "REGEX", "value": r.choice(BAD_REGEXES)}
    elif kind == "modulo_zero":
        _ensure_identity(ctx)["traits"]["n_err"] = r.choice([5, 5.5, -3, True])
        cond = {"property": "n_err", "operator": "MODULO", "value": r.choice(ZERO_DIVISOR_MODULO)}
    elif kind == "modulo_overflow":
        _ensure_identity(ctx)["traits"]["huge_err"] = 10**400
        cond = {"property": "huge_err", "operator": "MODULO", "value": "3|1"}
    elif kind == "percentage_split_null":
        _ensure_identity(ctx)
        cond = {"property": "", "operator": "PERCENTAGE_SPLIT", "value": None}
    elif kind == "in_null":
        cond = {"property": r.choice(["$.environment.name", "missing"]), "operator": "IN", "value": None}
    elif kind == "missing_property":
        cond = {"operator": r.choice(["EQUAL", "IS_SET", "IN"]), "value": "x"}
    elif kind == "bad_rule_type":
        rule_type = r.choice(["SOME", "all", "", "AND"])
        cond = {"property": "missing", "operator": "IS_NOT_SET", "value": None}
    elif kind == "huge_numeric_trait":
        _ensure_identity(ctx)["traits"]["big_err"] = "1" * r.choice([4301, 5000])
        cond = {"property": "big_err", "operator": "IS_SET", "value": None}
    elif kind in ("variant_no_priority", "feature_key_mismatch"):
        feats = ctx.setdefault("features", {})
        if kind == "variant_no_priority":
            _ensure_identity(ctx)
            feats["f_err"] = {"key": "99", "name": "f_err", "enabled": True, "value": "v",
                              "variants": [{"value": "a", "weight": 50}]}
        else:
            feats["alias_err"] = {"key": "98", "name": "f_err_name", "enabled": True, "value": "v"}
        return kind
    else:  # pragma: no cover
        raise ValueError(kind)
    segs = ctx.setdefault("segments", {})
    items = list(segs.items())
    pos = r.randint(0, len(items))
    items.insert(pos, ("err-seg", {"key": "err", "name": "err_segment",
                                   "rules": [{"type": rule_type, "conditions": [cond]}]}))
    ctx["segments"] = dict(items)
    return kind


def gen_context(rng: random.Random, raise_rate: float = 0.05) -> dict:
    return _Gen(rng, raise_rate).context()


def generate(seed: int, n: int, raise_rate: float = 0.05) -> list[str]:
    """N contexts as JSON text, each generated from its own per-case RNG."""
    out = []
    for i in range(n):
        rng = case_rng(seed, i)
        ctx = gen_context(rng, raise_rate)
        out.append(dumps(ctx, rng if rng.random() < 0.5 else None))
    return out


__all__ = ["OPERATORS", "gen_context", "generate", "case_rng", "dumps", "inject_error", "ERROR_KINDS"]
