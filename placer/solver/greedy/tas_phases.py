"""One run of Kueue's TAS BestFit: the counts per domain and the phases over them.

Why apart from `tas_search`: that module is the search's face (what a group gets,
`GroupAssignment`; the two calls, `find_assignment` and `find_group_assignment`) with the
overview of the algorithm in its docstring, and what a PodSet asks is `tas_request`; this one is the
algorithm's working state, phase by phase (fill, level, descend, assign), one `SearchRun` per
call. Only those two calls construct it. The tree it runs over is `tas_tree.TasTree` (read-only,
shared by every run of a solve); the podset-group room rule is `group_room`. Facts read in Kueue's
`pkg/cache/scheduler/tas_flavor_snapshot.go` (the README's Kueue section); no code taken from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from placer.solver.greedy.group_room import NodeRoom, group_room
from placer.solver.greedy.tas_request import TasRequest
from placer.solver.greedy.tas_tree import TasTree, TreeDomain

__all__ = ["SearchRun"]


class SearchRun:
    """One run of Kueue's algorithm; counts per domain live here, by the domain's `index`.

    Per domain, as Kueue keeps them: `pods` and `slices` that fit (phase fill), then that are
    assigned (phase descend); `leader`, 1 when the group's leader fits somewhere inside; `pods_wl`
    and `slices_wl`, what fits beside the leader. Without a leader, `leader` is 0 and the `_wl`
    counts equal the plain ones, so every rule below reduces to the single-podset one.
    """

    def __init__(
        self,
        tree: TasTree,
        capacity: Mapping[str, int],
        request: TasRequest,
        beside_leader: Mapping[str, int] | None = None,
    ) -> None:
        self.tree = tree
        self.capacity = capacity
        self.request = request
        self.beside_leader = beside_leader
        """Node -> workers' pods fitting beside the leader, for the nodes the leader fits on;
        None when there is no leader."""
        self.leaders = 0 if beside_leader is None else 1
        self.pods = [0] * tree.size
        self.slices = [0] * tree.size
        self.pods_wl = [0] * tree.size
        self.slices_wl = [0] * tree.size
        self.leader = [0] * tree.size

    def run(self) -> tuple[list[tuple[str, int]], str | None] | str:
        """(worker pods per node in Kueue's order, the leader's node), or why nothing fits."""
        r = self.request
        last = len(self.tree.level_keys) - 1
        if r.level is not None:
            level = self.tree.level_index(r.level)
            if level is None:
                return f"no requested topology level: {r.level}"
        else:
            level = 0 if r.slice_level else last
        slice_level = last if r.slice_level is None else self.tree.level_index(r.slice_level)
        if slice_level is None:
            return f"no requested topology level for slices: {r.slice_level}"
        if level > slice_level:
            return (
                f"podset slice topology {self.tree.level_keys[slice_level]} is above the podset "
                f"topology {self.tree.level_keys[level]}"
            )
        if r.count == 0 and not self.leaders:
            return [], None
        self.size = r.slice_size
        self.slice_level = slice_level
        for root in self.tree.roots:
            self._fill(root, 0)
        found = self._fit_level(level)
        if isinstance(found, str):
            return found
        fit_level, chosen = found
        chosen = self._to_minimum(chosen, r.count, self.leaders, self.size, slices=True)
        depth = fit_level
        while depth < min(last, slice_level):
            pooled = [c for d in chosen for c in d.children]
            chosen = self._to_minimum(
                self._sorted(pooled), r.count, self.leaders, self.size, slices=True
            )
            depth += 1
        while depth < last:
            below: list[TreeDomain] = []
            for d in chosen:
                below += self._to_minimum(
                    self._sorted(d.children), self._get(self.pods, d), self._get(self.leader, d), 1
                )
            chosen = below
            depth += 1
        leaves = sorted(chosen, key=lambda d: d.values)
        leader = next((d.node for d in leaves if self._get(self.leader, d) > 0), None)
        pods = [(d.node, self._get(self.pods, d)) for d in leaves if self._get(self.pods, d) > 0]
        return [(n, k) for n, k in pods if n is not None], leader

    # -- state --

    @staticmethod
    def _get(table: list[int], d: TreeDomain) -> int:
        return table[d.index]

    @staticmethod
    def _set(table: list[int], d: TreeDomain, value: int) -> None:
        table[d.index] = value

    def _count(self, d: TreeDomain, *, slices: bool, with_leader: bool) -> int:
        if slices:
            table = self.slices_wl if with_leader else self.slices
        else:
            table = self.pods_wl if with_leader else self.pods
        return self._get(table, d)

    # -- phase fill --

    def _fill(self, d: TreeDomain, depth: int) -> None:
        """Pods (and slices at the slice level, summed above it) that fit in `d`, alone and
        beside the leader: a domain fits the leader in the node of it that costs the fewest
        workers (Kueue sums the children and takes off the smallest such cost: `group_room`)."""
        if d.node is not None:
            pods = max(self.capacity.get(d.node, 0), 0)
            beside = None if self.beside_leader is None else self.beside_leader.get(d.node)
            self._set(self.pods, d, pods)
            self._set(self.leader, d, 0 if beside is None else 1)
            self._set(self.pods_wl, d, pods if beside is None else min(max(beside, 0), pods))
            if depth == self.slice_level:
                self._set(self.slices, d, pods // self.size)
                self._set(self.slices_wl, d, self._get(self.pods_wl, d) // self.size)
            return
        pod_parts: list[NodeRoom] = []
        slice_parts: list[NodeRoom] = []
        for c in d.children:
            self._fill(c, depth + 1)
            # without a leader every child "takes" it at no cost, so the `_wl` counts stay plain
            takes = not self.leaders or self._get(self.leader, c) > 0
            pod_parts.append(
                (self._get(self.pods, c), self._get(self.pods_wl, c) if takes else None)
            )
            slice_parts.append(
                (self._get(self.slices, c), self._get(self.slices_wl, c) if takes else None)
            )
        pods = sum(room for room, _ in pod_parts)
        slices = sum(room for room, _ in slice_parts)
        self._set(self.pods, d, pods)
        self._set(self.leader, d, max((self._get(self.leader, c) for c in d.children), default=0))
        self._set(self.pods_wl, d, group_room(pod_parts))
        slices_wl = group_room(slice_parts)
        if depth == self.slice_level:
            slices = pods // self.size
            slices_wl = self._get(self.pods_wl, d) // self.size
        self._set(self.slices, d, slices)
        self._set(self.slices_wl, d, slices_wl)

    # -- phase level --

    def _sorted(
        self, domains: Iterable[TreeDomain], *, with_leader: bool = False
    ) -> list[TreeDomain]:
        """BestFit order: most slices first, then fewest pods, then level values; unconstrained
        requests (LeastFreeCapacity; Kueue TASProfileMixed, on by default): fewest slices first.
        `with_leader` (choosing the level's domains): domains fitting the leader first, counted
        beside it."""
        sign = 1 if self.request.unconstrained else -1
        wl = with_leader

        def key(d: TreeDomain) -> tuple[int, int, int, tuple[str, ...]]:
            return (
                -self._get(self.leader, d) if wl else 0,
                sign * self._count(d, slices=True, with_leader=wl),
                self._count(d, slices=False, with_leader=wl),
                d.values,
            )

        return sorted(domains, key=key)

    def _best_fit(
        self, domains: Sequence[TreeDomain], needed: int, leaders: int, *, slices: bool
    ) -> TreeDomain:
        """The first domain with the fewest slices (pods) still `needed`, beside the leader when
        one is still to place (domains that cannot take it are passed over); else the first."""
        best, best_count = domains[0], None
        for d in domains:
            if self._get(self.leader, d) < leaders:
                continue
            count = self._count(d, slices=slices, with_leader=leaders > 0)
            if count >= needed and (best_count is None or count < best_count):
                best, best_count = d, count
        return best

    def _not_fit(self, fit: int, needed: int) -> str:
        unit = "slice" if self.size > 1 else "pod"
        beside = " beside the leader" if self.leaders else ""
        if fit == 0:
            return f"topology doesn't allow to fit any of {needed} {unit}(s){beside}"
        return f"topology allows to fit only {fit} out of {needed} {unit}(s){beside}"

    def _no_leader(self, level: int) -> str:
        return (
            f"no domain of {self.tree.level_keys[level]} fits the leader beside the "
            f"{self.request.count} pod(s)"
        )

    def _fit_level(self, level: int) -> tuple[int, list[TreeDomain]] | str:
        r = self.request
        domains = self._sorted(self.tree.levels_by_index[level], with_leader=True)
        if not domains:
            return f"no topology domains at level: {self.tree.level_keys[level]}"
        needed = r.count // self.size
        leaders = self.leaders
        if r.unconstrained:
            for d in domains:
                room = self._count(d, slices=True, with_leader=leaders > 0)
                if self._get(self.leader, d) >= leaders and room >= needed:
                    return level, [d]
        top = domains[0]
        # (an unconstrained request that fits one domain returned above)
        if self._get(self.slices_wl, top) >= needed and self._get(self.leader, top) >= leaders:
            return level, [self._best_fit(domains, needed, leaders, slices=True)]
        if r.required:
            if self._get(self.leader, top) < leaders and self._get(self.slices, top) >= needed:
                return self._no_leader(level)
            return self._not_fit(self._get(self.slices_wl, top), needed)
        if level > 0 and not r.unconstrained:
            return self._fit_level(level - 1)
        return self._spread_top(level, domains, needed)

    def _spread_top(
        self, level: int, domains: list[TreeDomain], needed: int
    ) -> tuple[int, list[TreeDomain]] | str:
        """Nothing fits one domain of the top level: whole domains in order, the leader's first,
        the last one best-fit."""
        r = self.request
        best_fit = not r.unconstrained
        chosen: list[TreeDomain] = []
        remaining, leaders = needed, self.leaders
        ordered = self._leader_first(domains, r.count, leaders, slices=True)
        i = 0
        while leaders > 0 and i < len(ordered) and self._get(self.leader, ordered[i]) > 0:
            d = ordered[i]
            if best_fit and self._get(self.slices_wl, d) >= remaining:
                d = self._best_fit(ordered[i:], remaining, leaders, slices=True)
            chosen.append(d)
            leaders -= self._get(self.leader, d)
            remaining -= self._get(self.slices_wl, d)
            i += 1
        if leaders > 0:
            return self._no_leader(level)
        rest = self._sorted(ordered[i:])
        for j, d in enumerate(rest):
            if remaining <= 0:
                break
            if best_fit and self._get(self.slices, d) >= remaining:
                d = self._best_fit(rest[j:], remaining, 0, slices=True)
            chosen.append(d)
            remaining -= self._get(self.slices, d)
        if remaining > 0:
            return self._not_fit(needed - remaining, needed)
        return level, chosen

    # -- phase descend --

    def _leader_first(
        self, domains: list[TreeDomain], count: int, leaders: int, *, slices: bool
    ) -> list[TreeDomain]:
        """Move to the front the first domain that fits the leader at a cost the others can
        cover (Kueue's `prioritizeLeaderDomain`): the capacity summed above assumed it."""
        if leaders == 0 or len(domains) < 2:
            return domains
        needed = count // self.size if slices else count
        available = sum(self._count(d, slices=slices, with_leader=False) for d in domains)
        for i, d in enumerate(domains):
            if self._get(self.leader, d) < leaders:
                continue
            cost = self._count(d, slices=slices, with_leader=False) - self._count(
                d, slices=slices, with_leader=True
            )
            if available - cost < needed:
                continue
            return domains if i == 0 else [d, *domains[:i], *domains[i + 1 :]]
        return domains

    def _to_minimum(
        self,
        domains: list[TreeDomain],
        count: int,
        leaders: int,
        size: int,
        *,
        slices: bool = False,
    ) -> list[TreeDomain]:
        """Whole domains in order until one can hold the rest; that last one best-fit. The leader
        goes first, into the first domain that can take it (Kueue's `updateCountsToMinimum`)."""
        best_fit = not self.request.unconstrained
        domains = self._leader_first(domains, count, leaders, slices=slices)
        remaining = count // size if slices else count
        primary = self.slices if slices else self.pods
        with_leader = self.slices_wl if slices else self.pods_wl
        chosen: list[TreeDomain] = []
        for i, d in enumerate(domains):
            if leaders > 0:
                if (
                    best_fit
                    and self._get(with_leader, d) >= remaining
                    and self._get(self.leader, d) >= leaders
                ):
                    d = self._best_fit(domains[i:], remaining, leaders, slices=slices)
                chosen.append(d)
                if self._get(with_leader, d) >= remaining and self._get(self.leader, d) >= leaders:
                    self._set(primary, d, remaining)
                    self._set(self.leader, d, leaders)
                    self._set(self.pods, d, remaining * size)
                    return chosen
                taken = min(self._get(with_leader, d), remaining)
                self._set(with_leader, d, taken)
                self._set(self.leader, d, min(self._get(self.leader, d), leaders))
                self._set(primary, d, taken)
                self._set(self.pods, d, taken * size)
                leaders -= self._get(self.leader, d)
                remaining -= taken
                continue
            if best_fit and self._get(primary, d) >= remaining:
                d = self._best_fit(domains[i:], remaining, 0, slices=slices)
            self._set(self.leader, d, 0)
            have = self._get(primary, d)
            chosen.append(d)
            if have >= remaining:
                self._set(primary, d, remaining)
                self._set(self.pods, d, remaining * size)
                return chosen
            self._set(self.pods, d, have * size)
            remaining -= have
        return chosen
