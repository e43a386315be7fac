"""`homing` and `kubectl homing` as a kubectl plugin, no cluster: bare invocation prints help
and starts nothing (only `run` starts the operator), options go before or after the command,
`-o json|yaml`, `-A` for the owners listing, and `explain` judging by the operator's own
settings as the cluster holds them (its Deployment and ConfigMap), not this shell's
environment. The API server is a stand-in answering GETs from a table."""
from __future__ import annotations

import json
import sys
import time

import pytest
import yaml

from homing.cli import main
from homing.cli.errors import NOT_IN_SCOPE, USAGE
from homing.kube.client import KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION

from .test_owner import memory, objects, owner
from .test_pod import HOME, OPTED_IN, pod


class FakeKube:
    """GET answers by path (a dict, or a KubeError to raise); every other path is a 404."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def request(self, method: str, path: str, body=None, query=None, content_type=None, timeout=30,
                      accept="application/json"):
        assert method == "GET", "the CLI only reads"
        self.asked.append(path)
        got = self.answers.get(path)
        if got is None:
            raise KubeError(404, '{"message": "not found"}')
        if isinstance(got, KubeError):
            raise got
        return got

    async def list_all(self, path: str, limit: int = 500) -> list[dict]:
        return (await self.request("GET", path)).get("items") or []

    async def close(self) -> None:
        pass


@pytest.fixture
def operator_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records a start of the operator instead of starting it."""
    started: list[str] = []
    import homing.__main__

    monkeypatch.setattr(homing.__main__, "run", lambda: started.append("run"))
    return started


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch):
    """Point the CLI at a FakeKube; returns a function that installs the answers."""
    import homing.cli.connect

    def install(answers: dict[str, object], context_namespace: str = "default") -> FakeKube:
        kube = FakeKube(answers)

        async def connect(kubeconfig, context):
            return kube, context_namespace

        monkeypatch.setattr(homing.cli.connect, "connect", connect)
        return kube

    return install


POD_PATH = "/api/v1/namespaces/ai/pods/llama-worker-3"


# -- bare invocation, run, version ---------------------------------------------------------


