"""The real operator's webhook facing a hostile peer on its port (docs/operations.md, "Security
model"): with attack connections open — the 62-byte chunked request whose `-6` chunk size once
spun the operator's loop for ever, and a request that stops half-way (slowloris) — the API
server's calls are still answered: an ordinary pod is admitted with homing's decision within
2 s. The attack connections end on the webhook's own terms: a 4xx at once, and the read timeout."""
from __future__ import annotations

import asyncio
import ssl
import time

import pytest

from homing.config import Webhook
from homing_e2e import objects as o
from homing_e2e.webhook_ready import webhook_answers

pytestmark = pytest.mark.cluster

MINUS_6 = b"POST /homing-pods HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\n"
HALF_A_HEAD = b"POST /homing-pods HTTP/1.1\r\nHost: homing\r\nContent-Type: application/json\r\n"


def _attacker_tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # an attacker does not care whom it talks to
    return context


async def _attack(port: int, data: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=_attacker_tls())
    writer.write(data)
    await writer.drain()
    return reader, writer


async def _still_open(reader: asyncio.StreamReader) -> bool:
    try:
        await asyncio.wait_for(reader.read(1), 0.05)
    except TimeoutError:
        return True
    return False


@pytest.mark.timeout(120)
async def test_an_ordinary_pod_is_admitted_home_while_attack_connections_are_open(kube, operator, ns):
    await webhook_answers(kube, ns)
    owner = await o.owner_stand_in(kube, ns, "job")
    slow_reader, slow_writer = await _attack(operator.webhook_port, HALF_A_HEAD)
    spin_reader, spin_writer = await _attack(operator.webhook_port, MINUS_6)
    opened = time.monotonic()
    try:
        await asyncio.sleep(0.3)  # both attacks read by the operator
        assert await _still_open(slow_reader)
        taken = []
        for i in range(3):  # a few, so that one lucky answer proves nothing
            started = time.monotonic()
            created = await o.pod(kube, ns, f"job-{i}", owner=owner, annotations={"volcano.sh/task-index": str(i)})
            taken.append(time.monotonic() - started)
            assert o.decision(created), f"job-{i} admitted without homing's decision: the webhook did not answer"
        assert max(taken) < 2.0, taken
        assert await _still_open(slow_reader), "the slowloris connection should still be open: the test proves nothing"

        refused = await asyncio.wait_for(spin_reader.read(), 5)  # answered and closed at once
        assert refused.startswith(b"HTTP/1.1 4"), refused[:100]
        read_timeout = Webhook().read_timeout_seconds
        await asyncio.wait_for(slow_reader.read(), read_timeout + 5)  # ends: the operator closed it
        assert time.monotonic() - opened < read_timeout + 5
        assert operator.proc is not None and operator.proc.poll() is None
    finally:
        for writer in (slow_writer, spin_writer):
            writer.close()
