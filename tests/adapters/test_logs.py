"""The operator's log lines: one JSON object per line, homing's and kopf's alike, at the
configured level (run in a child process: configuration is process-wide)."""
from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import logging
from homing.kube.signals import logs
logs.configure("info")
log = logs.get("homing.admission")
log.debug("hidden", owner="o")
log.info("admitted", owner="ns/Job/train", rank="3", pod="train-3", node="n1", extra={1: object()})
try:
    raise ValueError("boom")
except ValueError:
    log.exception("decision failed")
logging.getLogger("kopf.activities").warning("kopf says %s", "hello")
logging.getLogger("kopf.objects").info("kopf per-object chatter")
"""


def test_homing_and_kopf_lines_are_json_at_the_configured_level():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    events = [line["event"] for line in lines]
    assert events == ["admitted", "decision failed", "kopf says hello"]
    admitted = lines[0]
    assert admitted["level"] == "info" and admitted["owner"] == "ns/Job/train" and admitted["node"] == "n1"
    assert admitted["timestamp"].endswith("Z") and "1" in admitted["extra"]  # odd values rendered, not raised
    assert lines[1]["level"] == "error" and "ValueError: boom" in lines[1]["exception"]
    assert lines[2]["level"] == "warning"


def test_a_misspelt_level_logs_at_info_and_says_so():
    script = ("from homing.kube.signals import logs\nlogs.configure('verbose')\n"
              "logs.get('homing').debug('hidden')\nlogs.get('homing').info('shown')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [(line["level"], line["event"]) for line in lines] == [("warning", "unknown log level; logging at info"), ("info", "shown")]
    assert lines[0]["requested"] == "verbose"
