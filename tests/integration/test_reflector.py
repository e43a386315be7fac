"""The reflector against a real API server (behaviour.md "Operation"): list-then-watch, a re-list after
410 Gone names exactly the objects that still exist, a watch that dies fails liveness,
and a listing larger than a page is delivered whole, page by page."""
from __future__ import annotations

import asyncio
import time

import pytest

from homing.kube.client import Kube
from homing.kube.health.selfhealth import Supervisor
from homing.kube.watch.reflector import Reflector
from homing_e2e import objects

pytestmark = pytest.mark.cluster


class Recorder:
    """What a reflector handed over: events as (type, name), and each listing's uids."""

    def __init__(self) -> None:
        self.events: list[tuple[str | None, str]] = []
        self.objects: list[dict] = []
        self.listings: list[set[str]] = []

    def handle(self, kind: str | None, obj: dict) -> None:
        self.events.append((kind, obj["metadata"]["name"]))
        self.objects.append(obj)

    def listed(self, uids: set[str]) -> None:
        self.listings.append(uids)


def configmaps(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/configmaps"


def named(prefix: str):
    return lambda obj: obj["metadata"]["name"].startswith(prefix)


async def make_configmap(kube: Kube, ns: str, name: str) -> str:
    cm = await kube.request("POST", configmaps(ns), body={"metadata": {"name": name}, "data": {"v": "0"}})
    return cm["metadata"]["uid"]


async def until(check, timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        await asyncio.sleep(0.05)


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_list_then_watch_delivers_every_change(kube: Kube, ns: str) -> None:
    await make_configmap(kube, ns, "r-before")
    seen = Recorder()
    reflector = Reflector(kube, "configmaps", configmaps(ns), seen.handle, seen.listed, keep=named("r-"))
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.listed_once.wait(), 20)
        assert seen.events == [(None, "r-before")]
        await make_configmap(kube, ns, "r-new")
        await kube.request("PUT", f"{configmaps(ns)}/r-new", body={"metadata": {"name": "r-new"}, "data": {"v": "1"}})
        await kube.request("DELETE", f"{configmaps(ns)}/r-new")
        await until(lambda: ("DELETED", "r-new") in seen.events, what="DELETED r-new")
        assert seen.events == [(None, "r-before"), ("ADDED", "r-new"), ("MODIFIED", "r-new"), ("DELETED", "r-new")]
        assert reflector.age() < 20 and reflector.relists == 0
    finally:
        await stop(task)


def widget_crd(group: str) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    }


async def install_widgets(kube: Kube, ns: str) -> tuple[str, str]:
    """A CRD of its own (a fresh group each time): the path of its objects in `ns`, and
    the CRD's name."""
    group = f"r{objects.short_id()}.e2e.homing.io"
    crd = widget_crd(group)
    await objects.install_crd(kube, crd)
    return f"/apis/{group}/v1/namespaces/{ns}/widgets", crd["metadata"]["name"]


async def make_widget(kube: Kube, widgets: str, name: str) -> str:
    group = widgets.split("/")[2]
    made = await kube.request("POST", widgets, body={"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spin": 0})
    return made["metadata"]["uid"]


async def test_relist_after_410_leaves_out_what_was_deleted_meanwhile(kube: Kube, ns: str) -> None:
    """A pod deleted while the watch was away must not stay a phantom: after the re-list
    the listed uids no longer hold it (nor does any DELETED event tell). On a resource
    whose watch cache started with its CRD, version "1" is long gone: 410 at once."""
    widgets, crd_name = await install_widgets(kube, ns)
    gone_uid = await make_widget(kube, widgets, "r-gone")
    kept_uid = await make_widget(kube, widgets, "r-kept")
    seen = Recorder()
    reflector = Reflector(kube, "widgets", widgets, seen.handle, seen.listed, retry=0.2)
    task = asyncio.create_task(reflector.run())
    await asyncio.wait_for(reflector.listed_once.wait(), 20)
    assert seen.listings == [{gone_uid, kept_uid}]
    await stop(task)

    await kube.request("DELETE", f"{widgets}/r-gone")
    reflector.resource_version = "1"  # older than the server keeps: the watch gets 410 Gone
    task = asyncio.create_task(reflector.run())
    try:
        await until(lambda: len(seen.listings) == 2, what="a second listing")
        assert reflector.relists == 1
        assert seen.listings[-1] == {kept_uid}
        assert ("DELETED", "r-gone") not in seen.events  # only the listing tells
    finally:
        await stop(task)
        await kube.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")


