"""`--reservation-guard`: pods that are not placer's stay out of domains reserved to start soon.

The plan reserves b3/s1 (n9, n10) for ml/wide from 10 minutes on and b1/s2 (n3, n4) for ml/later
from 3 hours on; ml/short runs on b3/s1 now (backfill, it ends before the reservation).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from placer.cli import main
from placer.controller.act.cache import ClusterCache, Stream
from placer.controller.act.commit import commit
from placer.controller.decide.records.ledger import (
    LEDGER_LABEL,
    LedgerChange,
    LedgerEntry,
    ledger_object,
    read_ledger,
)
from placer.model.assignment import Assignment, JobAssignment
from placer.model.plan import DomainRef, JobSetOutcome, Plan, SolverReport
from plugins.extender.decide import filter_nodes
from plugins.extender.embedded import serve
from plugins.extender.pods import pod_info
from plugins.extender.service import ServiceOptions, build
from plugins.extender.state import JobEntry, StateView, reservations_from_plan
from plugins.extender.store import ExtenderStore
from tests.extender.builders import (
    BLOCK,
    NODES,
    SUBBLOCK,
    jobset_pod,
    labels_of,
    plain_pod,
    post,
    request,
    sample_plan,
    write_inputs,
)
from tests.extender.test_embedded import cluster

H = 3600.0


def _domain(block: str, sub: str) -> DomainRef:
    return DomainRef(key=SUBBLOCK, value=sub, path=[(BLOCK, block), (SUBBLOCK, sub)])


def _plan_with_reservations(tmp: Path) -> tuple[Path, Path]:
    plan_path, cluster_path = write_inputs(tmp)
    plan = sample_plan()
    shared = plan.outcome("ml/shared")
    jobs = [
        o
        for o in plan.jobsets
        if o.key != "ml/shared"  # its pod sits on n9: replaced by the backfilled one
    ]
    short = shared.model_copy(
        update={
            "name": "short",
            "backfill": True,
            "expected_start_seconds": 0.0,
            "jobs": [
                j.model_copy(update={"name": "short-d-0", "domain": _domain("b3", "s1")})
                for j in shared.jobs
            ],
        }
    )
    waiting = [
        JobSetOutcome(
            namespace="ml",
            name=name,
            status="unschedulable",
            expected_start_seconds=start,
            reserved_domains=[domain],
        )
        for name, start, domain in (
            ("wide", 600.0, _domain("b3", "s1")),
            ("later", 3 * H, _domain("b1", "s2")),
        )
    ]
    plan = plan.model_copy(update={"jobsets": [*jobs, short, *waiting]})
    plan_path.write_text(json.dumps(plan.model_dump(mode="json")), encoding="utf-8")
    return plan_path, cluster_path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _plan_with_reservations(tmp_path_factory.mktemp("guard"))


def _serve(inputs: tuple[Path, Path], guard_s: float) -> Iterator[str]:
    plan, cluster_path = inputs
    service = build(
        ServiceOptions(
            host="127.0.0.1",
            port=0,
            plan=plan,
            cluster=(cluster_path,),
            reservation_guard_s=guard_s,
        )
    )
    service.start()
    try:
        yield service.server.url
    finally:
        service.close()


@pytest.fixture(scope="module")
def url(inputs: tuple[Path, Path]) -> Iterator[str]:
    yield from _serve(inputs, 1800.0)


def _filter(url: str, pod: dict[str, object], names: list[str]) -> dict[str, object]:
    status, answer = post(url, "filter", {"Pod": pod, "Nodes": None, "NodeNames": names})
    assert status == 200
    decoded: dict[str, object] = answer  # the extender's JSON object
    return decoded


def test_a_reservation_starting_within_the_guard_keeps_other_pods_out(url: str) -> None:
    answer = _filter(url, plain_pod(), ["n3", "n4", "n9", "n10"])
    # n9, n10: placed now for ml/short (backfill), which keeps them; n3, n4: ml/later's
    # reservation starts in 3 h, beyond the 30 m guard, so they are open
    assert answer["NodeNames"] == ["n3", "n4"]
    assert answer["FailedAndUnresolvableNodes"] == {
        "n9": "reserved for ml/short",
        "n10": "reserved for ml/short",
    }


def test_the_backfilled_jobset_still_runs_on_the_reserved_domain(url: str) -> None:
    answer = _filter(url, jobset_pod("short", "d", 0, 0), ["n9", "n10", "n5"])
    assert answer["NodeNames"] == ["n9", "n10"]


def test_a_free_domain_reserved_soon_is_closed_and_the_reason_says_until_when(
    inputs: tuple[Path, Path],
) -> None:
    plan, cluster_path = inputs
    data = json.loads(plan.read_text())
    data["jobsets"] = [j for j in data["jobsets"] if j["name"] != "short"]
    plan.with_name("no-short.json").write_text(json.dumps(data))
    for guard_s, closed in ((1800.0, {"n9", "n10"}), (0.0, set()), (4 * H, {"n3", "n4", "n9"})):
        served = _serve((plan.with_name("no-short.json"), cluster_path), guard_s)
        url = next(served)
        try:
            answer = _filter(url, plain_pod(), ["n3", "n4", "n9", "n10"][: 4 if guard_s < H else 3])
            refused = answer["FailedAndUnresolvableNodes"]
            assert isinstance(refused, dict) and set(refused) == closed
            assert all(
                r.startswith("reserved for ml/") and " from 20" in r for r in refused.values()
            )
        finally:
            next(served, None)


def test_a_reservation_enters_the_guard_as_time_passes() -> None:
    now = [1000.0]
    store = ExtenderStore(guard_s=1800.0, clock=lambda: now[0])
    store.learn_nodes({n: labels_of(n) for n in ("n9", "n10")})
    store.replace_reservations(
        [JobEntry(jobset="ml/wide", job="r", domain=_domain("b3", "s1"), reserved_from=5000.0)]
    )
    assert store.view().owner == {}
    now[0] = 5000.0 - 1800.0
    assert {n: e.jobset for n, e in store.view().owner.items()} == {
        "n9": "ml/wide",
        "n10": "ml/wide",
    }


def test_a_jobset_past_the_maximum_wait_has_its_domains_guarded_at_once() -> None:
    """Its start may be hours away: a pod that is not placer's landing there now would push
    back the JobSet placer promised to start next. Another's reservation as far away stays
    open until it enters the guard."""
    now = [1000.0]
    store = ExtenderStore(guard_s=1800.0, clock=lambda: now[0])
    store.learn_nodes({n: labels_of(n) for n in ("n3", "n4", "n9", "n10")})
    far = 1000.0 + 3 * H
    store.replace_reservations(
        [
            JobEntry(
                jobset="ml/starved",
                job="r",
                domain=_domain("b3", "s1"),
                reserved_from=far,
                past_max_wait=True,
            ),
            JobEntry(jobset="ml/later", job="r", domain=_domain("b1", "s2"), reserved_from=far),
        ]
    )
    view = store.view()
    assert {n: e.jobset for n, e in view.owner.items()} == {
        "n9": "ml/starved",
        "n10": "ml/starved",
    }
    assert view.reasons["n9"].endswith(" (waiting past --max-wait)")
    now[0] = far - 1800.0  # the other one enters the guard: the view is rebuilt then
    assert {e.jobset for e in store.view().owner.values()} == {"ml/starved", "ml/later"}


def test_a_plan_file_jobset_past_the_maximum_wait_is_guarded_over_http(
    inputs: tuple[Path, Path],
) -> None:
    plan, cluster_path = inputs
    data = json.loads(plan.read_text())
    for j in data["jobsets"]:
        if j["name"] == "later":  # reserved from 3 h on, beyond the 30 m guard
            j["past_max_wait"] = True
    late = plan.with_name("past-max-wait.json")
    late.write_text(json.dumps(data))
    served = _serve((late, cluster_path), 1800.0)
    url = next(served)
    try:
        answer = _filter(url, plain_pod(), ["n3", "n4", "n9", "n10"])
        assert answer["NodeNames"] == []
        refused = answer["FailedAndUnresolvableNodes"]
        assert isinstance(refused, dict)
        assert refused["n3"].startswith("reserved for ml/later from 20")
        assert refused["n3"].endswith(" (waiting past --max-wait)")
    finally:
        next(served, None)


def test_the_ledger_says_which_reservations_are_past_the_maximum_wait() -> None:
    from plugins.extender.sources import ledger_reservations

    def entry(owner: str, late: bool) -> LedgerEntry:
        domain = _domain("b3", "s1") if late else _domain("b1", "s2")
        record = Assignment(jobset=owner, jobs={"r0": JobAssignment(domain=domain)})
        start = time.time() + 3 * H
        return LedgerEntry(
            kind="reservation",
            owner=owner,
            record=record,
            start=start,
            end=start + H,
            past_max_wait=late,
        )

    change = LedgerChange(
        put={
            "reservation.ml.old": entry("ml/old", True),
            "reservation.ml.new": entry("ml/new", False),
        }
    )
    rows = ledger_reservations(ledger_object(read_ledger(None, "placer-system"), change))
    assert {r.jobset: r.past_max_wait for r in rows} == {"ml/old": True, "ml/new": False}


def test_embedded_extender_reads_reservations_from_the_ledger() -> None:
    api, _ = cluster()
    entry = LedgerEntry(
        kind="reservation",
        owner="ml/wide",
        record=Assignment(jobset="ml/wide", jobs={"r0": JobAssignment(domain=_domain("b3", "s1"))}),
        start=time.time() + 600,
        end=time.time() + 4200,
    )
    commit(
        api,
        read_ledger(None, "placer-system"),
        LedgerChange(put={"reservation.ml.wide": entry}),
    )
    cache = ClusterCache(api, ledger=Stream("configmaps", "placer-system", LEDGER_LABEL))
    cache.relist()
    embedded = serve(SimpleNamespace(cache=cache), 0, host="127.0.0.1", guard_s=1800.0)
    try:
        url = embedded.server.url
        deadline = time.monotonic() + 10
        while request(url, "GET", "/readyz")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        answer = _filter(url, plain_pod(), ["n8", "n9", "n10"])
        assert answer["NodeNames"] == ["n8"]
        refused = answer["FailedAndUnresolvableNodes"]
        assert isinstance(refused, dict) and set(refused) == {"n9", "n10"}
    finally:
        embedded.close()


def test_a_bad_guard_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extender", "--plan", "x.json", "--reservation-guard", "soon"]) == 2
    assert "--reservation-guard" in capsys.readouterr().err


@pytest.mark.parametrize("start", [math.nan, math.inf, -1e30, 1e30])
def test_ledger_reservations_the_extender_cannot_date_are_ignored_not_fatal(
    start: float, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 22: a ledger (the controller's ConfigMap, editable by anyone who may write it) whose
    reservation starts at NaN or centuries away: that row holds nothing and says so; the rows
    beside it still hold, and the view builds (a start it cannot print used to raise)."""
    from placer.controller.decide.records.ledger import (
        LedgerChange,
        LedgerEntry,
        ledger_object,
        read_ledger,
    )
    from placer.model.assignment import Assignment, JobAssignment
    from placer.model.plan import DomainRef
    from plugins.extender.sources import ledger_reservations
    from plugins.extender.store import ExtenderStore

    domain = DomainRef(key="pool", value="p1", path=[("pool", "p1")])
    now = time.time()

    def entry(owner: str, at: float) -> LedgerEntry:
        record = Assignment(jobset=owner, jobs={"r0": JobAssignment(domain=domain)})
        return LedgerEntry(kind="reservation", owner=owner, record=record, start=at, end=at + 60)

    change = LedgerChange(put={"reservation.ml.bad": entry("ml/bad", start),
                               "reservation.ml.good": entry("ml/good", now + 60)})  # fmt: skip
    obj = ledger_object(read_ledger(None, "placer-system"), change)
    with caplog.at_level("WARNING"):
        rows = ledger_reservations(obj)
    assert [r.jobset for r in rows] == ["ml/good"]
    assert any("ml/bad" in r.getMessage() for r in caplog.records)
    store = ExtenderStore(guard_s=3600)
    store.replace_reservations(rows)
    store.replace_nodes({"n1": {"pool": "p1"}})
    assert store.view().reasons["n1"].startswith("reserved for ml/good from ")


