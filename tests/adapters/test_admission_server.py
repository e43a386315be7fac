"""The webhook server kopf runs through its public server protocol (behaviour.md "Operation", never
stall, never reject): it hands every pod CREATE review to kopf's function and nothing else,
answers with what kopf returns, closes each connection while draining, and admits the pod
unchanged whatever fails on the way, kopf's function, homing's handler, its logging or metrics.
And the registered `@kopf.on.mutate` handler is what sends the pod home."""
from __future__ import annotations

import asyncio
import base64
import functools
import socket
import ssl
from types import SimpleNamespace

import aiohttp
import jsonpatch
import kopf
import orjson
import pytest
from prometheus_client import REGISTRY

from homing.config import Webhook
from homing.kube import handlers
from homing.kube.admission import admission_server, admitter as admitter_module
from homing.kube.admission.admission_server import WEBHOOK_ID, AdmissionServer, hand_back, with_patch
from homing.kube.certs import tls
from homing.kube.signals import metrics

from .test_admitter import admitter, rank0
from .wire import POD_RESOURCE


def review(pod: dict, dry_run: bool = False, **request: object) -> dict:
    """As the API server sends it: a pod CREATE, with the resource and user kopf reads."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "resource": POD_RESOURCE,
                        "operation": "CREATE", "object": pod, "dryRun": dry_run, "userInfo": {"username": "u"}, **request}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A real server on a free port (plain HTTP: TLS is certstore's, tested there), run by
    the same protocol kopf runs it by, with `fn` standing where kopf's function stands."""

    def __init__(self, fn, limits: Webhook | None = None) -> None:
        self.fn, self.port, self.draining = fn, free_port(), False
        self.server = AdmissionServer("127.0.0.1", self.port, None, draining=lambda: self.draining, limits=limits or Webhook())

    async def __aenter__(self) -> Served:
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


async def test_a_refusal_or_a_failure_is_allowed_unchanged_without_the_handed_back_patch():
    """A preference never denies a pod: kopf's refusal (a handler raised inside it) is answered
    as its failure is, allowed and unchanged."""
    refusing, _ = kopf_like(allowed=False)

    async def failing(data: dict, **_: object) -> dict:
        hand_back([{"op": "add", "path": "/spec/nodeName", "value": "n1"}])
        raise RuntimeError("kopf failed after the handler ran")

    async with Served(refusing) as s:
        _, refused, _ = await s.post(orjson.dumps(review(rank0())))
    async with Served(failing) as s:
        _, failed, _ = await s.post(orjson.dumps(review(rank0())))
    assert refused["response"] == {"uid": "req-1", "allowed": True}
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


# --- kopf's own function: what reaches it, and what fails on the way -----------------------------

def kopfs_own_function(memo_admitter=None):
    """kopf's admission function with homing's handler registered, bound as kopf.operator() binds it
    for a webhook server, without the API server an operator needs to start (kopf's engine modules:
    kopf is pinned exactly). Also its memories: the per-object memos a forged review must not grow."""
    from kopf._cogs.structs.references import Insights, Resource
    from kopf._core.engines.admission import serve_admission_request
    from kopf._core.engines.indexing import OperatorIndexers
    from kopf._core.reactor.inventory import ResourceMemories

    registry = kopf.OperatorRegistry()
    kopf.on.mutate("", "v1", "pods", id=WEBHOOK_ID, operations=["CREATE"], ignore_failures=True, side_effects=False,
                   registry=registry)(handlers.admit_pod)
    insights = Insights()
    insights.webhook_resources.add(Resource(group="", version="v1", plural="pods", kind="Pod", singular="pod",
                                            namespaced=True, verbs=["create"]))
    memories = ResourceMemories()
    memo = kopf.Memo(runtime=SimpleNamespace(admitter=memo_admitter or admitter()))
    fn = functools.partial(serve_admission_request, settings=kopf.OperatorSettings(), registry=registry, insights=insights,
                           memories=memories, memobase=memo, indices=OperatorIndexers().indices)
    return fn, memories


def failed_open(where: str) -> float:
    return REGISTRY.get_sample_value("homing_admission_failed_open_total", {"where": where}) or 0.0


