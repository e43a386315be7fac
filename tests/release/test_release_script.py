"""`make release` (e2e/release/release.py, docs/dev/release.md) without building an image: the
version check, SHA256SUMS, install.yaml's image tag and the packaged chart's versions, the
labels it adds, and the tag workflow that runs it. Building and starting both images is the
slow check recorded in docs/dev/release.md."""
from __future__ import annotations

import importlib.util
import io
import re
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "e2e" / ".bin"
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"

_spec = importlib.util.spec_from_file_location("homing_release", ROOT / "e2e" / "release" / "release.py")
assert _spec and _spec.loader
release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release)

needs_kubectl = pytest.mark.skipif(not (BIN / "kubectl").exists(), reason="e2e/.bin/kubectl: bash e2e/build-binaries.sh")
needs_helm = pytest.mark.skipif(not (BIN / "helm").exists(), reason="e2e/.bin/helm: bash e2e/build-helm.sh")


@pytest.fixture(autouse=True)
def pinned_tools(monkeypatch):
    """The pinned builds in e2e/.bin, whatever HELM / KUBECTL say in the caller's shell."""
    monkeypatch.delenv("HELM", raising=False)
    monkeypatch.delenv("KUBECTL", raising=False)


# -- the version ---------------------------------------------------------------------------


def test_the_project_version_is_the_one_a_release_must_name():
    version = release.project_version()
    release.check_version(version, version)
    assert re.search(rf'^version = "{re.escape(version)}"$', (ROOT / "pyproject.toml").read_text(), re.M)


def test_another_version_is_refused_unless_forced():
    with pytest.raises(release.ReleaseError, match=r"pyproject.toml says 0.1.0.*--force-version"):
        release.check_version("0.2.0", "0.1.0")
    release.check_version("0.2.0-rc.1", "0.1.0", force=True)


@pytest.mark.parametrize("bad", ["v0.1.0", "0.1", "01.2.3", "0.1.0.1", "latest", ""])
def test_a_version_that_is_not_semantic_is_refused_even_when_forced(bad):
    with pytest.raises(release.ReleaseError):
        release.check_version(bad, bad, force=True)


def test_a_version_mismatch_fails_before_anything_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(release, "DIST", tmp_path / "dist")
    monkeypatch.setattr(release, "WORK", tmp_path / "work")
    assert release.main(["9.9.9", "--platforms", ""]) == 1
    assert "pyproject.toml says" in capsys.readouterr().err
    assert not (tmp_path / "dist").exists()


def test_a_platform_named_twice_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(release, "DIST", tmp_path / "dist")
    monkeypatch.setattr(release, "WORK", tmp_path / "work")
    assert release.main([release.project_version(), "--platforms", "linux/arm64, linux/arm64"]) == 1
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize("platform", ["amd64", "linux", "windows/amd64", "linux/arm64/v8"])
def test_platforms_are_linux_and_one_architecture(platform):
    with pytest.raises(release.ReleaseError):
        release.arch(platform)


# -- what the artifacts are called, and their checksums --------------------------------------


def test_the_artifacts_of_two_platforms():
    assert release.artifact_names("1.2.3", ["linux/amd64", "linux/arm64"]) == [
        "homing-1.2.3-linux-amd64.cdx.json", "homing-1.2.3-linux-amd64.tar.gz",
        "homing-1.2.3-linux-arm64.cdx.json", "homing-1.2.3-linux-arm64.tar.gz",
        "homing-1.2.3-py3-none-any.whl", "homing-1.2.3.tgz", "install.yaml"]


def test_the_wheel_is_named_by_the_python_package_s_version():
    """A forced VERSION names the images and the chart; the package inside keeps pyproject.toml's."""
    assert "homing-0.1.0-py3-none-any.whl" in release.artifact_names("0.2.0-rc.1", [], package="0.1.0")


def test_sha256sums_is_what_sha256sum_checks(tmp_path):
    (tmp_path / "b.tgz").write_bytes(b"chart")
    (tmp_path / "a.yaml").write_text("kind: Namespace\n")
    (tmp_path / "empty").write_bytes(b"")
    text = release.sha256sums(tmp_path, ["b.tgz", "empty", "a.yaml"])
    lines = text.splitlines()
    assert [line.split("  ")[1] for line in lines] == ["a.yaml", "b.tgz", "empty"]  # sorted by name
    assert all(re.fullmatch(r"[0-9a-f]{64}  \S+", line) for line in lines) and text.endswith("\n")
    assert "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty" in lines
    (tmp_path / "SHA256SUMS").write_text(text)
    done = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "b.tgz").write_bytes(b"tampered")
    assert subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=tmp_path, capture_output=True).returncode == 1


# -- the image's labels ----------------------------------------------------------------------


