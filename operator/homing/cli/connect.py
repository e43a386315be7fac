"""A read-only API client from a kubeconfig (`--kubeconfig`, `--context`, $KUBECONFIG) or
the in-cluster service account, and the namespace to use by default."""
from __future__ import annotations

import os
from pathlib import Path

from kubernetes_asyncio import client, config

from homing.cli.errors import CliError
from homing.kube.client import Kube

SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _in_cluster(kubeconfig: str | None) -> bool:
    default = Path(os.path.expanduser("~/.kube/config"))
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and not kubeconfig and not os.environ.get("KUBECONFIG") and not default.exists()


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    contexts, active = config.list_kube_config_contexts(kubeconfig)
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    if context and chosen is None:
        raise CliError(f"context {context!r} not found in the kubeconfig")
    return ((chosen or {}).get("context") or {}).get("namespace") or "default"


async def connect(kubeconfig: str | None, context: str | None) -> tuple[Kube, str]:
    if kubeconfig and not Path(kubeconfig).is_file():
        raise CliError(f"kubeconfig {kubeconfig} not found")
    try:
        if _in_cluster(kubeconfig):
            config.load_incluster_config()
            namespace = SA_NAMESPACE.read_text().strip() if SA_NAMESPACE.exists() else "default"
            return Kube(client.ApiClient()), namespace
        namespace = _context_namespace(kubeconfig, context)
        configuration = client.Configuration()
        await config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    except CliError:
        raise
    except Exception as err:  # a missing or broken kubeconfig: say so in one line
        raise CliError(f"cannot load the kubeconfig: {' '.join(str(err).split())[:300]}") from err
    return Kube(client.ApiClient(configuration)), namespace
