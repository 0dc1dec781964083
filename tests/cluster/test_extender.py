"""The scheduler extender in kube-scheduler's real configuration.

`placer extender` watches the controller's ledger (as the shipped ServiceAccount
`placer-extender`, with exactly deploy/scheduler's Roles); kube-scheduler calls it with
deploy/scheduler/kube-scheduler-config.yaml's extender settings (nodeCacheCapable, managed
TPU and GPU resources), pointed at 127.0.0.1. Pods that are not placer's must stay out of
planned domains; with the extender down, `ignorable` decides whether they schedule at all.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from placer.controller.decide.records.ledger import RESERVATION, LedgerEntry, entry_key, read_ledger
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment, JobAssignment
from placer.model.durations import EXPECTED_DURATION
from placer.model.plan import DomainRef
from tests.cluster.kube import apply_all, meta_of, name_of, service_account_token
from tests.cluster.processes import LOOPBACK, free_port, wait_until
from tests.cluster.scenario import PLACER_SYSTEM, REPO, Scenario, assignment_of, load_documents
from tests.cluster.test_gate_binding import POOL, multislice
from tests.cluster.test_time_aware import reserve_mixed, reserved_nodes
from tests.extender.builders import post, request

V5E = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
    "cloud.google.com/gke-tpu-topology": "2x4",
}


def extender_settings(port: int, *, ignorable: bool) -> list[dict[str, Any]]:
    """deploy/scheduler's extender entry, its URL on loopback."""
    (config,) = load_documents(REPO / "deploy/scheduler/kube-scheduler-config.yaml")
    (extender,) = copy.deepcopy(config["extenders"])
    extender["urlPrefix"] = f"http://{LOOPBACK}:{port}"
    extender["ignorable"] = ignorable
    return [extender]


def start_extender(scenario: Scenario, *flags: str) -> int:
    documents = load_documents(REPO / "deploy/scheduler/extender.yaml")
    rbac = [
        d for d in documents if d["kind"] not in {"Deployment", "Service", "PodDisruptionBudget"}
    ]
    apply_all(scenario.admin, rbac)
    token = service_account_token(scenario.admin, PLACER_SYSTEM, "placer-extender")
    kubeconfig = scenario.plane.token_kubeconfig("placer-extender", token)
    port = free_port()
    scenario._placer(
        "extender",
        "extender",
        f"--kubeconfig={kubeconfig}",
        f"--host={LOOPBACK}",
        f"--port={port}",
        f"--ledger-namespace={PLACER_SYSTEM}",
        *flags,
        health_url=f"http://{LOOPBACK}:{port}/healthz",
    )
    return port


def other_pod(name: str) -> dict[str, Any]:
    """Not placer's: no JobSet labels, one TPU chip, tolerating the TPU taint."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": V5E,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"limits": {"google.com/tpu": "1"}},
                }
            ],
        },
    }


def with_extender(
    scenario: Scenario, *controller_flags: str, extender_flags: tuple[str, ...] = ()
) -> int:
    """The example TPU cluster, kube-scheduler calling the extender (not ignorable, with
    `extender_flags`), the webhook and the controller (with `controller_flags`); returns the
    extender's port."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    port = start_extender(scenario, *extender_flags)
    scenario.plane.reconfigure_scheduler(
        scenario.plane.scheduler_config(extender_settings(port, ignorable=False))
    )
    scenario.start_webhook()
    scenario.start_controller(*controller_flags)
    return port


