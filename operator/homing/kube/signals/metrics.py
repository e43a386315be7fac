"""Prometheus metrics (behaviour.md "Operation"), and the endpoint that serves them: on the same
HTTP stack as readiness and kopf's liveness (aiohttp, which kopf brings), not prometheus_client's
thread-per-request server beside it."""
from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest

ADMISSIONS = Counter("homing_admissions_total", "Admission decisions", ["decision"])
# workload_* not namespace/kind: a scrape's target labels (namespace, pod) would rename them.
PLACEMENTS = Counter(
    "homing_placements_total", "Where pods sent home actually bound, and why not home",
    ["outcome", "reason", "workload_namespace", "workload_kind"],
)
PREFERRED_PLACEMENTS = Counter(
    "homing_preferred_placements_total", "Pods with no home bound where a preference beyond the home sent them", ["preference"]
)
WEBHOOK_SECONDS = Histogram(
    "homing_webhook_duration_seconds",
    "Time spent deciding one admission",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
ADMISSION_SECONDS = Histogram(
    "homing_admission_seconds",
    "Time from a review read whole by the webhook server to its answer: kopf's function, the decision, and any wait kopf's function made",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
ADMISSION_CONNECTIONS = Counter(
    "homing_admission_connections_total",
    "TLS connections reviews came on, each counted at its first review (a new one is a handshake)",
)
ADMISSION_ANSWERS = Counter(
    "homing_admission_answers_total",
    "Reviews answered, by when: in the loop callback that read them (at-arrival), "
    "or after kopf's function waited for something (after-a-wait)",
    ["when"],
)
ADMISSION_FAILED_OPEN = Counter(
    "homing_admission_failed_open_total",
    "Reviews answered allowed and unchanged because something on their way failed: kopf's function raised (kopf), "
    "kopf refused the pod after a handler raised (refused), homing's server raised (server)",
    ["where"],
)
ADMISSION_TURNED_AWAY = Counter(
    "homing_admission_turned_away_total",
    "Requests and connections the webhook server dealt with without kopf's function: refused with a 4xx (bad-http, "
    "not-a-review), allowed unchanged (not-a-pod-create), or closed (read-timeout, idle-timeout, connection-cap, connection-bytes)",
    ["reason"],
)
MEMORY_RANKS = Gauge("homing_memory_ranks", "Ranks remembered")
INDEX_ENTRIES = Gauge(
    "homing_index_entries",
    "Entries in each bounded map of the in-memory index: owners, ranks, pool entries, live pods, vacant homes, "
    "image runs, bursts, promises, waiting pods", ["map"],
)
EVENTS = Counter(
    "homing_events_total",
    "Events: posted, failed, aggregated (a repeat within events.aggregate_seconds), dropped (the queue was full)",
    ["result"],
)
MEMORY_OWNERS = Gauge("homing_memory_owners", "Owners remembered")
STORE_WRITES = Counter("homing_store_writes_total", "PlacementMemory writes")
STORE_ERRORS = Counter("homing_store_errors_total", "PlacementMemory writes or loads that failed")
NODES = Gauge("homing_nodes", "Nodes in the snapshot by health", ["health"])
LEADER = Gauge("homing_leader", "1 while this replica holds the leader Lease (writes memory, sweeps, certificates)")
REPLICAS_LIVE = Gauge("homing_replicas_live", "Replicas whose member Lease this replica sees fresh")
TAKEOVERS = Counter("homing_takeovers_total", "Times this replica became the leader")
CERT_EXPIRES = Gauge("homing_certificate_expires_timestamp_seconds", "When the served webhook certificate expires (epoch)")
CERT_RENEWALS = Counter("homing_certificate_renewals_total", "Certificate rotation steps taken by the leader", ["step"])
DELETION_MARKS = Counter(
    "homing_deletion_marks_total",
    "Deletion-cost marks on replicas bound to another workload's claimed home: set, cleared, failed", ["action"],
)
PATCH_GUARD = Gauge(
    "homing_pod_patch_guard",
    "The pod-patch guard's last self-check, 1 for the verdict it gave: holds, missing, no-api (marks off), unknown",
    ["verdict"],
)
IMAGE_LABEL_PATCHES = Counter(
    "homing_image_label_patches_total",
    "Node patches that set or removed image labels (behaviour.md \"Image labels\"), by result", ["result"]
)
DELETION_MARKED = Gauge("homing_deletion_marked", "Replicas homing has marked to be deleted first at scale-in")
READY = Gauge("homing_ready", "1 once memory is loaded and the webhook is registered")

# Self-health (behaviour.md "Operation")
EVENT_LOOP_LAG = Histogram(
    "homing_event_loop_lag_seconds",
    "How late the event loop woke a timer: time the loop spent on someone else's work",
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0),
)
GC_PAUSE = Histogram(
    "homing_gc_pause_seconds",
    "How long each garbage collection stopped the event loop, by generation",
    ["generation"],
    buckets=(0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
)
LOOP_FAILURES = Counter("homing_loop_failures_total", "Background loops that raised and were restarted", ["loop"])
WATCH_AGE = Gauge("homing_watch_age_seconds",
                  "ConfigMap reflectors: seconds since one last saw an event, bookmark, listing or a watch run to its end", ["resource"])
WATCH_BEHIND = Gauge("homing_watch_behind_seconds",
                     "kopf watches: seconds since a re-list found changes the watch never sent, with nothing from it since (0: delivering)",
                     ["resource"])
WATCH_MISSED = Counter("homing_watch_missed_total",
                       "What a re-list handed over because the watch had not: changes, and deletions (normal after kopf lists again)",
                       ["resource", "what"])
WATCH_ERRORS = Counter("homing_watch_errors_total", "Failed list or watch requests and handler errors", ["resource", "stage"])
WATCH_RELISTS = Counter("homing_watch_relists_total", "Listings after the first (expired version, failed watch)", ["resource"])


async def serve(host: str, port: int) -> web.AppRunner:
    """GET /metrics in Prometheus' text format. Call `cleanup()` on the result to stop."""

    async def scrape(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", scrape)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
