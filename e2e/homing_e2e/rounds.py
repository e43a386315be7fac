"""A stand-in for a node agent that acts in rounds (a kubelet marking pods running, a runner
starting processes): `step` once a period, in the background, until stopped."""
from __future__ import annotations

import asyncio


class Rounds:
    period = 0.25
    retried: tuple[type[BaseException], ...] = (Exception,)  # what a round may fail with: the next one tries again

    _task: asyncio.Task | None = None

    async def step(self) -> None:
        raise NotImplementedError

    async def _run(self) -> None:
        while True:
            try:
                await self.step()
            except self.retried:
                pass
            await asyncio.sleep(self.period)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
