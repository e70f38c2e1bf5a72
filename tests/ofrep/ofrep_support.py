"""Helpers of the OFREP suite: the environments and configurations, a `flagpole serve` process
wrapper, and small HTTP helpers for the two OFREP endpoints with the checks every answer must pass
(errors, caching headers and CORS, as docs/ofrep.md describes them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import serve_expect
from fixtures import make_broken_document, make_document
from serve_harness import Env, FlagpoleProcess, Response, http_request, local_config, wait_until

SINGLE = "/ofrep/v1/evaluate/flags/"
BULK = "/ofrep/v1/evaluate/flags"

# Environments of the main server. UNLOADED has no document and an unreachable upstream, so its
# keys are known but never loaded (→ 503).
MAIN = Env("ofrep_main_client", "ser.ofrep_main_server", make_document("ofrep_main_client", env_id=4001))
HIDE = Env("ofrep_hide_client", "ser.ofrep_hide_server",
           make_document("ofrep_hide_client", env_id=4002, hide_disabled_flags=True))
BROKEN = Env("ofrep_broken_client", "ser.ofrep_broken_server",
             make_broken_document("ofrep_broken_client", env_id=4003))
UNLOADED = Env("ofrep_unloaded_client", "ser.ofrep_unloaded_server", {})
LOADED_ENVS = [MAIN, HIDE, BROKEN]
ALL_ENVS = LOADED_ENVS + [UNLOADED]

ORIGIN = "https://app.example"  # the only allowed origin of the main server
OTHER_ORIGIN = "https://evil.example"

ETAG = re.compile(r'^W/"[0-9a-f]{32}"$')
EXPOSE = "ETag, Retry-After"
OK_CACHE = "private, no-cache"
ERROR_CACHE = "no-store"


class OfrepProcess(FlagpoleProcess):
    """A flagpole process whose environment cannot leak an `OFREP` setting from the caller."""

    def child_env(self) -> dict[str, str]:
        env = super().child_env()
        if not any(k.lower() == "ofrep" for k in self.extra_env):
            for k in [k for k in env if k.lower() == "ofrep"]:
                del env[k]
        return env


def main_config(paths: list[Path], **extra) -> dict:
    """The main server: local documents for the loaded environments, UNLOADED on a dead upstream."""
    return local_config(paths, ALL_ENVS, allow_origins=[ORIGIN], **extra)


OPTIONS = {"parse_json_strings": True, "require_targeting_key": True, "client_keys": False}


def wait_serving(fp: FlagpoleProcess, key: str = MAIN.server_key, context: dict | None = None,
                 timeout: float = 60.0) -> None:
    """Wait until OFREP bulk answers 200 for `key` and `context` (readiness stays 503 while
    UNLOADED is configured)."""
    fp.wait_live(timeout)
    body = {} if context is None else {"context": context}
    try:
        wait_until(lambda: post(fp, BULK, body, key=key).status == 200, timeout,
                   f"OFREP bulk evaluation never answered 200 for {key} on port {fp.port}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nstderr:\n{fp.stderr_tail()}") from None


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


def post(fp: FlagpoleProcess, path: str, body: Any = None, *, key: str | None = None,
         headers: dict | list | None = None, raw: bytes | None = None) -> Response:
    """POST to an OFREP path. `key` goes in `X-API-Key`; `body` is sent as JSON (unless `raw`)."""
    hdrs: list[tuple[str, str]] = list(headers.items() if isinstance(headers, dict) else headers or [])
    if key is not None:
        hdrs.append(("X-API-Key", key))
    if raw is not None:
        data: bytes | None = raw
    elif body is None:
        data = None
    else:
        data = json.dumps(body, ensure_ascii=False).encode()
        if not any(k.lower() == "content-type" for k, _ in hdrs):
            hdrs.append(("Content-Type", "application/json"))
    return http_request(fp.port, "POST", path, hdrs, data)


def flag_path(name: str) -> str:
    return SINGLE + quote(name, safe="/")


def single(fp, name: str, context: dict | None = None, *, key: str = MAIN.server_key, headers=None) -> Response:
    body = {} if context is None else {"context": context}
    return post(fp, flag_path(name), body, key=key, headers=headers)


def bulk(fp, context: dict | None = None, *, key: str = MAIN.server_key, headers=None) -> Response:
    body = {} if context is None else {"context": context}
    return post(fp, BULK, body, key=key, headers=headers)


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def canon(item: dict) -> list:
    """An OFREP item for comparison: member order significant at the item and metadata levels,
    every scalar typed (1 ≠ 1.0 ≠ true), member order inside an object value not significant."""
    out = []
    for k, v in item.items():
        if k == "metadata" and isinstance(v, dict):
            out.append((k, [(mk, serve_expect.typed(mv)) for mk, mv in v.items()]))
        else:
            out.append((k, serve_expect.typed(v)))
    return out


def assert_item(got: dict, want: dict, where: str = "") -> None:
    assert canon(got) == canon(want), f"{where}\n got: {json.dumps(got)}\nwant: {json.dumps(want)}"


def ok_json(resp: Response) -> Any:
    """A 200 with a JSON body, an ETag and the caching headers of a conditional-request answer."""
    assert resp.status == 200, resp
    assert (resp.header("content-type") or "").startswith("application/json"), resp
    etag = resp.header("etag")
    assert etag is not None and ETAG.match(etag), f"bad ETag {etag!r}: {resp}"
    assert resp.header("cache-control") == OK_CACHE, resp
    return resp.json()


def ok_single(resp: Response, name: str) -> dict:
    item = ok_json(resp)
    assert isinstance(item, dict) and item.get("key") == name, resp
    return item


def ok_bulk(resp: Response) -> dict[str, dict]:
    """name -> item of a bulk 200, checking that the flags are sorted by key (UTF-8 bytes)."""
    body = ok_json(resp)
    assert isinstance(body, dict) and isinstance(body.get("flags"), list), resp
    keys = [f["key"] for f in body["flags"]]
    assert keys == sorted(keys, key=lambda k: k.encode()), f"bulk flags not sorted by key bytes: {keys}"
    assert len(set(keys)) == len(keys), f"duplicate keys: {keys}"
    return {f["key"]: f for f in body["flags"]}


def assert_error(resp: Response, status: int, code: str, *, key: str | None = None) -> dict:
    """An OFREP error: single bodies `{key, errorCode, errorDetails}` (when `key` is given), bulk
    bodies `{errorCode, errorDetails}`; JSON; `Cache-Control: no-store`."""
    assert resp.status == status, resp
    assert (resp.header("content-type") or "").startswith("application/json"), resp
    assert resp.header("cache-control") == ERROR_CACHE, resp
    body = resp.json()
    assert isinstance(body, dict), resp
    if key is not None:
        assert set(body) == {"key", "errorCode", "errorDetails"}, body
        assert body["key"] == key, body
    else:
        assert set(body) == {"errorCode", "errorDetails"}, body
    assert body["errorCode"] == code, body
    assert isinstance(body["errorDetails"], str) and body["errorDetails"].strip(), body
    return body
