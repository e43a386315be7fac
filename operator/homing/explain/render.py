"""Explanations as text for a person, or as JSON for a script (`--output json`)."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from homing.explain import reasons
from homing.explain.owner import OwnerExplanation, OwnerList
from homing.explain.pod import PodExplanation


def as_json(explanation: PodExplanation | OwnerExplanation) -> str:
    return json.dumps(asdict(explanation), indent=2, sort_keys=True)


def _line(label: str, value: Any) -> str:
    return f"{label + ':':<12} {value}"


def pod_text(x: PodExplanation) -> str:
    lines = [_line("Pod", x.pod), _line("Node", x.node or "(not bound)")]
    if not x.decided:
        return "\n".join([*lines, _line("Decision", x.reason_text)])
    lines += [
        _line("Owner", x.owner),
        _line("Rank", x.rank if x.rank is not None else "(rankless: one of the owner's pool)"),
        _line("Home", x.home or "(none)"),
        _line("Decision", f"{x.reason}: {x.reason_text}"),
    ]
    if x.kind and x.kind != "node":
        lines.append(_line("Topology", f"{x.kind} job" + (f", home domains {', '.join(x.domains)}" if x.domains else "")))
    if x.avoided:
        lines.append(_line("Avoided", ", ".join(x.avoided)))
    if x.preferences:
        lines.append(_line("Also", "; ".join(reasons.PREFERENCES.get(p, p) for p in x.preferences)))
    if x.displace:
        lines.append(_line("Displaces", x.displace))
    if x.truncated:
        lines.append(_line("Note", "some node lists were cut to the configured bound"))
    if x.outcome:
        lines.append(_line("Outcome", x.outcome.text))
    for e in x.events:
        lines.append(_line("Event", f"{e['time']}  {e['reason']}  {e['message']}"))
    return "\n".join(lines)


def _rate(x: OwnerExplanation) -> str:
    s = x.stats
    placed = s["home"] + s["domain"] + s["elsewhere"]
    if x.home_rate is None:
        return f"no placement compared yet ({s['admitted']} admitted)"
    return (f"{x.home_rate:.0%} home ({s['home']} home, {s['domain']} domain, {s['elsewhere']} elsewhere "
            f"of {placed} placements; {s['admitted']} admitted)")


def owner_text(x: OwnerExplanation) -> str:
    lines = [
        _line("Owner", f"{x.owner} in {x.namespace} (uid {x.uid})"),
        _line("Memory", f"{', '.join(x.objects)}; last seen {x.last_seen}"),
        _line("Home rate", _rate(x)),
    ]
    if x.fault_nodes:
        lines.append(_line("Avoids", ", ".join(f"{n} (ranks {', '.join(r)})" for n, r in sorted(x.fault_nodes.items()))))
    if x.ranks:
        lines += ["", f"{'RANK':<16} {'HOME':<24} {'WARM':<5} {'PREVIOUS':<20} {'BOUND':<21} FAULTS"]
        for r in x.ranks:
            faults = ", ".join(f"{f.node}@{f.at}" + ("" if f.avoided else " (expired)") for f in r.faults)
            lines.append(f"{r.rank:<16} {r.node:<24} {'yes' if r.warm else 'no':<5} {r.previous_node or '-':<20} "
                         f"{r.bound_at:<21} {faults or '-'}")
    if x.pool:
        lines += ["", f"{'POOL NODE':<24} {'WARM':<5} LAST USED"]
        lines += [f"{p.node:<24} {'yes' if p.warm else 'no':<5} {p.last_used}" for p in x.pool]
    if not x.ranks and not x.pool:
        lines.append("No ranks or pool homes remembered.")
    for bad in x.unreadable:
        lines.append(_line("Skipped", bad))
    if x.earlier_owners:
        lines.append(_line("Note", f"older memory of an earlier owner of this name: uid {', '.join(x.earlier_owners)}"))
    return "\n".join(lines)


def owners_text(x: OwnerList, all_namespaces: bool = False) -> str:
    """A table, one owner a line (kubectl's layout: NAMESPACE only across namespaces)."""
    if not x.owners:
        lines = ["No owners remembered" + ("." if all_namespaces else " in this namespace.")]
    else:
        rows = [[o.namespace, o.owner, str(o.ranks), str(o.pool), "-" if o.home_rate is None else f"{o.home_rate:.0%}",
                 str(o.stats["home"] + o.stats["domain"] + o.stats["elsewhere"]), o.last_seen] for o in x.owners]
        head = ["NAMESPACE", "OWNER", "RANKS", "POOL", "HOME-RATE", "PLACED", "LAST-SEEN"]
        if not all_namespaces:
            head, rows = head[1:], [r[1:] for r in rows]
        widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
        lines = ["   ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in (head, *rows)]
    lines += [_line("Skipped", bad) for bad in x.unreadable]
    return "\n".join(lines)
