"""The webhook server kopf runs through its public server protocol (behaviour.md "Operation", never
stall, never reject): it hands every review to kopf's function, answers with what it returns,
closes each connection while draining, and admits the pod unchanged should kopf's function
fail. And the registered `@kopf.on.mutate` handler is what sends the pod home."""
from __future__ import annotations

import asyncio
import base64
import socket
import ssl
from types import SimpleNamespace

import aiohttp
import jsonpatch
import kopf
import orjson
import pytest

from homing.kube import handlers, metrics, tls
from homing.kube.admission_server import WEBHOOK_ID, AdmissionServer, hand_back, with_patch

from .test_admitter import admitter, rank0


def review(pod: dict, dry_run: bool = False) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "operation": "CREATE", "object": pod, "dryRun": dry_run, "userInfo": {}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A real server on a free port (plain HTTP: TLS is certstore's, tested there), run by
    the same protocol kopf runs it by, with `fn` standing where kopf's function stands."""

    def __init__(self, fn) -> None:
        self.fn, self.port, self.draining = fn, free_port(), False
        self.server = AdmissionServer("127.0.0.1", self.port, None, draining=lambda: self.draining)

    async def __aenter__(self) -> "Served":
        self.configs = self.server(self.fn)
        self.config = await self.configs.__anext__()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.configs.aclose()

    async def post(self, body: bytes, webhook: str = WEBHOOK_ID) -> tuple[int, dict | str, str]:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"http://127.0.0.1:{self.port}/{webhook}", data=body,
                                    headers={"Content-Type": "application/json"}) as resp:
                body_out = await resp.json() if resp.status == 200 else await resp.text()
                return resp.status, body_out, resp.headers.get("Connection", "")


async def test_every_review_goes_to_kopfs_function_and_its_answer_back():
    seen = []

    async def fn(data: dict, *, webhook=None, headers=None, sslpeer=None) -> dict:
        seen.append((webhook, data["request"]["uid"], headers.get("Content-Type")))
        return {"response": {"uid": data["request"]["uid"], "allowed": True, "warnings": ["w"]}}

    async with Served(fn) as s:
        status, answer, connection = await s.post(orjson.dumps(review(rank0())))
        assert s.config["url"] == f"http://127.0.0.1:{s.port}"
    assert status == 200 and answer == {"response": {"uid": "req-1", "allowed": True, "warnings": ["w"]}}
    assert seen == [(WEBHOOK_ID, "req-1", "application/json")]
    assert connection.lower() != "close"


def admissions_timed() -> tuple[float, float]:
    """(count, sum) of homing_admission_seconds so far."""
    samples = {m.name: m.value for fam in metrics.ADMISSION_SECONDS.collect() for m in fam.samples}
    return samples["homing_admission_seconds_count"], samples["homing_admission_seconds_sum"]


@pytest.mark.parametrize("fails", [False, True])
async def test_each_review_is_timed_from_arrival_to_answer_waits_included(fails):
    """The decision's own histogram misses the time a review waits on the loop: this one has it."""
    async def fn(data: dict, **_: object) -> dict:
        await asyncio.sleep(0.05)  # the loop busy with other work
        if fails:
            raise RuntimeError("unknown resource")
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    count, total = admissions_timed()
    async with Served(fn) as s:
        status, _, _ = await s.post(orjson.dumps(review(rank0())))
    assert status == 200
    after_count, after_total = admissions_timed()
    assert after_count == count + 1
    assert after_total - total >= 0.05


def connections_counted() -> float:
    return next(m.value for fam in metrics.ADMISSION_CONNECTIONS.collect() for m in fam.samples if m.name.endswith("_total"))


