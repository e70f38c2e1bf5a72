"""The one JSON spelling of a differential case, fed to both sides: numbers keep the spelling
they were read with (``1.50``, ``1E5``, ``-0``) through shrinking, and a generated case may get
other spellings of the same double, ``-0`` for ``0`` and escaped non-ASCII, so that both engines'
number and string parsing is exercised on the same text."""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any


class SpelledFloat(float):
    """A float that remembers its JSON spelling (``1.50``, ``1E5``, ...), kept while shrinking."""

    def __new__(cls, text: Any) -> "SpelledFloat":
        obj = super().__new__(cls, float(text))
        obj.text = str(text)
        return obj

    def __getnewargs__(self):
        return (self.text,)


class SpelledInt(int):
    """An int that remembers its JSON spelling (``-0``)."""

    def __new__(cls, text: Any) -> "SpelledInt":
        obj = super().__new__(cls, int(text))
        obj.text = str(text)
        return obj

    def __getnewargs__(self):
        return (self.text,)


def loads_spelled(text: str) -> Any:
    """json.loads keeping every number's spelling (for shrinking; the reference uses plain loads)."""
    return json.loads(text, parse_float=SpelledFloat, parse_int=SpelledInt)


def _float_spellings(x: float) -> list[str]:
    """Alternative JSON spellings that parse to exactly the same double."""
    out = [repr(x).replace("e", "E"), f"{x:.17g}", f"{x:.17e}", repr(x) + "0" if "e" not in repr(x) else repr(x)]
    if x == int(x) and abs(x) < 1e15:
        i = "-0" if (x == 0 and math.copysign(1.0, x) < 0) else str(int(x))
        out += [f"{i}.0", f"{i}.00", f"{i}e0", f"{i}E+0", f"{i}.0e-0"]
    m = repr(x)
    if "e" not in m and "." in m:
        intpart, frac = m.lstrip("-").split(".")
        sign = "-" if m.startswith("-") else ""
        out.append(f"{sign}{intpart}{frac}e-{len(frac)}")
        out.append(f"{sign}0.{intpart}{frac}e{len(intpart)}" if intpart != "0" else m)
    good = []
    for t in out:
        if not re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", t):
            continue
        try:
            v = float(t)
        except ValueError:  # pragma: no cover
            continue
        if v == x and math.copysign(1.0, v) == math.copysign(1.0, x) and ("." in t or "e" in t or "E" in t):
            good.append(t)
    return good or [repr(x)]


def dumps(ctx: Any, rng: random.Random | None = None) -> str:
    """The single JSON spelling of a case: one line, no NaN/Infinity.

    Numbers parsed with ``loads_spelled`` keep their spelling. With ``rng``, some floats get an
    alternative spelling (``1.50``, ``1E5``, ``0.30000000000000001``, ...), ``0`` sometimes becomes
    ``-0``, and non-ASCII is sometimes escaped: both sides always read the same text.
    """
    raw: dict[str, str] = {}

    def sub(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (SpelledFloat, SpelledInt)):
            token = f"@@NUM{len(raw)}@@"
            raw[token] = v.text
            return token
        if isinstance(v, float) and rng is not None and rng.random() < 0.3:
            token = f"@@NUM{len(raw)}@@"
            raw[token] = rng.choice(_float_spellings(v))
            return token
        if isinstance(v, int) and v == 0 and rng is not None and rng.random() < 0.2:
            token = f"@@NUM{len(raw)}@@"
            raw[token] = "-0"
            return token
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        if isinstance(v, list):
            return [sub(x) for x in v]
        return v

    obj = sub(ctx)
    ascii_ = rng is not None and rng.random() < 0.2
    text = json.dumps(obj, ensure_ascii=ascii_, allow_nan=False)
    for token, spelling in raw.items():
        text = text.replace(f'"{token}"', spelling, 1)
    return text
