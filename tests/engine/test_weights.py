"""behaviour.md "Weights": configured weights must keep the order of node classes; refuse those that cannot."""
from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st
from pydantic import ValidationError

from homing.config import Settings, Weights
from homing.engine.placement.weights import node_classes, order_violations

DEFAULTS = {**Weights().model_dump(), "free_room": None}  # None: derived from displace and image_warm


def _unchecked(**changes) -> Weights:
    """A Weights object that skips its validator, to ask order_violations() directly."""
    return Weights.model_construct(**{**DEFAULTS, **changes})


def test_defaults_are_valid():
    w = Weights()
    assert (w.home, w.domains, w.image_warm, w.keep_clear, w.avoid_fault, w.claimed, w.pool_home, w.pool_other) == (
        100, [32, 26, 20], 10, 5, 100, 160, 100, 50)
    assert order_violations(w) == []
    Settings()  # constructs


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param(dict(domains=[50, 25]), id="two-levels"),
        pytest.param(dict(domains=[50]), id="one-level"),
        pytest.param(dict(domains=[]), id="no-levels"),
        pytest.param(dict(home=90, domains=[30, 24], image_warm=10, keep_clear=5, displace=20, avoid_fault=90, claimed=140),
                     id="smaller-set"),
        pytest.param(dict(image_warm=12, keep_clear=6, displace=24, domains=[50, 25]), id="larger-steps-two-levels"),
        pytest.param(dict(pool_home=100, pool_other=99), id="pool-just-ordered"),
    ],
)
def test_valid_custom_weights(changes):
    assert order_violations(_unchecked(**changes)) == []
    Weights(**{**DEFAULTS, **changes})


@pytest.mark.parametrize(
    "changes, fragment",
    [
        pytest.param(dict(keep_clear=10, domains=[50, 25, 12, 6]), "three domain levels",
                     id="spec-keep-clear-10-fourth-level-6"),
        pytest.param(dict(keep_clear=10), "level3", id="keep-clear-10-breaks-three-levels"),
        pytest.param(dict(image_warm=16), "level3-rest", id="image-warm-16-reaches-the-outermost-domain"),
        pytest.param(dict(claimed=120), "against the scheduler's other scores", id="claimed-loses-to-image-locality"),
        pytest.param(dict(claimed=301), "three terms", id="claimed-over-three-terms"),
        pytest.param(dict(image_warm=3, keep_clear=3), "warm", id="image-warm-not-above-keep-clear"),
        pytest.param(dict(displace=17), "displacement", id="displace-not-above-warm-and-clear"),
        pytest.param(dict(keep_clear=13), "elsewhere", id="keep-clear-above-outermost-domain"),
        pytest.param(dict(keep_clear=26, domains=[50, 25]), "level2", id="keep-clear-above-outer-of-two"),
        pytest.param(dict(home=101), "caps", id="home-over-100"),
        pytest.param(dict(avoid_fault=150), "caps", id="avoid-over-100"),
        pytest.param(dict(domains=[120, 25, 12]), "caps", id="domain-over-100"),
        pytest.param(dict(pool_other=101, pool_home=100), "caps", id="pool-over-100"),
        pytest.param(dict(pool_home=50, pool_other=50), "pool_home", id="pool-home-equal-other"),
        pytest.param(dict(pool_home=40, pool_other=50), "pool_home", id="pool-home-below-other"),
        pytest.param(dict(keep_clear=0), "positive", id="zero-weight"),
        pytest.param(dict(domains=[50, -1, 12]), "positive", id="negative-weight"),
        pytest.param(dict(home=80), "home", id="home-below-domain-sum"),
        pytest.param(dict(avoid_fault=80), "fault", id="avoid-too-small"),
        pytest.param(dict(free_room=22), "free_room", id="free-room-too-close-to-displace"),
        pytest.param(dict(free_room=28), "free_room", id="free-room-reaches-a-warm-victim-node"),
    ],
)
def test_refused(changes, fragment):
    problems = order_violations(_unchecked(**changes))
    assert problems
    assert any(fragment in p for p in problems), problems
    with pytest.raises(ValidationError):
        Weights(**{**DEFAULTS, **changes})


