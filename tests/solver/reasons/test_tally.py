"""`Tallies.sorted_with`: a JobSet's adjusted listing from the outsider's, counted again only
where its own verdicts differ, must list exactly what counting everything again lists; and
`Tallies.sorted(first=...)`: a view's listing from its key's held reasons, listed once, must list
what sorting all of them lists."""

from __future__ import annotations

import pytest
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


def _held(holders: tuple[str, ...]) -> Verdict:
    return Reason("held", holders=holders), holders


_holders = st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True).map(
    lambda h: tuple(sorted(h))
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


@settings(max_examples=300, deadline=None)
@given(
    held=st.lists(_holders, max_size=8),
    others=st.lists(_verdicts.filter(lambda v: v is None or v[0].kind != "held"), max_size=12),
)
def test_a_listing_after_the_held_reasons_listed_once_is_the_listing_of_everything(
    held: list[tuple[str, ...]], others: list[Verdict]
) -> None:
    """Held domains counted once per key, each view's other verdicts added: the view's listing
    (the held rows kept, the rest sorted) equals sorting every verdict together, and the key's
    tallies are left as they were."""
    base = _counted([_held(h) for h in held])
    before = base.sorted()
    view = base.extended(others)
    assert view.sorted(first=base.listed()) == _counted([_held(h) for h in held] + others).sorted()
    assert base.sorted() == before


def test_extending_with_a_reason_the_base_counts_is_refused() -> None:
    """The extension shares the base's name counts: counting a base reason again would change
    the key's tallies for every view."""
    base = _counted([_held(("a/x",))])
    with pytest.raises(ValueError, match="counted already"):
        base.extended([_held(("a/x",))])


def test_a_reason_ranked_with_those_listed_first_is_refused() -> None:
    """A held reason the base does not count would belong among the rows listed first, not
    after them."""
    base = _counted([_held(("a/x",))])
    view = base.extended([_held(("b/z",))])
    with pytest.raises(ValueError, match="out of order"):
        view.sorted(first=base.listed())
