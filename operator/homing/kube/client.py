"""A small JSON-in, JSON-out layer over kubernetes_asyncio's ApiClient, so the
adapters deal in plain dicts like the engine does."""
from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any, Protocol

import orjson
from kubernetes_asyncio import client, config

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# A listing of identities only: each item's metadata, no spec or status (the API server's
# PartialObjectMetadata, as client-go's metadata informers read it). Plain JSON after the comma:
# a server that cannot answer in this form answers in full, and metadata is read the same way.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


class KubeError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


class Kube:
    def __init__(self, api_client: client.ApiClient) -> None:
        self.api = api_client
        # kubernetes_asyncio's session reads the environment on every request (a netrc file
        # and the proxy variables, each in a worker thread); with no proxy set that is ~0.3 ms
        # of a busy loop per request for nothing, so only a proxy keeps it on.
        api_client.rest_client.pool_manager._trust_env = any(os.environ.get(v) for v in PROXY_VARIABLES)

    @classmethod
    async def connect(cls, kubeconfig: str | None = None) -> Kube:
        path = kubeconfig or os.environ.get("KUBECONFIG")
        if os.environ.get("KUBERNETES_SERVICE_HOST") and not path:
            config.load_incluster_config()
            return cls(client.ApiClient())
        configuration = client.Configuration()
        await config.load_kube_config(config_file=path, client_configuration=configuration)
        return cls(client.ApiClient(configuration))

    async def close(self) -> None:
        await self.api.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
        accept: str = "application/json",
    ) -> dict[str, Any]:
        resp = await self.api.call_api(
            path,
            method,
            query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": accept},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )
        raw = await resp.read()
        if not 200 <= resp.status <= 299:
            raise KubeError(resp.status, raw.decode(errors="replace"))
        return orjson.loads(raw) if raw else {}

    async def list_all(self, path: str, limit: int = 500) -> list[dict[str, Any]]:
        """Every item of a list (the CLI's, the harness's: small collections)."""
        return [obj async for page, _ in pages(self, path, limit) for obj in page]


class Requests(Protocol):
    async def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None,
                      content_type: str = "application/json", timeout: float = 30,
                      accept: str = "application/json") -> dict[str, Any]: ...


async def pages(kube: Requests, path: str, limit: int = 500, timeout: float = 120,
                accept: str = "application/json") -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
    """The one LIST pager: a collection a page at a time (items without their bookkeeping, and
    the listing's resourceVersion, the first page's), so a caller holds one page of JSON, not
    all. Every listing homing makes goes through it. `accept`: METADATA_ONLY lists identities."""
    token, version = "", ""
    while True:
        query = [("limit", str(limit))] + ([("continue", token)] if token else [])
        page = await kube.request("GET", path, query=query, timeout=timeout, accept=accept)
        meta = page.get("metadata") or {}
        version = version or meta.get("resourceVersion") or ""
        yield [without_bookkeeping(obj) for obj in page.get("items") or []], version
        token = meta.get("continue") or ""
        if not token:
            return


def without_bookkeeping(obj: Any) -> Any:
    """The one managedFields stripper: `obj` with its managedFields dropped, in place. The API
    server's record of who set which field is often a third of an object's bytes, and homing
    never reads it (it writes its own fields by name: admission/webhookconfig.py)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj
