"""The real Unleash server the upstream tests rely on (unleash_server.py), checked on its own, so
that a failure of Flagpole against it can be told from a broken fixture: its tokens are
enforced, what the admin API makes shows on its client API, and the official SDKs reading it
directly agree with its frontend API (the comparison test_edge_upstream.py then repeats through
Flagpole).
"""

from __future__ import annotations

from loopback import EVENT_TIMEOUT, wait_until
from unleash_sdks import CONTEXTS, make_toggles, node_sdks, python_sdk, sdk_toggles, settled_frontend_answers

CLIENT = "/api/client/features"


def test_tokens_are_enforced(unleash_server):
    s = unleash_server
    assert s.request("GET", CLIENT, "*:development.not-a-known-secret").status == 401
    assert s.request("GET", CLIENT, s.frontend_tokens["development"]).status in (401, 403)
    for environment in ("development", "production"):
        body = s.client_features(environment)
        assert body["query"]["environment"] == environment, body


def test_admin_changes_show_on_its_client_api(unleash_server):
    s = unleash_server
    s.create_toggle("server-sanity")

    def toggle(environment: str = "development") -> dict | None:
        return next((t for t in s.client_features(environment)["features"] if t["name"] == "server-sanity"), None)

    sid = s.add_strategy("server-sanity", "development", "userWithId", {"userIds": "a,b"})
    s.enable("server-sanity")
    # The client API answers from a cache renewed when the revision moves (every second).
    wait_until(lambda: (toggle() or {}).get("enabled") is True, EVENT_TIMEOUT, "the toggle never showed enabled")
    assert toggle()["strategies"][0]["parameters"] == {"userIds": "a,b"}
    assert toggle("production")["enabled"] is False
    s.update_strategy("server-sanity", sid, strategy="default")
    wait_until(lambda: toggle()["strategies"][0]["name"] == "default", EVENT_TIMEOUT, "the new strategy never showed")
    s.delete("server-sanity")
    wait_until(lambda: toggle() is None, EVENT_TIMEOUT, "the deleted toggle never left")


def test_sdks_against_the_server_agree_with_its_frontend_api(unleash_server, node_dir):
    s = unleash_server
    toggles = sdk_toggles("direct")
    make_toggles(s, toggles)
    want = settled_frontend_answers(s, toggles)
    out = node_sdks(node_dir, s.url, s.client_tokens["development"], s.frontend_tokens["development"], toggles,
                    "direct-node")
    assert out["server"] == want, "unleash-client"
    assert out["frontend"] == want, "unleash-proxy-client"
    assert python_sdk(s.url, s.client_tokens["development"], toggles, "direct-python") == want
    # What the toggles were made to show, so that agreeing is not agreeing on nothing.
    assert [w["direct-users"]["enabled"] for w in want] == [True, False, True, False]
    assert [w["direct-not-u2"]["enabled"] for w in want] == [True, False, True, True]
    assert not any(w["direct-off"]["enabled"] for w in want)
    assert {w["direct-variants"]["variant"]["name"] for w in want} <= {"blue", "green"}
    assert len(CONTEXTS) == len(want)

