"""kube-scheduler from the locally built binary, with its own profile name so that
only the pods that ask for it are scheduled (other tests bind pods themselves)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from homing_e2e.cluster import BIN_DIR, free_port

PROFILE = "kube-e2e"


def config_text(kubeconfig: Path, node_affinity_weight: int = 2, percentage: int = 0) -> str:
    """The default profile; NodeAffinity's score weight is 2 unless changed."""
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

    def start(self) -> "KubeScheduler":
        self.proc = subprocess.Popen(
            [str(BIN_DIR / "kube-scheduler"), f"--config={self.config}", "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "--v=1"],
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
