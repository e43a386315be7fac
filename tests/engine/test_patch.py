"""behaviour.md "Admission" output: the JSON patch only appends preferred terms and adds homing.io annotations."""
from __future__ import annotations

import copy

import jsonpatch
import pytest

from homing.engine.model import Operator, Term
from homing.engine.placement.patch import affinity_patch

from .helpers import HOSTNAME, PREFERRED, pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_PATH = ("spec", "affinity", "nodeAffinity", PREFERRED)

TERMS = [
    Term(role="home", weight=100, key=HOSTNAME, operator=Operator.IN, values=("n0",)),
    Term(role="keep-clear", weight=5, key=HOSTNAME, operator=Operator.NOT_IN, values=("n1", "n2")),
]
ANNOTATIONS = {"homing.io/home": "n0", "homing.io/decision": '{"home":"n0"}'}

USER_PREFERRED = [
    {"weight": 7, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}},
    {"weight": 3, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
]
USER_REQUIRED = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["npu"]}]}]}
POD_ANTI = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOSTNAME, "labelSelector": {}}]}

AFFINITIES = [
    pytest.param(None, id="no-affinity"),
    pytest.param({}, id="empty-affinity"),
    pytest.param({"podAntiAffinity": POD_ANTI}, id="affinity-without-nodeaffinity"),
    pytest.param({"nodeAffinity": {REQUIRED: USER_REQUIRED}}, id="required-only"),
    pytest.param({"nodeAffinity": {PREFERRED: USER_PREFERRED}}, id="existing-preferred"),
    pytest.param({"nodeAffinity": {REQUIRED: USER_REQUIRED, PREFERRED: USER_PREFERRED}, "podAntiAffinity": POD_ANTI},
                 id="required-preferred-and-pod-anti"),
    pytest.param({"nodeAffinity": {PREFERRED: []}}, id="empty-preferred-list"),
]

ANNOTATION_SETS = [
    pytest.param(None, id="annotations-absent"),
    pytest.param({}, id="annotations-empty"),
    pytest.param({"team": "a", "example.com/x": "y", "a~b/c": "z"}, id="annotations-present"),
]


def _get(obj, path):
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _assert_preserved(before, after, path=()):
    """Every field of `before` is in `after` unchanged; the only list allowed to grow (at
    its end) is the preferred node-affinity list."""
    if isinstance(before, dict):
        assert isinstance(after, dict), path
        for key, value in before.items():
            assert key in after, path + (key,)
            _assert_preserved(value, after[key], path + (key,))
    elif isinstance(before, list) and path == PREFERRED_PATH:
        assert after[: len(before)] == before, path
    else:
        assert after == before, path


@pytest.mark.parametrize("annotations", ANNOTATION_SETS)
@pytest.mark.parametrize("affinity", AFFINITIES)
def test_patch_appends_and_preserves(affinity, annotations):
    original = pod(affinity=affinity, annotations=annotations, labels={"app": "x"})
    frozen = copy.deepcopy(original)
    ops = affinity_patch(original, TERMS, ANNOTATIONS)
    assert original == frozen, "computing the patch must not change the pod"
    assert all(op["op"] == "add" for op in ops), "only additions, never replace or remove"
    patched = jsonpatch.apply_patch(original, ops)

    _assert_preserved(frozen, patched)
    before_pref = _get(frozen, PREFERRED_PATH) or []
    after_pref = _get(patched, PREFERRED_PATH)
    assert after_pref == before_pref + [t.as_k8s() for t in TERMS], "user terms first, ours appended"
    assert _get(patched, ("spec", "affinity", "nodeAffinity", REQUIRED)) == _get(
        frozen, ("spec", "affinity", "nodeAffinity", REQUIRED)
    )
    assert patched["metadata"]["annotations"] == {**(annotations or {}), **ANNOTATIONS}


def test_term_wire_form():
    ops = affinity_patch(pod(), TERMS[:1], {})
    patched = jsonpatch.apply_patch(pod(), ops)
    assert _get(patched, PREFERRED_PATH) == [
        {"weight": 100, "preference": {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["n0"]}]}}
    ]


@pytest.mark.parametrize(
    "key, escaped",
    [
        pytest.param("homing.io/home", "homing.io~1home", id="slash"),
        pytest.param("a~b/c", "a~0b~1c", id="tilde-and-slash"),
        pytest.param("plain", "plain", id="plain"),
    ],
)
def test_annotation_keys_are_escaped(key, escaped):
    original = pod(annotations={"other": "1"})
    ops = affinity_patch(original, [], {key: "v"})
    assert ops == [{"op": "add", "path": f"/metadata/annotations/{escaped}", "value": "v"}]
    assert jsonpatch.apply_patch(original, ops)["metadata"]["annotations"] == {"other": "1", key: "v"}


