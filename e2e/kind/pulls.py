"""Real image pulls on the kind cluster (docs/kind.md, "Real image pulls"): one rank of a
StatefulSet whose image has a multi-GB layer, pulled by the nodes' containerd from the local
registry (registry-up.sh). Timed from the kubelet's own events, three starts:

  first  - no node holds the image: the rank pulls it where it lands (its home from then on);
  home   - the rank deleted: homing's home term sends it back, where the image already is;
  moved  - its home cordoned, the rank deleted again: it lands elsewhere and pulls.

With --compare the same three starts run again in a namespace homing does not serve: what
kube-scheduler alone (its ImageLocality included) does with the deleted rank.

Exits 1 when, with homing, the rank that was deleted pulled or did not go home, or the moved
one did not pull. Writes bench/results/kind-pulls.json and prints it.

    .venv/bin/python e2e/kind/pulls.py --image homing-registry:5000/homing-test/big:2g [--compare]
"""
from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time

from kindkube import KUBECONFIG, NPU, RESTRICTED, cordon, decision_reason, delete_namespace, fresh_namespace, go_seconds, report, workers

from homing.kube.client import Kube, KubeError
from homing_e2e.imagecache import pull_minutes

NS, NAME, POD = "homing-pulls", "big", "big-0"
PULLED = re.compile(r'Successfully pulled image "[^"]+" in ([0-9.hmsµ]+)')
SIZE = re.compile(r"Image size: (\d+) bytes")


def statefulset(image: str) -> dict:
    """One rank asking for half a worker's NPUs; it only sleeps, as restricted Pod Security asks."""
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": NAME, "namespace": NS},
        "spec": {"serviceName": NAME, "replicas": 1, "selector": {"matchLabels": {"app": NAME}}, "template": {
            "metadata": {"labels": {"app": NAME}},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                "name": "rank", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["/bin/sleep", "infinity"],
                "resources": {"requests": {NPU: "4"}, "limits": {NPU: "4"}}, "securityContext": RESTRICTED}]}}},
    }


async def running_pod(kube: Kube, old_uid: str | None, timeout: float) -> tuple[dict, float, float]:
    """Waits for POD with a uid other than `old_uid` to run: (pod, seconds from first seen to
    scheduled, to running) by this clock."""
    seen = scheduled = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pod = await kube.request("GET", f"/api/v1/namespaces/{NS}/pods/{POD}")
        except KubeError:
            pod = None
        if pod and pod["metadata"]["uid"] != old_uid and not pod["metadata"].get("deletionTimestamp"):
            now = time.monotonic()
            seen = seen or now
            if pod["spec"].get("nodeName") and scheduled is None:
                scheduled = now
            states = [c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or ()]
            if states and all("running" in s for s in states):
                return pod, round((scheduled or now) - seen, 2), round(now - seen, 2)
        await asyncio.sleep(0.2)
    raise SystemExit(f"{POD} did not run within {timeout:.0f} s")


async def pull_events(kube: Kube, uid: str) -> dict:
    """What the kubelet said about the pod's image: pulled (seconds, bytes) or already present."""
    events = (await kube.request("GET", f"/api/v1/namespaces/{NS}/events", query=[("fieldSelector", f"involvedObject.uid={uid}")]))["items"]
    out: dict = {"pulled": False, "present": False}
    for e in events:
        msg = e.get("message") or ""
        if e.get("reason") == "Pulled" and (m := PULLED.search(msg)):
            out.update(pulled=True, pull_s=round(go_seconds(m.group(1)), 2))
            if s := SIZE.search(msg):
                out["bytes"] = int(s.group(1))
        elif e.get("reason") == "Pulled" and "already present" in msg:
            out["present"] = True
    return out


async def start(kube: Kube, label: str, old_uid: str | None) -> dict:
    pod, to_scheduled, to_running = await running_pod(kube, old_uid, timeout=900)
    meta = pod["metadata"]
    row = {"node": pod["spec"]["nodeName"], "decision": (meta.get("annotations") or {}).get("homing.io/decision", ""),
           "reason": decision_reason(pod),
           "seen_to_scheduled_s": to_scheduled, "seen_to_running_s": to_running, "uid": meta["uid"]}
    for _ in range(20):  # the kubelet's events follow the start by a moment
        row.update(await pull_events(kube, meta["uid"]))
        if row["pulled"] or row["present"]:
            break
        await asyncio.sleep(0.5)
    print(f"{label:>6}: on {row['node']}, running {to_running} s after it appeared; "
          + (f"pulled in {row['pull_s']} s" if row["pulled"] else "no pull (image present)" if row["present"] else "no pull event"),
          flush=True)
    return row


async def delete_pod(kube: Kube) -> None:
    await kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{POD}", body={"gracePeriodSeconds": 0})


def forget_image(nodes: list[str], image: str) -> None:
    """No node starts with the image: the first start pulls wherever it lands."""
    for node in nodes:
        subprocess.run(["docker", "exec", node, "crictl", "rmi", image], capture_output=True, check=False)


async def three_starts(kube: Kube, image: str, workers: list[str], homing: bool) -> dict:
    """first (no node holds the image), deleted (back home?), moved (home cordoned)."""
    print(f"-- {'with' if homing else 'without'} homing", flush=True)
    cordoned = None
    try:
        await fresh_namespace(kube, NS, homing)
        forget_image(workers, image)
        await kube.request("POST", f"/apis/apps/v1/namespaces/{NS}/statefulsets", body=statefulset(image))
        first = await start(kube, "first", None)
        await delete_pod(kube)
        home = await start(kube, "home", first["uid"])
        cordoned = home["node"]
        await cordon(kube, cordoned, True)
        await delete_pod(kube)
        moved = await start(kube, "moved", home["uid"])
    finally:
        if cordoned:
            await cordon(kube, cordoned, False)
        await delete_namespace(kube, NS)
    return {"first": first, "home": home, "moved": moved}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", required=True)
    ap.add_argument("--kubeconfig", default=str(KUBECONFIG))
    ap.add_argument("--cluster", default="homing")
    ap.add_argument("--compare", action="store_true", help="also without homing")
    args = ap.parse_args()
    nodes = workers(args.cluster)
    kube = await Kube.connect(args.kubeconfig)
    try:
        runs = {"homing": await three_starts(kube, args.image, nodes, homing=True)}
        if args.compare:
            runs["without_homing"] = await three_starts(kube, args.image, nodes, homing=False)
    finally:
        await kube.close()
    first, home, moved = (runs["homing"][k] for k in ("first", "home", "moved"))
    size = first.get("bytes") or moved.get("bytes") or 0
    result = {"image": args.image, "image_bytes": size, **runs,
              "model_pull_s": round(pull_minutes(size / 1e9) * 60, 1) if size else None}  # the tidal days' model
    problems = [
        *(["the first start did not pull (the image was on the node already)"] if not first["pulled"] else []),
        *([f"the rank did not go home: {first['node']} then {home['node']}"] if home["node"] != first["node"] else []),
        *([f"homing did not ask for the home: decision {home['decision']!r}"] if home["reason"] != "home" else []),
        *(["the rank that went home pulled"] if home["pulled"] else []),
        *(["the rank that went home shows no 'already present' event"] if not home["present"] else []),
        *([f"the moved rank stayed on its cordoned home {moved['node']}"] if moved["node"] == home["node"] else []),
        *(["the moved rank did not pull"] if not moved["pulled"] else []),
    ]
    return report("kind-pulls.json", result, problems)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