async def test_watch_that_dies_fails_liveness(kube: Kube, ns: str) -> None:
    """A watched resource disappears (its CRD deleted): the reflector keeps retrying without
    crashing, and with no event, bookmark or listing for longer than the bound,
    liveness names it; while events flowed it was healthy."""
    widgets, crd_name = await install_widgets(kube, ns)
    await make_widget(kube, widgets, "w")
    sup = Supervisor(watch_stale_seconds=2)
    reflector = Reflector(kube, "widgets", widgets, lambda *_: None, retry=0.2)
    sup.watch(reflector)
    try:
        await asyncio.wait_for(reflector.listed_once.wait(), 20)
        for spin in range(1, 9):  # 4 s of events, twice the bound: fresh all along
            patch = {"spin": spin}
            await kube.request("PATCH", f"{widgets}/w", body=patch, content_type="application/merge-patch+json")
            await asyncio.sleep(0.5)
            assert sup.problems() == []

        await kube.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")
        await until(lambda: reflector.failures >= 1, what="a failed attempt")
        quiet_since = reflector.last_activity
        await until(lambda: reflector.failures >= 3, what="retries")
        assert reflector.last_activity == quiet_since  # a failed attempt is no sign of life
        await until(lambda: any("widgets" in p for p in sup.problems()), what="liveness naming the dead watch")
        assert not sup.loops["watch:widgets"].task.done()
        assert sup.loops["watch:widgets"].failures == 0  # the reflector absorbed every error itself
    finally:
        await sup.close()


class PageCounter:
    """A Kube stand-in that forwards every call and counts the listing's pages."""

    def __init__(self, kube: Kube) -> None:
        self.kube, self.api, self.pages = kube, kube.api, []

    async def request(self, method: str, path: str, **kw) -> dict:
        got = await self.kube.request(method, path, **kw)
        self.pages.append(len(got.get("items") or []))
        return got


async def test_listing_larger_than_a_page_is_delivered_whole(kube: Kube, ns: str) -> None:
    uids = {await make_configmap(kube, ns, f"p-{i:02d}") for i in range(12)}
    seen = Recorder()

    def handle(kind: str | None, obj: dict) -> None:
        if obj["metadata"]["name"] == "p-03":
            raise ValueError("one bad object")  # must not stop the rest
        seen.handle(kind, obj)

    counter = PageCounter(kube)
    reflector = Reflector(counter, "configmaps", configmaps(ns), handle, seen.listed, keep=named("p-"), page_size=5, slice_seconds=0)  # type: ignore[arg-type]
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.listed_once.wait(), 20)
    finally:
        await stop(task)
    assert len(counter.pages) >= 3 and max(counter.pages) <= 5  # 12 objects (+ the root CA) in pages of 5
    assert {name for _, name in seen.events} == {f"p-{i:02d}" for i in range(12)} - {"p-03"}
    assert seen.listings == [uids]  # the failing object still exists: listed all the same
    assert reflector.failures == 1
    assert all("managedFields" not in obj["metadata"] for obj in seen.objects)


async def test_watch_ended_by_the_server_resumes_and_stays_fresh(kube: Kube, ns: str) -> None:
    """The server ends every watch after timeoutSeconds: the reflector resumes from where
    it was and lists only once. A quiet resource gets no bookmark (the server sends one
    only past the watcher's version), so a watch that ran to its end is what keeps it
    fresh; once the version moves elsewhere (another namespace), bookmarks come."""
    seen = Recorder()
    reflector = Reflector(kube, "configmaps", configmaps(ns), seen.handle, seen.listed, keep=named("b-"))
    reflector.watch_timeout = 4
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.listed_once.wait(), 20)
        ages = []
        for _ in range(20):  # 10 s: two watches ended by the server, and no event here
            await asyncio.sleep(0.5)
            ages.append(reflector.age())
        assert max(ages) < 6, ages

        elsewhere = await objects.namespace(kube, f"t-{objects.short_id()}")
        listed_version, bookmarks = int(reflector.resource_version), reflector.bookmarks
        for i in range(10):  # configmaps change, in another namespace
            await make_configmap(kube, elsewhere, f"noise-{i}")
            await asyncio.sleep(0.5)
        await until(lambda: reflector.bookmarks > bookmarks, what="a bookmark")
        assert int(reflector.resource_version) > listed_version

        await make_configmap(kube, ns, "b-late")
        await until(lambda: ("ADDED", "b-late") in seen.events, what="an event on a resumed watch")
        assert seen.events == [("ADDED", "b-late")]
        assert len(seen.listings) == 1 and reflector.relists == 0 and reflector.failures == 0
    finally:
        await stop(task)