async def test_tls_connections_are_counted_once_each_however_many_reviews_they_carry(tmp_path):
    """A handshake a connection: reviews kept alive on one connection count it once."""
    cert, key, ca = tls.write(tls.new_files(["127.0.0.1"]), str(tmp_path))
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    client_side = ssl.create_default_context(cadata=ca.decode())

    async def fn(data: dict, **_: object) -> dict:
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    port, before = free_port(), connections_counted()
    server = AdmissionServer("127.0.0.1", port, server_side, draining=lambda: False)
    configs = server(fn)
    await configs.__anext__()
    try:
        for _ in range(2):  # two sessions, two connections; three reviews on each
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_side, limit=1)) as session:
                for _ in range(3):
                    async with session.post(f"https://127.0.0.1:{port}/{WEBHOOK_ID}", data=orjson.dumps(review(rank0()))) as resp:
                        assert resp.status == 200
    finally:
        await configs.aclose()
    assert connections_counted() - before == 2


async def test_while_draining_every_answer_closes_its_connection():
    async def fn(data: dict, **_: object) -> dict:
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    async with Served(fn) as s:
        s.draining = True
        status, _, connection = await s.post(orjson.dumps(review(rank0())))
    assert status == 200 and connection.lower() == "close"


async def test_a_failing_kopf_function_admits_the_pod_unchanged():
    async def fn(data: dict, **_: object) -> dict:
        raise RuntimeError("unknown resource")

    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(review(rank0())))
    assert status == 200
    assert answer == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "response": {"uid": "req-1", "allowed": True}}


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]"])
async def test_a_review_that_is_not_an_admission_review_is_a_bad_request(body):
    async def fn(*_: object, **__: object) -> dict:
        raise AssertionError("not called")

    async with Served(fn) as s:
        status, _, _ = await s.post(body)
    assert status == 400


