"""The webhook's certificates at run time (behaviour.md "Operation"): kept in a Secret in-cluster (shared
by the replicas) or in the TLS directory locally; renewed while running by the leader
(certplan.py decides when), and loaded by every replica into the TLS context it serves
with, without restarting the server: connections opened after a renewal get the new
certificate, open ones keep theirs. The leader writes the bundle into the webhook
configuration whenever it changes."""
from __future__ import annotations

import asyncio
import base64
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from homing.config import Settings
from homing.kube.certs import certplan, tls
from homing.kube.client import Kube, KubeError
from homing.kube.signals import logs, metrics

log = logs.get("homing.tls")


class Conflict(Exception):
    """Someone else wrote the kept certificates first: read them again."""


class _SecretStore:
    def __init__(self, kube: Kube, namespace: str, name: str) -> None:
        self.kube, self.namespace, self.name = kube, namespace, name
        self.version: str | None = None

    async def read(self) -> dict[str, bytes]:
        try:
            secret = await self.kube.request("GET", f"/api/v1/namespaces/{self.namespace}/secrets/{self.name}")
        except KubeError as err:
            if err.status == 404:
                self.version = None
                return {}
            raise
        self.version = secret["metadata"]["resourceVersion"]
        return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items() if k in tls.FILES}

    async def write(self, files: dict[str, bytes]) -> None:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {"app.kubernetes.io/name": "homing"}},
            "type": "Opaque",
            "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
        }
        path = f"/api/v1/namespaces/{self.namespace}/secrets"
        try:
            if self.version is None:
                got = await self.kube.request("POST", path, body=body)
            else:
                body["metadata"]["resourceVersion"] = self.version
                got = await self.kube.request("PUT", f"{path}/{self.name}", body=body)
        except KubeError as err:
            if err.status == 409:
                raise Conflict() from err
            raise
        self.version = got["metadata"]["resourceVersion"]


class _DirectoryStore:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    async def read(self) -> dict[str, bytes]:
        return tls.read(self.directory)

    async def write(self, files: dict[str, bytes]) -> None:
        tls.write(files, self.directory)


# TLS 1.2 with forward-secret AEAD suites only (TLS 1.3's are all AEAD), no renegotiation:
# what the API server's Go client offers, and nothing a scanner would flag.
AEAD_TLS12 = "ECDHE+AESGCM:ECDHE+CHACHA20"


