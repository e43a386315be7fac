"""What a release says about itself agrees everywhere: the licence (Apache-2.0) in the
repository, pyproject.toml, the chart and the image's labels; one version, pyproject.toml's,
in the chart, the image, the manifests' image tag and the CHANGELOG; the operator started
only by `homing run` wherever something starts it; and the install's safe defaults."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "homing"
APACHE = Path("/usr/share/common-licenses/Apache-2.0")


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def release() -> str:
    return project()["version"]


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def labels() -> dict[str, str]:
    """The image's LABEL instructions, with ${ARG} replaced by the ARG's default."""
    text = dockerfile().replace("\\\n", " ")
    args = dict(re.findall(r"^ARG (\w+)=(\S*)$", text, re.M))
    found: dict[str, str] = {}
    for line in re.findall(r"^LABEL (.*)$", text, re.M):
        for key, value in re.findall(r'([\w.-]+)="([^"]*)"', line):
            found[key] = re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], value)
    return found


def base_objects() -> list[dict]:
    docs = []
    for name in ("availability.yaml", "deployment.yaml"):
        docs += [d for d in yaml.safe_load_all((ROOT / "manifests" / "base" / name).read_text()) if d]
    return docs


def one(kind: str) -> dict:
    (found,) = [d for d in base_objects() if d["kind"] == kind]
    return found


# -- licence ----------------------------------------------------------------------------


def test_the_licence_is_apache_2_0_everywhere():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    if APACHE.exists():  # Debian's copy of the standard text
        assert text == APACHE.read_text()
    assert project()["license"] == "Apache-2.0"
    assert project()["license-files"] == ["LICENSE"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["annotations"]["artifacthub.io/license"] == "Apache-2.0"
    assert (CHART / "LICENSE").read_text() == text  # packaged with the chart
    assert labels()["org.opencontainers.image.licenses"] == "Apache-2.0"


def test_the_image_carries_its_licence_file():
    """The build context holds LICENSE (setuptools puts it in the wheel's metadata), and the
    image build script sends it."""
    assert re.search(r"^COPY .*\bLICENSE\b", dockerfile(), re.M)
    script = (ROOT / "e2e" / "images" / "build-images.sh").read_text()
    (inputs,) = re.findall(r"^inputs=\((.*)\)$", script, re.M)
    assert "LICENSE" in inputs.split()


# -- one version --------------------------------------------------------------------------


def test_the_version_is_semantic():
    assert re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?", release())


def test_one_version_everywhere():
    version = release()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (version, version)
    assert labels()["org.opencontainers.image.version"] == version
    assert re.search(rf"^ARG VERSION={re.escape(version)}$", dockerfile(), re.M)
    (container,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"homing:{version}"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["image"]["tag"] == ""  # the chart's appVersion (tests/integration/test_chart_render.py renders it)


def test_the_changelog_has_the_version_and_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[0] == "Unreleased"
    assert headings[1] == release(), "the newest release in CHANGELOG.md is pyproject.toml's version"
    assert f"[{release()}]:" in text or f"## [{release()}]" in text
    upgrade = (ROOT / "docs" / "upgrade.md").read_text()
    assert re.search(rf"^## .*{re.escape(release())}", upgrade, re.M), "docs/upgrade.md has a note for this version"


# -- the operator starts only from `homing run` ----------------------------------------------


def test_the_image_runs_the_operator_with_run():
    text = dockerfile()
    assert re.search(r'^ENTRYPOINT \["python", "-m", "homing"\]$', text, re.M)
    assert re.search(r'^CMD \["run"\]$', text, re.M)


def test_the_manifests_run_the_operator_with_run():
    (container,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["command"] + container.get("args", []) == ["python", "-m", "homing", "run"]


def test_the_harness_runs_the_operator_with_run(tmp_path, monkeypatch):
    """e2e's OperatorProcess, which every integration test and benchmark starts."""
    sys.path.insert(0, str(ROOT / "e2e"))
    from homing_e2e import operator_process

    started: list[list[str]] = []

    class Exited:
        def __init__(self, argv, **_):
            started.append(argv)

        def poll(self):
            return 2

    monkeypatch.setattr(operator_process.subprocess, "Popen", Exited)
    with pytest.raises(RuntimeError, match="operator exited"):
        operator_process.OperatorProcess(tmp_path / "kubeconfig", tmp_path).start(timeout=5)
    assert started == [[sys.executable, "-m", "homing", "run"]]


def test_python_m_homing_alone_starts_nothing():
    """The real module, in a process of its own: help on stdout, exit 0, within seconds (an
    operator would keep running, or fail to reach a cluster)."""
    env = {"PATH": "/usr/bin:/bin", "KUBECONFIG": "/nonexistent"}
    done = subprocess.run([sys.executable, "-m", "homing"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: homing") and " run " in done.stdout


# -- safe defaults in the install ----------------------------------------------------------


def test_the_priority_class_never_preempts():
    pc = one("PriorityClass")
    assert pc["preemptionPolicy"] == "Never"
    template = (CHART / "templates" / "priorityclass.yaml").read_text()
    assert "preemptionPolicy: Never" in template


def test_the_operator_has_a_cpu_request_and_no_cpu_limit():
    (container,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    assert "cpu" in resources["requests"] and "cpu" not in resources.get("limits", {})
    assert resources["limits"]["memory"]  # memory stays bounded
    charted = yaml.safe_load((CHART / "values.yaml").read_text())["resources"]
    assert "cpu" in charted["requests"] and "cpu" not in charted.get("limits", {})
    assert charted["limits"]["memory"]
