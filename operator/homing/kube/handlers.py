"""kopf handlers: start-up, clean-up, liveness and the admission webhook; the watches'
handlers are in watches.py. The runtime lives in kopf's `memo`; the durable state lives
in PlacementMemory."""
from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from urllib.parse import urlparse

import jsonpatch
import kopf

from homing.config import Settings
from homing.kube.admission import drain, webhookconfig
from homing.kube.admission.admission_server import WEBHOOK_ID, AdmissionServer, hand_back
from homing.kube.certs import certstore
from homing.kube.client import Kube, KubeError
from homing.kube.health import selfhealth
from homing.kube.leader.deletion_marks import DeletionMarks
from homing.kube.leader.image_labels import ImageLabels
from homing.kube.leader.replicas import Replicas
from homing.kube.runtime import Runtime
from homing.kube.signals import logs, metrics
from homing.kube.signals.events import EventPoster
from homing.kube.state.deviceinfo import DeviceInfoCopier
from homing.kube.store import upkeep
from homing.kube.store.store import Store
from homing.kube.watch import kopf_settings, startup, watches

log = logs.get("homing.kube")


def _webhook_hosts(s: Settings) -> list[str]:
    w = s.webhook
    hosts = [f"{w.service_name}.{w.service_namespace}.svc", f"{w.service_name}.{w.service_namespace}.svc.cluster.local"]
    if w.url:
        hosts.insert(0, urlparse(w.url).hostname or "localhost")
    return [*dict.fromkeys([*hosts, "localhost", "127.0.0.1"])]


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: object) -> None:
    config = Settings()
    kopf_settings.apply(settings)
    kube = await Kube.connect()
    certs = certstore.Certificates(kube, config, _webhook_hosts(config))
    await certs.start()  # the certificate, loaded into certs.context
    settings.admission.server = AdmissionServer(
        config.webhook.listen, config.webhook.port, certs.context, draining=lambda: drain.current.active, limits=config.webhook
    )
    sup = selfhealth.current = selfhealth.Supervisor(watch_stale_seconds=config.health.watch_stale_seconds)
    replicas = Replicas(kube, config)
    events = EventPoster(kube, enabled=lambda: replicas.leading, settings=config.events)
    rt = Runtime(config, store=Store(kube, on_refused=events.refused), events=events)
    image_labels = ImageLabels(kube, config, lambda: replicas.leading)
    rt.cluster.node_listeners.append(image_labels.observe)  # before start-up lists the nodes
    watched = watches.for_runtime(rt, kube)
    memo.runtime, memo.kube, memo.supervisor, memo.replicas, memo.watches = rt, kube, sup, replicas, watched
    await startup.load(rt, watched)
    sup.sources.append(lambda: watched.problems(config.health.watch_stale_seconds))
    startup.relists(watched, sup)
    assert rt.store is not None
    store = rt.store
    replicas.on_elected = lambda: _take_over(rt, store, kube, config, certs.bundle)
    rt.admitter.may_promise = replicas.may_promise
    sup.spawn("replicas", replicas.forever)
    sup.spawn("flush", lambda: upkeep.flush_forever(rt.index, store, config, lambda: replicas.leading))
    sup.spawn("sweep", upkeep.Sweeper(rt.index, store, config, lambda: replicas.leading).forever)
    sup.spawn("deletion-marks", DeletionMarks(kube, rt, config, lambda: replicas.leading).forever)
    sup.spawn("image-labels", image_labels.forever)
    copier = DeviceInfoCopier(rt, kube, lambda: replicas.leading).handle if config.topology.device_info else None
    startup.configmap_watches(rt, kube, sup, copier)
    upkeep.refresh_gauges(rt.index)
    sup.spawn("certificates", lambda: certs.forever(lambda: replicas.leading, lambda ca: _bundle_changed(kube, config, ca)))
    if config.webhook.manage_configuration:
        sup.spawn("webhook-configuration", lambda: _configuration_kept(kube, config, certs, lambda: replicas.leading))
    sup.spawn("ready", lambda: _ready_when_serving(config.webhook.port, certs.bundle), restart=False)


