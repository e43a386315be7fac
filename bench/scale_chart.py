"""bench/results/scale.svg: one small panel per figure against remembered ranks (log
scale), the issue's target as a dashed line. Hand-written SVG: no plotting dependency."""
from __future__ import annotations

import math

# (key, title, target at the largest step or None)
PANELS = (
    ("cold_start_s", "cold start to ready (s)", 20.0),
    ("rss_mb", "peak RSS (MiB)", 1024.0),
    ("loop_lag_p99_ms", "event-loop lag p99, burst (ms)", 20.0),
    ("apiserver_webhook_p99_ms", "webhook p99, API server (ms)", 10.0),
    ("gang_recorded_s", "gang in PlacementMemory after last bind (s)", 5.0),
    ("bytes_per_rank", "bytes per rank in etcd", 100.0),
)
W, H, COLS, PAD = 300, 190, 3, 40


def _panel(rows: list[dict], key: str, title: str, target: float | None, x0: int, y0: int) -> list[str]:
    points = [(r["ranks"], r[key]) for r in rows if r.get(key) is not None]
    top = max([v for _, v in points] + ([target] if target else []) + [1e-9]) * 1.15
    lo, hi = math.log10(min(r["ranks"] for r in rows)), math.log10(max(r["ranks"] for r in rows))
    span = max(hi - lo, 1e-9)
    left, bottom, width, height = x0 + PAD, y0 + H - 30, W - PAD - 15, H - 60

    def x(ranks: float) -> float:
        return left + (math.log10(ranks) - lo) / span * width if hi > lo else left + width / 2

    def y(value: float) -> float:
        return bottom - value / top * height

    out = [f'<text x="{x0 + 8}" y="{y0 + 16}" font-size="12">{title}</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{left + width}" y2="{bottom}" stroke="#333"/>',
           f'<line x1="{left}" y1="{bottom}" x2="{left}" y2="{bottom - height}" stroke="#333"/>',
           f'<text x="{left - 4}" y="{bottom - height + 4}" text-anchor="end">{top:.3g}</text>',
           f'<text x="{left - 4}" y="{bottom + 4}" text-anchor="end">0</text>']
    if target:
        out.append(f'<line x1="{left}" y1="{y(target):.1f}" x2="{left + width}" y2="{y(target):.1f}" '
                   f'stroke="#c0392b" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{left + width}" y="{y(target) - 3:.1f}" text-anchor="end" fill="#c0392b">target {target:g}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{x(r):.1f},{y(v):.1f}" for i, (r, v) in enumerate(points))
    if path:
        out.append(f'<path d="{path}" fill="none" stroke="#2e6fb5" stroke-width="2"/>')
    for r, v in points:
        out.append(f'<circle cx="{x(r):.1f}" cy="{y(v):.1f}" r="3" fill="#2e6fb5"/>')
        out.append(f'<text x="{x(r):.1f}" y="{y(v) - 6:.1f}" text-anchor="middle">{v:.3g}</text>')
    for row in rows:
        out.append(f'<text x="{x(row["ranks"]):.1f}" y="{bottom + 14}" text-anchor="middle">{row["ranks"]:,}</text>')
    return out


def chart(rows: list[dict]) -> str:
    """The SVG text for the steps in `rows` (increasing size)."""
    panels = len(PANELS)
    width, height = COLS * W, -(-panels // COLS) * H + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="10">',
           f'<text x="8" y="18" font-size="13">One homing operator, step by step (x: remembered ranks, log; '
           f'nodes {", ".join(format(r["nodes"], ",") for r in rows)})</text>']
    for i, (key, title, target) in enumerate(PANELS):
        out += _panel(rows, key, title, target, (i % COLS) * W, 30 + (i // COLS) * H) if rows else []
    out.append("</svg>")
    return "\n".join(out)
