"""behaviour.md "Identity": rank sources, first match wins, canonical keys, malformed values -> rankless + warning."""
from __future__ import annotations

import pytest

from homing.engine.identity import resolve_rank

BOUND = 1_000_000

HCCL = "hccl/rankIndex"
VC_INDEX = "volcano.sh/task-index"
VC_SPEC = "volcano.sh/task-spec"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"
STS_INDEX = "apps.kubernetes.io/pod-index"
LWS_GROUP = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"


def _pod(annotations=None, labels=None, name="p"):
    meta = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta}


# (annotations, labels, pod name, owner kind) -> (key, index, source)
SOURCES = [
    pytest.param({HCCL: "3"}, None, "p", "AscendJob", ("3", 3, "hccl"), id="hccl-annotation"),
    pytest.param({VC_INDEX: "2", VC_SPEC: "worker"}, None, "p", "Job", ("worker/2", 2, "volcano"),
                 id="volcano-annotation-with-spec"),
    pytest.param({VC_SPEC: "worker"}, {VC_INDEX: "4"}, "p", "Job", ("worker/4", 4, "volcano"),
                 id="volcano-label-with-spec-annotation"),
    pytest.param({VC_INDEX: "1"}, None, "p", "Job", ("1", 1, "volcano"), id="volcano-without-spec"),
    pytest.param({VC_INDEX: "1", VC_SPEC: "ps"}, {VC_INDEX: "9"}, "p", "Job", ("ps/1", 1, "volcano"),
                 id="volcano-annotation-before-label"),
    pytest.param({JOB_INDEX: "7"}, None, "p", "Job", ("7", 7, "indexed-job"), id="indexed-job-annotation"),
    pytest.param(None, {JOB_INDEX: "8"}, "p", "Job", ("8", 8, "indexed-job"), id="indexed-job-label"),
    pytest.param(None, {STS_INDEX: "5"}, "web-9", "StatefulSet", ("5", 5, "statefulset"),
                 id="statefulset-label-before-name"),
    pytest.param(None, None, "web-12", "StatefulSet", ("12", 12, "statefulset"), id="statefulset-name-ordinal"),
    pytest.param(None, None, "my-web-0", "StatefulSet", ("0", 0, "statefulset"), id="statefulset-ordinal-zero"),
    # LWS pods as the controller and its webhook label them (tests/engine/test_framework_identity.py has them whole)
    pytest.param(None, {LWS_NAME: "vllm", LWS_GROUP: "2", LWS_WORKER: "3", STS_INDEX: "3"}, "vllm-2-3",
                 "LeaderWorkerSet", ("2/3", 3, "leaderworkerset"), id="leaderworkerset-worker"),
    pytest.param(None, {LWS_NAME: "vllm", LWS_GROUP: "2", LWS_WORKER: "0", STS_INDEX: "2"}, "vllm-2",
                 "LeaderWorkerSet", ("2/0", 0, "leaderworkerset"), id="leaderworkerset-leader"),
    pytest.param(None, {LWS_NAME: "vllm", LWS_WORKER: "0", STS_INDEX: "4"}, "vllm-4",
                 "LeaderWorkerSet", ("4/0", 0, "leaderworkerset"), id="leaderworkerset-leader-before-lws-webhook"),
    pytest.param(None, {LWS_NAME: "vllm", LWS_GROUP: "4", STS_INDEX: "2"}, "vllm-4-2",
                 "LeaderWorkerSet", ("4/2", 2, "leaderworkerset"), id="leaderworkerset-worker-before-lws-webhook"),
    pytest.param(None, {LWS_NAME: "vllm", LWS_GROUP: "1", LWS_WORKER: "2", STS_INDEX: "2"}, "vllm-1-2",
                 "StatefulSet", ("1/2", 2, "leaderworkerset"), id="leaderworkerset-unlifted-owner"),
]


@pytest.mark.parametrize("annotations, labels, name, kind, expected", SOURCES)
def test_rank_sources(annotations, labels, name, kind, expected):
    result = resolve_rank(_pod(annotations, labels, name), kind, BOUND)
    key, index, source = expected
    assert result.warning is None
    assert result.rank is not None
    assert (result.rank.key, result.rank.source) == (key, source)
    if index is not None:
        assert result.rank.index == index


