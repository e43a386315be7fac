"""A TCP round-robin proxy with failover, standing in for the webhook's Service: the
local control plane has no kube-proxy, yet the API server must reach every replica's
webhook through one address. Like a Service's endpoints, a backend gets new
connections only while its readiness URL answers 200; a backend that refuses a
connection is skipped for the next one. Bytes are piped untouched (TLS end to end).
Runs as its own process, as kube-proxy's rules run outside any pod: a test's busy process
never holds up a byte or a close, so a connection a replica closes is seen closed by the
client as soon as it would be through a Service (not after the test's own work lets a
thread run, which left a request sent on a closed connection unanswered).

`lag_s` holds every byte from the backend that long before passing it on: in front of
the API server it makes a client's watches run behind the cluster, as a busy operator's
do, while its requests still reach the server at once."""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Backend:
    port: int
    ready_url: str | None = None
    ready: bool = True


class TcpProxy:
    """The harness's handle on the proxy process: its address, its backends, its stop."""

    def __init__(self, probe_every: float = 0.2, lag_s: float = 0.0, host: str = "127.0.0.1") -> None:
        from homing_e2e.cluster import free_port

        self.host, self.port = host, free_port()
        self.lag_s, self.probe_every = lag_s, probe_every
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()  # one backends update and its answer at a time

    def start(self) -> TcpProxy:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "homing_e2e.tcpproxy", "--host", self.host, "--port", str(self.port),
             "--lag", str(self.lag_s), "--probe-every", str(self.probe_every)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        if self._proc.stdout.readline().strip() != "listening":
            raise RuntimeError(f"the proxy did not start (exit {self._proc.poll()})")
        return self

    def set_backends(self, backends: list[Backend]) -> None:
        """Returns once the proxy routes new connections by this list."""
        with self._lock:
            self._proc.stdin.write(json.dumps([asdict(b) for b in backends]) + "\n")
            self._proc.stdin.flush()
            self._proc.stdout.readline()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class _Proxy:
    def __init__(self, host: str, port: int, lag_s: float, probe_every: float) -> None:
        self.host, self.port, self.lag_s, self.probe_every = host, port, lag_s, probe_every
        self.backends: list[Backend] = []
        self._turn = itertools.count()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(self._serve, self.host, self.port)
        probing = loop.create_task(self._probe_forever())
        print("listening", flush=True)
        # The harness's backends, one JSON list a line, each answered once in force; EOF: stop.
        while line := await asyncio.to_thread(sys.stdin.readline):
            probed = {b.port: b.ready for b in self.backends}  # a kept endpoint keeps its last probe
            self.backends = [Backend(**{**b, "ready": probed.get(b["port"], True)}) for b in json.loads(line)]
            print("ok", flush=True)
        probing.cancel()
        server.close()

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
        for backend in self._order():
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", backend.port), 1.0)
            except (TimeoutError, OSError):
                continue
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


def main() -> None:
    ap = argparse.ArgumentParser(description="the harness's TCP proxy (TcpProxy runs it)")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--lag", type=float, default=0.0)
    ap.add_argument("--probe-every", type=float, default=0.2)
    args = ap.parse_args()
    asyncio.run(_Proxy(args.host, args.port, args.lag, args.probe_every).run())


if __name__ == "__main__":
    main()