async def test_a_pod_create_goes_through_kopfs_own_function_and_comes_back_home():
    fn, memories = kopfs_own_function()
    pod = rank0()
    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(review(pod)))
    assert status == 200 and answer["response"]["allowed"] is True and answer["response"]["uid"] == "req-1"
    (term,) = patched(pod, answer)["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][:1]
    assert term["preference"]["matchExpressions"][0]["values"] == ["n1"]
    assert len(memories._items) == 0  # a CREATE's memo is kopf's ephemeral one


def _forged_uid_object(size: int) -> dict:
    pod = rank0()
    pod["metadata"]["uid"] = "u" * size
    return pod


NOT_FOR_KOPF = {
    "update": review(rank0(), operation="UPDATE", oldObject=rank0()),
    "update-with-a-1-MiB-object-uid": review(_forged_uid_object(1 << 20), operation="UPDATE"),
    "delete": review(None, operation="DELETE", oldObject=rank0()),
    "connect": review(rank0(), operation="CONNECT"),
    "another-resource": review({"metadata": {"name": "c"}}, resource={"group": "", "version": "v1", "resource": "configmaps"}),
    "another-version": review(rank0(), resource={"group": "", "version": "v2", "resource": "pods"}),
    "a-subresource": review(rank0(), subResource="binding"),
    "no-object": review(None),
    "no-user": review(rank0(), userInfo=None),
}


@pytest.mark.parametrize("data", NOT_FOR_KOPF.values(), ids=NOT_FOR_KOPF.keys())
async def test_a_review_that_is_no_pod_create_is_allowed_unchanged_without_kopf(data):
    """kopf keeps a memo for every object a non-CREATE review names, for the process's life: a
    forged review must not reach it (nor homing's handler, which would leave promises)."""
    fn, memories = kopfs_own_function()
    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(data))
    assert status == 200
    assert answer == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "response": {"uid": "req-1", "allowed": True}}
    assert len(memories._items) == 0


async def test_a_review_posted_to_another_path_is_allowed_unchanged_without_kopf():
    fn, memories = kopfs_own_function()
    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(review(rank0())), webhook="other")
        missing, _, _ = await s.post(b"{}", webhook="other")
    assert status == 200 and answer["response"] == {"uid": "req-1", "allowed": True}
    assert missing == 404
    assert len(memories._items) == 0


NOT_A_REVIEW = {
    "not-json": b"{not json",
    "a-list": b"[1, 2]",
    "another-kind": orjson.dumps({**review(rank0()), "kind": "Pod"}),
    "another-api-version": orjson.dumps({**review(rank0()), "apiVersion": "admission.k8s.io/v1beta1"}),
    "no-request": orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
    "a-numeric-uid": orjson.dumps(review(rank0(), uid=7)),
    "an-8-KiB-uid": orjson.dumps(review(rank0(), uid="u" * 8192)),
}


@pytest.mark.parametrize("body", NOT_A_REVIEW.values(), ids=NOT_A_REVIEW.keys())
async def test_what_is_not_an_admission_review_is_a_bad_request_and_never_reaches_kopf(body):
    fn, memories = kopfs_own_function()
    async with Served(fn) as s:
        status, _, _ = await s.post(body)
    assert status == 400
    assert len(memories._items) == 0


def _raises(*_: object, **__: object) -> None:
    raise RuntimeError("a metrics or logging call failed")


class RaisingLog:
    def __getattr__(self, name: str):
        return _raises


@pytest.mark.parametrize("breaks", ["decision-histogram", "admitted-log-line"])
async def test_a_handler_failing_outside_the_admitters_own_try_never_denies_the_pod(monkeypatch, breaks):
    """kopf turns a handler's exception into `allowed: false`; the server turns it back: a
    preference never denies a pod."""
    if breaks == "decision-histogram":
        monkeypatch.setattr(metrics.WEBHOOK_SECONDS, "observe", _raises)
    else:
        monkeypatch.setattr(admitter_module, "log", RaisingLog())
    fn, _ = kopfs_own_function()
    before = failed_open("refused")
    await admitted_unchanged(fn)
    assert failed_open("refused") == before + 1


async def admitted_unchanged(fn) -> None:
    """One rank's review through the server answers allowed, with no patch."""
    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(review(rank0())))
    assert status == 200
    assert answer == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "response": {"uid": "req-1", "allowed": True}}


@pytest.mark.parametrize("breaks", ["answers-counter", "connections-counter", "arrival-histogram"])
async def test_the_servers_own_metrics_failing_still_admit_the_pod(monkeypatch, breaks):
    target = {"answers-counter": (metrics.ADMISSION_ANSWERS, "labels"),
              "connections-counter": (metrics.ADMISSION_CONNECTIONS, "inc"),
              "arrival-histogram": (metrics.ADMISSION_SECONDS, "observe")}[breaks]
    monkeypatch.setattr(*target, _raises)
    fn, _ = kopfs_own_function()
    async with Served(fn) as s:
        status, answer, _ = await s.post(orjson.dumps(review(rank0())))
        again, _, _ = await s.post(orjson.dumps(review(rank0())))
    assert status == 200 and again == 200
    assert answer["response"]["uid"] == "req-1" and answer["response"]["allowed"] is True


@pytest.mark.parametrize("waits", [False, True], ids=["at-arrival", "after-a-wait"])
async def test_kopfs_function_failing_and_the_servers_log_failing_too_still_admit_the_pod(monkeypatch, waits):
    async def failing(data: dict, **_: object) -> dict:
        if waits:
            await asyncio.sleep(0.01)
        raise RuntimeError("kopf failed")

    monkeypatch.setattr(admission_server, "log", RaisingLog())
    before = failed_open("kopf")
    await admitted_unchanged(failing)
    assert failed_open("kopf") == before + 1
