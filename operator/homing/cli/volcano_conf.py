"""What a Volcano scheduler configuration (`volcano-scheduler.conf`) means for homing's terms:
the rule `kubectl homing doctor` applies to it (docs/scheduler-settings.md says why each
setting matters, and what was measured).

- Volcano scores preferred node affinity in its `nodeorder` plugin only. Without it, or with
  its node order switched off, homing's terms change no placement.
- nodeorder multiplies node affinity's normalised 0-100 score by `nodeaffinity.weight`
  (Volcano's default 2). homing's weights check holds from the weight its shipped
  configurations give (engine/placement/scheduler_scores.py); below it image locality can
  outweigh the claimed-home term, and a rank whose home is held takes a sibling's warm home.
- MindCluster's plugin (a tier plugin named `volcano-npu_<version>...`) with its init-params
  `prefer-previous-node: "true"` boosts a node by 100 x 100 points, which no preferred term
  can outweigh: the two return pods in two ways and the plugin wins every disagreement
  (measured: benchmarks.md, "Beside MindCluster's Volcano plugin"). Beside homing it is best
  off for ordinary NPU jobs; it is a warning, not a failure, since super-pod jobs need it.

Pure: text in, findings out."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from homing.engine.placement.scheduler_scores import VOLCANO

CONF_SUFFIX = ".conf"  # Volcano's ConfigMap key is volcano-scheduler.conf; a Helm release keeps it
DEFAULT_NODE_AFFINITY_WEIGHT = 2.0  # Volcano's nodeorder default (pkg/scheduler/plugins/nodeorder)
MINDCLUSTER_PLUGIN_PREFIX = "volcano-npu"  # build.sh names it volcano-npu_<version>_linux-<arch>
PREFER_PREVIOUS_NODE = "prefer-previous-node"  # read only from the init-params configuration
INIT_PARAMS = "init-params"


@dataclass(frozen=True, slots=True)
class Finding:
    level: str  # "ok", "warn" or "fail"
    detail: str
    fix: str = ""


@dataclass(slots=True)
class Findings:
    items: list[Finding] = field(default_factory=list)

    @property
    def level(self) -> str:
        levels = {f.level for f in self.items}
        return "fail" if "fail" in levels else "warn" if "warn" in levels else "ok"


def conf_text(data: dict[str, Any]) -> str | None:
    """The scheduler configuration in a ConfigMap's data: its key ending in .conf."""
    for key in sorted(data):
        if key.endswith(CONF_SUFFIX) and isinstance(text := data[key], str):
            return text
    return None


def _plugins(conf: dict[str, Any]) -> list[dict[str, Any]]:
    tiers = conf.get("tiers")
    if not isinstance(tiers, list):
        return []
    return [p for tier in tiers if isinstance(tier, dict) and isinstance(tier.get("plugins"), list)
            for p in tier["plugins"] if isinstance(p, dict) and isinstance(p.get("name"), str)]


def _node_order(plugins: list[dict[str, Any]]) -> Finding:
    nodeorder = next((p for p in plugins if p["name"] == "nodeorder"), None)
    fix = f"add `- name: nodeorder` with `arguments: {{nodeaffinity.weight: {VOLCANO.node_affinity}}}` to a tier"
    if nodeorder is None:
        return Finding("fail", "no nodeorder plugin: Volcano scores no node affinity, so homing's terms change no placement", fix)
    if nodeorder.get("enableNodeOrder") is False:
        return Finding("fail", "nodeorder has enableNodeOrder: false: Volcano scores no node affinity", fix)
    arguments = nodeorder.get("arguments")
    raw = (arguments if isinstance(arguments, dict) else {}).get("nodeaffinity.weight", DEFAULT_NODE_AFFINITY_WEIGHT)
    try:
        weight = float(raw)
    except (TypeError, ValueError):
        return Finding("warn", f"nodeorder's nodeaffinity.weight {raw!r} is not a number", fix)
    if weight <= 0:
        return Finding("fail", f"nodeorder's nodeaffinity.weight is {raw}: node affinity adds nothing to the score", fix)
    if weight < VOLCANO.node_affinity:
        return Finding("warn", f"nodeorder's nodeaffinity.weight is {raw} (below {VOLCANO.node_affinity}): image locality "
                               "can outweigh the claimed-home term, so a rank whose home is held takes a sibling's warm home",
                       f"set nodeorder's nodeaffinity.weight to {VOLCANO.node_affinity}")
    return Finding("ok", f"nodeorder scores node affinity at weight {raw}")


def _init_params(conf: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the configuration the plugin reads its settings from (none: empty)."""
    configurations = conf.get("configurations")
    for c in configurations if isinstance(configurations, list) else ():
        if isinstance(c, dict) and c.get("name") == INIT_PARAMS and isinstance(arguments := c.get("arguments"), dict):
            return arguments
    return {}


def _prefer_previous_node(conf: dict[str, Any], plugins: list[dict[str, Any]]) -> Finding | None:
    plugin = next((p["name"] for p in plugins if p["name"].startswith(MINDCLUSTER_PLUGIN_PREFIX)), None)
    if plugin is None:
        return None
    # The plugin turns it on only for the exact string "true"; absent means off.
    if _init_params(conf).get(PREFER_PREVIOUS_NODE) == "true":
        return Finding("warn", f"MindCluster's plugin {plugin} has prefer-previous-node on: its boost (100 x 100 points) "
                               "outweighs every preferred term, so where the two disagree the plugin places the rank",
                       f'set init-params "{PREFER_PREVIOUS_NODE}": "false" where the training is ordinary NPU jobs; keep '
                       "it on where super-pod jobs matter more (docs/scheduler-settings.md, MindCluster)")
    return Finding("ok", f"MindCluster's plugin {plugin} with prefer-previous-node off: homing does the returning")


def read(text: str) -> Findings:
    """The findings for one volcano-scheduler.conf."""
    fix = "check the ConfigMap's volcano-scheduler.conf: Volcano's scheduler loads it as YAML"
    try:
        conf = yaml.safe_load(text)
    except yaml.YAMLError as err:
        return Findings([Finding("warn", f"the scheduler configuration is not YAML: {str(err).splitlines()[0]}", fix)])
    if not isinstance(conf, dict):
        return Findings([Finding("warn", "the scheduler configuration is not a mapping", fix)])
    plugins = _plugins(conf)
    found = [_node_order(plugins)]
    if (prefer := _prefer_previous_node(conf, plugins)) is not None:
        found.append(prefer)
    return Findings(found)