async def test_the_mutate_handler_sends_the_pod_home_through_kopfs_patch():
    pod = rank0()
    memo = SimpleNamespace(runtime=SimpleNamespace(admitter=admitter()))
    patch, warnings = kopf.Patch(body=kopf.Body(pod)), []
    await handlers.admit_pod(body=kopf.Body(pod), patch=patch, warnings=warnings, dryrun=False, memo=memo)
    patched = jsonpatch.apply_patch(pod, patch.as_json_patch())  # what kopf sends back
    (term,) = patched["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][:1]
    assert term["preference"]["matchExpressions"][0]["values"] == ["n1"]
    assert warnings == []


def kopf_like(handler=handlers.admit_pod, allowed: bool = True):
    """Stands where kopf's function stands and does what it does with a mutating handler: awaits
    it in the same task with a fresh `Patch`, then answers with that patch rebuilt as a diff."""
    patches: list[kopf.Patch] = []

    async def fn(data: dict, **_: object) -> dict:
        obj = data["request"]["object"]
        patch = kopf.Patch(body=kopf.Body(obj))
        patches.append(patch)
        memo = SimpleNamespace(runtime=SimpleNamespace(admitter=admitter()))
        await handler(body=kopf.Body(obj), patch=patch, warnings=[], dryrun=False, memo=memo)
        response = {"uid": data["request"]["uid"], "allowed": allowed}
        if ops := patch.as_json_patch():
            response |= {"patch": base64.b64encode(orjson.dumps(ops)).decode(), "patchType": "JSONPatch"}
        return {"response": response}

    return fn, patches


def patched(pod: dict, answer: dict) -> dict:
    return jsonpatch.apply_patch(pod, orjson.loads(base64.b64decode(answer["response"]["patch"])))


async def test_under_homings_server_the_patch_comes_back_as_handed_not_rebuilt_by_kopf():
    """kopf would deep-copy the pod and diff it whole to rebuild the patch the handler already has."""
    fn, patches = kopf_like()
    pod = rank0()
    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(review(pod)))
    assert status == 200 and answer["response"]["patchType"] == "JSONPatch"
    (term,) = patched(pod, answer)["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][:1]
    assert term["preference"]["matchExpressions"][0]["values"] == ["n1"]
    (patch,) = patches
    assert not patch and not patch.fns  # kopf's Patch untouched: nothing for it to diff


async def test_kopf_is_handed_the_pod_without_its_managed_fields_and_the_patch_still_fits_the_pod_sent():
    fn, _ = kopf_like()
    seen: list[dict] = []

    async def recording(data: dict, **kw: object) -> dict:
        seen.append(data["request"]["object"]["metadata"])
        return await fn(data, **kw)

    pod = rank0()
    pod["metadata"]["managedFields"] = [{"manager": "kube-controller-manager", "operation": "Update",
                                          "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}}]
    async with Served(recording) as s:
        status, answer, _ = await s.post(orjson.dumps(review(pod)))
    assert status == 200
    assert "managedFields" not in seen[0] and seen[0]["name"] == "train-0"
    out = patched(pod, answer)  # applied by the API server to the pod with its managedFields
    assert out["metadata"]["managedFields"] == pod["metadata"]["managedFields"]
    assert out["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]


async def test_a_refusal_or_a_failure_carries_no_handed_back_patch():
    refusing, _ = kopf_like(allowed=False)

    async def failing(data: dict, **_: object) -> dict:
        hand_back([{"op": "add", "path": "/spec/nodeName", "value": "n1"}])
        raise RuntimeError("kopf failed after the handler ran")

    async with Served(refusing) as s:
        _, refused, _ = await s.post(orjson.dumps(review(rank0())))
    async with Served(failing) as s:
        _, failed, _ = await s.post(orjson.dumps(review(rank0())))
    assert refused["response"]["allowed"] is False and "patch" not in refused["response"]
    assert failed["response"] == {"uid": "req-1", "allowed": True}


def test_a_patch_of_kopfs_own_goes_first_and_the_handed_back_one_after():
    own = [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    ours = [{"op": "add", "path": "/spec/priority", "value": 1}]
    answer = {"response": {"uid": "u", "allowed": True, "patchType": "JSONPatch",
                           "patch": base64.b64encode(orjson.dumps(own)).decode()}}
    out = with_patch(answer, ours)["response"]
    assert orjson.loads(base64.b64decode(out["patch"])) == own + ours and out["patchType"] == "JSONPatch"
    assert with_patch({"response": {"uid": "u", "allowed": True}}, [])["response"] == {"uid": "u", "allowed": True}


def test_outside_homings_server_nothing_is_handed_back():
    assert hand_back([{"op": "add", "path": "/spec/priority", "value": 1}]) is False


async def test_the_server_stops_serving_when_kopf_stops_it():
    async def fn(data: dict, **_: object) -> dict:
        return {"response": {"uid": "x", "allowed": True}}

    s = Served(fn)
    async with s:
        pass
    with pytest.raises(aiohttp.ClientConnectionError):
        await asyncio.wait_for(s.post(b"{}"), 5)


async def test_a_review_is_answered_in_the_loop_turn_its_bytes_arrive():
    """Under a burst, each turn of the operator's loop is as long as the watch events queued in
    it. A review is answered in the turn its bytes are read; served through aiohttp's tasks it
    took a turn for each hop of their chain. Counted in turns of the loop, the client's own
    included: its send, the server's read and answer, the client's read, the client's wake-up."""
    loop = asyncio.get_running_loop()
    turns = [0]

    def tick() -> None:  # one call a turn: each turn runs the callbacks the one before queued
        turns[0] += 1
        handle[0] = loop.call_soon(tick)

    async def fn(data: dict, **_: object) -> dict:
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    body = orjson.dumps(review(rank0()))
    request = (f"POST /{WEBHOOK_ID} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    taken: list[int] = []
    async with Served(fn) as s:
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.setblocking(False)
        handle = [loop.call_soon(tick)]
        try:
            for _ in range(20):
                before, got = turns[0], b""
                await loop.sock_sendall(sock, request)
                while not got.endswith(b"}"):
                    got += await loop.sock_recv(sock, 65536)
                taken.append(turns[0] - before)
        finally:
            handle[0].cancel()
            sock.close()
    assert sorted(taken)[len(taken) // 2] == 3, taken  # the server's part is one turn: aiohttp's was three
