"""The operator's settings as its pod loads them, read from the cluster: the HOMING_* values in
its Deployment's container over the settings file that container mounts (the ConfigMap at
HOMING_CONFIG_FILE), defaults under both, as config.py loads them. `explain` judges a pod's
scope and a fault's age by these, not by the environment of the shell it runs in.

Without a homing Deployment in the operator's namespace (or without the right to list them)
the ConfigMap the manifests and the chart name (homing-config, key config.yaml) is read; a
ConfigMap that is not there means the defaults, as for the operator (the volume is optional).
Settings that cannot be read at all (no permission) are the defaults, with a warning."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import pydantic
import yaml
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource

from homing.cli.errors import CliError, from_api
from homing.config import Settings
from homing.kube.client import Kube, KubeError

SELECTOR = "app.kubernetes.io/name=homing"
CONFIG_MAP, CONFIG_KEY = "homing-config", "config.yaml"  # manifests/examples/config.yaml, the chart's settings
CONFIG_FILE_VARIABLE = "HOMING_CONFIG_FILE"
NO_RIGHT = (401, 403)


def settings_from(file: Mapping[str, Any], variables: Mapping[str, str]) -> Settings:
    """Settings from a settings file's content and HOMING_* variables, the variables winning as
    in the operator, and nothing from this process's environment."""

    class Variables(EnvSettingsSource):
        def _load_env_vars(self) -> Mapping[str, str | None]:  # instead of os.environ
            return {k if self.case_sensitive else k.lower(): v for k, v in variables.items()}

    class File(PydanticBaseSettingsSource):
        def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
            return None, field_name, False

        def __call__(self) -> dict[str, Any]:
            return dict(file)

    class FromCluster(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (Variables(settings_cls), File(settings_cls))

    return FromCluster()


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or [{}]
    return next((c for c in containers if c.get("name") == "homing"), containers[0])


def mounted_config_map(deployment: dict[str, Any], path: str) -> tuple[str, str] | None:
    """(ConfigMap name, key) of the file at `path` in the operator's container, None when no
    ConfigMap volume holds it."""
    pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    volumes = {v.get("name"): v for v in pod.get("volumes") or ()}
    for mount in _container(deployment).get("volumeMounts") or ():
        source = (volumes.get(mount.get("name")) or {}).get("configMap")
        at = str(mount.get("mountPath") or "").rstrip("/")
        if not source or not at:
            continue
        if mount.get("subPath"):
            inside = mount["subPath"] if path == at else None
        else:
            inside = path[len(at) + 1 :] if path.startswith(at + "/") else None
        if inside is None:
            continue
        items = {i.get("path"): i.get("key") for i in source.get("items") or ()}
        key = items.get(inside) if items else inside
        return (source["name"], key) if key and "/" not in key else None
    return None


async def _deployment(kube: Kube, namespace: str) -> tuple[dict[str, Any] | None, str | None]:
    """homing's Deployment in `namespace` (the one named homing when there are several), and
    a note when the choice was not the only one."""
    try:
        got = await kube.request("GET", f"/apis/apps/v1/namespaces/{quote(namespace)}/deployments",
                                 query=[("labelSelector", SELECTOR)])
    except KubeError as err:
        if err.status in (*NO_RIGHT, 404):
            return None, None
        raise from_api(err, f"Deployments in namespace {namespace}") from err
    items = sorted(got.get("items") or [], key=lambda d: (d["metadata"]["name"] != "homing", d["metadata"]["name"]))
    if not items:
        return None, None
    note = None
    if len(items) > 1:
        names = ", ".join(d["metadata"]["name"] for d in items)
        note = f"several homing Deployments in namespace {namespace} ({names}): the settings of {items[0]['metadata']['name']}"
    return items[0], note


async def read(kube: Kube, namespace: str) -> tuple[Settings, list[str]]:
    """The operator's settings and what to warn about (settings not readable, a choice made)."""
    warnings: list[str] = []
    deployment, note = await _deployment(kube, namespace)
    if note:
        warnings.append(note)
    variables: dict[str, str] = {}
    source: tuple[str, str] | None = (CONFIG_MAP, CONFIG_KEY)
    if deployment is not None:
        env = _container(deployment).get("env") or ()
        variables = {e["name"]: str(e["value"]) for e in env if e.get("name", "").startswith("HOMING_") and "value" in e}
        path = variables.pop(CONFIG_FILE_VARIABLE, None)
        source = mounted_config_map(deployment, path) if path else None
    file: dict[str, Any] = {}
    where = "the defaults"
    if source is not None:
        name, key = source
        where = f"ConfigMap {namespace}/{name}"
        try:
            cm = await kube.request("GET", f"/api/v1/namespaces/{quote(namespace)}/configmaps/{quote(name)}")
        except KubeError as err:
            if err.status in NO_RIGHT:
                warnings.append(f"cannot read the operator's settings ({where}: no permission): the defaults are used")
                return settings_from({}, {}), warnings
            if err.status != 404:
                raise from_api(err, where) from err
            cm = {}
        loaded = yaml.safe_load(((cm.get("data") or {}).get(key)) or "") or {}
        if not isinstance(loaded, dict):
            raise CliError(f"the operator's settings in {where} (key {key}) are not a mapping")
        file = loaded
    try:
        return settings_from(file, variables), warnings
    except pydantic.ValidationError as err:  # the operator itself would refuse to start with them
        first = " ".join(str(err).split())[:300]
        raise CliError(f"the operator's settings ({where}, Deployment variables) are refused: {first}") from err


class ClusterSettings:
    """Awaited, the operator's settings in `namespace`; read once, on first use, so that an
    explanation that needs none reads nothing (and asks for no right) more."""

    def __init__(self, kube: Kube, namespace: str, warn: Callable[[str], None]) -> None:
        self.kube, self.namespace, self.warn = kube, namespace, warn
        self._settings: Settings | None = None

    async def __call__(self) -> Settings:
        if self._settings is None:
            self._settings, warnings = await read(self.kube, self.namespace)
            for message in warnings:
                self.warn(message)
        return self._settings
