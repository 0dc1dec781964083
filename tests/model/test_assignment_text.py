"""The placement record's text: compact enough for the API server's annotation limit, read back
exactly, the older long form still read, and anything else refused as unreadable."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.assignment import Assignment, JobAssignment
from placer.model.errors import InputError
from placer.model.plan import DomainRef

POOL = "cloud.google.com/gke-nodepool"
HOST = "kubernetes.io/hostname"
SLICE = "cloud.google.com/gke-tpu-slice"

ANNOTATIONS_LIMIT = 256 * 1024
"""The API server's bound on all of an object's annotations, keys and values (the cluster test
tests/cluster/test_record_limit.py asks the real one)."""

_labels = st.sampled_from([POOL, HOST, SLICE, "example.com/rack"])
_values = st.text(st.sampled_from("abc-0123"), min_size=1, max_size=8)


@st.composite
def _domains(draw: st.DrawFn) -> DomainRef:
    path: list[tuple[str, str]] = draw(st.lists(st.tuples(_labels, _values), max_size=3))
    ends_at_its_level: bool = draw(st.booleans())
    if path and ends_at_its_level:
        return DomainRef(key=path[-1][0], value=path[-1][1], path=path)  # ends at its level
    return DomainRef(key=draw(_labels), value=draw(_values), path=path)


_jobs = st.builds(
    JobAssignment,
    domain=st.none() | _domains(),
    nodes=st.dictionaries(st.integers(0, 50), _values, max_size=3),
)


@given(
    st.dictionaries(st.text(st.sampled_from("jw-0123"), min_size=1, max_size=6), _jobs),
    st.booleans(),
)
def test_every_record_reads_back_equal(jobs: dict[str, JobAssignment], pinned: bool) -> None:
    """A record that read back different would be rewritten on every cycle and compared wrongly
    against the ledger."""
    record = Assignment(jobset="ns/a", jobs=jobs, pinned=pinned, plan_id="p")
    assert Assignment.from_annotation(record.to_annotation()) == record


def _hostname_record(count: int) -> Assignment:
    hosts = [f"gke-a3-mega-pool-7f3c9a1e-{i:04d}" for i in range(count)]
    return Assignment(
        jobset="training/llama-405b",
        plan_id="0123456789ab",
        jobs={
            f"llama-405b-workers-{i}": JobAssignment(
                domain=DomainRef(key=HOST, value=h, path=[(POOL, "a3-mega-pool"), (HOST, h)])
            )
            for i, h in enumerate(hosts)
        },
    )


def test_three_thousand_one_node_child_jobs_fit_the_annotation_limit() -> None:
    """One child Job per node (exclusive by hostname) is how wide GPU jobs are often written;
    in the long form each took about 250 bytes with these names, so past about 1,000 nodes the
    record could not be stored at all (now about 75)."""
    record = _hostname_record(3000)
    text = record.to_annotation()
    assert len("placer.dev/assignment") + len(text.encode()) < ANNOTATIONS_LIMIT
    long_form = json.dumps(record.model_dump(mode="json"), separators=(",", ":"))
    assert len(long_form) > ANNOTATIONS_LIMIT
    assert Assignment.from_annotation(text) == record


def test_the_long_form_earlier_versions_wrote_reads_the_same() -> None:
    record = _hostname_record(3).model_copy(update={"pinned": True})
    pinned = JobAssignment(domain=None, nodes={0: "n-1", 1: "n-2"})
    record = record.model_copy(update={"jobs": {**record.jobs, "x-0": pinned}})
    long_form = json.dumps(record.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    assert Assignment.from_annotation(long_form) == record


def test_child_jobs_off_the_shared_levels_keep_their_level_keys() -> None:
    on_slice = JobAssignment(domain=DomainRef(key=SLICE, value="s0", path=[(SLICE, "s0")]))
    on_host = JobAssignment(
        domain=DomainRef(key=HOST, value="h0", path=[(POOL, "p"), (HOST, "h0")])
    )
    record = Assignment(jobset="ns/a", jobs={"a-0": on_slice, "a-1": on_slice, "b-0": on_host})
    data = json.loads(record.to_annotation())
    assert data["levels"] == [SLICE]
    assert data["jobs"] == {"a-0": ["s0"], "a-1": ["s0"], "b-0": [[POOL, "p"], [HOST, "h0"]]}


@pytest.mark.parametrize(
    "jobs, levels",
    [
        pytest.param([], None, id="jobs-not-an-object"),
        pytest.param({"a": []}, None, id="empty-path"),
        pytest.param({"a": ["v"]}, None, id="values-without-levels"),
        pytest.param({"a": ["v", "w"]}, [HOST], id="more-values-than-levels"),
        pytest.param({"a": ["v"]}, [1], id="levels-not-keys"),
        pytest.param({"a": [[HOST]]}, None, id="pair-of-one"),
        pytest.param({"a": [[HOST, 3]]}, None, id="value-not-a-string"),
        pytest.param({"a": 7}, None, id="job-a-number"),
        pytest.param({"a": {"nodes": {"x": "n"}}}, None, id="index-not-a-number"),
        pytest.param({"a": {"key": HOST}}, None, id="key-without-value"),
        pytest.param({"a": {"domain": "h0"}}, None, id="long-form-domain-a-string"),
    ],
)
def test_anything_else_is_an_unreadable_record(jobs: object, levels: object) -> None:
    text = json.dumps({"jobset": "ns/a", "jobs": jobs, "levels": levels})
    with pytest.raises(InputError, match="unreadable placement record"):
        Assignment.from_annotation(text, obj="JobSet/ns/a")
