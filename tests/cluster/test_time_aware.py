"""Time-aware planning in the controller, on the real control plane (`--reservations all`, both
`--schedule` passes).

Seven whole v5e slices. `run` holds five of them, Running for an hour of its stated two; `wide`
needs all seven for two hours, so it waits for `run`'s end and the ledger reserves every slice
for it from then. Of the two free slices, `short` (ten minutes) may run at once, since it ends
long before `wide` starts (backfill); `long` (three hours) may not: it would hold `wide` back.
kube-scheduler binds what the controller releases, so a backfill the ledger did not allow, or
a wide JobSet started early, would show as bound pods. `short` and `long` are created once
`wide`'s reservation is in the ledger, often in the same second as `wide` (creation times have
one-second resolution), and then queued ahead of it by name: `wide`'s reservation, kept from an
earlier round, must stay ahead of theirs (it did not, about one run in two, until kept
reservations were re-timed in the order they were promised: `reservations.reserve`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest

from placer.controller.decide.records.ledger import (
    LEDGER_NAME,
    PLACEMENT,
    RESERVATION,
    LedgerEntry,
    entry_key,
    read_ledger,
)
from placer.model.cluster import NODE_RESERVATION_KEY
from placer.model.durations import EXPECTED_DURATION
from tests.cluster.kube import name_of
from tests.cluster.processes import wait_until
from tests.cluster.scenario import PLACER_SYSTEM, Scenario, assignment_of
from tests.cluster.test_gate_binding import multislice, with_coordinator

HOUR = 3600.0
TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
WHOLE_V5E_SLICES = 7
"""v5e pools of examples/clusters/tpu-v5e-v6e.yaml without its running pods: all 8 but pool 2,
whose NotReady host leaves it short of a slice."""


def ledger_entries(scenario: Scenario) -> Mapping[str, LedgerEntry]:
    obj = scenario.core.read_namespaced_config_map(LEDGER_NAME, PLACER_SYSTEM)
    return read_ledger(
        scenario.core.api_client.sanitize_for_serialization(obj), PLACER_SYSTEM
    ).entries


def _create(scenario: Scenario, name: str, slices: int, duration: str) -> None:
    manifest = multislice(name, slices=slices)
    manifest["metadata"]["annotations"][EXPECTED_DURATION] = duration
    scenario.create_jobset(manifest)


def _slices(scenario: Scenario, name: str) -> set[str]:
    return {
        job["domain"]["value"] for job in assignment_of(scenario.get_jobset(name))["jobs"].values()
    }


def run_for_another_hour(scenario: Scenario) -> float:
    """`run` on five slices, its pods Running since an hour ago for its stated two hours; when
    it is expected to end (epoch seconds)."""
    _create(scenario, "run", slices=5, duration="2h")
    started = time.time() - HOUR
    for pod in scenario.wait_pods_bound("run", count=10):
        stamp = datetime.fromtimestamp(started, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        scenario.core.patch_namespaced_pod_status(
            name_of(pod), scenario.namespace, {"status": {"phase": "Running", "startTime": stamp}}
        )
    return started + 2 * HOUR


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
def test_a_short_jobset_backfills_ahead_of_a_reservation_and_a_long_one_waits(
    scenario: Scenario, schedule: str
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller("--reservations=all", f"--schedule={schedule}", "--replan-interval=2")
    run_ends = run_for_another_hour(scenario)
    _create(scenario, "wide", slices=WHOLE_V5E_SLICES, duration="2h")
    wide, long_ = (entry_key(RESERVATION, f"{scenario.namespace}/{n}") for n in ("wide", "long"))

    def reserved_from_runs_end() -> bool:
        entry = ledger_entries(scenario).get(wide)
        return entry is not None and entry.start is not None and abs(entry.start - run_ends) < 300

    wait_until(reserved_from_runs_end, timeout_s=60, what="wide reserved from run's expected end")
    _create(scenario, "short", slices=1, duration="10m")
    _create(scenario, "long", slices=1, duration="3h")
    wait_until(lambda: long_ in ledger_entries(scenario), timeout_s=60, what="long's reservation")
    scenario.wait_pods_bound("short", count=2)
    entries = ledger_entries(scenario)
    wide_start, long_start = entries[wide].start, entries[long_].start
    assert wide_start is not None and long_start is not None
    assert abs(wide_start - run_ends) < 300, wide_start - run_ends  # short did not delay it
    reserved_slices = {j.domain.value for j in entries[wide].record.jobs.values() if j.domain}
    assert len(reserved_slices) == WHOLE_V5E_SLICES
    assert _slices(scenario, "run") | _slices(scenario, "short") <= reserved_slices
    assert long_start >= wide_start + 2 * HOUR - 300
    assert _slices(scenario, "short").isdisjoint(_slices(scenario, "run"))
    time.sleep(6)  # three more rounds: nothing else starts
    for name in ("wide", "long"):
        assert not [p for p in scenario.pods_of(name) if p.spec.node_name], name
        assert entry_key(PLACEMENT, f"{scenario.namespace}/{name}") not in ledger_entries(scenario)
    assert any(
        e.reason == "Reserved" and "expected start" in (e.message or "")
        for e in scenario.events("wide")
    )
    # the reason names who holds the slices, not placer's hold tokens
    why = [e.message or "" for e in scenario.events("wide") if e.reason == "Unschedulable"]
    assert why and all("placer:" not in m for m in why), why
    assert any(f"5 held by running {scenario.namespace}/run" in m for m in why), why


def reserved_nodes(entry: LedgerEntry) -> list[str]:
    return sorted(
        j.domain.value
        for j in entry.record.jobs.values()
        if j.domain is not None and j.domain.key == NODE_RESERVATION_KEY
    )


def reserve_mixed(scenario: Scenario) -> tuple[LedgerEntry, float]:
    """`run` for another hour, then `mixed`: all seven whole v5e slices and a coordinator of
    one v6e host without an exclusive key, for two hours. Its ledger reservation once it names
    the host, and `run`'s expected end (epoch seconds). The controller must be running."""
    run_ends = run_for_another_hour(scenario)
    v6e_host = {TPU_ACCELERATOR: "tpu-v6e-slice", TPU_TOPOLOGY: "4x4"}
    manifest = with_coordinator(multislice("mixed", slices=WHOLE_V5E_SLICES), v6e_host)
    manifest["metadata"]["annotations"][EXPECTED_DURATION] = "2h"
    scenario.create_jobset(manifest)
    key = entry_key(RESERVATION, f"{scenario.namespace}/mixed")

    def reserved() -> LedgerEntry | None:
        entry = ledger_entries(scenario).get(key)
        return entry if entry is not None and reserved_nodes(entry) else None

    wait_until(lambda: reserved() is not None, timeout_s=60, what="mixed's reservation")
    entry = reserved()
    assert entry is not None
    return entry, run_ends


