"""The placement map's data layout: which host gets which state, color and place in the tree."""

from __future__ import annotations

import itertools

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import (
    DomainRef,
    JobPlacement,
    JobSetOutcome,
    Plan,
    PodPlacement,
    SolverReport,
)
from placer.render.maps.fleet_map import (
    OTHERS,
    PALETTE,
    STATE_COLORS,
    FleetMap,
    MapHost,
    build_fleet_map,
)
from placer.render.maps.geometry import arrange
from placer.solver.check.checker import check
from tests.strategies import BLOCK, HOSTNAME, NODEPOOL, cluster, jobset, pool, rjob

LEVELS = (BLOCK, NODEPOOL, HOSTNAME)


def _snapshot() -> ClusterSnapshot:
    return cluster(
        pool("p-0", 2, block="b0")[:1],
        [n.model_copy(update={"jobsets": ("team-r/run",)}) for n in pool("p-0", 2, block="b0")][1:],
        pool("p-1", 3, block="b0"),
        [
            pool("p-2", 2, block="b1", ready=False)[0],
            pool("p-2", 2, block="b1", unschedulable=True)[1],
        ],
        pool("p-10", 2, block="b1"),
        levels=LEVELS,
    )


def _plan() -> Plan:
    """team-a/new: one child Job of 2 pods in pool p-1 (3 hosts, so one is left over)."""
    domain = DomainRef(key=NODEPOOL, value="p-1", path=[(BLOCK, "b0"), (NODEPOOL, "p-1")])
    pods = [PodPlacement(index=i, node=f"p-1-host-{i}") for i in range(2)]
    job = JobPlacement(
        name="new-workers-0", replicated_job="workers", index=0, domain=domain, pods=pods
    )
    return Plan(
        solver=SolverReport(name="test", status="HEURISTIC"),
        jobsets=[
            JobSetOutcome(
                namespace="team-a", name="new", status="placed", accelerators=8, jobs=[job]
            ),
            JobSetOutcome(namespace="team-a", name="big", status="unschedulable", reason="too big"),
        ],
    )


def _hosts(fleet: FleetMap) -> dict[str, MapHost]:
    return {h.name: h for b in fleet.blocks for d in b.domains for h in d.hosts}


def test_the_hand_built_plan_is_valid() -> None:
    requests = [jobset("new", rjob(pods_per_job=2)), jobset("big", rjob(replicas=9))]
    assert check(_plan(), _snapshot(), requests, SolveOptions()) == []


def test_each_host_gets_its_state_and_the_jobset_it_shows() -> None:
    fleet = build_fleet_map(_snapshot(), _plan(), keys=[NODEPOOL])
    got = {name: (h.state, h.jobset) for name, h in _hosts(fleet).items()}
    assert got == {
        "p-0-host-0": ("stranded", "team-r/run"),
        "p-0-host-1": ("running", "team-r/run"),
        "p-1-host-0": ("planned", "team-a/new"),
        "p-1-host-1": ("planned", "team-a/new"),
        "p-1-host-2": ("stranded", "team-a/new"),
        "p-2-host-0": ("notready", None),
        "p-2-host-1": ("cordoned", None),
        "p-10-host-0": ("free", None),
        "p-10-host-1": ("free", None),
    }


def test_blocks_hold_domains_in_natural_order_with_their_holders() -> None:
    fleet = build_fleet_map(_snapshot(), _plan(), keys=[NODEPOOL])
    layout = [(b.title, [d.label for d in b.domains]) for b in fleet.blocks]
    assert layout == [
        ("gce-topology-block b0", ["p-0", "p-1"]),
        ("gce-topology-block b1", ["p-2", "p-10"]),
    ]
    holders = {d.label: (d.holder, d.holder_planned) for b in fleet.blocks for d in b.domains}
    assert holders["p-0"] == ("team-r/run", False)
    assert holders["p-1"] == ("team-a/new", True)
    assert holders["p-10"] == (None, False)


def test_running_and_planned_differ_in_the_legend_and_states_are_counted() -> None:
    fleet = build_fleet_map(_snapshot(), _plan(), keys=[NODEPOOL])
    entries = {e.label: e for e in fleet.legend}
    assert entries["team-a/new"].kind == "planned"
    assert entries["team-r/run"].kind == "running"
    assert entries["team-a/new"].color != entries["team-r/run"].color
    assert {k: entries[k].hosts for k in ("free", "stranded", "cordoned", "NotReady")} == {
        "free": 2,
        "stranded": 2,
        "cordoned": 1,
        "NotReady": 1,
    }
    assert "team-a/big" not in entries  # unschedulable: nothing to draw
    assert fleet.jobsets == ("team-a/new", "team-r/run")


