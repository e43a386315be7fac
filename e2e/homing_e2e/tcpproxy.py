"""A TCP round-robin proxy with failover, standing in for the webhook's Service: the
local control plane has no kube-proxy, yet the API server must reach every replica's
webhook through one address. Like a Service's endpoints, a backend gets new
connections only while its readiness URL answers 200; a backend that refuses a
connection is skipped for the next one. Bytes are piped untouched (TLS end to end).
Runs its own event loop in a thread, so a test's loop never slows it down.

`lag_s` holds every byte from the backend that long before passing it on: in front of
the API server it makes a client's watches run behind the cluster, as a busy operator's
do, while its requests still reach the server at once."""
from __future__ import annotations

import asyncio
import itertools
import threading
import urllib.request
from dataclasses import dataclass

from homing_e2e.cluster import free_port


@dataclass
class Backend:
    port: int
    ready_url: str | None = None
    ready: bool = True


class TcpProxy:
    def __init__(self, probe_every: float = 0.2, lag_s: float = 0.0, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, free_port()
        self.lag_s = lag_s
        self.backends: list[Backend] = []
        self.probe_every = probe_every
        self.connections = 0
        self.failovers = 0  # connections that went to another backend than first chosen
        self._turn = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="tcp-proxy")
        self._server: asyncio.base_events.Server | None = None

    # -- the harness's side ---------------------------------------------------------------
    def start(self) -> "TcpProxy":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def set_backends(self, backends: list[Backend]) -> None:
        self._loop.call_soon_threadsafe(setattr, self, "backends", list(backends))

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # ended before the loop stops: no "destroyed pending" noise

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # -- the proxy ------------------------------------------------------------------------
    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self._loop.create_task(self._probe_forever())

    async def _probe_forever(self) -> None:
        while True:
            for backend in list(self.backends):
                if backend.ready_url:
                    backend.ready = await asyncio.to_thread(_answers_200, backend.ready_url)
            await asyncio.sleep(self.probe_every)

    def _order(self) -> list[Backend]:
        """Ready backends in round-robin order, then the rest (better than nothing)."""
        backends = list(self.backends)
        if not backends:
            return []
        start = next(self._turn) % len(backends)
        rotated = backends[start:] + backends[:start]
        return [b for b in rotated if b.ready] + [b for b in rotated if not b.ready]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        for attempt, backend in enumerate(self._order()):
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", backend.port), 1.0)
            except (OSError, asyncio.TimeoutError):
                continue
            if attempt:
                self.failovers += 1
            back = _lagged_pipe(up_reader, writer, self.lag_s) if self.lag_s else _pipe(up_reader, writer)
            await asyncio.gather(_pipe(reader, up_writer), back, return_exceptions=True)
            return
        writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def _lagged_pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, lag_s: float) -> None:
    """Each chunk passed on `lag_s` after it arrived, in order."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        try:
            while data := await reader.read(65536):
                chunks.put_nowait((loop.time() + lag_s, data))
        finally:
            chunks.put_nowait((loop.time() + lag_s, b""))

    reading = asyncio.create_task(read())
    try:
        while True:
            due, data = await chunks.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                return
            writer.write(data)
            await writer.drain()
    finally:
        reading.cancel()
        writer.close()


def _answers_200(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=0.5) as resp:
            return resp.status == 200
    except Exception:
        return False