def crowd_outside(scenario: Scenario, kept: set[str]) -> tuple[list[Any], list[str]]:
    """As many pods that are not placer's as there are chips free on usable v5e nodes outside
    the pools in `kept`, and two more; returns once that many are bound: (the bound pods, the
    names of the two that must wait). Without the extender the two would take chips inside
    `kept`; with it they stay pending."""
    outside = 0
    for node in scenario.core.list_node().items:
        assert node.metadata is not None and node.spec is not None and node.status is not None
        labels = node.metadata.labels
        assert labels is not None and node.status.allocatable is not None  # nodes here have both
        usable = not any(t.key == "node.kubernetes.io/not-ready" for t in node.spec.taints or [])
        if (
            usable
            and labels.get(POOL) not in kept
            and all(labels.get(k) == v for k, v in V5E.items())
        ):
            outside += int(node.status.allocatable["google.com/tpu"])
    names = [f"other-{index}" for index in range(outside + 2)]
    for name in names:
        # the client validates a dict into V1Pod
        scenario.core.create_namespaced_pod(scenario.namespace, other_pod(name))  # type: ignore[arg-type]

    def pods() -> list[Any]:
        return [scenario.core.read_namespaced_pod(n, scenario.namespace) for n in names]

    wait_until(
        lambda: sum(bool(p.spec.node_name) for p in pods()) == outside,
        timeout_s=120,
        what=f"{outside} of the other pods bound",
    )
    found = pods()
    return [p for p in found if p.spec.node_name], [
        p.metadata.name for p in found if not p.spec.node_name
    ]


@pytest.fixture
def scheduler_restored(scenario: Scenario) -> Iterator[Scenario]:
    """The scheduler back to its plain configuration after the scenario, pass or fail."""
    try:
        yield scenario
    finally:
        scenario.plane.reconfigure_scheduler(scenario.plane.scheduler_config())


def keeps_other_pods_out(scenario: Scenario) -> None:
    """A JobSet of two chips per worker, so each planned node keeps two free chips another pod
    could take; then more pods that are not placer's than fit outside its domains: none enters
    them, the two left over wait with FailedScheduling. The pods are deleted afterwards."""
    manifest = multislice("half", slices=3)
    container = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    container["resources"]["limits"]["google.com/tpu"] = 2
    scenario.create_jobset(manifest)
    scenario.wait_pods_bound("half", count=6)
    record = assignment_of(scenario.get_jobset("half"))
    planned = {entry["domain"]["value"] for entry in record["jobs"].values()}

    bound, waiting = crowd_outside(scenario, planned)
    labels = scenario.node_labels()
    for pod in bound:
        pool = labels[pod.spec.node_name][POOL]
        assert pool not in planned, f"{pod.metadata.name} entered planned domain {pool}"
    assert len(waiting) == 2
    wait_until(
        lambda: all(
            any(e.reason == "FailedScheduling" for e in scenario.events(n)) for n in waiting
        ),
        timeout_s=60,
        what="FailedScheduling for the pods with no room outside planned domains",
    )
    for name in [p.metadata.name for p in bound] + waiting:
        scenario.core.delete_namespaced_pod(name, scenario.namespace, grace_period_seconds=0)


def test_pods_that_are_not_placers_stay_out_of_planned_domains_and_ignorable_decides_when_down(
    scheduler_restored: Scenario,
) -> None:
    scenario = scheduler_restored
    port = with_extender(scenario)
    keeps_other_pods_out(scenario)

    # The extender down: not ignorable, a pod it should judge is not scheduled at all.
    scenario.processes["extender"].stop()
    # the client validates a dict into V1Pod
    scenario.core.create_namespaced_pod(scenario.namespace, other_pod("while-down"))  # type: ignore[arg-type]

    def refused() -> bool:
        events = scenario.events("while-down")
        return any(e.reason == "FailedScheduling" for e in events)

    wait_until(refused, timeout_s=60, what="FailedScheduling for while-down")
    while_down = scenario.core.read_namespaced_pod("while-down", scenario.namespace).spec
    assert while_down is not None  # the API server always returns one
    assert not while_down.node_name

    # Ignorable: the scheduler goes on without it.
    scenario.plane.reconfigure_scheduler(
        scenario.plane.scheduler_config(extender_settings(port, ignorable=True))
    )

    def while_down_bound() -> bool:
        spec = scenario.core.read_namespaced_pod("while-down", scenario.namespace).spec
        assert spec is not None  # the API server always returns one
        return bool(spec.node_name)

    wait_until(
        while_down_bound,
        timeout_s=90,
        what="while-down bound with the extender ignorable",
    )


def _ledger_reservation(scenario: Scenario, owner: str) -> LedgerEntry | None:
    obj = scenario.core.read_namespaced_config_map("placer-ledger", PLACER_SYSTEM)
    ledger = read_ledger(scenario.core.api_client.sanitize_for_serialization(obj), PLACER_SYSTEM)
    return ledger.entries.get(entry_key(RESERVATION, owner))


