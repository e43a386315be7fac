"""Starts etcd, kube-apiserver and kube-controller-manager from the binaries that
e2e/build-binaries.sh built, on free loopback ports, in a throw-away directory."""
from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from homing_e2e.pki import make_pki

E2E_DIR = Path(__file__).resolve().parent.parent
BIN_DIR = Path(os.environ.get("HOMING_BIN_DIR", E2E_DIR / ".bin"))


_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, never one this process handed out before: the
    kernel may offer the same ephemeral port twice in a row (etcd's client and peer
    ports once collided that way)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


# The control-plane programs a cluster for Volcano runs (kube-scheduler, kubectl and 1.37's
# release are for other tests): what the demo builds on a new machine, and no more.
VOLCANO_CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager")


def build_binaries(*programs: str) -> None:
    """Builds e2e/.bin's control-plane programs: those named, or all of them."""
    subprocess.run(["bash", str(E2E_DIR / "build-binaries.sh"), *programs], check=True)


def webhook_calls_failed_open(kubeconfig: Path, last: int = 5) -> list[str]:
    """For a failure message: the local API server's last lines on webhook calls it let
    through unanswered (timed out, connection lost), with their reasons; none for a cluster
    whose logs are not beside its kubeconfig."""
    log = kubeconfig.parent / "kube-apiserver.log"
    if not log.exists():
        return []
    lines = [line[:400] for line in log.read_text(errors="replace").splitlines() if "failing open" in line]
    return lines[-last:]


def kubeconfig_text(server: str, ca: Path, cert: Path, key: Path) -> str:
    return f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "{server}", certificate-authority: "{ca}"}}
users:
- name: admin
  user: {{client-certificate: "{cert}", client-key: "{key}"}}
contexts:
- name: local
  context: {{cluster: local, user: admin}}