ALL_SOURCES_ANN = {HCCL: "1", VC_INDEX: "2", VC_SPEC: "s", JOB_INDEX: "3"}
ALL_SOURCES_LAB = {STS_INDEX: "4", LWS_GROUP: "5", LWS_WORKER: "6"}


@pytest.mark.parametrize(
    "drop, expected_source, expected_key",
    [
        pytest.param((), "hccl", "1", id="hccl-beats-all"),
        pytest.param((HCCL,), "volcano", "s/2", id="volcano-beats-indexed-job"),
        pytest.param((HCCL, VC_INDEX), "indexed-job", "3", id="indexed-job-beats-lws"),
        pytest.param((HCCL, VC_INDEX, JOB_INDEX), "leaderworkerset", "5/6", id="lws-beats-statefulset"),
        pytest.param((HCCL, VC_INDEX, JOB_INDEX, LWS_GROUP, LWS_WORKER), "statefulset", "4", id="statefulset-label"),
        pytest.param((HCCL, VC_INDEX, JOB_INDEX, STS_INDEX, LWS_GROUP, LWS_WORKER), "statefulset", "7",
                     id="statefulset-name-ordinal"),
    ],
)
def test_first_match_wins(drop, expected_source, expected_key):
    ann = {k: v for k, v in ALL_SOURCES_ANN.items() if k not in drop}
    lab = {k: v for k, v in ALL_SOURCES_LAB.items() if k not in drop}
    result = resolve_rank(_pod(ann, lab, name="web-7"), "StatefulSet", BOUND)
    assert result.warning is None
    assert (result.rank.source, result.rank.key) == (expected_source, expected_key)


def test_lws_labels_win_over_the_worker_statefulsets_ordinal():
    """A worker's StatefulSet numbers its pods from 1 in every group: the ordinal alone
    would give group 0's and group 1's first workers the same rank."""
    labels = {LWS_NAME: "vllm", LWS_GROUP: "1", LWS_WORKER: "1", STS_INDEX: "1"}
    result = resolve_rank(_pod(None, labels, name="vllm-1-1"), "StatefulSet", BOUND)
    assert (result.rank.source, result.rank.key) == ("leaderworkerset", "1/1")


def test_lws_name_without_any_index_is_rankless_with_warning():
    result = resolve_rank(_pod(None, {LWS_NAME: "vllm"}, name="vllm"), "LeaderWorkerSet", BOUND)
    assert result.rank is None and LWS_NAME in result.warning


@pytest.mark.parametrize(
    "annotations, labels, name, kind, key",
    [
        pytest.param({HCCL: "05"}, None, "p", "Job", "5", id="hccl-leading-zero"),
        pytest.param({HCCL: "000"}, None, "p", "Job", "0", id="hccl-zeros"),
        pytest.param({VC_INDEX: "007", VC_SPEC: "w"}, None, "p", "Job", "w/7", id="volcano-leading-zeros"),
        pytest.param(None, {JOB_INDEX: "010"}, "p", "Job", "10", id="indexed-job-leading-zero"),
        pytest.param(None, {STS_INDEX: "03"}, "p", "StatefulSet", "3", id="sts-label-leading-zero"),
        pytest.param(None, None, "web-0042", "StatefulSet", "42", id="sts-ordinal-leading-zeros"),
        pytest.param(None, {LWS_NAME: "l", LWS_GROUP: "01", LWS_WORKER: "002"}, "l-1-2", "LeaderWorkerSet", "1/2",
                     id="lws-leading-zeros"),
        pytest.param({HCCL: str(BOUND - 1)}, None, "p", "Job", str(BOUND - 1), id="largest-allowed"),
    ],
)
def test_canonical_keys(annotations, labels, name, kind, key):
    result = resolve_rank(_pod(annotations, labels, name), kind, BOUND)
    assert result.warning is None
    assert result.rank.key == key