def test_a_jobset_past_the_maximum_wait_keeps_other_pods_off_its_reserved_domains_at_once(
    scheduler_restored: Scenario,
) -> None:
    """`wide` (7 slices) waits ten hours for `run`'s (5 of the 7 whole ones); past `--max-wait`
    (1 s here) the ledger says so, and the extender keeps pods that are not placer's off the
    free slices reserved for it now, though its start is far beyond the 30 min
    `--reservation-guard`."""
    scenario = scheduler_restored
    with_extender(scenario, "--reservations=head", "--max-wait=1s", "--replan-interval=2")
    for name, slices in (("run", 5), ("wide", 7)):
        manifest = multislice(name, slices=slices)
        manifest["metadata"]["annotations"][EXPECTED_DURATION] = "10h"
        scenario.create_jobset(manifest)
        if name == "run":
            scenario.wait_pods_bound("run", count=10)
    owner = f"{scenario.namespace}/wide"
    wait_until(
        lambda: (entry := _ledger_reservation(scenario, owner)) is not None and entry.past_max_wait,
        timeout_s=60,
        what="wide's reservation marked past --max-wait in the ledger",
    )
    entry = _ledger_reservation(scenario, owner)
    assert entry is not None and entry.start is not None
    assert entry.start - time.time() > 3600  # far beyond the guard
    reserved = {j.domain.value for j in entry.record.jobs.values() if j.domain is not None}
    running = {
        v["domain"]["value"] for v in assignment_of(scenario.get_jobset("run"))["jobs"].values()
    }
    labels = scenario.node_labels()
    free_reserved = {
        node for node, node_labels in labels.items() if node_labels.get(POOL) in reserved - running
    }
    assert free_reserved, (reserved, running)

    bound, waiting = crowd_outside(scenario, reserved | running)
    assert not {p.spec.node_name for p in bound} & free_reserved
    assert len(waiting) == 2

    def told() -> bool:
        return all(
            any("waiting past --max-wait" in (e.message or "") for e in scenario.events(n))
            for n in waiting
        )

    wait_until(told, timeout_s=60, what="FailedScheduling naming wide's reservation")


def pinned_pod(name: str, node: str) -> dict[str, Any]:
    """`other_pod` on the node `node` only."""
    pod = other_pod(name)
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def test_a_coordinators_reserved_host_keeps_other_pods_off_within_the_guard(
    scheduler_restored: Scenario,
) -> None:
    """`mixed` is reserved from `run`'s end in an hour: seven v5e slices, and one v6e host for
    its coordinator, which has no exclusive key (a `placer.dev/node` entry in the ledger:
    tests/cluster/test_time_aware.py). With a two-hour `--reservation-guard` the extender
    keeps a pod that is not placer's off that host, naming the reservation, while the same pod
    binds on another host of the host's pool: the pool is not reserved, the host is."""
    scenario = scheduler_restored
    with_extender(
        scenario,
        "--reservations=all",
        "--replan-interval=2",
        extender_flags=("--reservation-guard=2h",),
    )
    entry, _ = reserve_mixed(scenario)
    [host] = reserved_nodes(entry)
    labels = scenario.node_labels()
    nodes = scenario.core.list_node().items
    cordoned = {name_of(n) for n in nodes if n.spec is not None and n.spec.unschedulable}
    [beside, *_] = sorted(
        n
        for n, ls in labels.items()
        if ls.get(POOL) == labels[host][POOL] and n != host and n not in cordoned
    )
    for name, node in (("on-reserved", host), ("beside", beside)):
        # the client validates a dict into V1Pod
        scenario.core.create_namespaced_pod(scenario.namespace, pinned_pod(name, node))  # type: ignore[arg-type]

    def bound(name: str) -> str | None:
        spec = scenario.core.read_namespaced_pod(name, scenario.namespace).spec
        assert spec is not None  # the API server always returns one
        return spec.node_name

    wait_until(lambda: bound("beside") == beside, timeout_s=60, what="beside bound")
    reason = f"reserved for {scenario.namespace}/mixed from "

    def told() -> bool:
        return any(reason in (e.message or "") for e in scenario.events("on-reserved"))

    wait_until(told, timeout_s=60, what="FailedScheduling naming mixed's reservation")
    assert bound("on-reserved") is None


