"""Structured JSON logs (structlog) for homing and for kopf's own stdlib logging.

homing's own lines (two per admitted pod) go straight from structlog to stdout: the
stdlib round trip (a LogRecord, a handler, a formatter) cost more than the decision's
log line was worth on the loop that serves admissions. kopf's records keep the stdlib
path, rendered to the same JSON."""
from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog
from structlog.typing import EventDict, Processor


def _dumps(event: dict[str, Any], **_: Any) -> str:
    return orjson.dumps(event, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()


def configure(level: str = "info") -> None:
    number = logging.getLevelName(level.upper())
    known = isinstance(number, int)
    number = number if known else logging.INFO  # a misspelt level logs at info, and says so below
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, structlog.processors.JSONRenderer(serializer=_dumps)],
        logger_factory=structlog.WriteLoggerFactory(sys.stdout),
        wrapper_class=structlog.make_filtering_bound_logger(number),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, _kopf_object],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(serializer=_dumps),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(number)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # kopf logs every handled event at INFO; homing logs what it learnt from it instead.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    if not known:
        get("homing").warning("unknown log level; logging at info", requested=level)


def _kopf_object(logger: object, name: str, event: EventDict) -> EventDict:
    """kopf attaches the object a record is about as `k8s_ref`; keep its name only."""
    record = event.get("_record")
    ref = getattr(record, "k8s_ref", None)
    if isinstance(ref, dict):
        event["object"] = f"{ref.get('kind')}/{ref.get('namespace') or ''}/{ref.get('name')}"
    return event


def get(name: str = "homing") -> Any:
    """A bound logger. Lines carry no logger name (their event and fields say what they are
    about); `name` tells the reader of the source which part logs."""
    return structlog.get_logger(name)