BAD_VALUES = [
    pytest.param("-1", id="negative"),
    pytest.param("abc", id="non-numeric"),
    pytest.param("1e3", id="exponent"),
    pytest.param("1.5", id="decimal"),
    pytest.param("+3", id="plus-sign"),
    pytest.param("0x10", id="hex"),
    pytest.param("\u0663", id="arabic-indic-digit"),
    pytest.param("\uff13", id="fullwidth-digit"),
    pytest.param("\u00b2", id="superscript-two"),
    pytest.param(str(BOUND), id="equal-to-bound"),
    pytest.param("9" * 40, id="huge"),
    pytest.param("", id="empty"),
    pytest.param(" 3", id="leading-space"),
    pytest.param("3\n", id="trailing-newline"),
    pytest.param("\t3", id="leading-tab"),
    pytest.param("3 ", id="trailing-space"),
    pytest.param("\u00a03", id="leading-no-break-space"),
    pytest.param("9" * 4301, id="past-python-int-string-limit"),
    pytest.param("0" * 64 + "1", id="absurdly-long-leading-zeros"),
]

# Where a bad value is put: (source name, key, pod builder for a value, owner kind)
PLACES = [
    pytest.param(lambda v: _pod({HCCL: v}), "AscendJob", HCCL, id="hccl"),
    pytest.param(lambda v: _pod({VC_INDEX: v, VC_SPEC: "w"}), "Job", VC_INDEX, id="volcano-annotation"),
    pytest.param(lambda v: _pod({VC_SPEC: "w"}, {VC_INDEX: v}), "Job", VC_INDEX, id="volcano-label"),
    pytest.param(lambda v: _pod({JOB_INDEX: v}), "Job", JOB_INDEX, id="indexed-job-annotation"),
    pytest.param(lambda v: _pod(None, {JOB_INDEX: v}), "Job", JOB_INDEX, id="indexed-job-label"),
    pytest.param(lambda v: _pod(None, {STS_INDEX: v}, name="web-1"), "StatefulSet", STS_INDEX, id="sts-label"),
    pytest.param(lambda v: _pod(None, {LWS_GROUP: v, LWS_WORKER: "0"}), "LeaderWorkerSet", LWS_GROUP, id="lws-group"),
    pytest.param(lambda v: _pod(None, {LWS_GROUP: "0", LWS_WORKER: v}), "LeaderWorkerSet", LWS_WORKER, id="lws-worker"),
]


@pytest.mark.parametrize("value", BAD_VALUES)
@pytest.mark.parametrize("build, kind, key", PLACES)
def test_malformed_rank_is_rankless_with_warning(build, kind, key, value):
    result = resolve_rank(build(value), kind, BOUND)
    assert result.rank is None
    assert result.warning, "a malformed rank must raise a warning"
    assert key in result.warning


@pytest.mark.parametrize(
    "bound, value, ok",
    [
        pytest.param(10, "9", True, id="below-small-bound"),
        pytest.param(10, "10", False, id="at-small-bound"),
        pytest.param(10, "11", False, id="above-small-bound"),
        pytest.param(1, "0", True, id="bound-one-zero"),
    ],
)
def test_bound_is_configurable(bound, value, ok):
    result = resolve_rank(_pod({HCCL: value}), "Job", bound)
    assert (result.rank is not None) is ok
    assert (result.warning is None) is ok


def test_malformed_earlier_source_is_not_skipped_for_a_later_one():
    """First match wins even when the match is malformed: the pod is rankless, not rank 4."""
    result = resolve_rank(_pod({HCCL: "x"}, {STS_INDEX: "4"}, name="web-4"), "StatefulSet", BOUND)
    assert result.rank is None and result.warning


@pytest.mark.parametrize(
    "meta, kind",
    [
        pytest.param({"name": "web-5d8f7-x2x9q", "labels": {"pod-template-hash": "5d8f7"}}, "ReplicaSet",
                     id="deployment-replica"),
        pytest.param({"name": "web-7"}, "Deployment", id="name-ordinal-ignored-for-non-statefulset"),
        pytest.param({"name": "web-7"}, "Job", id="name-ordinal-ignored-for-job"),
        pytest.param({"name": "web"}, "StatefulSet", id="statefulset-name-without-ordinal"),
        pytest.param({"name": "web-"}, "StatefulSet", id="statefulset-name-trailing-dash"),
        pytest.param({}, "Job", id="empty-metadata"),
        pytest.param({"annotations": None, "labels": None, "name": None}, "StatefulSet", id="none-fields"),
        pytest.param({"annotations": {"other": "1"}, "labels": {"app": "x"}}, "Job", id="unrelated-keys"),
    ],
)
def test_rankless_without_source_has_no_warning(meta, kind):
    result = resolve_rank({"metadata": meta}, kind, BOUND)
    assert result.rank is None
    assert result.warning is None


