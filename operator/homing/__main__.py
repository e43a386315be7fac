"""`python -m homing` (or the `homing` console script): run the operator and webhook."""
from __future__ import annotations

import asyncio

import kopf
from prometheus_client import start_http_server

from homing.config import Settings


def main() -> None:
    from homing.operator import handlers, logs  # noqa: F401  (registers the kopf handlers)

    settings = Settings()  # refuses bad weights before anything starts
    logs.configure(settings.log_level)
    start_http_server(settings.metrics_port)
    asyncio.run(
        kopf.operator(
            clusterwide=True,
            standalone=True,
            liveness_endpoint=f"http://0.0.0.0:{settings.health_port}/healthz",
        )
    )


if __name__ == "__main__":
    main()