def serving_context(client_ca_file: str | None = None) -> ssl.SSLContext:
    """`client_ca_file`: only clients with a certificate it signed get past the handshake
    (config.Webhook.client_ca_file); without it, any client may connect, as Kubernetes'
    webhooks commonly do."""
    context = ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(AEAD_TLS12)
    context.options |= ssl.OP_NO_RENEGOTIATION
    if client_ca_file:
        context.load_verify_locations(cafile=client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


class Certificates:
    def __init__(self, kube: Kube, settings: Settings, hosts: list[str]) -> None:
        w = settings.webhook
        self.hosts, self.leaf_seconds, self.ca_seconds = hosts, w.leaf_seconds, w.ca_seconds
        self.check_seconds = w.cert_check_seconds or min(60.0, w.leaf_seconds / 20)
        self.policy = certplan.Policy(
            propagation_seconds=w.cert_propagation_seconds, reload_seconds=w.cert_propagation_seconds + 3 * self.check_seconds
        )
        self.mounted = w.mounted_tls_dir is not None  # cert-manager's: read only, never renewed here
        self.store: _SecretStore | _DirectoryStore
        if w.mounted_tls_dir is not None:
            self.store = _DirectoryStore(w.mounted_tls_dir)
        elif w.tls_secret:
            self.store = _SecretStore(kube, w.service_namespace, w.tls_secret)
        else:
            self.store = _DirectoryStore(w.tls_dir)
        self.served_dir = Path(w.tls_dir) / "served"  # what the server loads; kopf watches generation 0, never rewritten
        self.context = serving_context(w.client_ca_file)
        self.files: dict[str, bytes] = {}
        self.generation = 0

    @property
    def bundle(self) -> bytes:
        return self.files.get("ca.crt", b"")

    async def start(self) -> tuple[Path, Path]:
        """Read or make the certificates; returns the files to give kopf's server (which
        loads them into `context`)."""
        if self.mounted:
            files = await self._mounted()
            self._load(files)
            return self.served_dir / "0" / "tls.crt", self.served_dir / "0" / "tls.key"
        for _ in range(5):
            files = await self.store.read()
            if certplan.plan(tls.kept(files, self.hosts), time.time(), self.policy) is not certplan.Step.REISSUE:
                break
            try:
                files = await self._reissue(files)
                break
            except Conflict:
                continue  # another replica made them meanwhile: use theirs
        self._load(files)
        return self.served_dir / "0" / "tls.crt", self.served_dir / "0" / "tls.key"

    async def forever(self, leading: Callable[[], bool], bundle_changed: Callable[[bytes], Awaitable[object]]) -> None:
        """Each round: the leader renews what is due; every replica serves what is kept."""
        while True:
            await asyncio.sleep(self.check_seconds)
            files = await self.store.read()
            if leading() and not self.mounted:
                try:
                    files = await self.rotate(files, bundle_changed)
                except Conflict:
                    files = await self.store.read()
            if files and files.get("tls.crt") != self.files.get("tls.crt"):
                self._load(files)

    async def _mounted(self) -> dict[str, bytes]:
        """The mounted certificates, waited for: cert-manager may issue them after the pod starts."""
        while True:
            files = await self.store.read()
            if files.get("tls.crt") and files.get("tls.key"):
                return files
            log.warning("waiting for the mounted webhook certificate", directory=getattr(self.store, "directory", ""))
            await asyncio.sleep(5)

    async def rotate(self, files: dict[str, bytes], bundle_changed: Callable[[bytes], Awaitable[object]]) -> dict[str, bytes]:
        step = certplan.plan(tls.kept(files, self.hosts), time.time(), self.policy)
        if step is certplan.Step.NONE:
            return files
        cas = tls.split_bundle(files.get("ca.crt", b""))
        if step is certplan.Step.REISSUE:
            new = await self._reissue(files)
        elif step is certplan.Step.NEW_CA:
            ca, ca_key = tls.new_ca(self.ca_seconds)
            new = {**files, "ca.crt": b"".join([ca, *cas]), "ca.key": ca_key}
        elif step is certplan.Step.NEW_LEAF:
            cert, key = tls.new_leaf(cas[0], files["ca.key"], self.hosts, self.leaf_seconds)
            new = {**files, "tls.crt": cert, "tls.key": key}
        else:  # TRIM
            new = {**files, "ca.crt": cas[0]}
        if step is not certplan.Step.REISSUE:
            await self.store.write(new)
        metrics.CERT_RENEWALS.labels(step.value).inc()
        log.info("webhook certificates renewed", step=step.value, cas=len(tls.split_bundle(new["ca.crt"])))
        if new["ca.crt"] != files.get("ca.crt"):
            await bundle_changed(new["ca.crt"])
        return new

    async def _reissue(self, files: dict[str, bytes]) -> dict[str, bytes]:
        now = time.time()
        keep = [pem for pem, life in zip(tls.split_bundle(files.get("ca.crt", b"")), tls.kept(files, self.hosts).cas)
                if life.expires > now]  # replicas may still serve leaves these signed
        new = tls.new_files(self.hosts, self.ca_seconds / 86400, self.leaf_seconds / 86400, keep)
        await self.store.write(new)
        log.info("new webhook CA and certificate", hosts=self.hosts, kept_cas=len(keep))
        return new

    def _load(self, files: dict[str, bytes]) -> None:
        """Serve these from the next TLS handshake on."""
        folder = self.served_dir / str(self.generation)
        cert, key, _ = tls.write({k: files[k] for k in ("tls.crt", "tls.key", "ca.crt")}, str(folder))
        self.context.load_cert_chain(str(cert), str(key))
        if self.generation:
            log.info("serving a renewed webhook certificate", generation=self.generation)
        self.files = files
        if self.generation > 1:  # generation 0 stays: kopf watches it
            for old in (self.served_dir / str(self.generation - 1)).glob("*"):
                old.unlink()
        self.generation += 1
        leaf = tls.kept(files, self.hosts).leaf
        if leaf is not None:
            metrics.CERT_EXPIRES.set(leaf.expires)
