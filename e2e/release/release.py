"""`make release VERSION=x.y.z`: every artifact of a release, built here into dist/ (docs/dev/release.md).

- homing-VERSION-linux-ARCH.tar.gz: the image per platform (`docker save`, gzip), tagged
  homing:VERSION, with OCI labels (version, revision, created, licences, title, description,
  base; source where the build knows it), each checked with `--help` under the install's
  conditions (UID 10001, read-only root) before it is saved;
- homing-VERSION-linux-ARCH.cdx.json: its SBOM (CycloneDX JSON, cyclonedx-py over the
  image's own virtualenv);
- homing-VERSION.tgz: the chart (`helm package`, version and appVersion VERSION);
- homing-PKG-py3-none-any.whl: the Python package (PKG: pyproject.toml's version), which puts
  `kubectl-homing` (and `homing`) on PATH: the CLI installed alone, `pipx install` of the file;
- install.yaml: `kubectl kustomize manifests/` with the image tag VERSION;
- SHA256SUMS: `sha256sum -c SHA256SUMS` format over all of the above.

VERSION must be pyproject.toml's (tests/adapters/test_release.py holds the chart, the image's
labels, the manifests and the CHANGELOG to it); --force-version builds another (a test or
candidate build) whose artifacts carry VERSION while the Python package inside keeps
pyproject.toml's.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from platform import machine

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DIST = ROOT / "dist"  # emptied first: it holds one release's artifacts
WORK = ROOT / "build" / "release"  # git-ignored scratch: the overlay, the SBOM tool's venv
IMAGE = "homing"  # the name install.yaml and the chart use; users retag it for their registry
PLATFORMS = ("linux/amd64", "linux/arm64")
HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}  # platform.machine() -> Docker's architecture
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")
# The SBOM tool, pinned; installed into build/release/tools, not the project's .venv.
CYCLONEDX = "cyclonedx-bom==7.5.0"


class ReleaseError(Exception):
    pass


# -- the pure parts (tests/release/test_release_script.py) ----------------------------------


def project_version(root: Path = ROOT) -> str:
    return str(tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"])


def check_version(version: str, project: str, force: bool = False) -> None:
    """VERSION is a semantic version, and pyproject.toml's unless forced."""
    if version.startswith("v"):
        raise ReleaseError(f"VERSION={version}: give the version without the tag's v ({version[1:]})")
    if not SEMVER.fullmatch(version):
        raise ReleaseError(f"VERSION={version} is not a semantic version (x.y.z or x.y.z-pre)")
    if version != project and not force:
        raise ReleaseError(
            f"VERSION={version} but pyproject.toml says {project}: bump pyproject.toml, the chart, the Dockerfile's "
            f"VERSION, the manifests' image tag, CHANGELOG.md and docs/upgrade.md together (tests/adapters/test_release.py "
            f"checks them), or pass --force-version (make release ... FORCE_VERSION=1) for a build that is not that release")


def arch(platform: str) -> str:
    os_, _, cpu = platform.partition("/")
    if os_ != "linux" or not cpu or "/" in cpu:
        raise ReleaseError(f"platform {platform!r}: linux/<arch> only (e.g. {','.join(PLATFORMS)})")
    return cpu


def artifact_names(version: str, platforms: list[str], package: str | None = None) -> list[str]:
    """`package`: the Python package's version (pyproject.toml's), which names the wheel."""
    names = [f"{IMAGE}-{version}-linux-{arch(p)}{ext}" for p in platforms for ext in (".tar.gz", ".cdx.json")]
    return sorted([*names, f"{IMAGE}-{version}.tgz", wheel_name(package or version), "install.yaml"])


def wheel_name(package: str) -> str:
    return f"{IMAGE}-{package}-py3-none-any.whl"


def labels(version: str, revision: str, created: str, source: str | None) -> dict[str, str]:
    """The labels release.py adds to the Dockerfile's own (title, description, licences, version)."""
    out = {
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.created": created,
    }
    if source:
        out["org.opencontainers.image.source"] = source
    return out


