"""The live loader over HTTP against kmock's KubernetesEmulator (an in-memory API server).

The emulator runs on its own event loop in a thread, because the official client is synchronous.
It ignores field selectors, so a terminal pod reaches the loader and must still be left out: a
fault the real server does not show. tests/cluster/test_live_snapshot.py asks the same of the real
API server and Kueue (the field selector applied, pages, the served Topology versions); the
failures below (no server, a refused connection, a bad kubeconfig) need none.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kmock
import pytest
from kubernetes import client, config

from placer.model.errors import ClusterError
from placer.model.snapshots.live import load_live_snapshot
from placer.model.snapshots.load import load_snapshot, snapshot_to_kubectl_list

ROOT = Path(__file__).resolve().parents[3]


class Emulator:
    def __init__(self) -> None:
        self.url = ""
        self.objects: Any = None
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._main(),), daemon=True
        )

    async def _main(self) -> None:
        async with kmock.KubernetesEmulator() as emu, kmock.Server(emu) as server:
            self.url = str(server.url).rstrip("/")
            self.objects = emu.objects
            self._stop = asyncio.Event()
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> Emulator:
        self._thread.start()
        assert self._ready.wait(10), "emulator did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._loop.close()


def write_kubeconfig(path: Path, server: str) -> str:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test",
                "clusters": [{"name": "emu", "cluster": {"server": server}}],
                "users": [{"name": "me", "user": {"token": "t"}}],
                "contexts": [{"name": "test", "context": {"cluster": "emu", "user": "me"}}],
            }
        )
    )
    return str(path)


@pytest.fixture()
def emulator(tmp_path: Path) -> Iterator[tuple[Emulator, str]]:
    with Emulator() as emu:
        yield emu, write_kubeconfig(tmp_path / "kubeconfig", emu.url)


RESOURCES = {
    "Node": "v1/nodes",
    "Pod": "v1/pods",
    "PriorityClass": "scheduling.k8s.io/v1/priorityclasses",
}


def seed(emu: Emulator, items: list[dict[str, Any]]) -> None:
    """Store objects directly (creating 150 objects over HTTP takes the emulator seconds)."""
    for obj in items:
        meta = obj["metadata"]
        emu.objects[RESOURCES[obj["kind"]], meta.get("namespace"), meta["name"]] = obj


def create(kubeconfig: str, items: list[dict[str, Any]]) -> None:
    """Create objects over HTTP with the official client, as a real cluster would get them."""
    # unannotated in the client
    api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    core, sched = client.CoreV1Api(api), client.SchedulingV1Api(api)
    # The client validates each dict into the V1Node, V1Pod or V1PriorityClass it is typed with.
    for obj in items:
        if obj["kind"] == "Node":
            core.create_node(obj, _preload_content=False)  # type: ignore[arg-type]  # a dict body
        elif obj["kind"] == "Pod":
            # a dict body
            core.create_namespaced_pod(obj["metadata"]["namespace"], obj, _preload_content=False)  # type: ignore[arg-type]
        else:
            # a dict body
            sched.create_priority_class(obj, _preload_content=False)  # type: ignore[arg-type]
    api.close()


def test_live_snapshot_equals_the_file_snapshot(emulator: tuple[Emulator, str]) -> None:
    emu, kubeconfig = emulator
    expected = load_snapshot([ROOT / "examples" / "clusters" / "tpu-v5e-v6e.yaml"])
    items = snapshot_to_kubectl_list(expected)["items"]
    done = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "finished",
            "namespace": "batch",
            "labels": {"jobset.sigs.k8s.io/jobset-name": "old"},
        },
        "spec": {
            "nodeName": expected.nodes[-1].name,
            "containers": [{"name": "c", "resources": {"limits": {"google.com/tpu": "4"}}}],
        },
        "status": {"phase": "Succeeded"},
    }
    seed(emu, [*items, done])
    snap = load_live_snapshot(kubeconfig, levels=expected.levels)
    assert snap.nodes == expected.nodes
    assert snap.priority_classes == expected.priority_classes
    assert snap.levels == expected.levels
    assert snap.source == emu.url


def test_namespaces_limit_the_pods_read(emulator: tuple[Emulator, str]) -> None:
    _, kubeconfig = emulator
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "4"}},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{ns}", "namespace": ns},
            "spec": {
                "nodeName": "n",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        for ns in ("a", "b")
    ]
    create(kubeconfig, [node, *pods])
    assert load_live_snapshot(kubeconfig).node("n").free == {"cpu": 2}
    assert load_live_snapshot(kubeconfig, namespaces=["a"]).node("n").free == {"cpu": 3}


def test_unreachable_server_is_a_temporary_cluster_error(tmp_path: Path) -> None:
    with Emulator() as emu:
        url = emu.url
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
    with pytest.raises(ClusterError) as e:
        load_live_snapshot(kubeconfig)
    assert e.value.temporary
    assert isinstance(e.value.__cause__, Exception)


def test_refused_connection_is_one_line_naming_the_server(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    with pytest.raises(ClusterError) as e:
        load_live_snapshot(kubeconfig)
    assert str(e.value).startswith("listing nodes failed: cannot connect to 127.0.0.1:1: ")
    assert "Retry" not in str(e.value) and "\n" not in str(e.value)


def test_no_configuration_names_the_path_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(
        config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / ".kube" / "config")
    )
    with pytest.raises(ClusterError) as e:
        load_live_snapshot(None)
    assert str(e.value) == (
        f"no Kubernetes configuration: not running in a cluster, and {tmp_path}/.kube/config: "
        "no such file; give one with --kubeconfig PATH (or set KUBECONFIG)"
    )


def test_bad_kubeconfig_is_a_cluster_error(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    with pytest.raises(ClusterError, match="configuration"):
        load_live_snapshot(str(path))


def _jobset(namespace: str, name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"replicatedJobs": []},
    }


def test_running_jobsets_annotations_are_read_and_a_bad_one_protects(
    emulator: tuple[Emulator, str],
) -> None:
    """A live cluster is not a file to fix: a bad checkpoint interval is warned about and its
    JobSet is never a victim, a good one is read as in a file."""
    emu, kubeconfig = emulator
    expected = load_snapshot([ROOT / "examples" / "clusters" / "tpu-busy.yaml"])
    seed(emu, snapshot_to_kubectl_list(expected)["items"])
    jobsets = "jobset.x-k8s.io/v1alpha2/jobsets"
    good = _jobset("batch", "eval-a", {"placer.dev/checkpoint-interval": "1h"})
    bad = _jobset("batch", "eval-b", {"placer.dev/checkpoint-interval": "soon"})
    for obj in (good, bad):
        emu.objects[jobsets, "batch", obj["metadata"]["name"]] = obj
    snap = load_live_snapshot(kubeconfig, levels=expected.levels)
    assert snap.running["batch/eval-a"].preemption.checkpoint_interval_s == 3600.0
    assert snap.running["batch/eval-a"].preemption.preemptible
    assert not snap.running["batch/eval-b"].preemption.preemptible