async def _bundle_changed(kube: Kube, config: Settings, ca: bytes) -> None:
    if config.webhook.manage_configuration:
        await webhookconfig.ensure(kube, config, ca)


async def _configuration_kept(kube: Kube, config: Settings, certs: certstore.Certificates,
                              leading: Callable[[], bool]) -> None:
    """Level-triggered (webhookconfig.ensure): the leader compares and repairs the webhook
    configuration every `configuration_check_seconds`, whatever pushed or edited it last."""
    while True:
        await asyncio.sleep(config.webhook.configuration_check_seconds)
        if leading():
            try:
                await webhookconfig.ensure(kube, config, certs.bundle)
            except (KubeError, OSError, TimeoutError) as err:  # asked again at the next check
                log.warning("webhook configuration not checked", error=str(err)[:200])


async def _take_over(rt: Runtime, store: Store, kube: Kube, config: Settings, ca: bytes) -> None:
    """Elected: write at once what this replica saw while it stood by (bindings during the
    takeover included), and bring the webhook configuration up to date."""
    if config.webhook.manage_configuration:
        await webhookconfig.ensure(kube, config, ca)
    await upkeep.flush_once(rt.index, store)
    log.info("took over as leader", owners_dirty=len(rt.index.dirty))


async def _ready_when_serving(port: int, ca: bytes) -> None:
    """Ready once the webhook answers TLS with our certificate: kopf starts its server
    after the start-up handlers, and a pod created before that is admitted unchanged."""
    context = ssl.create_default_context(cadata=ca.decode()) if ca else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    if not ca:  # mounted certificates without their CA: any certificate served will do here
        context.verify_mode = ssl.CERT_NONE
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    metrics.READY.set(1)
    log.info("homing ready", webhook_port=port)
    await asyncio.Event().wait()  # a supervised loop: ending would read as dead


@kopf.on.probe(id="homing")
async def liveness(**_: object) -> str:
    """kopf's liveness endpoint answers 500 while this raises: a loop dead or failing, a
    watch behind, a ConfigMap reflector silent (selfhealth.py)."""
    found = selfhealth.liveness_problems()
    if found:
        raise kopf.PermanentError("; ".join(found))  # permanent: kopf answers at once, no retry
    return "ok"


@kopf.on.cleanup()
async def stop(memo: kopf.Memo, **_: object) -> None:
    metrics.READY.set(0)
    sup: selfhealth.Supervisor | None = getattr(memo, "supervisor", None)
    if sup is not None:
        await sup.close()
    rt: Runtime | None = getattr(memo, "runtime", None)
    replicas: Replicas | None = getattr(memo, "replicas", None)
    if rt is not None and rt.store is not None and replicas is not None and replicas.leading:
        await upkeep.flush_once(rt.index, rt.store)  # the last second of changes
    if replicas is not None:
        await replicas.release()  # a standby takes over now, not a lease duration later
    if getattr(memo, "kube", None) is not None:
        await memo.kube.close()


@kopf.on.mutate("", "v1", "pods", id=WEBHOOK_ID, operations=["CREATE"], ignore_failures=True, side_effects=False)
async def admit_pod(
    body: kopf.Body, patch: kopf.Patch, warnings: list[str], dryrun: bool, memo: kopf.Memo, **_: object
) -> None:
    """Preferred node affinity towards home. No API call here; never rejects. The patch goes
    back to homing's server as it is; only under another server through kopf's `Patch`."""
    decision, ops = memo.runtime.admitter.admit(dict(body), dryrun)
    warnings.extend(decision.warnings)
    if ops and not hand_back(ops):
        patch.fns.append(lambda raw: jsonpatch.apply_patch(raw, ops, in_place=True))