def created_at(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256sums(folder: Path, names: list[str]) -> str:
    """`sha256sum` text mode lines (hash, two spaces, name), sorted by name."""
    lines = []
    for name in sorted(names):
        digest = hashlib.sha256()
        with open(folder / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {name}\n")
    return "".join(lines)


def overlay(version: str, manifests: Path, folder: Path) -> Path:
    """A kustomization over manifests/ that sets the image's tag to VERSION."""
    folder.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(manifests, folder)
    (folder / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n- {rel}\nimages:\n- name: {IMAGE}\n  newTag: \"{version}\"\n")
    return folder


# -- the steps ---------------------------------------------------------------------------


def say(text: str) -> None:
    print(f"release: {text}", file=sys.stderr, flush=True)


def run(*argv: str | Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], check=True, **kw)


def tool(name: str) -> str:
    """$HELM / $KUBECTL, else the pinned build in e2e/.bin, else the one on PATH."""
    if env := os.environ.get(name.upper()):
        return env
    pinned = ROOT / "e2e" / ".bin" / name
    if pinned.exists():
        return str(pinned)
    found = shutil.which(name)
    if not found:
        raise ReleaseError(f"no {name}: build it (bash e2e/build-helm.sh, e2e/build-binaries.sh) or set {name.upper()}=")
    return found


def git(*args: str) -> str:
    return run("git", "-C", ROOT, *args, capture_output=True, text=True).stdout.strip()


def revision() -> str:
    sha = git("rev-parse", "HEAD")
    if git("status", "--porcelain", "--untracked-files=no"):
        say(f"the work tree differs from {sha[:12]}: the images' revision label says {sha}-dirty")
        return f"{sha}-dirty"
    return sha


def source() -> str | None:
    """Where the source is, only as the build is told (RELEASE_SOURCE, or CI's own variables)."""
    if env := os.environ.get("RELEASE_SOURCE"):
        return env
    server, repo = os.environ.get("GITHUB_SERVER_URL"), os.environ.get("GITHUB_REPOSITORY")
    return f"{server}/{repo}" if server and repo else None


def build_image(platform: str, tag: str, version: str, extra: dict[str, str]) -> None:
    args = ["--build-arg", f"VERSION={version}"]
    for key, value in extra.items():
        args += ["--label", f"{key}={value}"]
    run("bash", HERE / "build-image.sh", platform, tag, *args)
    # The deployment's conditions: UID 10001, read-only root, only /tmp writable.
    out = run("docker", "run", "--rm", "--platform", platform, "--user", "10001:10001", "--read-only", "--tmpfs", "/tmp",
              tag, "--help", capture_output=True, text=True).stdout
    if not out.startswith("usage: homing"):
        raise ReleaseError(f"{tag}: --help printed {out[:200]!r}")


def save_image(tag: str, name: str, dest: Path) -> None:
    """`docker save` as NAME (what `docker load` gives back), gzip'd without a timestamp."""
    run("docker", "tag", tag, name)
    with open(dest, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        proc = subprocess.Popen(["docker", "save", name], stdout=subprocess.PIPE)
        assert proc.stdout
        shutil.copyfileobj(proc.stdout, gz, 1 << 20)
        if proc.wait():
            raise ReleaseError(f"docker save {name} failed")


def sbom_tool(tools: Path) -> Path:
    exe, marker = tools / "bin" / "cyclonedx-py", tools / "installed"
    if not exe.exists() or not marker.exists() or marker.read_text().strip() != CYCLONEDX:
        say(f"installing {CYCLONEDX} into {tools}")
        run(sys.executable, "-m", "venv", "--clear", tools)
        run(tools / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", CYCLONEDX)
        marker.write_text(CYCLONEDX + "\n")
    return exe


def sbom(tag: str, platform: str, dest: Path, tools: Path, epoch: int) -> None:
    """CycloneDX over the image's virtualenv: its site-packages copied out of the image (no
    container runs, so any platform's image works), read by cyclonedx-py through a stand-in
    interpreter that names only that folder as sys.path."""
    exe = sbom_tool(tools)
    with tempfile.TemporaryDirectory(prefix="homing-sbom-") as tmp:
        cid = run("docker", "create", "--platform", platform, tag, capture_output=True, text=True).stdout.strip()
        try:
            tar = subprocess.Popen(["docker", "cp", f"{cid}:/opt/homing/lib", "-"], stdout=subprocess.PIPE)
            run("tar", "-x", "-C", tmp, stdin=tar.stdout)
            if tar.wait():
                raise ReleaseError(f"docker cp {tag}:/opt/homing/lib failed")
        finally:
            run("docker", "rm", cid, capture_output=True)
        (site,) = Path(tmp).glob("lib/python3*/site-packages")
        python = Path(tmp) / "python"
        python.write_text(f"#!/bin/sh\necho '{json.dumps([str(site)])}'\n")
        python.chmod(0o755)
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}
        run(exe, "environment", "--pyproject", ROOT / "pyproject.toml", "--mc-type", "application", "--sv", "1.6",
            "--output-reproducible", "--of", "JSON", "-o", dest, python, env=env)
    doc = json.loads(dest.read_text())
    names = {c["name"].lower() for c in doc.get("components", [])}
    if "kopf" not in names:
        raise ReleaseError(f"{dest.name}: no kopf among {len(names)} components; the image's virtualenv was not read")


def package_chart(version: str, out: Path) -> Path:
    run(tool("helm"), "package", ROOT / "charts" / "homing", "--version", version, "--app-version", version,
        "--destination", out, stdout=subprocess.DEVNULL)
    return out / f"{IMAGE}-{version}.tgz"


def build_wheel(out: Path, epoch: int) -> Path:
    """The package as a wheel (pip's isolated build with pyproject.toml's setuptools); file
    times from SOURCE_DATE_EPOCH, so a commit builds the same wheel again."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}
    with tempfile.TemporaryDirectory(prefix="homing-wheel-") as tmp:
        run(sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--wheel-dir", tmp,
            ROOT, env=env)
        (built,) = Path(tmp).glob("*.whl")
        dest = out / built.name
        shutil.move(built, dest)
    return dest


def render_install(version: str, dest: Path, work: Path) -> None:
    folder = overlay(version, ROOT / "manifests", work / "overlay")
    text = run(tool("kubectl"), "kustomize", folder, capture_output=True, text=True).stdout
    images = set(re.findall(r"^\s+image: (\S+)$", text, re.M))
    if images != {f"{IMAGE}:{version}"}:
        raise ReleaseError(f"install.yaml names images {sorted(images)}, not {IMAGE}:{version}")
    dest.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("version", help="x.y.z: pyproject.toml's version")
    ap.add_argument("--force-version", action="store_true", help="build a VERSION other than pyproject.toml's")
    ap.add_argument("--platforms", default=",".join(PLATFORMS),
                    help=f"comma-separated (default {','.join(PLATFORMS)}); empty: no images, only the chart and install.yaml")
    ap.add_argument("--dist", type=Path, default=DIST, help=f"where the artifacts go, emptied first (default {DIST})")
    a = ap.parse_args(argv)
    try:
        check_version(a.version, project_version(), a.force_version)
        platforms = [p.strip() for p in a.platforms.split(",") if p.strip()]
        arches = [arch(p) for p in platforms]
        if len(set(arches)) != len(arches):
            raise ReleaseError(f"--platforms {a.platforms}: each platform once")
        rev = revision()
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or git("log", "-1", "--format=%ct"))
        extra = labels(a.version, rev, created_at(epoch), source())
        out, work = a.dist.resolve(), WORK
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        work.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        # The quick artifacts first: a chart or kustomization that fails does so before the images' minutes.
        package_chart(a.version, out)
        render_install(a.version, out / "install.yaml", work)
        build_wheel(out, epoch)

        name = f"{IMAGE}:{a.version}"
        for platform, cpu in zip(platforms, arches):
            t0 = time.monotonic()
            tag = f"{IMAGE}:{a.version}-{cpu}"
            say(f"{tag}: building for {platform}")
            build_image(platform, tag, a.version, extra)
            say(f"{tag}: built and started ({time.monotonic() - t0:.0f} s); saving")
            save_image(tag, name, out / f"{IMAGE}-{a.version}-linux-{cpu}.tar.gz")
            sbom(tag, platform, out / f"{IMAGE}-{a.version}-linux-{cpu}.cdx.json", work / "tools", epoch)
            say(f"{tag}: saved with its SBOM ({time.monotonic() - t0:.0f} s)")
        if (host := HOST_ARCH.get(machine())) in arches:
            run("docker", "tag", f"{IMAGE}:{a.version}-{host}", name)  # the plain name: this machine's platform

        names = artifact_names(a.version, platforms, project_version())
        have = sorted(p.name for p in out.iterdir())
        if have != names:
            raise ReleaseError(f"dist/ holds {have}, expected {names}")
        (out / "SHA256SUMS").write_text(sha256sums(out, names))
        say(f"{len(names)} artifacts and SHA256SUMS in {out} ({time.monotonic() - started:.0f} s)")
        return 0
    except (ReleaseError, subprocess.CalledProcessError) as e:
        say(f"FAILED: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