def test_a_coordinators_host_is_reserved_with_its_jobsets_slices(scenario: Scenario) -> None:
    """`mixed` (`reserve_mixed`) needs all seven whole v5e slices, five of them `run`'s for
    another hour. Its reservation in the ledger holds the slices and the host the coordinator
    is to take (an entry of key `placer.dev/node`), which a JobSet running past its start may
    not take (tests/solver/time/test_reserved_nodes.py). The real API server keeps the entry,
    and the cycles that read it back find the same host: the entry is not rewritten and
    `Reserved` is sent once."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller("--reservations=all", "--replan-interval=2")
    entry, run_ends = reserve_mixed(scenario)
    assert entry.start is not None
    assert abs(entry.start - run_ends) < 300, entry.start - run_ends
    [host] = reserved_nodes(entry)
    assert scenario.node_labels()[host][TPU_TOPOLOGY] == "4x4"
    slices = {j.domain.value for j in entry.record.jobs.values() if j.domain} - {host}
    assert len(slices) == WHOLE_V5E_SLICES
    time.sleep(6)  # three more cycles read the entry back
    key = entry_key(RESERVATION, f"{scenario.namespace}/mixed")
    assert ledger_entries(scenario)[key].to_text() == entry.to_text()
    said = [e.message or "" for e in scenario.events("mixed") if e.reason == "Reserved"]
    assert len(said) == 1 and f"{NODE_RESERVATION_KEY}={host}" in said[0], said
    assert not [p for p in scenario.pods_of("mixed") if p.spec.node_name]
