"""The API client reads the environment per request only when a proxy is configured."""
from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from homing.kube.client import PROXY_VARIABLES, Kube


@pytest.mark.parametrize("proxy", [None, "HTTPS_PROXY", "http_proxy"])
async def test_the_session_reads_the_environment_only_for_a_proxy(monkeypatch, proxy):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if proxy:
        monkeypatch.setenv(proxy, "http://proxy.invalid:3128")
    configuration = client.Configuration()
    configuration.host = "https://127.0.0.1:6443"
    kube = Kube(client.ApiClient(configuration))
    try:
        assert kube.api.rest_client.pool_manager.trust_env is bool(proxy)
    finally:
        await kube.close()
