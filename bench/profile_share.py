"""Where a process's busy time goes, from a py-spy raw profile: each function's inclusive share of
the samples that were not waiting in the event loop's select (py-spy's --idle keeps those).

    py-spy record -p <operator pid> -r 100 -f raw --idle --nonblocking -o profile.txt
    bench/profile_share.py profile.txt [--top 45]"""
from __future__ import annotations

import argparse
from collections import Counter


def shares(path: str) -> tuple[int, int, Counter[str]]:
    """(all samples, busy samples, busy samples by function and file, counted once a stack)."""
    total, busy, inclusive = 0, 0, Counter()
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        frames, n = stack.split(";"), int(count)
        total += n
        if "select" in frames[-1].split(" (")[0]:  # the loop waiting for work
            continue
        busy += n
        seen = set()
        for frame in frames:
            name, _, where = frame.partition(" (")
            key = f"{name} {where.split('site-packages/')[-1].split(':')[0]}"
            if key not in seen:
                inclusive[key] += n
                seen.add(key)
    return total, busy, inclusive


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile")
    p.add_argument("--top", type=int, default=45)
    args = p.parse_args()
    total, busy, inclusive = shares(args.profile)
    print(f"samples {total} idle {total - busy} busy {busy}")
    print("--- inclusive (busy share)")
    for key, n in inclusive.most_common(args.top):
        print(f"{n / busy:6.1%} {key}")


if __name__ == "__main__":
    main()
