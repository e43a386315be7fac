"""The harness's lagging proxy (e2e/homing_e2e/tcpproxy.py `lag_s`): what the backend sends
arrives that much later and in order; what the client sends goes through at once."""
from __future__ import annotations

import asyncio
import time

from homing_e2e.tcpproxy import Backend, TcpProxy


async def test_the_backends_bytes_arrive_late_and_in_order_the_clients_at_once():
    received: list[tuple[float, bytes]] = []

    async def backend(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append((time.monotonic(), await reader.readexactly(4)))
        for part in (b"one ", b"two ", b"three"):
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.close()

    server = await asyncio.start_server(backend, "127.0.0.1", 0)
    proxy = TcpProxy(lag_s=0.4).start()
    try:
        proxy.set_backends([Backend(server.sockets[0].getsockname()[1])])
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        sent = time.monotonic()
        writer.write(b"ping")
        await writer.drain()
        first = await reader.readexactly(4)
        first_at = time.monotonic()
        rest = await reader.read()
        writer.close()
        assert received and received[0][1] == b"ping" and received[0][0] - sent < 0.3, "the client's bytes were held"
        assert first == b"one " and rest == b"two three"
        assert first_at - received[0][0] >= 0.4, "the backend's answer came early"
    finally:
        proxy.stop()
        server.close()
