"""A no-op webhook in homing's place: started, registered exactly as homing registers itself
(same names, selectors, timeout) and probed until the API server calls it. What the API server
and this machine cost a webhook, whatever it decides (bench/scale.py's floor steps, bench/tidal.py's
`+noopwebhook` variants)."""
from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_measure as m  # noqa: E402
from homing.config import Settings  # noqa: E402
from homing.kube.admission import webhookconfig  # noqa: E402
from homing.kube.client import Kube  # noqa: E402
from homing_e2e.cluster import BIN_DIR, free_port  # noqa: E402
from homing_e2e.pki import serving_pair  # noqa: E402

HERE = Path(__file__).resolve().parent


def command(kind: str, port: int, tls_dir: Path, metrics_port: int) -> list[str]:
    """The no-op webhook's command: Python ("noop": aiohttp; "patch": the same, answering with a
    patch that changes no placement) or Go ("noop-go": net/http, built into the harness's binary
    cache; Go's build cache makes a rebuild instant)."""
    if kind in ("noop", "patch"):
        return [sys.executable, str(HERE / "noop_webhook.py"), "--port", str(port), "--tls-dir", str(tls_dir),
                "--metrics-port", str(metrics_port), *(["--patch"] if kind == "patch" else [])]
    binary = BIN_DIR / "noop-webhook"
    subprocess.run(["go", "build", "-o", str(binary), "main.go"], cwd=HERE / "noopwebhook", check=True)
    return [str(binary), "--port", str(port), "--tls-dir", str(tls_dir)]


async def start(kube: Kube, workdir: Path, kind: str, probe: dict, namespace: str) -> tuple[subprocess.Popen, int | None]:
    """The webhook's process once the API server has called it with `probe` (a pod created as a
    dry run in `namespace`: nothing stored), and its metrics port (the Python one's; else None)."""
    ca = serving_pair(workdir / "tls", "noop-webhook")
    port, metrics_port = free_port(), free_port()
    proc = subprocess.Popen(command(kind, port, workdir / "tls", metrics_port))
    await kube.request("POST", webhookconfig.API_PATH,
                       body=webhookconfig.configuration(Settings(webhook={"url": f"https://127.0.0.1:{port}"}), ca))
    for _ in range(300):
        await kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=probe, query=[("dryRun", "All")])
        if m.count(m.buckets(await m.apiserver_metrics(kube), m.APISERVER_WEBHOOK_SECONDS, m.homing_webhook)):
            return proc, (metrics_port if kind in ("noop", "patch") else None)
        await asyncio.sleep(0.2)
    proc.terminate()
    raise TimeoutError("the no-op webhook was never called")