def test_bare_homing_prints_help_and_starts_nothing(operator_started, capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: homing") and "run" in out and "explain" in out and "owners" in out
    assert operator_started == []


def test_bare_kubectl_homing_prints_help_and_starts_nothing(operator_started, capsys, monkeypatch):
    from homing.cli import kubectl_plugin

    monkeypatch.setattr(sys, "argv", ["kubectl-homing"])
    with pytest.raises(SystemExit) as done:
        kubectl_plugin()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: kubectl homing")
    assert operator_started == []


def test_python_m_homing_alone_prints_help_and_starts_nothing(operator_started, capsys, monkeypatch):
    import homing.__main__

    monkeypatch.setattr(sys, "argv", ["homing"])
    with pytest.raises(SystemExit) as done:
        homing.__main__.main()
    assert done.value.code == 0 and "usage: homing" in capsys.readouterr().out
    assert operator_started == []


def test_only_run_starts_the_operator(operator_started, monkeypatch):
    import homing.__main__

    assert main(["run"]) == 0
    monkeypatch.setattr(sys, "argv", ["homing", "run"])
    with pytest.raises(SystemExit) as done:
        homing.__main__.main()
    assert done.value.code == 0 and operator_started == ["run", "run"]


@pytest.mark.parametrize("argv", [["-n", "ai", "run"], ["run", "--kubeconfig", "x"], ["run", "extra"]])
def test_run_takes_no_client_options(operator_started, argv, capsys):
    """The operator is configured by HOMING_* variables and its settings file, never by the
    client's options (a `-n` meant for explain must not start it somewhere)."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == USAGE and operator_started == []


def test_options_without_a_command_print_help_and_fail(operator_started, capsys):
    assert main(["-n", "ai"]) == USAGE
    assert "usage: homing" in capsys.readouterr().err and operator_started == []


def test_version(capsys):
    from importlib.metadata import version

    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == f"homing {version('homing')}"
    assert main(["version", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"version": version("homing")}
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and version("homing") in capsys.readouterr().out


# -- options before or after the command; -o json|yaml -----------------------------------


def decided_pod() -> dict:
    return pod(HOME, node="node-a")


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "pod", "llama-worker-3", "-n", "ai", "-o", "yaml"],
        ["-n", "ai", "-o", "yaml", "explain", "pod", "llama-worker-3"],
        ["-n", "ai", "explain", "-o", "yaml", "pod/llama-worker-3"],
        ["--namespace=ai", "--output=yaml", "explain", "llama-worker-3"],
    ],
)
def test_options_before_or_after_the_command(cluster, capsys, argv):
    cluster({POD_PATH: decided_pod()})
    assert main(argv) == 0
    got = yaml.safe_load(capsys.readouterr().out)
    assert (got["pod"], got["home"], got["node"], got["reason"]) == ("ai/llama-worker-3", "node-a", "node-a", "home")


def test_an_option_after_the_command_wins_over_one_before(cluster, capsys):
    cluster({POD_PATH: decided_pod()})
    assert main(["-n", "elsewhere", "-o", "text", "explain", "pod", "llama-worker-3", "-n", "ai", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pod"] == "ai/llama-worker-3"


def test_yaml_and_json_say_the_same(cluster, capsys):
    cluster({POD_PATH: decided_pod()})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai", "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai", "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json


def test_the_context_namespace_is_the_default(cluster, capsys):
    cluster({POD_PATH: decided_pod()}, context_namespace="ai")
    assert main(["explain", "pod", "llama-worker-3", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pod"] == "ai/llama-worker-3"


def test_all_namespaces_is_for_listing(cluster, capsys):
    cluster({})
    with pytest.raises(SystemExit) as done:
        main(["-A", "explain", "pod", "x"])
    assert done.value.code == USAGE
    assert "-A" in capsys.readouterr().err


# -- owners: one namespace or all ---------------------------------------------------------

ALL_MEMORY = f"/apis/{GROUP}/{VERSION}/{PLURAL}"


def in_namespace(namespace: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"


def memories() -> tuple[list[dict], list[dict]]:
    llama = memory(3)
    bert = memory(2, ref=owner("bert", uid="uid-2", kind="PyTorchJob").model_copy(update={"namespace": "nlp"}))
    return objects(llama), objects(bert)


def test_owners_in_one_namespace(cluster, capsys):
    ai, _ = memories()
    cluster({in_namespace("ai"): {"items": ai}})
    assert main(["owners", "-n", "ai"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["OWNER", "RANKS", "POOL"] and "NAMESPACE" not in lines[0]
    assert lines[1].split()[:3] == ["Job/llama", "3", "0"]


def test_owners_in_all_namespaces(cluster, capsys):
    ai, nlp = memories()
    kube = cluster({ALL_MEMORY: {"items": ai + nlp}})
    assert main(["-A", "owners", "-o", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert kube.asked == [ALL_MEMORY]
    assert [(o["namespace"], o["owner"], o["ranks"]) for o in got["owners"]] == [("ai", "Job/llama", 3), ("nlp", "PyTorchJob/bert", 2)]
    assert main(["owners", "--all-namespaces"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["NAMESPACE", "OWNER"]
    assert main(["owners", "-A", "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == got


# -- explain judges by the cluster's settings -------------------------------------------

OPERATOR_NS = "homing-system"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{OPERATOR_NS}/deployments"
CONFIG_MAP = f"/api/v1/namespaces/{OPERATOR_NS}/configmaps/homing-config"


def deployment(env: list[dict], config_map: str = "homing-config") -> dict:
    """The operator's Deployment as manifests/base/deployment.yaml has it (the parts read)."""
    container = {"name": "homing", "env": [*env, {"name": "HOMING_CONFIG_FILE", "value": "/etc/homing/config.yaml"}],
                 "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "config", "mountPath": "/etc/homing", "readOnly": True}]}
    volumes = [{"name": "tmp", "emptyDir": {}}, {"name": "config", "configMap": {"name": config_map, "optional": True}}]
    return {"items": [{"metadata": {"name": "homing", "namespace": OPERATOR_NS},
                       "spec": {"template": {"spec": {"containers": [container], "volumes": volumes}}}}]}


def config_map(text: str, name: str = "homing-config") -> dict:
    return {"metadata": {"name": name, "namespace": OPERATOR_NS}, "data": {"config.yaml": text}}


def undecided(resource: str) -> dict:
    """A pod the webhook never saw (no decision), in an opted-in namespace."""
    p = pod(None, node="node-a")
    p["spec"]["containers"][0]["resources"]["requests"] = {resource: "1"}
    return p


def test_explain_uses_the_clusters_scope_not_this_shells(cluster, capsys, monkeypatch):
    """The operator counts example.com/ resources as accelerators (its ConfigMap); this shell's
    environment says otherwise and is not what the webhook judged by."""
    monkeypatch.setenv("HOMING_SCOPE__RESOURCE_PREFIXES", '["nvidia.com/"]')
    cluster({POD_PATH: undecided("example.com/npu"), "/api/v1/namespaces/ai": OPTED_IN,
             DEPLOYMENTS: deployment([]), CONFIG_MAP: config_map("scope:\n  resource_prefixes: [example.com/]\n")})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["decided"] is False  # in scope, no decision


def test_the_deployments_variables_win_over_its_file(cluster, capsys):
    cluster({POD_PATH: undecided("example.com/npu"), "/api/v1/namespaces/ai": OPTED_IN,
             DEPLOYMENTS: deployment([{"name": "HOMING_SCOPE__RESOURCE_PREFIXES", "value": '["other.io/"]'}]),
             CONFIG_MAP: config_map("scope:\n  resource_prefixes: [example.com/]\n")})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai"]) == NOT_IN_SCOPE
    assert "names starting with other.io/" in capsys.readouterr().err


def test_the_configmap_the_deployment_mounts_is_read(cluster, capsys):
    cluster({POD_PATH: undecided("example.com/npu"), "/api/v1/namespaces/ai": OPTED_IN,
             DEPLOYMENTS: deployment([], config_map="shard-a-config"),
             f"/api/v1/namespaces/{OPERATOR_NS}/configmaps/shard-a-config":
                 config_map("scope:\n  resource_prefixes: [example.com/]\n", name="shard-a-config")})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai", "-o", "json"]) == 0


def test_the_operator_namespace_is_an_option(cluster, capsys):
    cluster({POD_PATH: undecided("example.com/npu"), "/api/v1/namespaces/ai": OPTED_IN,
             "/api/v1/namespaces/ops/configmaps/homing-config": config_map("scope:\n  resource_prefixes: [example.com/]\n")})
    assert main(["--operator-namespace", "ops", "explain", "pod", "llama-worker-3", "-n", "ai"]) == 0


def test_no_settings_in_the_cluster_are_the_defaults(cluster, capsys, monkeypatch):
    """No Deployment and no ConfigMap: the operator would run on its defaults; the local
    environment still does not count."""
    monkeypatch.setenv("HOMING_SCOPE__RESOURCE_PREFIXES", '["example.com/"]')
    cluster({POD_PATH: undecided("example.com/npu"), "/api/v1/namespaces/ai": OPTED_IN})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai"]) == NOT_IN_SCOPE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "huawei.com/, nvidia.com/" in err


def test_settings_not_readable_are_the_defaults_with_a_warning(cluster, capsys):
    denied = KubeError(403, '{"message": "forbidden"}')
    cluster({POD_PATH: undecided("nvidia.com/gpu"), "/api/v1/namespaces/ai": OPTED_IN,
             DEPLOYMENTS: denied, CONFIG_MAP: denied})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warning" in err and "homing-system" in err and "defaults" in err


def test_settings_are_read_only_when_needed(cluster, capsys):
    """A decided pod needs no settings: a user who may read only pods sees no warning."""
    kube = cluster({POD_PATH: decided_pod()})
    assert main(["explain", "pod", "llama-worker-3", "-n", "ai"]) == 0
    assert capsys.readouterr().err == ""
    assert not any("deployments" in p or "configmaps" in p for p in kube.asked)


def test_the_owners_fault_memory_is_the_clusters(cluster, capsys):
    from homing.engine.memory.entries import FaultMark

    mem = memory(1)
    mem.ranks["worker/0"].faults = [FaultMark("node-bad", time.time() - 7200)]  # two hours ago
    cluster({in_namespace("ai"): {"items": objects(mem)}, DEPLOYMENTS: deployment([]),
             CONFIG_MAP: config_map("lifetimes:\n  fault_memory_seconds: 86400\n")})
    assert main(["explain", "owner", "job/llama", "-n", "ai", "-o", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["fault_nodes"] == {"node-bad": ["worker/0"]}  # a day's fault memory: still avoided
