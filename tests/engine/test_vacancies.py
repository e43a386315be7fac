"""Vacant homes stored once (engine/memory/vacancies.py): each vacancy lives in its
namespace's part and the whole cluster's view reads the parts. Whatever vacates and
reoccupies in whatever order, the whole reads exactly the parts' union, and both read what
a plain record of the events says: which (node, owner) pairs are vacant since when, and the
nodes most recently vacated last."""
from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from homing.engine.memory.vacancies import Vacancies

NODES = ("n0", "n1", "n2", "n3")
KEYS = ("ns/a", "ns/b", "team-b/c", "team-c/d")  # three namespaces, one with two owners

EVENT = st.one_of(
    st.tuples(st.just("vacate"), st.sampled_from(NODES), st.sampled_from(KEYS)),
    st.tuples(st.just("reoccupy"), st.sampled_from(NODES), st.sampled_from(KEYS)),
)


def namespace(key: str) -> str:
    return key.split("/", 1)[0]


@hsettings(max_examples=400, deadline=None)
@given(events=st.lists(EVENT, max_size=30))
def test_the_whole_reads_the_parts_and_both_read_the_events(events):
    vacancies = Vacancies()
    since: dict[tuple[str, str], float] = {}  # (node, key) -> vacant since: the plain record
    touched: dict[str, int] = {}  # node -> the last event that vacated a home on it
    for t, (kind, node, key) in enumerate(events):
        if kind == "vacate":
            vacancies.vacate(node, key, float(t))
            since[(node, key)] = float(t)
            touched[node] = t
        else:
            vacancies.reoccupy(node, key)
            since.pop((node, key), None)

        expected = {}
        for (n, k), at in since.items():
            expected.setdefault(n, {})[k] = at
        assert {n: dict(ks) for n, ks in vacancies.vacant.items()} == expected
        assert len(vacancies.vacant) == len(expected)
        assert all(n in vacancies.vacant for n in expected)
        assert vacancies.by_owner == {k: {n for (n, k2) in since if k2 == k} for (_, k) in since}
        assert list(vacancies.order) == sorted(expected, key=touched.__getitem__)
        for n in NODES:  # the readers that skip the merged view read the same
            assert sorted(vacancies.owners_at(n)) == sorted(expected.get(n, {}))
            assert all(vacancies.since(n, k) == at for k, at in expected.get(n, {}).items())
        for ns in {namespace(k) for k in KEYS}:
            part = vacancies.of(ns)
            mine = {n: {k: at for k, at in ks.items() if namespace(k) == ns} for n, ks in expected.items()}
            mine = {n: ks for n, ks in mine.items() if ks}
            assert part.vacant == mine, ns
            for n in NODES:  # a tenant's view reads its part as the whole is read
                assert sorted(part.owners_at(n)) == sorted(mine.get(n, {}))
                assert all(part.since(n, k) == at for k, at in mine.get(n, {}).items())
            assert list(part.order) == sorted(mine, key=lambda n: touched_in(events[: t + 1], n, ns))
            for k, nodes in part.by_owner.items():
                assert vacancies.by_owner[k] is nodes  # one set, read by both
        assert set(vacancies.namespaces) == {namespace(k) for (_, k) in since}  # no empty part kept


def touched_in(events, node: str, ns: str) -> int:
    """The last event that vacated a home of `ns` on `node`."""
    return max(i for i, (kind, n, k) in enumerate(events) if kind == "vacate" and n == node and namespace(k) == ns)
