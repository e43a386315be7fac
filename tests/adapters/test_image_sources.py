"""Where the kind stage's images come from (e2e/images/lib.sh `pulled`, docs/kind.md): an image
with an upstream name is pulled where a registry answers and built here where none does.
These machines reach no image registry, so a pull that works cannot happen here for real; the
decision is checked against a stand-in `docker` that answers as the real one does (its exit
status and its last line). The real fallback runs in every `make test-kind`."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "example/thing:1.0"
REFUSED = 'Error response from daemon: Get "https://registry.invalid/v2/": no such host'


def stand_in_docker(folder: Path, present: bool, pull_works: bool) -> Path:
    """A `docker` that logs its calls: `image inspect` finds the image or not, `pull` works or not."""
    log = folder / "calls"
    script = folder / "docker"
    script.write_text(f"""#!/usr/bin/env bash
echo "$*" >>{log}
case $1 in
  image) exit {0 if present else 1} ;;
  pull) {"exit 0" if pull_works else f"echo '{REFUSED}' >&2; exit 1"} ;;
esac
exit 3
""")
    script.chmod(0o755)
    return log


def pulled(tmp_path: Path, mode: str | None, present: bool = False, pull_works: bool = False) -> tuple[int, list[str], str]:
    log = stand_in_docker(tmp_path, present, pull_works)
    env = {k: v for k, v in os.environ.items() if k != "HOMING_IMAGES"}
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    if mode is not None:
        env["HOMING_IMAGES"] = mode
    run = subprocess.run(["bash", "-c", f'source "{ROOT}/e2e/images/lib.sh"; pulled {IMAGE}'],
                         env=env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return run.returncode, calls, run.stderr


@pytest.mark.parametrize(
    "mode, present, pull_works, status, calls",
    [
        pytest.param(None, False, True, 0, ["image inspect", "pull -q"], id="auto-a-registry-answers"),
        pytest.param(None, False, False, 1, ["image inspect", "pull -q"], id="auto-none-answers-build-here"),
        pytest.param("auto", True, False, 0, ["image inspect"], id="auto-already-here-no-pull"),
        pytest.param("build", True, True, 1, [], id="build-never-pulls-nor-uses-a-pulled-one"),
        pytest.param("pull", False, True, 0, ["image inspect", "pull -q"], id="pull-works"),
        pytest.param("pull", False, False, 1, ["image inspect", "pull -q"], id="pull-required-and-refused-fails"),
        pytest.param("sometimes", False, True, 2, [], id="an-unknown-mode-is-refused"),
    ],
)
def test_an_image_is_pulled_where_a_registry_answers_and_built_where_none_does(tmp_path, mode, present, pull_works, status, calls):
    got, made, err = pulled(tmp_path, mode, present, pull_works)
    assert got == status, err
    assert [" ".join(c.split()[:2]) for c in made] == calls


def test_the_fallback_says_why_and_a_required_pull_says_what_failed(tmp_path):
    _, _, err = pulled(tmp_path, None)
    assert f"{IMAGE} could not be pulled" in err and "no such host" in err and "built here instead" in err
    _, _, err = pulled(tmp_path, "pull")
    assert f"HOMING_IMAGES=pull: docker pull {IMAGE} failed" in err and "no such host" in err
