"""Where images ran is bounded (issue 41, bounded maps): a stream of new image names (every
CI build tags a new one) grew it without end. The runs kept in all stay under the bound, the
images that ran least recently go first, and what is kept answers as before."""
from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from homing.engine.memory.image_runs import ImageRuns

RUNS = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.sampled_from(["n0", "n1", "n2"]),
                          st.sampled_from(["ns", "team-b"])), max_size=40)


@hsettings(max_examples=200, deadline=None)
@given(runs=RUNS, bound=st.integers(1, 8))
def test_the_runs_kept_stay_under_the_bound_least_recent_image_first(runs, bound):
    kept, whole = ImageRuns(max_runs=bound), ImageRuns(max_runs=10**9)
    for t, (image, node, namespace) in enumerate(runs):
        kept.ran((image,), node, float(t), namespace)
        whole.ran((image,), node, float(t), namespace)
        assert kept.count == sum(map(len, kept.runs.values()))
        assert kept.count <= max(bound, len(kept.runs[(namespace, image)])), "over the bound only by the image just run"
    for (namespace, image), nodes in kept.runs.items():
        assert nodes.items() <= whole.runs[(namespace, image)].items(), "what is kept is what happened"
    if runs:
        image, node, namespace = runs[-1]
        assert kept.ran_here((image,), node, namespace), "the latest run is never the one dropped"
    last_run = {key: max(nodes.values()) for key, nodes in whole.runs.items()}
    dropped = set(whole.runs) - set(kept.runs)
    if dropped:
        assert max(last_run[k] for k in dropped) < min(last_run[k] for k in kept.runs), "least recently run first"


def test_a_new_image_name_a_build_forgets_the_oldest():
    runs = ImageRuns(max_runs=2)
    runs.ran(("train:1",), "n0", 1.0)
    runs.ran(("train:2",), "n1", 2.0)
    runs.ran(("train:1",), "n2", 3.0)  # train:1 ran again: now the most recent
    runs.ran(("train:3",), "n0", 4.0)
    assert set(runs.runs) == {("", "train:3")}, "train:2 went when train:1 ran again, then train:1"
