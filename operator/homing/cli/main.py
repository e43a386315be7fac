"""Argument parsing for `homing` and `kubectl homing`; the work is in explain.py, owners.py and
settings.py. With no command the tool prints its help: only `homing run` starts the operator
(the image's command), so a plugin typed bare never joins a cluster with its user's rights."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import yaml

from homing.cli.errors import USAGE, CliError

POD_WORDS = ("pod", "pods", "po")
OUTPUTS = ("text", "json", "yaml")
OPERATOR_NAMESPACE = "homing-system"  # config.Webhook.service_namespace, where the manifests install it
# Where Volcano's own install (and MindCluster's volcano-v*.yaml) keeps volcano-scheduler.conf.
VOLCANO_CONFIG = "volcano-system/volcano-scheduler-configmap"
DESCRIPTION = "homing: send rescheduled accelerator pods home. Read-only, with your kubeconfig; `run` is the operator."
EPILOG = """examples:
  kubectl homing explain pod llama-train-worker-3 -n ai
  kubectl homing -n ai explain owner job/llama-train -o yaml
  kubectl homing owners -A
  kubectl homing doctor -n ai     # is homing working here? what to fix
  homing run                      # the operator and its webhook (what the image runs)
options go before or after the command; an option after it wins.
exit codes: 0 done, 1 failed, 2 usage, 3 pod not in scope, 4 not found, 5 no permission"""
# Options a client command takes, before or after its name. SUPPRESS: an option not given on
# one side leaves what the other side set; the defaults are filled in after parsing.
DEFAULTS: dict[str, Any] = {"namespace": None, "all_namespaces": False, "output": "text", "kubeconfig": None,
                            "context": None, "operator_namespace": OPERATOR_NAMESPACE}


def _client_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
    common.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (owners)")
    common.add_argument("-o", "--output", choices=OUTPUTS, help="text (default), json or yaml")
    common.add_argument("--kubeconfig", help="default: $KUBECONFIG, ~/.kube/config, else the in-cluster account")
    common.add_argument("--context", help="the kubeconfig context to use")
    common.add_argument("--operator-namespace", metavar="NAMESPACE",
                        help=f"where homing runs: its settings are read from there (default {OPERATOR_NAMESPACE})")
    return common


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("homing")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def parser(prog: str) -> argparse.ArgumentParser:
    common = _client_options()
    top = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG, parents=[common],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"homing {_version()}")
    sub = top.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    sub.add_parser("run", help="run the operator and its webhook (the image's command; configured by HOMING_* "
                               "variables and HOMING_CONFIG_FILE, not by these options)",
                   description="Run the operator and its admission webhook against the cluster its kubeconfig "
                               "or service account reaches. Settings: HOMING_* variables and HOMING_CONFIG_FILE.")
    e = sub.add_parser("explain", parents=[common], help="what homing decided for a pod, or where an owner's ranks go back to",
                       description="Why a pod landed where it did, or where an owner's ranks go back to (docs/explain.md). "
                                   "Judged by the operator's settings as the cluster holds them.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("what", help="pod NAME | pod/NAME | owner KIND/NAME | KIND/NAME | KIND NAME | NAME (a pod)")
    e.add_argument("name", nargs="?", help="the pod's name, or the owner's KIND/NAME after `owner`")
    sub.add_parser("owners", parents=[common], help="the owners homing remembers, in a namespace or all (-A)",
                   description="The owners (jobs, StatefulSets, ...) homing remembers homes for: ranks, pool homes, "
                               "home rate, last seen. Reads PlacementMemory objects (list).",
                   epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = sub.add_parser("doctor", parents=[common], help="check that homing works on this cluster, and say what to fix",
                       description="Checks, with your rights, writing nothing: the webhook configuration and its CA, a "
                                   "dry-run accelerator pod in the namespace getting homing's decision, the pod-patch "
                                   "guard, a replica leading, and Volcano's scheduler configuration (nodeorder's "
                                   "node-affinity weight; MindCluster's prefer-previous-node). Exit code 1 when a "
                                   "check fails; a warning does not fail.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--volcano-config", metavar="NAMESPACE/NAME", default=VOLCANO_CONFIG,
                   help=f"the ConfigMap holding volcano-scheduler.conf (default {VOLCANO_CONFIG})")
    sub.add_parser("version", parents=[common], help="print homing's version")
    return top


def target(what: str, name: str | None) -> tuple[str, str]:
    """("pod", NAME) or ("owner", "KIND/NAME") from the words given."""
    if what.lower() in POD_WORDS:
        if not name:
            raise CliError("explain pod needs the pod's name", USAGE)
        return "pod", name
    if what.lower() == "owner":
        if not name or "/" not in name.strip("/"):
            raise CliError("explain owner needs KIND/NAME, e.g. job/llama-train", USAGE)
        return "owner", name
    if name:
        return "owner", f"{what}/{name}"
    kind, slash, rest = what.partition("/")
    if not slash:
        return "pod", what
    if not kind or not rest:
        raise CliError(f"{what!r} is not KIND/NAME", USAGE)
    return ("pod", rest) if kind.lower() in POD_WORDS else ("owner", what)


def show(data: Any, output: str, text: Callable[[], str]) -> str:
    """One result in the output asked for: `data` (a dataclass or plain data) as JSON or YAML."""
    plain = asdict(data) if hasattr(data, "__dataclass_fields__") else data
    if output == "json":
        return json.dumps(plain, indent=2, sort_keys=True)
    if output == "yaml":
        return yaml.safe_dump(plain, sort_keys=True, default_flow_style=False, allow_unicode=True).rstrip("\n")
    return text()


async def _explain(args: argparse.Namespace, warn: Callable[[str], None]) -> str:
    from homing.cli import connect, explain
    from homing.cli.settings import ClusterSettings
    from homing.explain import PodExplanation, render

    what, name = target(args.what, args.name)
    kube, default_namespace = await connect.connect(args.kubeconfig, args.context)
    try:
        settings = ClusterSettings(kube, args.operator_namespace, warn)
        found = await explain.run(kube, (what, args.namespace or default_namespace, name), settings)
    finally:
        await kube.close()
    return show(found, args.output, lambda: render.pod_text(found) if isinstance(found, PodExplanation) else render.owner_text(found))


async def _doctor(args: argparse.Namespace, warn: Callable[[str], None]) -> tuple[str, bool]:
    from homing.cli import connect, doctor
    from homing.cli.settings import ClusterSettings

    kube, default_namespace = await connect.connect(args.kubeconfig, args.context)
    try:
        settings = await ClusterSettings(kube, args.operator_namespace, warn)()
        report = await doctor.run(kube, args.namespace or default_namespace, settings, volcano_config=args.volcano_config)
    finally:
        await kube.close()
    return show(report, args.output, lambda: doctor.text(report)), report.healthy


async def _owners(args: argparse.Namespace) -> str:
    from homing.cli import connect
    from homing.cli.owners import listed
    from homing.explain import render

    kube, default_namespace = await connect.connect(args.kubeconfig, args.context)
    try:
        found = await listed(kube, None if args.all_namespaces else (args.namespace or default_namespace))
    finally:
        await kube.close()
    return show(found, args.output, lambda: render.owners_text(found, all_namespaces=args.all_namespaces))


def main(argv: list[str], prog: str = "homing") -> int:
    top = parser(prog)
    args = top.parse_args(argv)
    if args.command is None:
        if argv:  # options alone: say what is missing, on stderr
            top.print_help(sys.stderr)
            return USAGE
        top.print_help()
        return 0
    given = {k for k in DEFAULTS if k in vars(args)}
    if args.command == "run":
        if given:
            top.error("run takes no client options: the operator reads HOMING_* variables and HOMING_CONFIG_FILE")
        from homing.__main__ import run

        run()
        return 0
    for key, default in DEFAULTS.items():
        vars(args).setdefault(key, default)
    if args.command == "version":
        print(show({"version": _version()}, args.output, lambda: f"homing {_version()}"))
        return 0
    if args.all_namespaces and args.command != "owners":
        top.error(f"-A/--all-namespaces lists every namespace: it goes with `owners`, not `{args.command}`")
    if args.all_namespaces and args.namespace:
        top.error("-A/--all-namespaces and -n/--namespace: give one")

    def warn(message: str) -> None:
        print(f"{prog} {args.command}: warning: {message}", file=sys.stderr)

    try:
        if args.command == "doctor":
            out, healthy = asyncio.run(_doctor(args, warn))
            print(out)
            return 0 if healthy else 1
        print(asyncio.run(_explain(args, warn) if args.command == "explain" else _owners(args)))
    except CliError as err:
        print(f"{prog} {args.command}: {err}", file=sys.stderr)
        return err.code
    return 0


def kubectl_plugin() -> None:
    """`kubectl homing ...`: kubectl finds the `kubectl-homing` script on PATH."""
    sys.exit(main(sys.argv[1:], prog="kubectl homing"))
