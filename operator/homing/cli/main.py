"""Argument parsing for `homing` and `kubectl homing`; the work is in explain.py."""
from __future__ import annotations

import argparse
import asyncio
import sys

from homing.cli.errors import USAGE, CliError

POD_WORDS = ("pod", "pods", "po")
EPILOG = """examples:
  homing explain pod llama-train-worker-3 -n ai
  homing explain owner job/llama-train -n ai -o json
  kubectl homing explain pod/llama-train-worker-3 -n ai
exit codes: 0 explained, 1 failed, 2 usage, 3 pod not in scope, 4 not found, 5 no permission"""


def parser(prog: str) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=prog, description="homing: send rescheduled accelerator pods home.",
                                  epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command")
    sub.add_parser("run", help="run the operator and its webhook (what `homing` with no arguments does)")
    e = sub.add_parser("explain", help="what homing decided for a pod, or where an owner's ranks go back to",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("what", help="pod NAME | pod/NAME | owner KIND/NAME | KIND/NAME | KIND NAME | NAME (a pod)")
    e.add_argument("name", nargs="?", help="the pod's name, or the owner's KIND/NAME after `owner`")
    e.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("--kubeconfig", help="default: $KUBECONFIG, ~/.kube/config, else the in-cluster account")
    e.add_argument("--context", help="the kubeconfig context to use")
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


async def _explain(args: argparse.Namespace) -> str:
    from homing.cli import explain
    from homing.cli.connect import connect
    from homing.config import Settings
    from homing.explain import render

    what, name = target(args.what, args.name)
    settings = Settings()
    kube, default_namespace = await connect(args.kubeconfig, args.context)
    try:
        found = await explain.run(kube, (what, args.namespace or default_namespace, name), settings)
    finally:
        await kube.close()
    if args.output == "json":
        return render.as_json(found)
    return render.pod_text(found) if what == "pod" else render.owner_text(found)


def main(argv: list[str], prog: str = "homing") -> int:
    args = parser(prog).parse_args(argv)
    if args.command in (None, "run"):
        from homing.__main__ import run

        run()
        return 0
    try:
        print(asyncio.run(_explain(args)))
    except CliError as err:
        print(f"{prog} explain: {err}", file=sys.stderr)
        return err.code
    return 0


def kubectl_plugin() -> None:
    """`kubectl homing ...`: kubectl finds the `kubectl-homing` script on PATH."""
    sys.exit(main(sys.argv[1:], prog="kubectl homing"))
