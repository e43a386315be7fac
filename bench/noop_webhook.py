"""A mutating webhook that answers every review "allowed, unchanged" at once: the floor
any Python webhook pays on this machine (bench/scale.py --webhook noop). Serves TLS from
the tls.crt and tls.key in --tls-dir on 127.0.0.1:--port, and on --metrics-port the
event-loop lag measured by homing's own monitor (homing_event_loop_lag_seconds).

    python bench/noop_webhook.py --port 9443 --tls-dir DIR --metrics-port 9090"""
from __future__ import annotations

import argparse
import asyncio
import json
import ssl

import aiohttp.web
from prometheus_client import start_http_server

from homing.kube.selfhealth import LoopLagMonitor


async def review(request: aiohttp.web.Request) -> aiohttp.web.Response:
    body = json.loads(await request.text())
    uid = (body.get("request") or {}).get("uid", "")
    return aiohttp.web.json_response({"apiVersion": body.get("apiVersion", "admission.k8s.io/v1"),
                                      "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls-dir", required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    args = parser.parse_args()
    start_http_server(args.metrics_port, addr="127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(f"{args.tls_dir}/tls.crt", f"{args.tls_dir}/tls.key")
    app = aiohttp.web.Application()
    app.router.add_post("/{tail:.*}", review)

    async def lag_monitor(app: aiohttp.web.Application):
        task = asyncio.create_task(LoopLagMonitor().run())
        yield
        task.cancel()

    app.cleanup_ctx.append(lag_monitor)
    aiohttp.web.run_app(app, host="127.0.0.1", port=args.port, ssl_context=context, print=None, access_log=None)


if __name__ == "__main__":
    main()
