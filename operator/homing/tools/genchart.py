"""Writes the Helm chart from the install manifests:
`python -m homing.tools.genchart [CHART_DIR] [KUBECTL]` (run by `make manifests`).

The chart is generated, never edited: its objects are those `kubectl kustomize manifests/`
builds, with chart values put where rules.py finds their fields; the MindCluster overlay's
additions are switched on by mindcluster.enabled; every default value is read from the
manifests. A test keeps the committed chart equal to this output, and another compares
`helm template` with `kubectl kustomize` object by object (docs/helm.md)."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from homing.config import Webhook
from homing.tools.chart import kustomize, overlay, rules, values
from homing.tools.chart.placeholders import Placeholders, dump, escape

ROOT = Path(__file__).resolve().parents[3]
MINDCLUSTER = ".Values.mindcluster.enabled"
# `$`, not `.`: the namespace is also written inside `with` blocks, where `.` is rebound.
NAMESPACE_VALUE = "{{ $.Values.namespace.name }}"
SETTINGS_EXAMPLE = Path("manifests/examples/config.yaml")


def _wrap(condition: str, text: str) -> str:
    return f"{{{{- if {condition} }}}}\n{text}{{{{- end }}}}\n"


def _with_overlay(base: dict[str, Any] | None, over: dict[str, Any] | None, marks: Placeholders) -> str:
    """One object as the default install has it, switched as the MindCluster overlay has it."""
    if base is None:
        return _wrap(MINDCLUSTER, dump(over))
    if over is None:
        return _wrap(f"not {MINDCLUSTER}", dump(base))
    try:
        return dump(overlay.merge(base, over, MINDCLUSTER, marks))
    except overlay.Unsupported:
        return f"{{{{- if {MINDCLUSTER} }}}}\n{dump(over)}{{{{- else }}}}\n{dump(base)}{{{{- end }}}}\n"


def _templated(obj: dict[str, Any] | None, marks: Placeholders, config_map: str) -> dict[str, Any] | None:
    if obj is None:
        return None
    obj = escape(obj)  # a copy, with literal braces kept literal
    rules.template_workload(obj, marks, config_map)
    rules.template_webhook(obj, marks)
    return obj


def _settings_config_map(example: dict[str, Any], marks: Placeholders) -> str:
    """The settings file as manifests/examples/config.yaml ships it, from .Values.settings."""
    cm = {k: v for k, v in example.items() if k != "data"}
    (data_key,) = example["data"]
    cm["data"] = {data_key: marks.inline("{{ toYaml . | quote }}")}
    return f"{{{{- with .Values.settings }}}}\n{dump(cm)}{{{{- end }}}}\n"


def _file_name(k: kustomize.Key, namespace: str) -> str:
    _, kind, ns, name = k
    return f"{kind.lower()}-{name}" + (f"-{ns}" if ns not in ("", namespace) else "") + ".yaml"


def render(kubectl: str, root: Path = ROOT) -> dict[str, str]:
    """The chart's files: path inside the chart -> text (the repository's LICENSE among them,
    packaged with the chart)."""
    files = render_objects(
        kustomize.build(kubectl, root / "manifests"),
        kustomize.build(kubectl, root / "manifests" / "mindcluster"),
        yaml.safe_load((root / SETTINGS_EXAMPLE).read_text()),
    )
    files["LICENSE"] = (root / "LICENSE").read_text()
    return files


def render_objects(base: list[dict[str, Any]], over: list[dict[str, Any]], example: dict[str, Any]) -> dict[str, str]:
    """The chart for a default install `base`, its MindCluster overlay `over`, and the
    example settings ConfigMap `example`."""
    namespace = Webhook().service_namespace
    config_map = example["metadata"]["name"]
    base_by = {kustomize.key(o): o for o in base}
    over_by = {kustomize.key(o): o for o in over}
    if any(k[1] == "ConfigMap" and k[3] == config_map for k in base_by | over_by):
        raise ValueError(f"manifests/ now ship ConfigMap {config_map}: the chart's settings template would clash")
    marks = Placeholders()
    files = {
        "Chart.yaml": values.chart_yaml(),
        "values.yaml": values.values_yaml(values.defaults(base, namespace)),
        "values.schema.json": values.schema(),
    }
    templates: dict[str, str] = {f"templates/configmap-{config_map}.yaml": _settings_config_map(example, marks)}
    for k in [*base_by, *(k for k in over_by if k not in base_by)]:
        if k[1] == "CustomResourceDefinition":
            # Helm's crds/: installed before the templates, never deleted (memory outlives
            # an uninstall), and not templated. Both installs must carry the same CRD.
            if base_by.get(k) != over_by.get(k):
                raise ValueError(f"the MindCluster overlay changes CRD {k[3]}: the chart's crds/ cannot switch")
            files[f"crds/{k[3]}.yaml"] = values.HEADER + dump(base_by[k])
            continue
        text = _with_overlay(_templated(base_by.get(k), marks, config_map), _templated(over_by.get(k), marks, config_map), marks)
        if k[1] == "Namespace" and k[3] == namespace:
            text = _wrap(".Values.namespace.create", text)
        templates[f"templates/{_file_name(k, namespace)}"] = text
    for path, text in templates.items():
        files[path] = values.HEADER + marks.expand(text).replace(namespace, NAMESPACE_VALUE)
    return files


def write(chart: Path, files: dict[str, str]) -> None:
    """The chart directory holds only generated files: a file no longer rendered goes."""
    if chart.exists():
        shutil.rmtree(chart)
    for path, text in sorted(files.items()):
        target = chart / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"wrote {target}")


def main(argv: list[str]) -> None:
    chart = Path(argv[0] if argv else "charts/homing")
    kubectl = argv[1] if len(argv) > 1 else str(ROOT / "e2e" / ".bin" / "kubectl")
    write(chart, render(kubectl))


if __name__ == "__main__":
    main(sys.argv[1:])
