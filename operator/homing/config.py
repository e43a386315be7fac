"""One settings model: environment variables (HOMING_*, nested with __) over an
optional YAML file (a mounted ConfigMap, path in HOMING_CONFIG_FILE) over defaults.
Defaults work on a plain cluster with no Ascend software."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from homing.configfile import YamlFileSource


class Weights(BaseModel):
    """Preferred-term weights (behaviour.md "Weights"). Validated at start-up: they must keep the order."""

    home: int = 100  # the rank's own node, healthy
    # The order of docs/behaviour.md ("Weights") after Kubernetes' normalisation, with a
    # claimed home below every other node by enough to outweigh the scheduler's image
    # locality: the claimed term lifts the best node's sum to ~450, so a normalisation step
    # is 5 and each step of the order is at least that (engine/placement/weights.py proves it).
    domains: list[int] = Field(default_factory=lambda: [32, 26, 20])  # innermost first
    image_warm: int = 10  # inside a level: warm and clear > warm > clear > the rest
    keep_clear: int = 5  # not a vacant home (of any owner, siblings included)
    # Nothing free: the chosen victim's nodes. Only for pods without domain terms, where
    # it acts as one more level: above image-warm and clear (10 + 5 and a step of 5).
    displace: int = 20
    # Beside the displace term: nodes free at admission, above displace (a freed victim
    # node is a gang's home) and below displace + image-warm (engine/placement/rules/free_room.py).
    free_room: int | None = None  # None: displace + half of image_warm (25)
    avoid_fault: int = 100  # NotIn the nodes the rank has a recent fault on
    # NotIn claimed homes (and the rank's fault nodes): carried by two terms (100 + 60),
    # since Kubernetes caps one term at 100. Outweighs domains + image locality.
    claimed: int = 160
    pool_home: int = 100  # a rankless pod's promised node
    pool_other: int = 50  # the pool's other free homes

    @model_validator(mode="after")
    def _keeps_order(self) -> Weights:
        from homing.engine.placement.weights import free_room_weight, order_violations

        self.free_room = free_room_weight(self)
        problems = order_violations(self)
        if problems:
            raise ValueError("weights cannot keep homing's node order (docs/behaviour.md, Weights): " + "; ".join(problems))
        return self


class Preferences(BaseModel):
    """behaviour.md "Beyond the home": what a pod prefers beyond its home; each can be switched off."""

    claimed_homes: bool = True  # keep off vacant homes whose pods are expected back (every pod)
    image_warm: bool = True  # nodes that hold the pod's images (kubelet status, where they ran)
    # Tenant-strict clusters: image-warm from homing's memory of the pod's own namespace only,
    # not from kubelet reports (which show where any tenant's images are).
    image_warm_namespace_only: bool = False
    # Pulls first: the leader labels each node with the large images its kubelet reports
    # (labels.image_prefix), and the home and image-warm terms ask for those labels, so the
    # scheduler sees at bind time whether a node still holds the image (behaviour.md
    # "Image labels"). Off, or without the right to patch nodes: host-name terms as written at admission.
    image_labels: bool = True
    vacant_homes: bool = True  # keep clear of every owner's vacant homes, not only siblings'
    displace_few: bool = True  # nothing free: the burst prefers one lower-priority workload's nodes
    free_room: bool = True  # beside displace few: the nodes free at admission first


class DeletionCost(BaseModel):
    """Scale-in frees the homes others wait for: a ReplicaSet's replica bound to another
    workload's claimed home gets a deletion cost below its siblings' (engine/replicas/deletion_cost.py)."""

    enabled: bool = True  # the leader marks such replicas (and unmarks them)
    interval_seconds: float = Field(default=1.0, gt=0)  # how often the leader compares marks with claims
    max_patches_per_second: int = Field(default=20, gt=0)  # the rate bound of its pod patches
    # How often the leader proves the pod-patch guard is in force (kube/leader/patch_guard.py) with a
    # dry-run patch: at its first mark, then this often.
    guard_check_seconds: float = Field(default=3600, gt=0)


class Tenancy(BaseModel):
    """behaviour.md "Tenants": whether namespaces share nodes (identity and memory never cross one)."""

    # On: every namespace's claimed and vacant homes and workloads steer every pod, and its claims
    # mark any namespace's replicas for deletion. Off: only the pod's (replica's) own namespace's.
    shared_nodes: bool = False


class Scope(BaseModel):
    namespace_label: str = "homing.io/enabled"  # namespaces with this label (and value) are served
    namespace_label_value: str = "true"  # the value that opts a namespace (or a pod) in
    pod_label: str = "homing.io/enabled"  # per-pod opt-in in namespaces that are not labelled
    # Off for a shard (docs/scale.md): a pod outside the shard's namespaces is never its
    # own, whatever its label, so two shards never both remember (and write) one owner.
    pod_opt_in: bool = True
    resource_prefixes: list[str] = Field(default_factory=lambda: ["huawei.com/", "nvidia.com/"])  # what counts as an accelerator


class Labels(BaseModel):
    hostname: str = "kubernetes.io/hostname"  # the label the terms name nodes by
    superpod: str = "homing.io/superpod-id"  # names a node's super-pod
    rack: str = "homing.io/rack-id"  # names a node's rack
    fault: str = "homing.io/fault"  # any value marks the node unhealthy
    sub_health: str = "homing.io/sub-healthy"  # any value marks the node sub-healthy
    image_prefix: str = "image.homing.io"  # <prefix>/<hash of the image name>: the node holds that image


class Topology(BaseModel):
    """Optional topology sources (behaviour.md "Topology", "Health")."""

    # MindCluster resource-level-config JSON: {"<tree>": {"level1": {"label": "..."}, ...}}
    resource_level_config: str | None = None
    device_info: bool = False  # copy SuperPodID/RackID from mindx-dl-deviceinfo-<node> onto node labels
    noded: bool = False  # take NodeD's NodeStatus from mindx-dl-nodeinfo-<node> as health


class Bounds(BaseModel):
    """Each at least 1: a bound of 0 would make every rank bad, every term list empty
    (`In []`, which the API server refuses) or every memory forgotten."""

    max_rank_part: int = Field(1_000_000, ge=1)  # ranks are 0 .. max_rank_part - 1
    max_term_values: int = Field(256, ge=1)  # node names in one term; the most relevant kept
    # Entries remembered in all: every rank, pool entry and owner counts one. Over it the least
    # recently seen owner of the namespace holding the most entries goes first.
    max_ranks: int = Field(1_000_000, ge=1)
    max_ranks_per_owner: int = Field(8192, ge=1)  # keeps one PlacementMemory well under etcd's 1.5 MiB
    max_image_runs: int = Field(1_000_000, ge=1)  # (image, node) runs kept for image-warm; least recently run images go first
    # Images at least this large get a node label (preferences.image_labels): below it a pull
    # takes seconds, and a label per sidecar would crowd the node's labels.
    image_label_min_bytes: int = Field(1_000_000_000, ge=0)


class Lifetimes(BaseModel):
    ttl_seconds: float = 72 * 3600  # forget an owner with no live pod unseen this long
    fault_memory_seconds: float = 3600  # how long a rank keeps off a node it failed on
    promise_seconds: float = 120  # how long a rankless promise holds an unbound pod's home
    # How long a ranked owner whose pods were all deleted before they ended still claims its
    # homes: a gang restart deletes every pod and creates them again (Volcano v1.15.1 took
    # 10-30 s between on the crowded day), and in that gap another gang took its homes.
    restart_hold_seconds: float = Field(60, ge=0)
    write_interval_seconds: float = 1.0  # the leader writes changed PlacementMemory this often
    durable_seen_seconds: float = 3600  # the stored lastSeen of an owner with live pods lags at most this
    sweep_interval_seconds: float = 60  # how often expired and over-bound owners are forgotten


class Events(BaseModel):
    """behaviour.md "Admission": the Events homing posts on pods and workloads, queued and
    aggregated as client-go's recorder does, so a burst of placements never becomes a burst
    of API writes."""

    enabled: bool = True  # off: no Event is posted (the metrics and logs still say it all)
    queue: int = Field(1000, ge=1)  # Events waiting to be posted; past it new ones are dropped and counted
    aggregate_seconds: float = Field(600, ge=0)  # one Event per object, reason and message this long; repeats are counted


class SelfHealth(BaseModel):
    """behaviour.md "Operation": when liveness fails."""

    watch_stale_seconds: float = 300  # a watch behind (or a ConfigMap reflector silent) this long is dead
    drain_seconds: float = Field(5.0, ge=0)  # the preStop hook's /drain: answer this long, closing each connection (drain.py)


class Watching(BaseModel):
    """behaviour.md "Operation": kopf watches every kind; a paged re-list hands over what a watch missed."""

    reconcile_seconds: float = Field(300, ge=0)  # each kind listed again this often; 0 switches the re-list off
    relist_gap_seconds: float = Field(30, ge=0)  # after kopf lists again itself (an expired version), this soon


class Webhook(BaseModel):
    port: int = 9443  # the webhook's HTTPS port
    listen: str = "0.0.0.0"  # the address it listens on
    # Either an external URL (local runs) or the in-cluster Service below.
    url: str | None = None
    service_name: str = "homing-webhook"  # the Service the webhook configuration names
    service_namespace: str = "homing-system"  # its namespace (and the Leases', by default)
    configuration_name: str = "homing"  # the MutatingWebhookConfiguration homing writes
    manage_configuration: bool = True  # the leader writes that configuration and its caBundle
    # The leader compares the installed configuration with what it wants this often, and
    # repairs it (webhookconfig.py): a missed caBundle push must not leave homing off unseen.
    configuration_check_seconds: float = Field(60, gt=0)
    tls_dir: str = "/tmp/homing-tls"  # where the serving certificate is written
    tls_secret: str | None = None  # keep the certificate in this Secret (service namespace) across restarts
    # Certificates from elsewhere (cert-manager): serve the tls.crt/tls.key/ca.crt mounted in
    # this directory, reloaded when they change; homing then neither makes nor renews any, and
    # leaves the webhook configuration's caBundle to whoever injects it (cert-manager's cainjector).
    mounted_tls_dir: str | None = None
    # Verify the caller: serve only clients whose certificate this CA bundle (a PEM file) signed.
    # The API server presents one to webhooks only where its admission configuration gives it
    # one (WebhookAdmissionConfiguration's kubeConfigFile, docs/operations.md "Security model");
    # set this there, and nothing else on the network can have a review decided. A file that
    # cannot be read stops the start-up: serving unverified would be a silent downgrade.
    client_ca_file: str | None = None
    timeout_seconds: int = 2  # timeoutSeconds in the webhook configuration
    # Label selectors ({"matchLabels": ..., "matchExpressions": [...]}) added to the ones scope
    # gives each entry of the webhook configuration: a namespace (a pod) must match both, so
    # these only narrow which pods the API server sends (e.g. never kube-system's).
    namespace_selector: dict[str, Any] = Field(default_factory=dict)  # added to each entry's namespaceSelector
    object_selector: dict[str, Any] = Field(default_factory=dict)  # added to each entry's objectSelector
    deadline_seconds: float = 0.25  # internal budget, well under timeout_seconds
    # cert-manager's shape: a CA signs a short-lived serving certificate; each is renewed
    # after two thirds of its life, while running (certplan.py).
    leaf_seconds: float = Field(7 * 86400, gt=0)  # the serving certificate's life
    ca_seconds: float = Field(365 * 86400, gt=0)  # the CA's life (rotated with overlap)
    cert_check_seconds: float | None = None  # default: a twentieth of the leaf's life, at most a minute
    cert_propagation_seconds: float = 5.0  # a new caBundle is in effect at the API server within this
    # What the webhook's HTTP accepts (docs/operations.md, "Security model"). The API server
    # refuses a request body over 3 MiB, so no pod it admits makes a larger review (the 8 MiB
    # allowed before only let a forged one hold more memory).
    max_review_bytes: int = Field(3 * 1024 * 1024, ge=64 * 1024)  # the largest request body (a review)
    # The API server sends about six headers, well under 1 KiB.
    max_head_bytes: int = Field(16 * 1024, ge=1024)  # the largest request line and headers
    max_headers: int = Field(64, ge=8)  # header fields in one request
    # From a request's first byte (or a new connection's start) to its last: a review comes
    # whole in milliseconds, and the API server waits for an answer 30 s at most (the largest
    # timeoutSeconds), so a request still coming after this is one nobody waits for.
    read_timeout_seconds: float = Field(10.0, gt=0)  # a request (or a new connection's first) read whole within this
    # A kept-alive connection's wait for its next request. Longer than a Go client's idle
    # keep-alive (90 s in http.DefaultTransport), so the API server closes an idle connection
    # first: a close from this side could cross its next POST, which Go does not retry.
    idle_timeout_seconds: float = Field(120.0, gt=0)  # a kept-alive connection with no request is closed after this
    # One more is closed as soon as it is accepted: a newcomer is refused, no open one dropped.
    # An API server holds about a connection a review in flight, and its mutating requests in
    # flight are bounded by --max-mutating-requests-inflight (200 by default): a few API
    # servers fit well within.
    max_connections: int = Field(1024, ge=1)  # connections open at once
    # Past them, the answer in progress closes the connection and the API server opens another
    # (which a Service may send to another replica).
    max_connection_bytes: int = Field(64 * 1024 * 1024, ge=1024)  # bytes one connection may send


class Replicas(BaseModel):
    """Several replicas (behaviour.md "Operation"): one Lease elects the writer; each replica's member Lease
    says it is alive, which splits rankless pools among the replicas (engine/replicas/shares.py).
    Timings are client-go's defaults; lease > renew > 1.2 x retry."""

    namespace: str | None = None  # where the Leases live; default: the webhook's service namespace
    lease_name: str = "homing-leader"  # the Lease whose holder writes
    member_prefix: str = "homing-member-"  # each replica's member Lease: <prefix><identity>
    identity: str | None = None  # default: the pod name (HOSTNAME) and a random suffix
    lease_seconds: float = 15.0  # the leader Lease's duration
    renew_seconds: float = 10.0  # the leader gives up unless it renewed within this
    retry_seconds: float = 2.0  # how often every replica tries the Lease
    # A node of a rankless pool moves to another replica's share only after this quiet time:
    # longer than a retry period plus the webhook timeout plus the pod watch's delay.
    handover_grace_seconds: float = 10.0

    @model_validator(mode="after")
    def _client_go_rules(self) -> Replicas:
        from homing.engine.replicas.leadership import Timings

        Timings(self.lease_seconds, self.renew_seconds, self.retry_seconds)  # raises when they could overlap
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HOMING_", env_nested_delimiter="__")

    scope: Scope = Field(default_factory=Scope)
    weights: Weights = Field(default_factory=Weights)
    preferences: Preferences = Field(default_factory=Preferences)
    deletion_cost: DeletionCost = Field(default_factory=DeletionCost)
    tenancy: Tenancy = Field(default_factory=Tenancy)
    labels: Labels = Field(default_factory=Labels)
    topology: Topology = Field(default_factory=Topology)
    bounds: Bounds = Field(default_factory=Bounds)
    lifetimes: Lifetimes = Field(default_factory=Lifetimes)
    events: Events = Field(default_factory=Events)
    webhook: Webhook = Field(default_factory=Webhook)
    health: SelfHealth = Field(default_factory=SelfHealth)
    watching: Watching = Field(default_factory=Watching)
    replicas: Replicas = Field(default_factory=Replicas)
    # One of several operators, each owning the namespaces its scope selects (docs/scale.md):
    # the name goes into the webhook configuration's, Service's and Leases' names unless
    # they are set, and turns the per-pod opt-in off unless that is set.
    shard: str | None = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
    # observe: decide and remember as usual, record the decision on each pod, add no affinity
    # term and write no deletion-cost mark (behaviour.md "Admission"): a team adopts homing in
    # shadow, and the placement outcomes say how often pods land home without it.
    mode: Literal["enforce", "observe"] = "enforce"
    metrics_port: int = 8080  # Prometheus /metrics
    health_port: int = 8081  # /readyz (homing's own)
    liveness_port: int = 8082  # /healthz, served by kopf from homing's probe
    log_level: str = "info"  # debug, info, warning or error

    @model_validator(mode="after")
    def _shard_names(self) -> Settings:
        if self.shard:
            w = self.webhook
            if "configuration_name" not in w.model_fields_set:
                w.configuration_name = f"{w.configuration_name}-{self.shard}"
            if "service_name" not in w.model_fields_set:
                w.service_name = f"{w.service_name}-{self.shard}"
            if "pod_opt_in" not in self.scope.model_fields_set:
                self.scope.pod_opt_in = False
            r = self.replicas
            if "lease_name" not in r.model_fields_set:
                r.lease_name = f"{r.lease_name}-{self.shard}"
            if "member_prefix" not in r.model_fields_set:
                r.member_prefix = f"{r.member_prefix}{self.shard}-"
        return self

    def shard_name(self, base: str) -> str:
        """`base`, or `base-<shard>` for a shard: names one operator's own objects (Lease, Secret)."""
        return f"{base}-{self.shard}" if self.shard else base

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, YamlFileSource(settings_cls))