@pytest.mark.parametrize(
    "weights, fragment",
    [
        pytest.param({"keep_clear": 10, "domains": [50, 25, 12, 6]}, "at most three domain levels", id="four-levels"),
        pytest.param({"home": 150}, "Kubernetes caps a preferred term's weight at 100", id="over-100"),
        pytest.param({"pool_home": 10}, "pool_home must exceed pool_other", id="pool"),
        pytest.param({"keep_clear": 13}, "does not stay", id="order"),
    ],
)
def test_settings_refuse_with_readable_message(weights, fragment):
    with pytest.raises(ValidationError) as err:
        Settings(weights=weights)
    text = str(err.value)
    assert "weights cannot keep homing's node order" in text
    assert fragment in text


def test_settings_from_environment_are_validated(monkeypatch):
    monkeypatch.setenv("HOMING_WEIGHTS__HOME", "150")
    with pytest.raises(ValidationError) as err:
        Settings()
    assert "caps" in str(err.value)
    monkeypatch.setenv("HOMING_WEIGHTS__HOME", "99")
    assert Settings().weights.home == 99


def test_node_classes_best_first_for_defaults():
    classes = node_classes(Weights(), 3)
    inside = ["warm-clear", "warm", "clear", "rest"]
    assert [c.name for c in classes] == [
        "home", *(f"{where}-{x}" for where in ("level1", "level2", "level3", "elsewhere") for x in inside), "fault",
    ]
    assert all(c.low <= c.high for c in classes)
    assert all(a.low > b.high for a, b in zip(classes, classes[1:]))


@pytest.mark.parametrize(
    "changes, free_room",
    [
        pytest.param({}, 25, id="defaults"),
        pytest.param(dict(image_warm=12, keep_clear=6, displace=24, domains=[40, 30]), 30, id="follows-a-larger-displace"),
        pytest.param(dict(image_warm=12, keep_clear=6, displace=24, domains=[40, 30], free_room=30), 30,
                     id="set-explicitly"),
    ],
)
def test_free_room_weight(changes, free_room):
    """Unset, free room sits halfway between displace and displace + image-warm, so a
    custom displace weight does not need a free-room weight to match."""
    assert Weights(**{**DEFAULTS, **changes}).free_room == free_room


@hsettings(max_examples=300, deadline=None)
@given(displace=st.integers(1, 60), free=st.integers(1, 80), warm=st.integers(2, 12), clear=st.integers(1, 6),
       home=st.integers(60, 100))
def test_free_room_order_survives_normalisation(displace, free, warm, clear, home):
    """behaviour.md "Beyond the home" with free room: among the nodes a replica of a displacing burst can take,
    free > the victim's at equal warmth, and a warm victim node > a cold free one; weights
    that pass keep both after Kubernetes' integer normalisation, whatever the best node."""
    w = _unchecked(displace=displace, free_room=free, image_warm=warm, keep_clear=clear, home=home,
                   domains=[], avoid_fault=100)
    if order_violations(w):
        return
    sums = {"free-cold": free + clear, "free-warm": free + warm + clear,
            "victim-cold": displace + clear, "victim-warm": displace + warm + clear}
    for best in (*sums.values(), home + free + warm + clear + w.avoid_fault):
        n = {k: v * 100 // best for k, v in sums.items() if v <= best}
        for better, worse in (("free-cold", "victim-cold"), ("free-warm", "victim-warm"), ("victim-warm", "free-cold")):
            if better in n and worse in n:
                assert n[better] > n[worse], (w, best, better, worse)


def test_the_rules_docstrings_quote_no_weight_the_settings_own():
    """Weights live in the settings alone: a rule's docstring names them (`image_warm`), never a
    number, which went stale when the defaults moved (issue 44: 50+25+12, 12, 15, 6 and 3)."""
    import ast
    import re
    from pathlib import Path

    import homing.engine.placement.rules as rules

    quoted = {}
    for path in Path(rules.__file__).parent.glob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        numbers = re.findall(r"(?<![\w.])\d+(?![\w.])", doc)
        if numbers:
            quoted[path.name] = numbers
    assert quoted == {}
