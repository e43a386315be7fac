"""`homing explain` and `kubectl homing explain` against the live control plane and the
running operator: a pod sent home, one placed away, an owner's memory, and the errors
(not found, not in scope, no permission) each as an exit code and one line on stderr."""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from homing_e2e import objects as o
from homing_e2e.cluster import BIN_DIR
from homing_e2e.pki import client_cert
from homing_e2e.webhook_ready import webhook_answers

pytestmark = pytest.mark.cluster

SCRIPTS = Path(sys.executable).parent  # the venv's console scripts: homing, kubectl-homing


async def homing(*args: str, kubeconfig: Path, context: str | None = None) -> tuple[int, str, str]:
    ctx = ["--context", context] if context else []
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPTS / "homing"), "explain", *args, "--kubeconfig", str(kubeconfig), *ctx,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()


async def explained(*args: str, kubeconfig: Path) -> dict:
    code, out, err = await homing(*args, "-o", "json", kubeconfig=kubeconfig)
    assert code == 0, err
    return json.loads(out)


def one_line_error(result: tuple[int, str, str], want_code: int, words: str) -> None:
    code, _, err = result
    assert code == want_code, err
    assert err.count("\n") == 1 and err.startswith("homing explain: ") and words in err, err


@pytest.fixture(scope="module")
def users_kubeconfig(kubeconfig: Path) -> Path:
    """The admin's kubeconfig plus contexts for `nobody` (no RBAC at all) and `viewer`
    (granted pods in one namespace below), with certificates from the harness's CA."""
    pki = kubeconfig.parent / "pki"
    if not (pki / "ca.key").exists():
        pytest.skip("needs the local control plane's CA to mint users (not with HOMING_E2E_KUBECONFIG)")
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["contexts"][0]["context"]["cluster"]
    for user in ("nobody", "viewer"):
        crt, key = client_cert(pki, user)
        config["users"].append({"name": user, "user": {"client-certificate": str(crt), "client-key": str(key)}})
        config["contexts"].append({"name": user, "context": {"cluster": cluster, "user": user}})
    path = kubeconfig.parent / "users.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


async def _returned_home(kube, ns: str, name: str) -> None:
    async def seen() -> bool:
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/events",
                                 query=[("fieldSelector", f"involvedObject.name={name}")])
        return any(e["reason"] in ("ReturnedHome", "PlacedAwayFromHome") for e in got.get("items", []))

    await o.eventually(seen, what=f"outcome Event on {name}")


