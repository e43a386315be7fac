"""Where a process's busy time goes, from a py-spy raw profile: each function's inclusive share of
the samples that were not waiting in a selector's select (py-spy's --idle keeps those). py-spy
samples every thread: the main thread (the operator's loop) is told apart from the others (the
metrics server's) by the first frame of its stack, as its busy share of its own samples.

    py-spy record -p <operator pid> -r 100 -f raw --idle --nonblocking -o profile.txt
    bench/profile_share.py profile.txt [--top 45]"""
from __future__ import annotations

import argparse
from collections import Counter

OTHER_THREAD = "Thread._bootstrap"  # the first frame of every thread but the main one


def shares(path: str) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """(samples by thread kind, busy samples by thread kind, busy samples by function and file,
    counted once a stack)."""
    samples, busy, inclusive = Counter(), Counter(), Counter()
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        frames, n = stack.split(";"), int(count)
        thread = "other threads" if frames[0].split(" (")[0] == OTHER_THREAD else "main thread"
        samples[thread] += n
        if frames[-1].split(" (")[0].endswith("Selector.select"):  # waiting for work
            continue
        busy[thread] += n
        seen = set()
        for frame in frames:
            name, _, where = frame.partition(" (")
            key = f"{name} {where.split('site-packages/')[-1].split(':')[0]}"
            if key not in seen:
                inclusive[key] += n
                seen.add(key)
    return samples, busy, inclusive


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile")
    p.add_argument("--top", type=int, default=45)
    args = p.parse_args()
    samples, busy, inclusive = shares(args.profile)
    for thread in sorted(samples):
        print(f"{thread}: {samples[thread]} samples, busy {busy[thread]} ({busy[thread] / samples[thread]:.1%})")
    everywhere = sum(busy.values())
    print("--- inclusive (share of all busy samples)")
    for key, n in inclusive.most_common(args.top):
        print(f"{n / everywhere:6.1%} {key}")


if __name__ == "__main__":
    main()
