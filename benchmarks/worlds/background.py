"""Background load on a generated cluster: what already runs there and what is broken.

Running JobSets holding whole domains (with JobSet's labels, so the planner sees the domains as
held), notebooks using part of some hosts, DaemonSets on every node, finished pods that must not
count, cordoned and NotReady nodes, unhealthy NVL72 hosts. A mixin of `GeneratedCluster`, kept
apart so the fleet shapes and the load on them can be read separately.
"""

from __future__ import annotations

import random

from benchmarks.worlds.records import (
    GPU,
    TPU,
    NodeRec,
    PodRec,
    draw_priority,
    quantity,
)
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = ["BackgroundLoad"]


class BackgroundLoad:
    """Methods that add load to `self.nodes`; the host class provides naming and the rng."""

    rng: random.Random
    nodes: list[NodeRec]
    running: list[str]

    def hexid(self, digits: int = 8) -> str:
        raise NotImplementedError

    def pod_suffix(self) -> str:
        raise NotImplementedError

    def domains(self, key: str) -> dict[str, list[NodeRec]]:
        """label value -> nodes, in creation order (values are unique per cluster here)."""
        groups: dict[str, list[NodeRec]] = {}
        for n in self.nodes:
            if key in n.labels:
                groups.setdefault(n.labels[key], []).append(n)
        return groups

    def hold_domains(
        self,
        key: str,
        fraction: float,
        priorities: list[tuple[str, int, float]],
        spare_hosts: int = 0,
    ) -> None:
        """Running JobSets that hold `fraction` of the domains of `key`, 1-4 domains each.

        Each held domain gets one child Job with a pod on every healthy host, except up to
        `spare_hosts` hosts left idle (teams keep spares in big GPU domains): those idle hosts
        are what exclusivity strands.
        """
        groups = self.domains(key)
        names = sorted(groups)
        chosen = self.rng.sample(names, round(fraction * len(names)))
        i = 0
        while i < len(chosen):
            width = min(self.rng.choice((1, 1, 2, 4)), len(chosen) - i)
            pc, prio = draw_priority(self.rng, priorities)
            ns = f"team-{self.rng.choice('abcdefgh')}"
            js = f"running-{len(self.running):04d}"
            self.running.append(f"{ns}/{js}")
            for j in range(width):
                hosts = [n for n in groups[chosen[i + j]] if n.ready and n.accelerators() > 0]
                keep = len(hosts) - self.rng.randint(0, min(spare_hosts, max(len(hosts) - 1, 0)))
                for p, node in enumerate(hosts[:keep]):
                    self._jobset_pod(node, ns, js, j, width, p, pc, prio)
            i += width

    def _jobset_pod(
        self,
        node: NodeRec,
        ns: str,
        js: str,
        job: int,
        replicas: int,
        index: int,
        pc: str,
        prio: int,
    ) -> None:
        accel = TPU if TPU in node.allocatable else GPU
        units = node.allocatable[accel]
        name = f"{js}-workers-{job}"
        node.pods.append(
            PodRec(
                namespace=ns,
                name=f"{name}-{index}-{self.pod_suffix()}",
                node=node.name,
                requests={"cpu": "8", "memory": "64Gi"},
                limits={accel: units},
                labels={
                    JOBSET_NAME_LABEL: js,
                    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                    "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
                    "jobset.sigs.k8s.io/job-index": str(job),
                    "jobset.sigs.k8s.io/job-global-index": str(job),
                    "jobset.sigs.k8s.io/restart-attempt": "0",
                    "batch.kubernetes.io/job-completion-index": str(index),
                    "batch.kubernetes.io/job-name": name,
                },
                owner_kind="Job",
                owner_name=name,
                priority_class=pc,
                priority=prio,
                host_ports=((8471, "TCP"),) if accel == TPU else (),
            )
        )

    def add_non_jobset_pods(self, fraction: float, units: tuple[int, ...]) -> None:
        """Notebooks and inference servers using part of some otherwise idle hosts."""
        idle = [
            n
            for n in self.nodes
            if not any(p.active for p in n.pods if JOBSET_NAME_LABEL in p.labels)
        ]
        for node in self.rng.sample(idle, round(fraction * len(idle))):
            accel = TPU if TPU in node.allocatable else GPU
            k = min(self.rng.choice(units), int(quantity(node.allocatable[accel])))
            name = f"notebook-{self.hexid(6)}"
            node.pods.append(
                PodRec(
                    namespace="research",
                    name=f"{name}-{self.pod_suffix()}",
                    node=node.name,
                    requests={"cpu": "4", "memory": "32Gi"},
                    limits={accel: str(k)},
                    labels={"app": "notebook"},
                    owner_kind="StatefulSet",
                    owner_name=name,
                )
            )

    def add_daemonsets(self) -> None:
        """Every node runs logging and metadata agents: a little CPU and memory, two pod slots."""
        for node in self.nodes:
            for ds, cpu, mem in (
                ("fluentbit-gke", "100m", "200Mi"),
                ("gke-metadata-server", "100m", "100Mi"),
            ):
                node.pods.append(
                    PodRec(
                        namespace="kube-system",
                        name=f"{ds}-{self.pod_suffix()}",
                        node=node.name,
                        requests={"cpu": cpu, "memory": mem},
                        labels={"k8s-app": ds},
                        owner_kind="DaemonSet",
                        owner_name=ds,
                        priority_class="system-node-critical",
                        priority=2000001000,
                    )
                )

    def add_completed_pods(self, fraction: float) -> None:
        """Finished pods still bound to nodes: their requests must not count (loader check)."""
        for node in self.rng.sample(self.nodes, round(fraction * len(self.nodes))):
            accel = TPU if TPU in node.allocatable else GPU
            node.pods.append(
                PodRec(
                    namespace="research",
                    name=f"eval-{self.hexid(6)}-{self.pod_suffix()}",
                    node=node.name,
                    requests={"cpu": "2"},
                    limits={accel: node.allocatable[accel]},
                    labels={"app": "eval"},
                    owner_kind="Job",
                    owner_name="eval",
                    phase="Succeeded",
                )
            )

    def degrade(self, cordoned: float, not_ready: float) -> None:
        """Cordon some nodes and mark some NotReady (the usual state of a large fleet)."""
        for node in self.nodes:
            r = self.rng.random()
            if r < not_ready:
                node.set_not_ready()
            elif r < not_ready + cordoned:
                node.unschedulable = True
                node.taints.append(("node.kubernetes.io/unschedulable", "", "NoSchedule"))

    def break_clique_hosts(self, key: str, max_broken: int) -> None:
        """0..max_broken unhealthy hosts per domain: NotReady, or GPUs missing from allocatable."""
        for _, hosts in sorted(self.domains(key).items()):
            for node in self.rng.sample(hosts, self.rng.randint(0, max_broken)):
                if self.rng.random() < 0.5:
                    node.set_not_ready()
                else:
                    gpus = int(quantity(node.allocatable[GPU]))
                    node.allocatable[GPU] = str(gpus - self.rng.randint(1, gpus))
