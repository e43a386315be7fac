"""Writes the generated install manifests: `python -m homing.tools.genmanifests [DIR]`.

Only manifests/base/webhook.yaml is generated: the MutatingWebhookConfiguration the operator
itself would write (homing.kube.admission.webhookconfig.configuration), rendered from the
default settings and without a caBundle, which the operator patches in at start-up.
A test keeps the file and this output equal."""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from homing.config import Settings
from homing.kube.admission.webhookconfig import configuration

WEBHOOK_HEADER = (
    "# Generated from operator/homing/kube/admission/webhookconfig.py by `make manifests`. Do not edit.\n"
    "# No caBundle: the operator makes its own CA at start-up and patches it in.\n"
)


class _NoAliases(yaml.SafeDumper):
    """The two webhook entries share one clientConfig.service dict: write it out twice
    rather than as a YAML anchor and alias, which not every tool reads."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def render_webhook() -> str:
    body = configuration(Settings.model_construct(), None)  # defaults only: no HOMING_* of this machine
    return WEBHOOK_HEADER + yaml.dump(body, Dumper=_NoAliases, sort_keys=False)


# file name under manifests/ -> its renderer
RENDERERS = {"webhook.yaml": render_webhook}


def main(argv: list[str]) -> None:
    out = Path(argv[0] if argv else "manifests/base")
    out.mkdir(parents=True, exist_ok=True)
    for name, render in RENDERERS.items():
        target = out / name
        target.write_text(render())
        print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
