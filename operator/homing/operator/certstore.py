"""Where the webhook's certificate is kept between restarts: a Secret when one is
configured (in-cluster), else the TLS directory. A kept certificate is reused while
usable; otherwise a new one is made and kept."""
from __future__ import annotations

import base64
from pathlib import Path

from homing.config import Settings
from homing.operator import logs, tls
from homing.operator.kube import Kube, KubeError

log = logs.get("homing.tls")


async def _from_secret(kube: Kube, namespace: str, name: str) -> dict[str, bytes] | None:
    try:
        secret = await kube.request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
    except KubeError as err:
        if err.status == 404:
            return None
        raise
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items() if k in tls.FILES}


async def _to_secret(kube: Kube, namespace: str, name: str, files: dict[str, bytes], exists: bool) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": "homing"}},
        "type": "Opaque",
        "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
    }
    path = f"/api/v1/namespaces/{namespace}/secrets"
    if exists:
        await kube.request("PUT", f"{path}/{name}", body=body)
    else:
        await kube.request("POST", path, body=body)


async def certificates(kube: Kube, settings: Settings, hosts: list[str]) -> tuple[Path, Path, bytes]:
    """(tls.crt path, tls.key path, CA PEM) for the webhook server."""
    w = settings.webhook
    kept = await _from_secret(kube, w.service_namespace, w.tls_secret) if w.tls_secret else tls.read(w.tls_dir)
    if kept and tls.usable(kept, hosts):
        return tls.write(kept, w.tls_dir)
    files = tls.new_files(hosts)
    if w.tls_secret:
        await _to_secret(kube, w.service_namespace, w.tls_secret, files, exists=kept is not None)
    log.info("new webhook certificate", hosts=hosts, kept_in=w.tls_secret or w.tls_dir)
    return tls.write(files, w.tls_dir)
