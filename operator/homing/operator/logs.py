"""Structured JSON logs (structlog) for homing and for kopf's own stdlib logging."""
from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "info") -> None:
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, _kopf_object],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # kopf logs every handled event at INFO; homing logs what it learnt from it instead.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)


def _kopf_object(logger: object, name: str, event: dict) -> dict:
    """kopf attaches the object a record is about as `k8s_ref`; keep its name only."""
    record = event.get("_record")
    ref = getattr(record, "k8s_ref", None)
    if isinstance(ref, dict):
        event["object"] = f"{ref.get('kind')}/{ref.get('namespace') or ''}/{ref.get('name')}"
    return event


def get(name: str = "homing") -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)
