"""A mutating webhook that answers every review "allowed, unchanged" at once: the floor
any Python webhook pays on this machine (bench/scale.py --webhook noop). Serves TLS from
the tls.crt and tls.key in --tls-dir on 127.0.0.1:--port, and on --metrics-port the
event-loop lag measured by homing's own monitor (homing_event_loop_lag_seconds).

With --patch it answers "allowed" with a patch of the shape homing's has (an annotation and
a preferred node-affinity term) that changes no placement: the term names a node that does
not exist. The API server applies a patch by encoding the pod, patching the JSON and decoding
it again, inside the time it counts as the webhook's; this is that floor, for any webhook
that mutates.

    python bench/noop_webhook.py --port 9443 --tls-dir DIR --metrics-port 9090 [--patch]"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl

import aiohttp.web
from prometheus_client import start_http_server

from homing.kube.health.selfhealth import LoopLagMonitor

NO_NODE = "homing-floor-no-such-node"
TERM = {"weight": 1, "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [NO_NODE]}]}}
ANNOTATION = "homing.io/decision"


def patch_for(pod: dict) -> list[dict]:
    """An annotation and a preferred term that matches no node, added whatever the pod has."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    ops = [{"op": "add", "path": "/metadata/annotations/" + ANNOTATION.replace("/", "~1"), "value": "floor"}
           if meta.get("annotations") else {"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: "floor"}}]
    node = (spec.get("affinity") or {}).get("nodeAffinity")
    if not spec.get("affinity"):
        ops.append({"op": "add", "path": "/spec/affinity",
                    "value": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [TERM]}}})
    elif node is None:
        ops.append({"op": "add", "path": "/spec/affinity/nodeAffinity",
                    "value": {"preferredDuringSchedulingIgnoredDuringExecution": [TERM]}})
    elif node.get("preferredDuringSchedulingIgnoredDuringExecution") is None:
        ops.append({"op": "add", "path": "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution", "value": [TERM]})
    else:
        ops.append({"op": "add", "path": "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/-", "value": TERM})
    return ops


def answer(body: dict, patch: bool) -> dict:
    request = body.get("request") or {}
    response: dict = {"uid": request.get("uid", ""), "allowed": True}
    if patch and isinstance(request.get("object"), dict):
        response |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(patch_for(request["object"])).encode()).decode()}
    return {"apiVersion": body.get("apiVersion", "admission.k8s.io/v1"), "kind": "AdmissionReview", "response": response}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls-dir", required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--patch", action="store_true", help="answer with a patch that changes no placement")
    args = parser.parse_args()

    async def review(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response(answer(json.loads(await request.text()), args.patch))

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
