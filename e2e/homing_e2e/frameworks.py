"""The LeaderWorkerSet and JobSet controller managers (built by e2e/build-frameworks.sh) run
against the local control plane. Their CRDs and webhook configurations are read at run time
from the Go module cache, never copied. Both need their webhooks (LWS's pod webhook writes
the group and worker index labels; JobSet's defaults its objects): each serves them with a
certificate from the harness (its own CA), on this host where the API server reaches it
(operator_process.webhook_host: loopback, or kind's gateway), registered by URL instead of a
Service, and only for namespaces labelled FRAMEWORK_LABEL so that their fail-closed pod
webhooks never touch another test's pods."""
from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from homing.kube.client import Kube, KubeError
from homing_e2e import objects
from homing_e2e.cluster import BIN_DIR, E2E_DIR, free_port
from homing_e2e.modules import module_dir
from homing_e2e.operator_process import webhook_host
from homing_e2e.pki import serving_pair

FRAMEWORK_LABEL = "e2e.homing.io/frameworks"
WEBHOOK_APIS = "/apis/admissionregistration.k8s.io/v1"


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def build() -> None:
    subprocess.run(["bash", str(E2E_DIR / "build-frameworks.sh")], check=True)


@dataclass
class Framework:
    name: str  # its binary in e2e/.bin
    module: str
    version: str
    crds: tuple[str, ...]  # paths inside the module
    webhooks: str  # the kubebuilder webhook manifests, inside the module
    config_api: str  # its Configuration's apiVersion
    kustomization: str = "config/default/kustomization.yaml"  # its install's namePrefix
    port: int = field(default_factory=free_port)
    host: str = field(default_factory=webhook_host)  # where its webhook listens and the API server calls it
    proc: subprocess.Popen | None = None
    ca: bytes = b""  # the CA of its serving certificate (PEM)
    log: Path = Path("/dev/null")
    registered: list[tuple[str, str]] = field(default_factory=list)  # (plural, name)

    def path(self, inside: str) -> Path:
        return module_dir(self.module, self.version) / inside

    async def install_crds(self, kube: Kube) -> None:
        for crd in self.crds:
            await objects.install_crd(kube, load_yaml(self.path(crd)))

    def start(self, kubeconfig: Path, workdir: Path) -> None:
        """The manager with no leader election, no cert rotation of its own, no metrics."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.ca = serving_pair(workdir / "certs", self.name, sans=tuple(dict.fromkeys((self.host, "127.0.0.1", "localhost"))))
        config = {
            "apiVersion": self.config_api, "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": self.port, "host": self.host, "certDir": str(workdir / "certs")},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{free_port()}"},
        }
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        self.log = workdir / f"{self.name}.log"
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([str(BIN_DIR / self.name), f"--config={workdir / 'config.yaml'}", "--zap-log-level=info"],
                                         stdout=out, stderr=subprocess.STDOUT, env=env)

    async def serving(self, timeout: float = 60) -> None:
        async def listening() -> bool:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log.read_text()[-3000:]}")
            with socket.socket() as s:
                s.settimeout(0.5)
                return s.connect_ex((self.host, self.port)) == 0

        await objects.eventually(listening, timeout=timeout, what=f"{self.name} webhook server")

    async def register_webhooks(self, kube: Kube) -> None:
        """Its own webhook configurations, by URL and CA, scoped to the labelled namespaces.
        Named as its install names them (`lws-…`, `jobset-…`): webhooks run in name order,
        so homing's (`homing…`) runs first here as it does in a real cluster."""
        ca = base64.b64encode(self.ca).decode()
        prefix = load_yaml(self.path(self.kustomization)).get("namePrefix", "")
        for doc in yaml.safe_load_all(self.path(self.webhooks).read_text()):
            if not doc:
                continue
            plural = "mutatingwebhookconfigurations" if doc["kind"].startswith("Mutating") else "validatingwebhookconfigurations"
            doc["metadata"] = {"name": f"{prefix}{doc['metadata']['name']}"}
            for hook in doc["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://{self.host}:{self.port}{path}", "caBundle": ca}
                hook["namespaceSelector"] = {"matchLabels": {FRAMEWORK_LABEL: "true"}}
            name = doc["metadata"]["name"]
            try:
                await kube.request("POST", f"{WEBHOOK_APIS}/{plural}", body=doc)
            except KubeError as err:
                if err.status != 409:
                    raise
                current = await kube.request("GET", f"{WEBHOOK_APIS}/{plural}/{name}")  # left by an earlier run
                doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                await kube.request("PUT", f"{WEBHOOK_APIS}/{plural}/{name}", body=doc)
            self.registered.append((plural, name))

    async def stop(self, kube: Kube) -> None:
        for plural, name in self.registered:  # first: a fail-closed webhook with nobody behind it blocks pods
            try:
                await kube.request("DELETE", f"{WEBHOOK_APIS}/{plural}/{name}")
            except KubeError as err:
                if err.status != 404:
                    raise
        self.registered.clear()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                await asyncio.to_thread(self.proc.wait, 10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def leaderworkerset() -> Framework:
    return Framework(
        name="lws-controller-manager", module="sigs.k8s.io/lws", version="v0.8.0",
        crds=("config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",),
        webhooks="config/webhook/manifests.yaml", config_api="config.lws.x-k8s.io/v1alpha1",
    )


def jobset() -> Framework:
    return Framework(
        name="jobset-controller-manager", module="sigs.k8s.io/jobset", version="v0.11.0",
        crds=("config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",),
        webhooks="config/components/webhook/manifests.yaml", config_api="config.jobset.x-k8s.io/v1alpha1",
    )


FRAMEWORKS = (leaderworkerset, jobset)
