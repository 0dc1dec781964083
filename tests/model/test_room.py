"""The planners' room rule (`left_after`, `pods_usage`): placing pods leaves room for exactly
that many fewer of their shape, on nodes that count pod slots and on nodes that do not."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from placer.model.resources import PODS, left_after, pods_that_fit, pods_usage

NAMES = ("cpu", "memory", "google.com/tpu")


def _quantities(names: tuple[str, ...]) -> st.SearchStrategy[dict[str, Decimal]]:
    return st.dictionaries(
        st.sampled_from(names), st.integers(0, 64).map(Decimal), max_size=len(names)
    )


# a node may count pod slots; a pod never requests them (the parser refuses `pods`)
@given(free=_quantities((*NAMES, PODS)), request=_quantities(NAMES), data=st.data())
def test_placing_k_pods_leaves_room_for_k_fewer(
    free: dict[str, Decimal], request: dict[str, Decimal], data: st.DataObject
) -> None:
    fit = pods_that_fit(free, request)
    k = data.draw(st.integers(0, min(fit, 8)))
    after = pods_that_fit(left_after(free, pods_usage(request, k)), request)
    if PODS not in free and not any(v > 0 for v in request.values()):
        assert after == fit  # nothing bounds such a pod on such a node
    else:
        assert after == fit - k


def test_a_resource_the_node_lacks_leaves_no_room_for_it() -> None:
    free = {"cpu": Decimal(8)}
    left = left_after(free, pods_usage({"google.com/tpu": Decimal(4)}, 1))
    assert left == {"cpu": Decimal(8), "google.com/tpu": Decimal(-4)}
    assert pods_that_fit(left, {"google.com/tpu": Decimal(1)}) == 0
    assert pods_that_fit(left, {"cpu": Decimal(1)}) == 8  # no pod slots counted: unbounded


def test_each_pod_takes_one_slot_where_the_node_counts_them() -> None:
    free = {"cpu": Decimal(8), PODS: Decimal(3)}
    assert left_after(free, pods_usage({"cpu": Decimal(1)}, 2)) == {
        "cpu": Decimal(6),
        PODS: Decimal(1),
    }
