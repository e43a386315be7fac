"""`kubectl homing doctor`'s reading of Volcano's scheduler configuration (cli/volcano_conf.py):
a table of configurations and what each says, every shipped tidal configuration passing, and
no text, however broken, making the reading raise. The live check is in
tests/integration/test_doctor.py."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from homing.cli import doctor
from homing.cli.volcano_conf import conf_text, read

TIDAL = Path(__file__).resolve().parents[2] / "manifests" / "tidal"


def conf(nodeorder: dict | None = None, *, mindcluster: dict | None = None, npu_plugin: bool = True) -> str:
    """A scheduler.conf: nodeorder as given (None: no nodeorder), and MindCluster's plugin with
    these init-params (None: no init-params) when npu_plugin."""
    first = [{"name": "gang"}]
    if npu_plugin:
        first.append({"name": "volcano-npu_v26.1.0", "enablePreemptable": True})
    second = [{"name": "predicates"}] + ([{"name": "nodeorder", **nodeorder}] if nodeorder is not None else [])
    doc: dict = {"actions": "enqueue, allocate, backfill", "tiers": [{"plugins": first}, {"plugins": second}]}
    if mindcluster is not None:
        doc["configurations"] = [{"name": "init-params", "arguments": {"forceEnqueue": "true", **mindcluster}}]
    return yaml.safe_dump(doc)


W10 = {"arguments": {"nodeaffinity.weight": 10}}


@pytest.mark.parametrize(
    "text, level, words",
    [
        # nodeorder: scores node affinity at homing's weight, or says what is missing
        (conf(W10, npu_plugin=False), "ok", ["weight 10"]),
        (conf({"arguments": {"nodeaffinity.weight": "12"}}, npu_plugin=False), "ok", ["weight 12"]),
        (conf({}, npu_plugin=False), "warn", ["weight is 2.0", "below 10"]),  # Volcano's default
        (conf({"arguments": {"nodeaffinity.weight": 2}}, npu_plugin=False), "warn", ["weight is 2", "sibling's warm home"]),
        (conf({"arguments": {"nodeaffinity.weight": "heavy"}}, npu_plugin=False), "warn", ["'heavy' is not a number"]),
        (conf({"arguments": ["nodeaffinity.weight", 10]}, npu_plugin=False), "warn", ["weight is 2.0"]),
        (conf({"arguments": {"nodeaffinity.weight": 0}}, npu_plugin=False), "fail", ["adds nothing"]),
        (conf(None, npu_plugin=False), "fail", ["no nodeorder plugin", "change no placement"]),
        (conf({"enableNodeOrder": False, **W10}, npu_plugin=False), "fail", ["enableNodeOrder: false"]),
        # MindCluster's plugin: prefer-previous-node on warns; off, absent or not exactly "true" is off
        (conf(W10, mindcluster={"prefer-previous-node": "true"}), "warn", ["prefer-previous-node on", "volcano-npu_v26.1.0"]),
        (conf(W10, mindcluster={"prefer-previous-node": "false"}), "ok", ["prefer-previous-node off"]),
        (conf(W10, mindcluster={}), "ok", ["prefer-previous-node off"]),
        (conf(W10), "ok", ["prefer-previous-node off"]),
        (conf(W10, mindcluster={"prefer-previous-node": "True"}), "ok", ["prefer-previous-node off"]),  # the plugin reads "true" only
        (conf(W10, mindcluster={"prefer-previous-node": "true"}, npu_plugin=False), "ok", ["weight 10"]),  # no plugin to read it
        # the worst finding decides: MindCluster as it ships (Volcano's default weight, prefer on)
        (conf({}, mindcluster={"prefer-previous-node": "true"}), "warn", ["weight is 2.0", "prefer-previous-node on"]),
        (conf(None, mindcluster={"prefer-previous-node": "true"}), "fail", ["no nodeorder", "prefer-previous-node on"]),
        # not a configuration at all
        ("tiers: [", "warn", ["not YAML"]),
        ("- a\n- b\n", "warn", ["not a mapping"]),
        ("actions: allocate\n", "fail", ["no nodeorder plugin"]),
        ("tiers: {plugins: nodeorder}\n", "fail", ["no nodeorder plugin"]),
    ],
)
def test_what_a_configuration_says(text, level, words):
    found = read(text)
    said = " | ".join(f.detail for f in found.items)
    assert found.level == level, said
    assert all(w in said for w in words), said
    assert all(f.fix for f in found.items if f.level != "ok"), "every warning and failure says what to change"


@pytest.mark.parametrize("variant", sorted(p.parent.name for p in TIDAL.glob("*/volcano-scheduler.conf")))
def test_every_shipped_tidal_configuration_passes(variant):
    found = read((TIDAL / variant / "volcano-scheduler.conf").read_text())
    assert [f.level for f in found.items] == ["ok"], [f.detail for f in found.items]


def test_the_configuration_is_the_configmaps_conf_key():
    assert conf_text({"other": "x", "volcano-scheduler.conf": "actions: a"}) == "actions: a"
    assert conf_text({"README": "x"}) is None
    assert conf_text({"a.conf": 3}) is None  # not text


YAMLISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["tiers", "plugins", "name", "arguments", "configurations", "nodeorder", "init-params",
                         "nodeaffinity.weight", "enableNodeOrder", "prefer-previous-node", "volcano-npu_x"]) | st.text(max_size=6),
        inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(YAMLISH)
def test_any_document_gets_findings_and_never_raises(doc):
    found = read(yaml.safe_dump(doc))
    assert found.items and found.level in ("ok", "warn", "fail")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gets_findings_and_never_raises(text):
    assert read(text).items


def test_a_warning_shows_its_fix_and_leaves_homing_healthy():
    report = doctor.Report("ai", [doctor.Check("writer", True, "leads"),
                                  doctor.Check("scheduler", True, "prefer-previous-node on", "set it off", warn=True)])
    assert report.healthy
    assert doctor.text(report).splitlines() == ["ok   writer: leads", "warn scheduler: prefer-previous-node on",
                                                "     fix: set it off", "homing is working"]
    report.checks.append(doctor.Check("scheduler", False, "no nodeorder plugin", "add nodeorder"))
    assert not report.healthy and "FAIL scheduler: no nodeorder plugin\n     fix: add nodeorder" in doctor.text(report)
