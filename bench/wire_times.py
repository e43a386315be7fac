"""How long homing's process took to answer each review, seen on the wire: from the API server's
last request segment to homing's first answer segment, per TLS connection, from a capture of
the webhook port (TLS handshakes count as exchanges too: a connection carries about ten reviews).
It times what homing's own histogram (homing_admission_seconds, from the handler's start) cannot:
reading the request. Needs tcpdump.

    tcpdump -i lo -nn -tt "tcp port PORT" -w hook.pcap    # while bench/tidal.py runs homing
    bench/wire_times.py hook.pcap PORT [--label NAME] [--out wire-times.json]"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SEGMENT = re.compile(r"^(\d+\.\d+) IP \S+?\.(\d+) > \S+?\.(\d+): .* length (\d+)")


def exchanges(pcap: str, port: str) -> list[float]:
    """Seconds from each request's last segment to its answer's first, every connection."""
    text = subprocess.run(["tcpdump", "-r", pcap, "-nn", "-tt"], capture_output=True, text=True, check=True).stdout
    by_connection: dict[str, list[tuple[float, bool]]] = {}
    for line in text.splitlines():
        m = SEGMENT.match(line)
        if not m or int(m[4]) == 0:  # a bare acknowledgement
            continue
        to_homing = m[3] == port
        by_connection.setdefault(m[2] if to_homing else m[3], []).append((float(m[1]), to_homing))
    gaps = []
    for segments in by_connection.values():
        last_request = None
        for at, to_homing in segments:
            if to_homing:
                last_request = at
            elif last_request is not None:
                gaps.append(at - last_request)
                last_request = None
    return sorted(gaps)


def summary(gaps: list[float]) -> dict:
    pick = lambda q: round(gaps[min(len(gaps) - 1, int(q * len(gaps)))] * 1000, 1)  # noqa: E731
    return {"exchanges": len(gaps), "p50_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99),
            "over_5_ms": round(sum(g > 0.005 for g in gaps) / len(gaps), 3),
            "over_25_ms": round(sum(g > 0.025 for g in gaps) / len(gaps), 3)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pcap")
    p.add_argument("port")
    p.add_argument("--label", default="")
    p.add_argument("--out", default="")
    args = p.parse_args()
    row = {"label": args.label or args.pcap, **summary(exchanges(args.pcap, args.port))}
    print(json.dumps(row))
    if args.out:
        path = RESULTS / args.out
        rows = json.loads(path.read_text())["runs"] if path.exists() else []
        path.write_text(json.dumps({"runs": [*rows, row]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
