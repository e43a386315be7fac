"""behaviour.md "Tenants": the memory as an admission in one namespace reads it. Identity
and memory never cross a namespace (identity/owner.py); what a node physically holds counts
for every pod, whatever its namespace (a node full of another tenant's pods has no room, as
its scheduler sees). What steers a pod beyond that — the claimed homes it keeps off, the
vacant homes it keeps clear of (and free room leaves out), the workloads it may displace —
is its own namespace's, unless tenants share nodes (config.Tenancy)."""
from __future__ import annotations

from dataclasses import replace

from homing.engine.memory.index import MemoryIndex


def seen_from(index: MemoryIndex, namespace: str, shared: bool = False) -> MemoryIndex:
    """`index` as an admission in `namespace` reads it; `shared`: the whole index itself.
    A view shares every part but the vacancies with the index (an O(1) copy: no admission
    filters the cluster's vacancies) and is for reading: what an admission leaves goes into
    the index itself (engine/placement/admitted.py)."""
    if shared:
        return index
    # a view's vacancies are its namespace's part (VacantHomes), read only: nothing writes through a view
    return replace(index, vacancies=index.vacancies.of(namespace), tenant=namespace)  # type: ignore[arg-type]