def test_pod_without_metadata_is_rankless():
    result = resolve_rank({}, "StatefulSet", BOUND)
    assert result.rank is None and result.warning is None


@pytest.mark.parametrize(
    "value, shown",
    [
        pytest.param(" 3", "' 3'", id="leading-space-quoted"),
        pytest.param("3\n", "'3\\n'", id="newline-escaped"),
    ],
)
def test_whitespace_warning_names_the_value(value, shown):
    result = resolve_rank(_pod({HCCL: value}), "AscendJob", BOUND)
    assert result.rank is None
    assert shown in result.warning


def test_huge_value_warning_stays_short():
    """A 4,301-digit value is named, not copied whole into the Event."""
    result = resolve_rank(_pod({HCCL: "9" * 4301}), "AscendJob", BOUND)
    assert result.rank is None
    assert "999" in result.warning and len(result.warning) < 300


# -- behaviour.md "Identity": a rank key is at most 63 characters ----------------------------------------------
MAX_KEY = 63


@pytest.mark.parametrize(
    "annotations, labels, kind, ok",
    [
        pytest.param({VC_INDEX: "3", VC_SPEC: "w" * (MAX_KEY - 2)}, None, "Job", True, id="task-spec-key-63"),
        pytest.param({VC_INDEX: "3", VC_SPEC: "w" * (MAX_KEY - 1)}, None, "Job", False, id="task-spec-key-64"),
        pytest.param({VC_INDEX: "3", VC_SPEC: "w" * 100_000}, None, "Job", False, id="task-spec-100-kB"),
        pytest.param({VC_SPEC: "s" * 70}, {VC_INDEX: "1"}, "Job", False, id="task-spec-with-index-label"),
    ],
)
def test_rank_key_longer_than_63_is_rankless(annotations, labels, kind, ok):
    result = resolve_rank(_pod(annotations, labels), kind, BOUND)
    if ok:
        assert result.warning is None and len(result.rank.key) == MAX_KEY
    else:
        assert result.rank is None
        assert "63" in result.warning and len(result.warning) < 300


# -- is_decimal: the one test of "a number written in ASCII digits" others can reuse --------------
@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("0", True, id="zero"),
        pytest.param("0123456789", True, id="all-digits"),
        pytest.param("", False, id="empty"),
        pytest.param("\u00b2", False, id="superscript-two"),
        pytest.param("\u0663", False, id="arabic-indic-three"),
        pytest.param("\uff13", False, id="fullwidth-three"),
        pytest.param(" 3", False, id="space"),
        pytest.param("-3", False, id="minus"),
        pytest.param("+3", False, id="plus"),
        pytest.param("3_000", False, id="underscore"),
        pytest.param(3, False, id="not-a-string"),
        pytest.param(None, False, id="none"),
    ],
)
def test_is_decimal(text, expected):
    from homing.engine.identity.rank import is_decimal

    assert is_decimal(text) is expected


# -- never raises: any text, any metadata ---------------------------------------------------------
from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

RANK_KEYS = [HCCL, VC_INDEX, VC_SPEC, JOB_INDEX, STS_INDEX, LWS_GROUP, LWS_WORKER]
_any_key = st.one_of(st.sampled_from(RANK_KEYS), st.text())
_digits = st.one_of(st.text(alphabet="0123456789", min_size=1, max_size=12),
                    st.integers(4290, 4400).map(lambda n: "9" * n))  # around int()'s 4,300-digit limit
_padded = st.tuples(st.sampled_from(["", " ", "\n", "\t"]), _digits, st.sampled_from(["", " ", "\n"])).map("".join)
_any_value = st.one_of(st.text(), _digits, _padded, st.integers(), st.none())
_meta_dict = st.dictionaries(_any_key, _any_value, max_size=8)
_kinds = st.sampled_from(["StatefulSet", "Job", "LeaderWorkerSet", "AscendJob", "ReplicaSet", ""])


