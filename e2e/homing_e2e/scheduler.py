"""kube-scheduler from the locally built binary, with its own profile name so that
only the pods that ask for it are scheduled (other tests bind pods themselves)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import yaml

from homing_e2e.cluster import BIN_DIR, free_port

PROFILE = "kube-e2e"
SHIPPED = Path(__file__).resolve().parents[2] / "manifests" / "kube-scheduler" / "scheduler-config.yaml"


def shipped_node_affinity_weight() -> int:
    """NodeAffinity's score weight in manifests/kube-scheduler, the configuration homing ships."""
    conf = yaml.safe_load(SHIPPED.read_text())
    return next(p["weight"] for p in conf["profiles"][0]["plugins"]["score"]["enabled"] if p["name"] == "NodeAffinity")


def config_text(kubeconfig: Path, node_affinity_weight: int | None = None, percentage: int = 0) -> str:
    """The default profile with NodeAffinity's score weight as shipped, unless changed."""
    if node_affinity_weight is None:
        node_affinity_weight = shipped_node_affinity_weight()
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: "{kubeconfig}"
leaderElection:
  leaderElect: false
percentageOfNodesToScore: {percentage}
profiles:
- schedulerName: {PROFILE}
  plugins:
    score:
      enabled:
      - name: NodeAffinity
        weight: {node_affinity_weight}
"""


class KubeScheduler:
    def __init__(self, kubeconfig: Path, workdir: Path, **config: int) -> None:
        self.config = workdir / "kube-scheduler.yaml"
        self.config.write_text(config_text(kubeconfig, **config))
        self.log = workdir / "kube-scheduler.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> KubeScheduler:
        self.proc = subprocess.Popen(
            [str(BIN_DIR / "kube-scheduler"), f"--config={self.config}", "--bind-address=127.0.0.1",
             f"--secure-port={free_port()}", "--v=1"],
            stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise RuntimeError(self.log.read_text()[-3000:])
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