def test_no_terms_touches_no_affinity():
    original = pod(affinity={"nodeAffinity": {REQUIRED: USER_REQUIRED}})
    ops = affinity_patch(original, [], ANNOTATIONS)
    assert all(op["path"].startswith("/metadata/annotations") for op in ops)
    assert jsonpatch.apply_patch(original, ops)["spec"] == original["spec"]


def test_nothing_to_do_is_empty_patch():
    assert affinity_patch(pod(), [], {}) == []


def test_existing_homing_annotation_value_is_set():
    original = pod(annotations={"homing.io/home": "stale"})
    patched = jsonpatch.apply_patch(original, affinity_patch(original, [], {"homing.io/home": "n0"}))
    assert patched["metadata"]["annotations"] == {"homing.io/home": "n0"}


EMPTY_IN = Term(role="domain:rack", weight=50, key="rack", operator=Operator.IN, values=())
EMPTY_NOT_IN = Term(role="avoid", weight=100, key=HOSTNAME, operator=Operator.NOT_IN, values=())


@pytest.mark.parametrize(
    "terms, kept",
    [
        pytest.param([EMPTY_IN], [], id="only-an-empty-in"),
        pytest.param([EMPTY_IN, EMPTY_NOT_IN], [], id="only-empty-terms"),
        pytest.param([TERMS[0], EMPTY_IN, TERMS[1], EMPTY_NOT_IN], TERMS, id="empty-among-good"),
    ],
)
def test_terms_with_no_values_are_never_patched_in(terms, kept):
    """`In []` makes the API server refuse the pod: the patch drops such a term whoever built it."""
    original = pod()
    patched = jsonpatch.apply_patch(original, affinity_patch(original, terms, ANNOTATIONS))
    assert (_get(patched, PREFERRED_PATH) or []) == [t.as_k8s() for t in kept]
    assert patched["metadata"]["annotations"] == ANNOTATIONS


# -- one term per node set ------------------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from homing.engine.placement.rules.term import MAX_TERM_WEIGHT  # noqa: E402


def _patched_terms(terms: list[Term]) -> list[dict]:
    ops = affinity_patch(pod(), terms, {})
    return ops[0]["value"]["nodeAffinity"][PREFERRED] if ops else []


def _score(k8s_terms: list[dict], labels: dict[str, str]) -> int:
    """Kubernetes' sum of the matched preferred terms' weights on a node with `labels`."""
    total = 0
    for t in k8s_terms:
        (e,) = t["preference"]["matchExpressions"]
        present = labels.get(e["key"])
        hit = present in e["values"] if e["operator"] == "In" else present is None or present not in e["values"]
        total += t["weight"] if hit else 0
    return total


def test_a_master_whose_home_is_cordoned_gets_one_term_for_its_home_not_three():
    """The home is a vacant home to keep clear of (5), a fault to avoid (100) and a claimed
    home (the claimed weight's second term, 60): one node set, so one term — two here, as a
    term's weight stops at 100."""
    home = ("n0",)
    terms = [Term(role=role, weight=w, key=HOSTNAME, operator=Operator.NOT_IN, values=home)
             for role, w in (("keep-clear", 5), ("avoid", 100), ("claimed", 100), ("claimed", 60))]
    out = _patched_terms(terms)
    assert [t["weight"] for t in out] == [100, 100, 65]
    assert all(t["preference"]["matchExpressions"][0]["values"] == ["n0"] for t in out)


TERM = st.builds(
    Term, role=st.sampled_from(["home", "keep-clear", "claimed", "image-warm"]), weight=st.integers(1, MAX_TERM_WEIGHT),
    key=st.sampled_from([HOSTNAME, "rack"]), operator=st.sampled_from([Operator.IN, Operator.NOT_IN]),
    values=st.lists(st.sampled_from(["n0", "n1", "n2"]), min_size=1, max_size=3, unique=True).map(lambda v: tuple(sorted(v))))


@given(st.lists(TERM, max_size=8), st.fixed_dictionaries({HOSTNAME: st.sampled_from(["n0", "n1", "n2", "n3"]),
                                                         "rack": st.sampled_from(["n0", "n1", "r9"])}))
def test_merging_a_node_sets_terms_changes_no_nodes_score(terms, labels):
    out = _patched_terms(terms)
    assert _score(out, labels) == sum(t.weight for t in terms if t.matches(labels))
    sets = [(t["preference"]["matchExpressions"][0]["key"], t["preference"]["matchExpressions"][0]["operator"],
             tuple(t["preference"]["matchExpressions"][0]["values"])) for t in out]
    for s in set(sets):  # one term per node set, but for the cap: every one but the last at 100
        weights = [t["weight"] for t, k in zip(out, sets) if k == s]
        assert all(w == MAX_TERM_WEIGHT for w in weights[:-1]) and 0 < weights[-1] <= MAX_TERM_WEIGHT
