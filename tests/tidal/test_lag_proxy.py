"""The harness's proxy (e2e/homing_e2e/tcpproxy.py), the webhook's Service in tests: it relays
whatever the test's own process is doing, as kube-proxy does; with `lag_s`, what the backend sends
arrives that much later and in order while what the client sends goes through at once."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
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


# An echo backend and a client of it through the proxy, in a process of their own: it prints the
# backend's port, waits for a line, then prints how long one exchange through the proxy took.
ECHO_AND_CLIENT = """
import socket, sys, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
def echo():
    c, _ = srv.accept(); c.sendall(c.recv(16)); c.close()
threading.Thread(target=echo, daemon=True).start()
print(srv.getsockname()[1], flush=True)
sys.stdin.readline()
time.sleep(0.3)
t = time.monotonic()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(b"ping"); got = s.recv(16)
print(round(time.monotonic() - t, 3), got.decode(), flush=True)
"""


def test_the_proxy_relays_while_the_tests_own_process_holds_the_interpreter():
    """A replica's close must reach the API server as fast as through a Service: a proxy run by
    the test's own interpreter waited for the test's work (a request then went out on a
    connection already closed behind the proxy, unanswered). Here the test's process holds its
    interpreter lock for seconds while another process exchanges bytes through the proxy."""
    proxy = TcpProxy().start()
    other = subprocess.Popen([sys.executable, "-c", ECHO_AND_CLIENT, str(proxy.port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        proxy.set_backends([Backend(int(other.stdout.readline()))])
        held: list[float] = []

        def hold() -> None:  # sum over a range runs in C without letting another thread in
            t = time.monotonic()
            sum(range(200_000_000))
            held.append(time.monotonic() - t)

        other.stdin.write("go\n")
        other.stdin.flush()
        holder = threading.Thread(target=hold)
        holder.start()
        holder.join()
        took, echoed = other.stdout.readline().split()
        assert echoed == "ping"
        assert held[0] > 1.0, f"the lock was held {held[0]:.2f} s: too short to tell"
        assert float(took) < 0.5, f"one exchange took {took} s while the test's process was busy"
    finally:
        other.kill()
        proxy.stop()