def test_with_the_bind_verb_the_extender_binds_placers_pods_once_given_the_bind_role(
    scheduler_restored: Scenario,
) -> None:
    """deploy/scheduler's `--bind` option: kube-scheduler hands the binding of pods the extender
    manages to it. With extender.yaml's Roles alone its Binding is refused and the pods stay
    unbound; extender-bind.yaml's role is what it needs, and then every pod is bound, by the
    extender, where the plan says."""
    scenario = scheduler_restored
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    port = start_extender(scenario, "--bind")
    settings = extender_settings(port, ignorable=False)
    settings[0]["bindVerb"] = "bind"
    scenario.plane.reconfigure_scheduler(scenario.plane.scheduler_config(settings))
    scenario.start_webhook()
    scenario.start_controller()
    scenario.create_jobset(multislice("bound", slices=2))
    log = scenario.processes["extender"].log_path
    wait_until(
        lambda: "403" in log.read_text() and "binding" in log.read_text(),
        timeout_s=60,
        what="the extender's Binding refused without the bind role",
    )
    assert not [p for p in scenario.pods_of("bound") if p.spec.node_name]
    bind_role = load_documents(REPO / "deploy/scheduler/extender-bind.yaml")
    apply_all(scenario.admin, bind_role)
    try:
        pods = scenario.wait_pods_bound("bound", count=4, timeout_s=120)
    finally:
        rbac = k8s.RbacAuthorizationV1Api(scenario.core.api_client)
        rbac.delete_cluster_role_binding("placer-extender-bind")
        rbac.delete_cluster_role("placer-extender-bind")
    text = log.read_text()
    record = assignment_of(scenario.get_jobset("bound"))
    labels = scenario.node_labels()
    for pod in pods:
        node = pod.spec.node_name
        assert f"bound {scenario.namespace}/{pod.metadata.name} to {node}" in text
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        assert labels[node][POOL] == record["jobs"][job]["domain"]["value"]


def test_the_controllers_embedded_extender_keeps_other_pods_out_as_well(
    scheduler_restored: Scenario,
) -> None:
    """`placer controller --extender-port`: the same extender, served from the controller's own
    cache, its address given by `--extender-address`."""
    scenario = scheduler_restored
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    port = free_port()
    scenario.plane.reconfigure_scheduler(
        scenario.plane.scheduler_config(extender_settings(port, ignorable=False))
    )
    scenario.start_webhook()
    scenario.start_controller(f"--extender-port={port}", f"--extender-address={LOOPBACK}")
    keeps_other_pods_out(scenario)


def unscheduled_pod(name: str) -> dict[str, Any]:
    """A pod kube-scheduler leaves alone (another scheduler's name), so only the test binds it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "placer-test-nobody",
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


def test_bind_answers_with_the_api_servers_refusal_of_an_unknown_stale_or_bound_pod(
    scenario: Scenario,
) -> None:
    """`POST /bind` as kube-scheduler sends it, given extender-bind.yaml's role: the Binding is
    created with the pod's UID, so the API server binds the pod asked about and no other; an
    unknown pod, a pod recreated under the same name (a stale UID) and a pod already bound are
    refused by the API server, and that refusal is the answer's Error (kube-scheduler then
    retries the pod) rather than a failed request."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    apply_all(scenario.admin, load_documents(REPO / "deploy/scheduler/extender-bind.yaml"))
    try:
        port = start_extender(scenario, "--bind")
        url = f"http://{LOOPBACK}:{port}"
        namespace = scenario.namespace
        node, other = sorted(scenario.node_labels())[:2]
        # the client validates a dict into V1Pod
        pod = scenario.core.create_namespaced_pod(namespace, unscheduled_pod("p"))  # type: ignore[arg-type]
        uid = str(meta_of(pod).uid)

        def node_of_p() -> str | None:
            spec = scenario.core.read_namespaced_pod("p", namespace).spec
            assert spec is not None  # a stored pod always has one
            return spec.node_name

        def bind(name: str, pod_uid: str, to: str) -> str:
            args = {"PodName": name, "PodNamespace": namespace, "PodUID": pod_uid, "Node": to}
            status, answer = post(url, "bind", args)
            assert status == 200, answer
            return str(answer["Error"])

        assert bind("nope", "", node).startswith(f"binding {namespace}/nope to {node}: HTTP 404:")
        assert bind("p", "0" * 8 + uid[8:], node).startswith(
            f"binding {namespace}/p to {node}: HTTP 409:"
        )  # another pod's UID: the pod was recreated since kube-scheduler read it
        assert node_of_p() is None
        assert bind("p", uid, node) == ""
        assert node_of_p() == node
        refused = bind("p", uid, other)
        assert refused.startswith(f"binding {namespace}/p to {other}: HTTP 409:"), refused
        assert f'already assigned to node "{node}"' in refused
        assert node_of_p() == node
    finally:
        rbac = k8s.RbacAuthorizationV1Api(scenario.core.api_client)
        rbac.delete_cluster_role_binding("placer-extender-bind")
        rbac.delete_cluster_role("placer-extender-bind")