def test_reserved_nodes_are_guarded_by_name() -> None:
    """The nodes a waiting JobSet's coordinator is to take at its start (`reserved_nodes`) are
    guarded with its domains, found by name (no label names them), whether the request sends
    node labels or not."""
    waiting = JobSetOutcome(
        namespace="ml",
        name="wide",
        status="unschedulable",
        expected_start_seconds=600.0,
        reserved_domains=[_domain("b3", "s1")],
        reserved_nodes=["n3"],
    )
    plan = Plan(solver=SolverReport(name="best-fit", status="HEURISTIC"), jobsets=[waiting])
    rows = reservations_from_plan(plan, 1_000_000.0)
    names = ["n3", "n4", "n9"]
    labels = {n: labels_of(n) for n in NODES}
    for known, sent in ((labels, None), ({}, labels)):
        result = filter_nodes(StateView(rows, known), pod_info(plain_pod()), names, sent)
        assert result.passed == ("n4",)
        assert set(result.unresolvable) == {"n3", "n9"}
        assert result.unresolvable["n3"].startswith("reserved for ml/wide from ")
    # no labels known yet: the domain's nodes cannot be told, the node by name still can
    result = filter_nodes(StateView(rows, {}), pod_info(plain_pod()), names)
    assert (result.passed, list(result.unresolvable)) == (("n4", "n9"), ["n3"])
