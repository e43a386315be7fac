"""Several operator processes serving one webhook, as a Deployment with a Service would:
all behind one TcpProxy address, sharing one certificate (kept in a Secret, as in-cluster)
and one webhook configuration; the leader Lease picks the writer."""
from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from homing_e2e.operator_process import OperatorProcess, webhook_host
from homing_e2e.tcpproxy import Backend, TcpProxy


class OperatorReplicas:
    def __init__(self, kubeconfig: Path, workdir: Path, system_namespace: str, env: dict[str, str]) -> None:
        self.kubeconfig, self.workdir = kubeconfig, workdir
        self.proxy = TcpProxy(host=webhook_host()).start()
        self.env = {
            "HOMING_WEBHOOK__URL": f"https://{self.proxy.host}:{self.proxy.port}",
            "HOMING_WEBHOOK__SERVICE_NAMESPACE": system_namespace,
            "HOMING_WEBHOOK__TLS_SECRET": "homing-webhook-tls",
            **env,
        }
        self.processes: list[OperatorProcess] = []
        self.backends: dict[int, Backend] = {}  # webhook port -> the proxy's endpoint
        self.started = 0

    def add(self) -> OperatorProcess:
        """One more replica; returns once it is ready and behind the proxy."""
        self.started += 1
        folder = self.workdir / f"replica-{self.started}"
        folder.mkdir(parents=True, exist_ok=True)
        proc = OperatorProcess(self.kubeconfig, folder, env=dict(self.env))
        proc.start()
        self.processes.append(proc)
        self._publish()
        return proc

    def remove(self, proc: OperatorProcess, kill: bool = False) -> float:
        """SIGKILL one replica, or stop it the way the kubelet stops a pod: its endpoint is
        removed, the preStop hook (deployment.yaml: GET /drain) runs to its answer, then
        SIGTERM. Returns when it was signalled (monotonic)."""
        self.processes.remove(proc)
        if not kill:  # a killed pod stays an endpoint until its probe fails: the proxy finds out itself
            self.backends.pop(proc.webhook_port, None)
            self._publish()
            urllib.request.urlopen(f"http://127.0.0.1:{proc.health_port}/drain", timeout=60).read()
        at = time.monotonic()
        proc.stop(kill=kill)
        return at

    def leader(self) -> OperatorProcess | None:
        leading = [p for p in self.processes if p.metric("homing_leader") == 1.0]
        return leading[0] if len(leading) == 1 else None

    def wait_leader(self, timeout: float = 60) -> tuple[OperatorProcess, float]:
        """The one leading replica, and when (monotonic) it was first seen leading."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.leader()
            if found is not None:
                return found, time.monotonic()
            time.sleep(0.05)
        raise TimeoutError("no replica became the leader")

    def _publish(self) -> None:
        for p in self.processes:
            self.backends.setdefault(p.webhook_port, Backend(p.webhook_port, f"http://127.0.0.1:{p.health_port}/readyz"))
        self.proxy.set_backends(list(self.backends.values()))

    def stop(self) -> None:
        for proc in list(self.processes):
            proc.stop()
        self.proxy.stop()
