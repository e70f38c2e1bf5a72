"""What a Python caller pays for a ResolveAll answer: decodes saved answer bytes with the flagd
provider's own generated messages (openfeature-provider-flagd, the protobuf runtime) and reads
every flag as a provider would (reason, variant, value, metadata as a dict), for about a second.
Prints one JSON line: µs and bytes per decode.

    python decode.py ANSWER.bin
"""

from __future__ import annotations

import json
import sys
import time

from google.protobuf.json_format import MessageToDict
from openfeature.schemas.protobuf.flagd.evaluation.v1 import evaluation_pb2 as v1


def read(data: bytes) -> int:
    message = v1.ResolveAllResponse.FromString(data)
    seen = 0
    for key, flag in message.flags.items():
        kind = flag.WhichOneof("value")
        value = getattr(flag, kind) if kind else None
        if kind == "object_value":
            value = MessageToDict(value)
        metadata = MessageToDict(flag.metadata) if flag.HasField("metadata") else {}
        seen += bool(key) + bool(flag.reason) + bool(flag.variant) + (value is not None) + len(metadata)
    return seen


def main() -> None:
    data = open(sys.argv[1], "rb").read()
    flags = len(v1.ResolveAllResponse.FromString(data).flags)
    for _ in range(50):
        read(data)
    n = 100
    while True:
        start = time.perf_counter()
        for _ in range(n):
            read(data)
        elapsed = time.perf_counter() - start
        if elapsed > 0.3:
            n = max(1, int(n / elapsed))
            break
        n *= 4
    start = time.perf_counter()
    for _ in range(n):
        read(data)
    elapsed = time.perf_counter() - start
    print(json.dumps({"language": "python", "bytes": len(data), "flags": flags,
                      "us_per_decode": elapsed / n * 1e6}))


if __name__ == "__main__":
    main()