@hsettings(max_examples=400, deadline=None)
@given(annotations=_meta_dict, labels=_meta_dict, name=st.one_of(st.text(), st.none()), kind=_kinds,
       bound=st.integers(min_value=1, max_value=10**12))
def test_resolve_rank_never_raises(annotations, labels, name, kind, bound):
    result = resolve_rank({"metadata": {"annotations": annotations, "labels": labels, "name": name}}, kind, bound)
    if result.rank is not None:
        assert result.warning is None
        assert 0 <= result.rank.index < bound
        assert len(result.rank.key) <= MAX_KEY
    elif result.warning is not None:
        assert len(result.warning) < 400, "a warning names the value, it does not copy it"


@hsettings(max_examples=300, deadline=None)
@given(text=st.text(), key=st.sampled_from([HCCL, VC_INDEX, JOB_INDEX, STS_INDEX, LWS_GROUP]))
def test_any_rank_text_gives_a_rank_or_a_warning(text, key):
    labels = {LWS_WORKER: "0"} if key == LWS_GROUP else {}
    result = resolve_rank(_pod({key: text}, {**labels, key: text}), "StatefulSet", BOUND)
    assert (result.rank is None) != (result.warning is None)


@hsettings(max_examples=100, deadline=None)
@given(meta=st.one_of(st.none(), st.text(), st.integers(), st.lists(st.text()),
                      st.fixed_dictionaries({"annotations": st.one_of(st.text(), st.lists(st.text()), st.integers()),
                                             "labels": st.one_of(st.text(), st.lists(st.text()), st.integers()),
                                             "name": st.one_of(st.integers(), st.lists(st.text()))})))
def test_malformed_metadata_is_rankless(meta):
    result = resolve_rank({"metadata": meta}, "StatefulSet", BOUND)
    assert result.rank is None or result.warning is None


# -- a bound pod keeps the rank it was admitted as -----------------------------------------

from homing.engine.identity import WorkloadIndex  # noqa: E402
from homing.engine.identity.podview import pod_view  # noqa: E402

from .helpers import owner, pod  # noqa: E402

VOLCANO_WORKER_7 = {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": "7"}


@pytest.mark.parametrize("decision, added_at_bind, key", [
    # MindCluster's plugin writes hccl/rankIndex through the binding: the pod was admitted as worker/7
    pytest.param('{"rank":"worker/7"}', {"hccl/rankIndex": "7"}, "worker/7", id="plugin-rank-after-admission"),
    # a Deployment replica admitted rankless, given a rank by the plugin at bind, stays in its pool
    pytest.param('{"rank":null}', {"hccl/rankIndex": "3"}, None, id="rankless-stays-rankless"),
    # no decision (homing did not admit it): the sources as they are, first match wins
    pytest.param(None, {"hccl/rankIndex": "7"}, "7", id="undecided-reads-the-sources"),
    # a record no source gives any more (edited by hand): the sources as they are
    pytest.param('{"rank":"worker/9"}', {}, "worker/7", id="record-names-no-source"),
])
def test_a_bound_pod_keeps_the_rank_it_was_admitted_as(decision, added_at_bind, key):
    annotations = {**VOLCANO_WORKER_7, **added_at_bind}
    if decision is not None:
        annotations["homing.io/decision"] = decision
    p = pod(name="job-worker-7", controller=owner(kind="Job", name="job"), annotations=annotations, node_name="n1")
    view = pod_view(p, WorkloadIndex(), 1_000_000)
    assert (view.rank.rank.key if view.rank.rank else None) == key


def test_a_pod_admitted_rankless_for_a_malformed_rank_still_warns_when_it_binds():
    """The warning (an InvalidRank Event) comes from the bound pod's view, as before the rank
    kept from admission: the decision's null rank must not swallow it."""
    annotations = {"hccl/rankIndex": "-1", "homing.io/decision": '{"rank":null}'}
    p = pod(name="job-x", controller=owner(kind="Job", name="job"), annotations=annotations, node_name="n1")
    view = pod_view(p, WorkloadIndex(), 1_000_000)
    assert view.rank.rank is None and "hccl/rankIndex" in (view.rank.warning or "")
