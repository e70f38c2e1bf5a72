"""Compressed answers of `flagpole serve`: gzip, Brotli and zstd for every body of 1,000 bytes or
more, negotiation by `Accept-Encoding` (q-values), nothing for small bodies, and large documents,
whose variants are made in the background for the encodings clients ask for (the asking
request is answered uncompressed at once).

Most tests share conftest's `srv` (the two standard local documents).
"""

from __future__ import annotations

import gzip
import json

import brotli
import pytest
import zstandard

from documents import OVERRIDDEN_USER, post_identity_body
from serve_harness import EVENT_TIMEOUT, local_config, standard_envs, wait_until, write_documents

ENV_A, ENV_B = standard_envs()


def decode(encoding: str, data: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "br":
        return brotli.decompress(data)
    if encoding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise AssertionError(encoding)


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
@pytest.mark.parametrize("method,path,key", [
    ("GET", "/api/v1/flags/", ENV_A.server_key),
    ("GET", "/api/v1/flags/", ENV_B.client_key),
    ("GET", f"/api/v1/identities/?identifier={OVERRIDDEN_USER}", ENV_A.server_key),
    ("POST", "/api/v1/identities/", ENV_A.client_key),
    ("GET", "/api/v1/environment-document/", ENV_A.server_key),
])
def test_compression(srv, encoding, method, path, key):
    """gzip at least, for every body ≥ 1,000 bytes; br and zstd too. They are required here for
    the bodies stored per revision (flags, environment document), which flagpole stores
    pre-compressed, and optional for per-request bodies (identities)."""
    body = post_identity_body("zip-user", {"plan": "pro"}) if method == "POST" else None
    plain = srv.request(method, path, key, {"Accept-Encoding": "identity"}, body)
    assert plain.status == 200 and plain.header("content-encoding") in (None, "identity"), plain
    assert len(plain.body) >= 1000, "test precondition: the body must be large enough to compress"
    r = srv.request(method, path, key, {"Accept-Encoding": encoding}, body)
    assert r.status == 200, r
    stored = "/identities" not in path
    if encoding != "gzip" and not stored and r.header("content-encoding") in (None, "identity"):
        assert r.body == plain.body
        return
    assert r.header("content-encoding") == encoding, r.headers
    assert "accept-encoding" in ",".join(r.header_all("vary")).lower(), r.headers
    assert decode(encoding, r.body) == plain.body
    assert len(r.body) < len(plain.body)


def test_compression_negotiation(srv):
    key = ENV_A.server_key
    plain = srv.get("/api/v1/flags/", key, {"Accept-Encoding": "identity"}).body
    r = srv.get("/api/v1/flags/", key, {"Accept-Encoding": "gzip;q=0, br;q=0.5, deflate"})
    enc = r.header("content-encoding")
    assert enc != "gzip", "gzip was refused with q=0"
    if enc:
        assert decode(enc, r.body) == plain
    r = srv.get("/api/v1/flags/", key, {"Accept-Encoding": "compress, x-unknown"})
    assert r.header("content-encoding") in (None, "identity") and r.body == plain


def test_small_bodies_are_not_compressed(srv):
    r = srv.get("/api/v1/flags/?feature=integer_feature", ENV_A.client_key, {"Accept-Encoding": "gzip, br, zstd"})
    assert r.status == 200 and len(r.body) < 1000, r
    assert r.header("content-encoding") in (None, "identity"), r.headers
    json.loads(r.body)


DOCUMENT = "/api/v1/environment-document/"


def test_large_document_is_compressed_in_the_encodings_asked_for(flagpole, tmp_path):
    env = standard_envs()[0]
    env.document["feature_states"][0]["feature_state_value"] = "a large value " * 25_000
    paths = write_documents(tmp_path / "docs", [env])
    fp = flagpole(local_config(paths, [env]))
    plain = fp.get(DOCUMENT, env.server_key, {"Accept-Encoding": "identity"})
    assert plain.status == 200 and len(plain.body) > 256 * 1024, "precondition: a large document"

    def served(encoding):
        r = fp.get(DOCUMENT, env.server_key, {"Accept-Encoding": encoding})
        assert r.status == 200 and r.header("etag") == plain.header("etag"), r
        return r

    # Nothing is made before a client asks: the first request for gzip is answered at once,
    # uncompressed, and has gzip made in the background.
    first = served("gzip")
    assert first.header("content-encoding") is None and first.body == plain.body, first.headers
    gzipped = wait_until(lambda: (r := served("gzip")).header("content-encoding") == "gzip" and r,
                         EVENT_TIMEOUT, "gzip never made for the large document")
    assert gzip.decompress(gzipped.body) == plain.body
    # Only what was asked for: zstd is not there until a client asks for it.
    assert served("zstd").header("content-encoding") is None
    zstd = wait_until(lambda: (r := served("zstd")).header("content-encoding") == "zstd" and r,
                      EVENT_TIMEOUT, "zstd never made for the large document")
    assert decode("zstd", zstd.body) == plain.body
    assert served("gzip, zstd").header("content-encoding") == "zstd"

    # A new revision is compressed again (in the background after the swap).
    env.document["feature_states"][0]["feature_state_value"] = "another large value " * 20_000
    write_documents(tmp_path / "docs", [env])
    new_plain = wait_until(
        lambda: (r := fp.get(DOCUMENT, env.server_key, {"Accept-Encoding": "identity"})).body != plain.body and r,
        EVENT_TIMEOUT, "the new document was never served")
    r = wait_until(
        lambda: (r := fp.get(DOCUMENT, env.server_key, {"Accept-Encoding": "gzip"})).header("content-encoding") == "gzip" and r,
        EVENT_TIMEOUT, "the new revision was never served gzipped")
    assert gzip.decompress(r.body) == new_plain.body