def recorded(scenario: Scenario, name: str, pool: str) -> dict[str, Any]:
    """A suspended JobSet (no pods) carrying placer's record of one child Job in `pool`, as the
    controller would have written it."""
    record = Assignment(
        jobset=f"{scenario.namespace}/{name}",
        jobs={f"{name}-workers-0": JobAssignment(domain=DomainRef(key=POOL, value=pool))},
    )
    manifest = multislice(name, slices=1)
    manifest["spec"]["suspend"] = True
    manifest["metadata"]["annotations"] = {ASSIGNMENT_ANNOTATION: record.to_annotation()}
    return manifest


def test_the_watch_follows_records_and_node_labels_as_they_change(scenario: Scenario) -> None:
    """`placer extender` in watch mode (the shipped account) keeps other pods out of exactly the
    domains the JobSets' records name, through the real API server's watches: a record added, a
    node relabeled into a recorded pool, a record removed, a JobSet deleted."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    port = start_extender(scenario)
    url = f"http://{LOOPBACK}:{port}"
    wait_until(lambda: request(url, "GET", "/readyz")[0] == 200, timeout_s=30, what="ready")
    labels = scenario.node_labels()
    pools: dict[str, set[str]] = {}
    for node, node_labels in labels.items():
        if all(node_labels.get(k) == v for k, v in V5E.items()):
            pools.setdefault(node_labels[POOL], set()).add(node)
    first, second, third = sorted(pools)[:3]
    moved = min(pools[third])

    def kept_out() -> dict[str, str]:
        args = {"Pod": other_pod("x"), "NodeNames": sorted(labels)}
        status, answer = post(url, "filter", args)
        assert status == 200, answer
        return dict(answer["FailedAndUnresolvableNodes"] or {})

    def reserved(nodes: set[str], owner: str) -> dict[str, str]:
        return {n: f"reserved for {scenario.namespace}/{owner}" for n in nodes}

    def becomes(expected: dict[str, str], what: str) -> None:
        wait_until(lambda: kept_out() == expected, timeout_s=30, what=what)

    assert kept_out() == {}
    scenario.create_jobset(recorded(scenario, "a", first))
    becomes(reserved(pools[first], "a"), "a's pool kept")
    scenario.create_jobset(recorded(scenario, "b", second))
    becomes(reserved(pools[first], "a") | reserved(pools[second], "b"), "b's pool kept too")
    scenario.core.patch_node(moved, {"metadata": {"labels": {POOL: first}}})
    expected = reserved(pools[first] | {moved}, "a") | reserved(pools[second], "b")
    becomes(expected, "the relabeled node kept for a")
    patch = {"metadata": {"annotations": {ASSIGNMENT_ANNOTATION: None}}}
    scenario.patch_jobset("a", patch)
    becomes(reserved(pools[second], "b"), "a's record gone, its pool free")
    scenario.custom.delete_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", scenario.namespace, "jobsets", "b"
    )
    becomes({}, "b deleted, nothing kept")
