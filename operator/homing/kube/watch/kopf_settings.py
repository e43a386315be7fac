"""kopf's settings for an operator that only watches (behaviour.md "Operation": the loop that
answers admissions is never held up), through kopf's public settings and storage hooks:

- no diff base: homing has no create/update handlers, so the essence kopf builds per event
  to diff against the last one is never read — and kopf's own storage builds it by copying
  the whole object, status included, on every event of every pod;
- a bound on kopf's per-object workers and a short idle time for them: a listing of 20,000
  pods otherwise holds one worker, and its event, per pod at once;
- kopf's listings in pages: by default it lists a kind in one response, which for 20,000
  pods is parsed in one piece on the loop (seconds of it) and held whole in memory."""
from __future__ import annotations

import logging
from typing import Any

import kopf

WORKER_LIMIT = 256  # per watched kind; the watcher waits for a free worker beyond that
WORKER_IDLE_SECONDS = 0.05  # a worker waits this long for its object's next event, then ends
LIST_PAGE = 100  # objects per page of kopf's listings: a page of pods parses in ~10 ms


class NoDiffBase(kopf.DiffBaseStorage):
    """Nothing built, nothing stored: every event reads as "no change" to kopf's change detection."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> None:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def apply(settings: kopf.OperatorSettings) -> None:
    settings.peering.standalone = True
    settings.posting.level = logging.WARNING
    settings.admission.managed = None  # homing writes its own configuration (two selectors)
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.queueing.worker_limit = WORKER_LIMIT
    settings.queueing.idle_timeout = WORKER_IDLE_SECONDS
    settings.watching.chunk_size = LIST_PAGE
