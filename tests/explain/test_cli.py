"""The CLI's words to targets, and its one-line errors; the live runs are in
tests/integration/test_explain.py."""
from __future__ import annotations

import pytest

from homing.cli import main
from homing.cli.errors import USAGE, CliError, from_api
from homing.cli.main import target
from homing.kube.client import KubeError


@pytest.mark.parametrize(
    "what, name, want",
    [
        ("pod", "w-3", ("pod", "w-3")),
        ("po", "w-3", ("pod", "w-3")),
        ("pod/w-3", None, ("pod", "w-3")),
        ("w-3", None, ("pod", "w-3")),
        ("owner", "job/llama", ("owner", "job/llama")),
        ("job/llama", None, ("owner", "job/llama")),
        ("Job", "llama", ("owner", "Job/llama")),
    ],
)
def test_target(what, name, want):
    assert target(what, name) == want


@pytest.mark.parametrize("what, name", [("pod", None), ("owner", None), ("owner", "llama"), ("job/", None), ("/x", None)])
def test_bad_target(what, name):
    with pytest.raises(CliError) as err:
        target(what, name)
    assert err.value.code == USAGE


@pytest.mark.parametrize(
    "status, body, code, words",
    [
        (404, '{"kind":"Status","message":"pods \\"x\\" not found"}', 4, "pod ai/x not found"),
        (403, '{"kind":"Status","message":"pods \\"x\\" is forbidden: User \\"nobody\\" cannot get"}', 5, 'User "nobody"'),
        (401, "Unauthorized", 5, "Unauthorized"),
        (500, "etcd\nis down", 1, "HTTP 500: etcd is down"),
    ],
)
def test_api_errors_in_one_line(status, body, code, words):
    err = from_api(KubeError(status, body), "pod ai/x")
    assert err.code == code and words in str(err) and "\n" not in str(err)


def test_usage_errors_exit_2_with_one_line(capsys):
    assert main(["explain", "owner", "llama"]) == USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "KIND/NAME" in err


def test_a_missing_kubeconfig_is_one_line(capsys, tmp_path):
    assert main(["explain", "pod", "x", "--kubeconfig", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.strip() == f"homing explain: kubeconfig {tmp_path / 'none'} not found"
