"""The operator as users run it: `python -m homing run`, a separate process, configured by
environment variables, with its webhook registered by URL on this host."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from homing_e2e.cluster import free_port

THIS_TREE_OPERATOR = Path(__file__).resolve().parents[2] / "operator"


def operator_source() -> Path:
    """Where the harness's operator imports homing from: another checkout's `operator/` when
    HOMING_E2E_OPERATOR_PATH names one (bench/scale_paired.py, a paired bench), else this tree's."""
    return Path(os.environ.get("HOMING_E2E_OPERATOR_PATH") or THIS_TREE_OPERATOR)


def operator_code(src: Path | None = None) -> dict[str, object]:
    """The code an operator runs (`src`, its `operator/` folder; the harness's by default), for a
    results file to say what measured it: its checkout's commit, whether that checkout's
    `operator/` had uncommitted changes, and whether it is this tree's. Unknown (None) outside a
    git checkout."""
    src = src or operator_source()

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", ".")
    return {"commit": git("rev-parse", "--short=12", "HEAD"), "uncommitted_changes": None if status is None else bool(status),
            "this_tree": src.resolve() == THIS_TREE_OPERATOR}


# Leader election timings for a lone harness operator (client-go's rule holds: lease > renew > 1.2 x retry).
FAST_LEASES = {
    "HOMING_REPLICAS__LEASE_SECONDS": "3",
    "HOMING_REPLICAS__RENEW_SECONDS": "2",
    "HOMING_REPLICAS__RETRY_SECONDS": "0.5",
    "HOMING_REPLICAS__HANDOVER_GRACE_SECONDS": "1",
}


def _object_name(text: str) -> str:
    """A valid object name (RFC 1123, at most 63 characters) from a directory name, which
    tempfile.mkdtemp may give a '_'."""
    return re.sub(r"[^a-z0-9-]", "-", text.lower())[:63].strip("-")


def scrape(port: int) -> str:
    """A local process's Prometheus text (empty while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            return resp.read().decode()
    except Exception:
        return ""


def webhook_host() -> str:
    """Where the API server reaches a webhook served on this host: loopback for the harness's
    own control plane, HOMING_E2E_WEBHOOK_HOST for another cluster's (kind's network gateway)."""
    return os.environ.get("HOMING_E2E_WEBHOOK_HOST", "127.0.0.1")


class OperatorProcess:
    def __init__(self, kubeconfig: Path, workdir: Path, webhook_host: str = "127.0.0.1", env: dict | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.webhook_port = free_port()
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.liveness_port = free_port()
        self.webhook_host = webhook_host
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = workdir / "operator.log"
        self.starts = 0

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "KUBECONFIG": str(self.kubeconfig),
                "HOMING_WEBHOOK__URL": f"https://{self.webhook_host}:{self.webhook_port}",
                "HOMING_WEBHOOK__PORT": str(self.webhook_port),
                "HOMING_WEBHOOK__TLS_DIR": str(self.workdir / "tls"),
                "HOMING_METRICS_PORT": str(self.metrics_port),
                "HOMING_HEALTH_PORT": str(self.health_port),
                "HOMING_LIVENESS_PORT": str(self.liveness_port),
                "HOMING_LOG_LEVEL": "info",
                # Its own leader Lease (one per harness operator, kept across its restarts), in a
                # namespace every cluster has; short timings, so a killed and restarted operator
                # leads again within seconds. OperatorReplicas sets the real ones.
                "HOMING_REPLICAS__NAMESPACE": "default",
                "HOMING_REPLICAS__LEASE_NAME": _object_name(f"homing-leader-{self.workdir.name}"),
                "HOMING_REPLICAS__IDENTITY": self.workdir.name,  # as a pod's name: the same after a restart
                **FAST_LEASES,
            }
        )
        env.update(self.extra_env)
        if os.environ.get("HOMING_E2E_OPERATOR_PATH"):  # another checkout's operator (operator_source)
            env["PYTHONPATH"] = str(operator_source())
        return env

    def start(self, timeout: float = 60) -> OperatorProcess:
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(f"\n===== start {self.starts} =====\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "homing", "run"], env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"operator exited: {self.log_path.read_text()[-4000:]}")
            if "homing_ready 1.0" in self.metrics():
                return self
            time.sleep(0.2)
        raise TimeoutError(f"operator not ready: {self.log_path.read_text()[-4000:]}")

    def metrics(self) -> str:
        return scrape(self.metrics_port)

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample, 0 when absent."""
        want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "")
        for line in self.metrics().splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return 0.0

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
