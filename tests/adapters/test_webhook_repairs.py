"""What homing writes to bring the installed webhook configuration back to what it wants
(kube/admission/webhookconfig.py `repairs`): its own fields only, each whole, guarded by the version read.
The API server applying them is in tests/integration/test_webhook_configuration.py."""
from __future__ import annotations

import copy

import jsonpatch
import pytest

from homing.config import Settings
from homing.kube.admission.webhookconfig import configuration, repairs

CA = b"-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n"


def installed(**changes) -> dict:
    current = copy.deepcopy(configuration(Settings(), CA))
    current["metadata"]["resourceVersion"] = "7"
    for path, value in changes.items():
        target = current
        *parents, last = path.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is None:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return current


@pytest.mark.parametrize(
    "current, paths",
    [
        pytest.param(installed(), [], id="up-to-date"),
        pytest.param(installed(**{"webhooks.0.clientConfig": {"service": {"name": "x", "namespace": "y", "path": "/", "port": 443},
                                                               "caBundle": "YnJva2Vu"}}),
                     ["/webhooks/0/clientConfig"], id="ca-broken-by-hand"),
        pytest.param(installed(**{"webhooks.1": None}), ["/webhooks/-"], id="an-entry-deleted"),
        pytest.param(installed(**{"webhooks.0.timeoutSeconds": 30}), ["/webhooks/0/timeoutSeconds"], id="a-field-homing-sets"),
        pytest.param(installed(**{"webhooks.0.matchConditions": [{"name": "x", "expression": "true"}],
                                  "metadata.annotations": {"a": "b"}}), [], id="an-admins-additions-are-not-drift"),
    ],
)
def test_repairs(current, paths):
    wanted = configuration(Settings(), CA)
    ops = repairs(current, wanted)
    assert [op["path"] for op in ops[1:]] == paths
    if ops:
        assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
        repaired = jsonpatch.apply_patch(current, ops)
        assert repairs(repaired, wanted) == [], "applied, nothing is left to repair"
        assert {k: v for k, v in repaired.items() if k != "webhooks"} == {k: v for k, v in current.items() if k != "webhooks"}


def test_a_url_replaces_a_service_whole():
    """Server-side apply would merge the two into an object the API server refuses."""
    current = installed()
    settings = Settings(webhook={"url": "https://10.0.0.1:9443"})
    repaired = jsonpatch.apply_patch(current, repairs(current, configuration(settings, CA)))
    assert all("service" not in w["clientConfig"] and "url" in w["clientConfig"] for w in repaired["webhooks"])