def test_given_stranded_hosts_replace_the_held_domain_rule() -> None:
    fleet = build_fleet_map(_snapshot(), None, keys=[NODEPOOL], stranded={"p-10-host-1"})
    hosts = _hosts(fleet)
    assert hosts["p-10-host-1"].state == "stranded"
    assert hosts["p-10-host-0"].state == "free"
    assert hosts["p-0-host-0"].state == "free"  # held domain, but the capacity count did not say
    assert fleet.stranded_rule == "given"
    assert "capacity" in next(e.note for e in fleet.legend if e.label == "stranded")


def test_beyond_the_palette_jobsets_share_the_others_color_and_the_highlight_comes_first() -> None:
    many = len(PALETTE) + 3
    nodes = [
        n.model_copy(update={"jobsets": (f"ns/js-{i:02d}",)})
        for i in range(many)
        for n in pool(f"p-{i}", 1 + i % 3)
    ]
    snap = ClusterSnapshot(nodes=tuple(nodes), levels=(NODEPOOL, HOSTNAME))
    fleet = build_fleet_map(snap, None, highlight="ns/js-00")
    named = [e for e in fleet.legend if e.kind == "running"]
    others = [e for e in fleet.legend if e.kind == "others"]
    assert len(named) == len(PALETTE)
    assert named[0].label == "ns/js-00" and named[0].color == PALETTE[0]
    assert len(others) == 1 and others[0].label == "others (3 JobSets)"
    colors = {h.jobset: h.color for h in _hosts(fleet).values()}
    assert sum(1 for c in colors.values() if c == OTHERS) == 3
    assert others[0].hosts == sum(
        len(d.hosts) for b in fleet.blocks for d in b.domains if d.hosts[0].color == OTHERS
    )


def test_hosts_without_block_levels_group_by_machine_kind() -> None:
    snap = cluster(
        pool("v5e-0", 2, topology="2x4"),
        pool("v6e-0", 4, topology="4x4"),
        [n.model_copy(update={"labels": {HOSTNAME: n.name}}) for n in pool("bare", 1)],
        levels=(NODEPOOL, HOSTNAME),
    )
    fleet = build_fleet_map(snap, None)
    titles = [(b.title, [d.label for d in b.domains]) for b in fleet.blocks]
    assert titles == [("2x4", ["v5e-0"]), ("4x4", ["v6e-0"]), ("all hosts", ["no topology labels"])]
    assert all(h.color == STATE_COLORS["free"] for h in _hosts(fleet).values())


def test_geometry_keeps_cells_inside_their_domains_and_apart() -> None:
    snap = cluster(
        *(pool(f"p-{i}", 2 + i % 7, block=f"b{i % 4}") for i in range(120)), levels=LEVELS
    )
    fleet = build_fleet_map(snap, None)
    geo = arrange(fleet)
    assert len(geo.cells) == len(snap.nodes)
    for box in geo.domains:
        r = box.rect
        inside = [c.rect for c in geo.cells if c.host in box.domain.hosts]
        assert len(inside) == len(box.domain.hosts)
        for c in inside:
            assert r.x <= c.x and c.x + c.w <= r.x + r.w and r.y <= c.y and c.y + c.h <= r.y + r.h
    cells = sorted((c.rect.y, c.rect.x, c.rect.w) for c in geo.cells)
    for (y0, x0, w), (y1, x1, _) in itertools.pairwise(cells):
        assert (y0, x0) != (y1, x1)
        if y0 == y1:
            assert x0 + w <= x1
    for b in geo.blocks:
        assert b.rect.x + b.rect.w <= geo.width + 1e-6
        assert b.rect.y + b.rect.h <= geo.height + 1e-6


def test_a_highlighted_jobset_on_no_host_is_named_in_the_subtitle() -> None:
    placed = build_fleet_map(_snapshot(), _plan(), keys=[NODEPOOL], highlight="team-r/run")
    missing = build_fleet_map(_snapshot(), _plan(), keys=[NODEPOOL], highlight="team-a/big")
    assert "on no host" not in placed.subtitle
    assert missing.subtitle.endswith("; team-a/big is on no host")
    first = next(e for e in placed.legend if e.kind != "state")
    assert first.label == "team-r/run"  # on 1 host, team-a/new on 2: first only when highlighted
