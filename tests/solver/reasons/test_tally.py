"""`Tallies.sorted_with`: a JobSet's adjusted listing from the outsider's, counted again only
where its own verdicts differ, must list exactly what counting everything again lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.reasons.data import KINDS, Reason
from placer.solver.reasons.tally import Tallies, Verdict

NAMES = ["a/x", "a/y", "b/z"]

_verdicts: st.SearchStrategy[Verdict] = st.none() | st.tuples(
    st.builds(
        Reason,
        kind=st.sampled_from(KINDS),
        rule=st.sampled_from(["", "cpu"]),
        holders=st.lists(st.sampled_from(NAMES), max_size=2, unique=True).map(
            lambda h: tuple(sorted(h))
        ),
    ),
    st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
)


def _counted(verdicts: list[Verdict]) -> Tallies:
    tallies = Tallies()
    for v in verdicts:
        tallies.add(v)
    return tallies


@settings(max_examples=300, deadline=None)
@given(
    seen=st.lists(_verdicts, min_size=1, max_size=12),
    data=st.data(),
)
def test_the_adjusted_listing_is_the_listing_of_the_verdicts_as_changed(
    seen: list[Verdict], data: st.DataObject
) -> None:
    """The outsider's verdicts per domain, some replaced by the JobSet's own: the listing from
    `sorted_with` equals `sorted` over the changed verdicts, counts, names and order."""
    changes = data.draw(
        st.dictionaries(st.integers(0, len(seen) - 1), _verdicts, max_size=len(seen))
    )
    outsider = _counted(seen)
    delta = Tallies()
    for i, own in changes.items():
        delta.add(seen[i], -1)
        delta.add(own, +1)
    own_view = [changes.get(i, v) for i, v in enumerate(seen)]
    assert outsider.sorted_with(outsider.sorted(), delta) == _counted(own_view).sorted()