current-context: local
"""


def webhook_client_config(workdir: Path, pki: dict[str, Path]) -> Path:
    """The API server presents pki's webhook-client certificate to every webhook that asks for
    one (WebhookAdmission's kubeConfigFile, user "*"), as a cluster that has webhooks verify
    their caller is set up; a webhook that asks for none sees no difference."""
    users = workdir / "webhook-client.kubeconfig"
    users.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [
        {"name": "*", "user": {"client-certificate": str(pki["webhook-client.crt"]), "client-key": str(pki["webhook-client.key"])}}]}))
    config = workdir / "admission.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": [
        {"name": plugin, "configuration": {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                                           "kubeConfigFile": str(users)}}
        for plugin in ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")]}))
    return config


class LocalControlPlane:
    """etcd + kube-apiserver + kube-controller-manager. `kubeconfig` is the admin's."""

    def __init__(
        self,
        workdir: Path | None = None,
        controllers: str = "*,-nodelifecycle,-nodeipam",
        apiserver_args: tuple[str, ...] = (),
        controller_manager_args: tuple[str, ...] = (),
        release: str = "",
    ) -> None:
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="homing-cp-"))
        self.release = release  # a folder of e2e/.bin holding another Kubernetes release's API server and controller manager
        self.controllers = controllers
        self.apiserver_args = apiserver_args
        self.controller_manager_args = controller_manager_args
        self.procs: dict[str, subprocess.Popen] = {}
        self.commands: dict[str, tuple[list[str], str | None]] = {}  # what `run` started: name -> (args, binary)
        self.replacing = threading.Lock()  # `restart` (from a thread) and `revive` never replace a program at once
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self.server = ""
        self.etcd_url = ""  # etcd's client URL (benchmarks read stored sizes from it)

    def _spawn(self, name: str, args: list[str], binary: str | None = None, mode: str = "wb") -> None:
        log = open(self.workdir / f"{name}.log", mode)
        self.procs[name] = subprocess.Popen(
            [str(BIN_DIR / (binary or name)), *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def run(self, name: str, args: list[str], binary: str | None = None) -> None:
        """Starts another program of e2e/.bin next to the control plane; stopped with it."""
        self.commands[name] = (list(args), binary)
        self._spawn(name, args, binary)
        self._started(name)

    def restart(self, name: str) -> None:
        """Stops a program `run` started (SIGTERM, as a pod's container is stopped) and starts it
        again with the same arguments, its log going on in the same file: whatever it kept in
        memory is gone, whatever it wrote to the API server is not."""
        args, binary = self.commands[name]
        with self.replacing:
            _terminate(self.procs[name])
            with open(self.workdir / f"{name}.log", "ab") as log:
                log.write(b"\n===== restarted by the harness =====\n")
            self._spawn(name, args, binary, mode="ab")
        self._started(name)

    def revive(self, name: str) -> int | None:
        """If a program `run` started has exited, starts it again with the same arguments, as
        its Deployment would restart its pod, the log going on in the same file; returns the
        code it exited with. None: it runs (or `restart` is replacing it)."""
        if not self.replacing.acquire(blocking=False):
            return None
        try:
            code = self.procs[name].poll()
            if code is None:
                return None
            args, binary = self.commands[name]
            with open(self.workdir / f"{name}.log", "ab") as log:
                log.write(f"\n===== exited with code {code}; started again by the harness =====\n".encode())
            self._spawn(name, args, binary, mode="ab")
            return code
        finally:
            self.replacing.release()

    def _started(self, name: str) -> None:
        time.sleep(0.3)
        if self.procs[name].poll() is not None:
            raise RuntimeError(f"{name} exited early:\n" + (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:])

    def _wait(self, name: str, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited early:\n{tail}")
            if ready():
                return
            time.sleep(0.2)
        raise TimeoutError(f"{name} not ready after {timeout}s; see {self.workdir / (name + '.log')}")

    def start(self) -> LocalControlPlane:
        pki = make_pki(self.workdir / "pki")
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                "--name=default",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=default=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait("etcd", lambda: _http_ok(f"{etcd_url}/health"), 30)
        self.server = f"https://127.0.0.1:{api_port}"
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki['apiserver.crt']}",
                f"--tls-private-key-file={pki['apiserver.key']}",
                f"--client-ca-file={pki['ca.crt']}",
                f"--service-account-key-file={pki['sa.pub']}",
                f"--service-account-signing-key-file={pki['sa.key']}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
                "--v=1",
                f"--admission-control-config-file={webhook_client_config(self.workdir, pki)}",
                *self.apiserver_args,
            ],
            binary=f"{self.release}/kube-apiserver" if self.release else None,
        )
        self.kubeconfig.write_text(kubeconfig_text(self.server, pki["ca.crt"], pki["admin.crt"], pki["admin.key"]))
        ctx = ssl.create_default_context(cafile=str(pki["ca.crt"]))
        ctx.load_cert_chain(str(pki["admin.crt"]), str(pki["admin.key"]))
        self._wait("kube-apiserver", lambda: _http_ok(f"{self.server}/readyz", ctx), 90)
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                f"--service-account-private-key-file={pki['sa.key']}",
                f"--root-ca-file={pki['ca.crt']}",
                f"--controllers={self.controllers}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--concurrent-gc-syncs=5",
                "--v=1",
                *self.controller_manager_args,
            ],
            binary=f"{self.release}/kube-controller-manager" if self.release else None,
        )
        time.sleep(0.5)
        if self.procs["kube-controller-manager"].poll() is not None:
            raise RuntimeError((self.workdir / "kube-controller-manager.log").read_text()[-3000:])
        return self

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            _terminate(self.procs[name])
        self.procs.clear()
        if not os.environ.get("HOMING_E2E_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)


def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
            return resp.status == 200
    except Exception:
        return False


def _terminate(proc: subprocess.Popen) -> None:
    """SIGTERM, as a pod's container is stopped; SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
