"""The chart's operator pod run as a local process, as a kubelet would run it: the
container's environment from the installed Deployment, its ConfigMap volume written to a
directory, and the API server reached as the pod's ServiceAccount (a token from the
TokenRequest API). Only where the pod cannot be reproduced on this host does it differ:
the webhook is served on a local port and registered by URL, not behind the Service."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from homing.kube.client import Kube
from homing_e2e.operator_process import OperatorProcess


async def service_account_kubeconfig(kube: Kube, admin_kubeconfig: Path, namespace: str, name: str, out: Path) -> Path:
    """A kubeconfig that authenticates as system:serviceaccount:<namespace>:<name>."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    got = await kube.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body=body)
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    out.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": cluster}],
                "users": [{"name": name, "user": {"token": got["status"]["token"]}}],
                "contexts": [{"name": "sa", "context": {"cluster": "local", "user": name}}],
                "current-context": "sa",
            }
        )
    )
    return out


async def _mount_config_maps(kube: Kube, namespace: str, pod: dict[str, Any], container: dict[str, Any], root: Path) -> dict[str, Path]:
    """Each ConfigMap volume's keys as files under `root`; mount path -> local directory."""
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts") or []:
        source = volumes[mount["name"]].get("configMap")
        if not source:
            continue
        local = root / mount["name"]
        local.mkdir(parents=True, exist_ok=True)
        cms = await kube.request("GET", f"/api/v1/namespaces/{namespace}/configmaps")
        data = next((cm.get("data") or {} for cm in cms["items"] if cm["metadata"]["name"] == source["name"]), None)
        if data is None and not source.get("optional"):
            raise RuntimeError(f"ConfigMap {source['name']} missing and not optional")
        for key, text in (data or {}).items():
            (local / key).write_text(text)
        mounts[mount["mountPath"]] = local
    return mounts


def _local_path(value: str, mounts: dict[str, Path]) -> str:
    for mount_path, local in mounts.items():
        if value.startswith(mount_path.rstrip("/") + "/"):
            return str(local / value[len(mount_path.rstrip("/")) + 1 :])
    return value


def _env_value(var: dict[str, Any], mounts: dict[str, Path], fields: dict[str, str]) -> str:
    if "value" in var:
        return _local_path(var["value"], mounts)
    field = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
    if field not in fields:
        raise NotImplementedError(f"env {var['name']}: only values and the fieldRefs {sorted(fields)} are reproduced here")
    return fields[field]


async def deployment_process(
    kube: Kube, admin_kubeconfig: Path, namespace: str, deployment: str, workdir: Path, webhook_host: str = "127.0.0.1"
) -> OperatorProcess:
    """An OperatorProcess configured as the installed Deployment's one container."""
    dep = await kube.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}")
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = await _mount_config_maps(kube, namespace, pod, container, workdir / "volumes")
    fields = {"metadata.name": f"{deployment}-local", "metadata.namespace": namespace, "status.podIP": webhook_host}
    env = {e["name"]: _env_value(e, mounts, fields) for e in container.get("env") or []}
    kubeconfig = await service_account_kubeconfig(
        kube, admin_kubeconfig, namespace, pod["serviceAccountName"], workdir / "serviceaccount.kubeconfig"
    )
    return OperatorProcess(kubeconfig, workdir, webhook_host=webhook_host, env=env)
