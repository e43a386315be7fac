"""List-then-watch of one collection, the way client-go's Reflector does it: a paged
LIST, then a WATCH from the list's resourceVersion with bookmarks, resumed where it
stopped when the server ends it, listed again when the version is gone (410).
After every listing `listed(uids)` names every object that exists, so the caller can
drop what it knew but was not listed: a pod deleted while the watch was away (behaviour.md "Operation")."""
from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson

from homing.kube.client import Kube, KubeError, without_bookkeeping
from homing.kube.signals import logs, metrics
from homing.kube.watch.lister import Slicer, list_pages

log = logs.get("homing.reflector")

Handler = Callable[[str | None, dict[str, Any]], None]
Listed = Callable[[set[str]], None]
Keep = Callable[[dict[str, Any]], bool]

MAX_BACKOFF = 60.0
# A stream that ends this soon without a single event is treated as a failure, so a
# server that closes watches at once cannot make us spin.
MIN_HEALTHY_STREAM = 1.0


class Gone(Exception):
    """The resourceVersion we hold is older than the server keeps: list again."""


class Reflector:
    # The server ends each watch after this long and we resume it. The server sends
    # bookmarks (about every minute) only when its resourceVersion moved past ours, so
    # a resource that nothing changes hears nothing at all: a watch that ran to its end
    # is its sign of life, which keeps a quiet watch younger than this bound, well
    # under the supervisor's watch_stale_seconds (300 s).
    watch_timeout = 120

    def __init__(
        self,
        kube: Kube,
        resource: str,
        path: str,
        handle: Handler,
        listed: Listed | None = None,
        keep: Keep | None = None,
        page_size: int = 500,
        slice_seconds: float = 0.002,
        retry: float = 2.0,
    ) -> None:
        self.kube, self.resource, self.path = kube, resource, path
        self.handle, self.listed, self.keep = handle, listed, keep
        self.page_size, self.retry = page_size, retry
        self.slicer = Slicer(slice_seconds)
        self.resource_version = ""  # empty: the next round lists first
        self.listed_once = asyncio.Event()
        self.last_activity = time.monotonic()
        self.relists = 0  # listings after the first
        self.bookmarks = 0
        self.failures = 0  # failed requests and handler exceptions

    def age(self, now: float | None = None) -> float:
        """Seconds since the last event, bookmark, completed listing or watch that ran
        to its end."""
        return (time.monotonic() if now is None else now) - self.last_activity

    async def run(self) -> None:
        """Forever; only cancellation ends it."""
        backoff = self.retry
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                if await self._watch():
                    self.last_activity = time.monotonic()
                    backoff = self.retry
                    continue
                raise ConnectionError("watch ended at once without an event")
            except asyncio.CancelledError:
                raise
            except Gone as gone:
                log.info("watch version expired; listing again", resource=self.resource, detail=str(gone)[:200])
                self.resource_version = ""
                continue
            except Exception as err:  # the API server went away, or answered nonsense
                self._failed("request", err)
                self.resource_version = ""
            await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            backoff = min(backoff * 2, max(MAX_BACKOFF, self.retry))

    async def _list(self) -> None:
        if self.listed_once.is_set():
            self.relists += 1
            metrics.WATCH_RELISTS.labels(self.resource).inc()
        uids, version = await list_pages(
            self.kube, self.path, lambda obj: self._deliver(None, obj), page_size=self.page_size, slicer=self.slicer
        )
        self._report_listed(uids)
        self.resource_version = version
        self.last_activity = time.monotonic()
        self.listed_once.set()
        log.info("listed", resource=self.resource, objects=len(uids), resource_version=version)

    def _report_listed(self, uids: set[str]) -> None:
        if self.listed is None:
            return
        try:
            self.listed(uids)
        except Exception as err:  # the caller's bug must not stop the watch
            self._failed("listed", err)

    async def _watch(self) -> bool:
        """One watch request, to its end. True when it ended normally (resume from
        `resource_version`); raises Gone when the version expired."""
        started, events = time.monotonic(), 0
        resp = await self._open_watch()
        try:
            async for line in _lines(resp):
                self._on_event(orjson.loads(line))  # several times json's speed: every pod event passes here
                events += 1
                await self.slicer.turn()
        finally:
            resp.close()
        return events > 0 or time.monotonic() - started >= MIN_HEALTHY_STREAM

    async def _open_watch(self) -> aiohttp.ClientResponse:
        query = [
            ("watch", "true"),
            ("resourceVersion", self.resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(self.watch_timeout)),
        ]
        resp: aiohttp.ClientResponse = await self.kube.api.call_api(
            self.path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            # Past the server's own timeout: a connection that went silent is cut.
            _request_timeout=aiohttp.ClientTimeout(total=self.watch_timeout + 60, sock_connect=30),
        )
        if resp.status == 200:
            return resp
        body = (await resp.read()).decode(errors="replace")
        resp.close()
        if resp.status == 410:
            raise Gone(body)
        raise KubeError(resp.status, body)

    def _on_event(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise Gone(json.dumps(obj)) if obj.get("code") == 410 else KubeError(obj.get("code") or 0, json.dumps(obj))
        self.resource_version = (obj.get("metadata") or {}).get("resourceVersion") or self.resource_version
        self.last_activity = time.monotonic()
        if kind == "BOOKMARK":
            self.bookmarks += 1
        else:
            self._deliver(kind, obj)

    def _deliver(self, kind: str | None, obj: dict[str, Any]) -> bool:
        """Hands one object over; False when `keep` refused it. A failing handler is
        logged and counted, and the next object goes on."""
        try:
            if self.keep is not None and not self.keep(obj):
                return False
            self.handle(kind, without_bookkeeping(obj))
        except Exception as err:
            self._failed("handle", err, name=(obj.get("metadata") or {}).get("name"))
        return True

    def _failed(self, stage: str, err: Exception, **context: object) -> None:
        self.failures += 1
        metrics.WATCH_ERRORS.labels(self.resource, stage).inc()
        log.warning(
            "watch step failed", resource=self.resource, stage=stage, error=repr(err)[:300],
            failures=self.failures, **context,
        )


async def _lines(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The stream's lines, however long: aiohttp's own line reader refuses lines over
    128 KiB, and a ConfigMap or an annotated pod can be bigger."""
    buffer = bytearray()
    async for chunk in resp.content.iter_any():
        searched = len(buffer)  # the newline can only be in the new bytes
        buffer.extend(chunk)
        start = 0
        while (end := buffer.find(b"\n", searched)) >= 0:
            if buffer[start:end].strip():
                yield bytes(buffer[start:end])
            start = searched = end + 1
        del buffer[:start]
    if buffer.strip():
        yield bytes(buffer)
