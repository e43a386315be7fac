"""`python -m homing` (or the `homing` console script): the `homing` command (homing/cli).
`homing run` runs the operator and webhook, as the image and the manifests start it; with no
arguments it prints help and starts nothing."""
from __future__ import annotations

import asyncio
import sys

import kopf

from homing.config import Settings


def main() -> None:
    from homing.cli import main as cli

    sys.exit(cli(sys.argv[1:]))


def run() -> None:
    from homing.kube import handlers  # noqa: F401  (registers the kopf handlers)
    from homing.kube.signals import logs

    settings = Settings()  # refuses bad weights before anything starts
    logs.configure(settings.log_level)
    if ca := settings.webhook.client_ca_file:  # unreadable: stop here rather than serve unverified
        from homing.kube.certs.certstore import serving_context

        try:
            serving_context(ca)
        except OSError as err:  # ssl.SSLError included
            sys.exit(f"homing: webhook.client_ca_file {ca!r} cannot be used to verify the API server: {err}")
    asyncio.run(operate(settings.health_port, settings.liveness_port, settings.health.drain_seconds, settings.metrics_port))


async def operate(ready_port: int, liveness_port: int, drain_seconds: float, metrics_port: int | None = None) -> None:
    """kopf, serving liveness from homing's probe; homing's /readyz and /metrics beside it (kopf
    has no readiness), all on aiohttp; and the event-loop lag monitor."""
    from homing.kube.health import gcpause, selfhealth
    from homing.kube.signals import metrics

    gcpause.watch()
    scrape = await metrics.serve("0.0.0.0", metrics_port) if metrics_port is not None else None
    ready = await selfhealth.serve_ready("0.0.0.0", ready_port, drain_seconds=drain_seconds)
    lag = asyncio.create_task(selfhealth.LoopLagMonitor().run(), name="homing:loop-lag")
    try:
        await kopf.operator(clusterwide=True, standalone=True, liveness_endpoint=f"http://0.0.0.0:{liveness_port}/healthz")
    finally:
        lag.cancel()
        await ready.cleanup()
        if scrape is not None:
            await scrape.cleanup()


if __name__ == "__main__":
    main()
