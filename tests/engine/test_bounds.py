"""behaviour.md "Weights"/7 bounds: configuration refuses bounds that cannot work, and no term builder
ever emits a term with an empty value list (`In []` makes the API server refuse the pod)."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from homing.config import Bounds, Settings
from homing.engine.model import DomainExpr, Health, Operator
from homing.engine.placement.job_kinds.levels import JobTopology, Level
from homing.engine.placement.rules.avoid_fault import avoid_term
from homing.engine.placement.rules.domain import domain_term
from homing.engine.placement.rules.home import home_term
from homing.engine.placement.rules.keep_clear import keep_clear_term
from homing.engine.placement.rules.pool import other_homes_term, promised_home_term
from homing.engine.placement.strategies import node_strategy, pool_strategy
from homing.engine.placement.strategies.blocks import block_domains

from .helpers import HOSTNAME, NOW, context, memory, snapshot, topo_memory


@pytest.mark.parametrize(
    "field, value",
    [
        pytest.param("max_term_values", 0, id="max-term-values-zero"),
        pytest.param("max_term_values", -1, id="max-term-values-negative"),
        pytest.param("max_rank_part", 0, id="max-rank-part-zero"),
        pytest.param("max_ranks", 0, id="max-ranks-zero"),
        pytest.param("max_ranks_per_owner", 0, id="max-ranks-per-owner-zero"),
        pytest.param("max_ranks_per_owner", -5, id="max-ranks-per-owner-negative"),
    ],
)
def test_bounds_below_one_are_refused(field, value):
    with pytest.raises(ValidationError, match=field):
        Bounds(**{field: value})
    with pytest.raises(ValidationError, match=field):
        Settings(bounds={field: value})


@pytest.mark.parametrize("field", ["max_term_values", "max_rank_part", "max_ranks", "max_ranks_per_owner"])
def test_bound_of_one_is_accepted(field):
    assert getattr(Bounds(**{field: 1}), field) == 1


EXPR = DomainExpr(HOSTNAME, ("a", "b"))


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: domain_term("superPod", EXPR, (), 50), id="domain"),
        pytest.param(lambda: keep_clear_term((), 5, HOSTNAME), id="keep-clear"),
        pytest.param(lambda: avoid_term((), 100, HOSTNAME), id="avoid"),
        pytest.param(lambda: other_homes_term((), 50, HOSTNAME), id="pool-others"),
        pytest.param(lambda: promised_home_term("", 100, HOSTNAME), id="pool-promise-empty-name"),
        pytest.param(lambda: home_term("", Health.HEALTHY, [], 100, HOSTNAME), id="home-empty-name"),
    ],
)
def test_term_builders_drop_empty_value_lists(build):
    assert build() is None


def _unchecked_settings(max_term_values: int) -> Settings:
    """Settings whose bounds skipped validation: the strategies must still emit no `In []`."""
    settings = Settings()
    settings.bounds = Bounds.model_construct(**{**Bounds().model_dump(), "max_term_values": max_term_values})
    return settings


SUPERPOD = JobTopology(kind="super-pod", levels=(Level("superPod"),))


def test_rank_strategy_with_zero_bound_emits_no_empty_term():
    """Rank 1 has no home; its block mate's super-pod gives a domain term; siblings and faults
    would give NotIn terms: with max_term_values 0 each is dropped, never `In []`."""
    snap = snapshot(["a", "b", "c"], topology={n: (("superPod", "S1"),) for n in "abc"})
    mem = topo_memory({"0": ("a", (("superPod", "S1"),))})
    ctx = context("1", mem, snap, _unchecked_settings(0))
    placement = node_strategy(ctx, block_domains(ctx, SUPERPOD))
    assert all(t.values for t in placement.terms), placement.terms


def test_pool_strategy_with_zero_bound_emits_no_empty_term():
    mem = memory(pool={"a": (NOW, True), "b": (NOW - 1, True), "c": (NOW - 2, True)})
    placement = pool_strategy(mem, snapshot(["a", "b", "c"]), set(), 100, 50, HOSTNAME, 0)
    assert placement.promise == "a"
    assert [(t.operator, t.values) for t in placement.terms] == [(Operator.IN, ("a",))]