def test_the_labels_a_release_adds():
    found = release.labels("1.2.3", "0" * 40, release.created_at(0), None)
    assert found == {"org.opencontainers.image.version": "1.2.3", "org.opencontainers.image.revision": "0" * 40,
                     "org.opencontainers.image.created": "1970-01-01T00:00:00Z"}
    assert release.labels("1.2.3", "r", "c", "https://example.org/homing")["org.opencontainers.image.source"] == "https://example.org/homing"


def test_the_source_label_comes_only_from_the_build_environment(monkeypatch):
    for name in ("RELEASE_SOURCE", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY"):
        monkeypatch.delenv(name, raising=False)
    assert release.source() is None  # nothing is written in the repository
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://forge.example")
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/homing")
    assert release.source() == "https://forge.example/org/homing"


def test_the_release_image_is_built_from_the_same_inputs_as_the_kind_stage():
    """So that the host's release image reuses the layers of `make images` (only labels differ)."""
    def inputs(script: str) -> list[str]:
        (found,) = re.findall(r"^inputs=\((.*)\)$", (ROOT / script).read_text(), re.M)
        return found.split()
    assert inputs("e2e/release/build-image.sh") == inputs("e2e/images/build-images.sh")


# -- install.yaml and the chart ---------------------------------------------------------------


@needs_kubectl
def test_install_yaml_names_the_release_image(tmp_path):
    release.render_install("9.8.7", tmp_path / "install.yaml", tmp_path / "work")
    docs = [d for d in yaml.safe_load_all((tmp_path / "install.yaml").read_text()) if d]
    kinds = {d["kind"] for d in docs}
    assert {"CustomResourceDefinition", "Namespace", "Deployment", "MutatingWebhookConfiguration"} <= kinds
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == ["homing:9.8.7"]


@needs_helm
def test_the_chart_is_packaged_with_the_release_version(tmp_path):
    path = release.package_chart("9.8.7", tmp_path)
    assert path.name == "homing-9.8.7.tgz"
    with tarfile.open(path) as tar:
        chart = yaml.safe_load(tar.extractfile("homing/Chart.yaml").read())  # type: ignore[union-attr]
        names = tar.getnames()
    assert (chart["version"], chart["appVersion"]) == ("9.8.7", "9.8.7")
    assert {"homing/LICENSE", "homing/crds/placementmemories.homing.io.yaml", "homing/values.schema.json"} <= set(names)
    rendered = subprocess.run([BIN / "helm", "template", "homing", path, "--namespace", "homing-system"],
                              capture_output=True, text=True, check=True).stdout
    assert set(re.findall(r"^\s+image: \"?([^\"\s]+)", rendered, re.M)) == {"homing:9.8.7"}


@needs_kubectl
@needs_helm
def test_a_release_without_images_writes_the_chart_install_yaml_and_their_sums(tmp_path, monkeypatch):
    monkeypatch.setattr(release, "DIST", tmp_path / "dist")
    monkeypatch.setattr(release, "WORK", tmp_path / "work")
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "homing-0.0.1.tgz").write_text("an older release's")  # emptied first
    version = release.project_version()
    assert release.main([version, "--platforms", ""]) == 0
    dist = tmp_path / "dist"
    wheel = f"homing-{version}-py3-none-any.whl"
    assert sorted(p.name for p in dist.iterdir()) == ["SHA256SUMS", wheel, f"homing-{version}.tgz", "install.yaml"]
    assert subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=dist, capture_output=True).returncode == 0
    # The CLI installable alone: the wheel names kubectl-homing as a console script.
    with zipfile.ZipFile(dist / wheel) as whl:
        (entry_points,) = [n for n in whl.namelist() if n.endswith(".dist-info/entry_points.txt")]
        scripts = whl.read(entry_points).decode()
        assert "kubectl-homing = homing.cli:kubectl_plugin" in scripts
        assert "homing/cli/doctor.py" in whl.namelist()


# -- the tag workflow -------------------------------------------------------------------------


def workflow() -> dict:
    return yaml.load(io.StringIO(WORKFLOW.read_text()), Loader=yaml.BaseLoader)  # "on" stays a string


def test_the_workflow_runs_make_release_on_version_tags_and_uploads_dist():
    flow = workflow()
    assert flow["on"] == {"push": {"tags": ["v*"]}}
    steps = [s for job in flow["jobs"].values() for s in job["steps"]]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert re.search(r"make release VERSION=\"?\$\{GITHUB_REF_NAME#v\}", runs)
    assert re.search(r"gh release (create|upload) .*dist/\*", runs)
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert "actions/checkout" in uses and "docker/setup-qemu-action" in uses
    assert all(re.search(r"@v\d+$", s["uses"]) for s in steps if "uses" in s)  # pinned to a major release


def test_the_workflow_pushes_no_image_anywhere():
    text = WORKFLOW.read_text()
    assert not re.search(r"docker (push|login)|login-action|build-push-action|\bpush: true", text)
