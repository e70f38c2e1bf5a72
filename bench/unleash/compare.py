#!/usr/bin/env python3
"""Before the load of bench/unleash.sh: do the servers give the same answers? For a sample of the
users load.lua sends (the same contexts), compares each server's frontend answer (the enabled
toggles, each with its variant's name, enabled and payload) with the first server's, and the
toggle names of the client-features answers. Prints one line a server; never fails the bench
(a difference is reported, the load still runs).

    compare.py USERS CLIENT_TOKEN FRONTEND_TOKEN NAME=FRONTEND_URL|CLIENT_URL ...
"""

import json
import sys
import urllib.parse
import urllib.request

REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east"]
PLANS = ["free", "starter", "pro", "enterprise"]
SAMPLE = 40


def query(u: int) -> str:
    """The context of user u, as load.lua builds it."""
    pairs = [
        ("userId", f"user-{u}"), ("sessionId", f"s-{(u * 7919) % 100000}"),
        ("properties[region]", REGIONS[u % len(REGIONS)]), ("properties[plan]", PLANS[(u // 3) % len(PLANS)]),
        ("properties[age]", str(18 + (u * 13) % 50)), ("properties[appVersion]", f"2.{u % 10}.{(u // 10) % 10}"),
    ]
    return urllib.parse.urlencode(pairs)


def get(url: str, token: str):
    req = urllib.request.Request(url, headers={"Authorization": token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def frontend(url: str, token: str, u: int):
    toggles = get(f"{url}?{query(u)}", token)["toggles"]
    out = {}
    for t in toggles:
        v = t.get("variant") or {}
        out[t["name"]] = (t.get("enabled"), v.get("name"), v.get("enabled"), json.dumps(v.get("payload"), sort_keys=True))
    return out


def main():
    users, client_token, frontend_token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    servers = []
    for arg in sys.argv[4:]:
        name, urls = arg.split("=", 1)
        f_url, c_url = urls.split("|")
        servers.append((name, f_url, c_url))
    sample = [u * max(users // SAMPLE, 1) % users for u in range(SAMPLE)]
    base = None
    for name, f_url, c_url in servers:
        answers = {u: frontend(f_url, frontend_token, u) for u in sample}
        names = sorted(f["name"] for f in get(c_url, client_token)["features"])
        enabled = sum(len(a) for a in answers.values()) / len(answers)
        if base is None:
            base = (answers, names)
            print(f"compare: {name}: {enabled:.1f} enabled toggles a user on average over {len(sample)} users, "
                  f"{len(names)} toggles in client features")
            continue
        differ = [u for u in sample if answers[u] != base[0][u]]
        # Toggles enabled for one server and not the other; toggles enabled for both with
        # another variant.
        sets = sum(len(set(answers[u]) ^ set(base[0][u])) for u in differ)
        variants = sum(1 for u in differ for k in set(answers[u]) & set(base[0][u]) if answers[u][k] != base[0][u][k])
        same_names = "the same" if names == base[1] else f"DIFFERENT ({len(names)})"
        print(f"compare: {name}: {enabled:.1f} enabled a user; frontend answers differing from {servers[0][0]}'s: "
              f"{len(differ)} of {len(sample)} users ({sets} toggles enabled in one answer only, {variants} "
              f"with another variant); client feature names {same_names}")
        concerned = sorted({k for u in differ for k in set(answers[u]) | set(base[0][u])
                            if answers[u].get(k) != base[0][u].get(k)})
        if concerned:
            print(f"  toggles concerned: {len(concerned)}: {', '.join(concerned[:12])}")
        for u in differ[:3]:
            a, b = answers[u], base[0][u]
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    print(f"  user-{u} {key}: {servers[0][0]} {b.get(key)} / {name} {a.get(key)}")


if __name__ == "__main__":
    main()