async def test_explain_a_pod_sent_home_and_its_owner(kube, operator, ns, kubeconfig):
    await webhook_answers(kube, ns)
    a, b, owner, ann = await o.rank_ran_on_a(kube, ns)
    away = {"volcano.sh/task-index": "1"}
    await o.pod(kube, ns, "job-1", owner=owner, annotations=away)
    await o.bind(kube, ns, "job-1", b)
    await o.running(kube, ns, "job-1")
    for name, pod_annotations in (("job-0", ann), ("job-1", away)):
        await o.delete_pod(kube, ns, name)
        await o.pod(kube, ns, name, owner=owner, annotations=pod_annotations)
    await o.bind(kube, ns, "job-0", a)  # home
    await o.bind(kube, ns, "job-1", a)  # away from b
    await _returned_home(kube, ns, "job-0")
    await _returned_home(kube, ns, "job-1")

    home = await explained("pod", "job-0", "-n", ns, kubeconfig=kubeconfig)
    assert (home["decided"], home["home"], home["node"], home["reason"]) == (True, a, a, "home")
    assert home["owner"] == f"ConfigMap/{ns}/job" and home["rank"] == "0"
    assert home["outcome"]["result"] == "home" and home["events"][-1]["reason"] == "ReturnedHome"
    elsewhere = await explained("pod/job-1", "-n", ns, kubeconfig=kubeconfig)
    assert (elsewhere["home"], elsewhere["node"], elsewhere["outcome"]["result"]) == (b, a, "elsewhere")

    code, text, _ = await homing("pod", "job-0", "-n", ns, kubeconfig=kubeconfig)
    assert code == 0 and f"Home:        {a}" in text and f"bound to {a}, its home" in text

    async def owner_stats() -> dict | None:
        got = await explained("owner", "configmap/job", "-n", ns, kubeconfig=kubeconfig)
        placed = got["stats"]["home"] + got["stats"]["elsewhere"]
        return got if placed == 2 and {r["rank"]: r["node"] for r in got["ranks"]} == {"0": a, "1": a} else None

    memory = await o.eventually(owner_stats, what="the owner's memory written with both outcomes")
    assert memory["home_rate"] == 0.5 and memory["owner"] == "ConfigMap/job"
    assert next(r for r in memory["ranks"] if r["rank"] == "1")["previous_node"] == b

    # The same through kubectl, as a plugin found on PATH.
    env = {**os.environ, "PATH": f"{SCRIPTS}:{os.environ.get('PATH', '')}"}
    proc = await asyncio.create_subprocess_exec(
        str(BIN_DIR / "kubectl"), "homing", "explain", "owner", "ConfigMap/job", "-n", ns, "--kubeconfig", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "Home rate:   50% home" in out.decode() and f"{'0':<16} {a:<24}" in out.decode()

    # Options before the command, YAML, and the listing, through kubectl too.
    listed = await asyncio.create_subprocess_exec(
        str(BIN_DIR / "kubectl"), "homing", "-n", ns, "--kubeconfig", str(kubeconfig), "-o", "yaml", "owners",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )
    out, err = await listed.communicate()
    assert listed.returncode == 0, err.decode()
    (owner_row,) = yaml.safe_load(out)["owners"]
    assert (owner_row["namespace"], owner_row["owner"], owner_row["ranks"], owner_row["home_rate"]) == (ns, "ConfigMap/job", 2, 0.5)


def test_bare_kubectl_homing_prints_help_and_starts_nothing(tmp_path: Path) -> None:
    """Through the real kubectl, no cluster: a started operator would not return (or would fail
    on the missing kubeconfig); the plugin prints its help and exits 0."""
    import subprocess

    env = {**os.environ, "PATH": f"{SCRIPTS}:{os.environ.get('PATH', '')}", "KUBECONFIG": str(tmp_path / "none")}
    done = subprocess.run([str(BIN_DIR / "kubectl"), "homing"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kubectl homing") and "run" in done.stdout


async def test_explain_errors(kube, operator, ns, kubeconfig):
    owner = await o.owner_stand_in(kube, ns, "cpu-only")
    await o.pod(kube, ns, "cpu-0", owner=owner, npus=0)
    plain = await o.namespace(kube, f"plain-{ns}", opted_in=False)
    await o.pod(kube, plain, "npu-0", owner=await o.owner_stand_in(kube, plain, "job"))
    cases = [
        (("pod", "nothing-here", "-n", ns), 4, f"pod {ns}/nothing-here not found"),
        (("owner", "job/nothing-here", "-n", ns), 4, "no PlacementMemory remembers job/nothing-here"),
        (("pod", "cpu-0", "-n", ns), 3, "requests no accelerator"),
        (("pod", "npu-0", "-n", plain), 3, f"namespace {plain} is not labelled homing.io/enabled=true"),
    ]
    results = await asyncio.gather(*(homing(*args, kubeconfig=kubeconfig) for args, _, _ in cases))
    for result, (_, code, words) in zip(results, cases):
        one_line_error(result, code, words)


async def test_explain_without_permission(kube, operator, ns, users_kubeconfig):
    await webhook_answers(kube, ns)
    a, _, _, _ = await o.rank_ran_on_a(kube, ns)
    for what in (("pod", "job-0"), ("owner", "configmap/job")):
        one_line_error(await homing(*what, "-n", ns, kubeconfig=users_kubeconfig, context="nobody"), 5, 'User "nobody" cannot')
    # A user who may read pods in this namespace, and nothing else: the pod is explained
    # (without Events), its owner's memory is refused.
    role = {"metadata": {"name": "pod-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    await kube.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", body=role)
    binding = {"metadata": {"name": "viewer-reads-pods"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]}
    await kube.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", body=binding)

    async def pod_readable() -> tuple[int, str, str] | None:
        got = await homing("pod", "job-0", "-n", ns, "-o", "json", kubeconfig=users_kubeconfig, context="viewer")
        return got if got[0] == 0 else None

    _, out, _ = await o.eventually(pod_readable, what="the viewer's Role in effect")
    seen = json.loads(out)
    assert (seen["pod"], seen["node"], seen["decided"], seen["events"]) == (f"{ns}/job-0", a, True, [])  # no Events: not readable
    one_line_error(await homing("owner", "configmap/job", "-n", ns, kubeconfig=users_kubeconfig, context="viewer"), 5,
                   "no permission to read PlacementMemory objects")
