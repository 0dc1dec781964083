"""Hostile input, round two (issue 22), through `placer.cli.main` in process: each input class an
exit 2 with one line naming the file, the object and the field, nothing written outside the
directories named, no traceback."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from placer.cli import main
from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets
from tests.extender.builders import write_inputs
from tests.model.read.test_names import LABEL, QUALIFIED, SUBDOMAIN
from tests.webhook.certs import make_server_files

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "examples" / "catalog.yaml"
FAST = ["--workers", "1", "--time-limit", "5"]


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def plan(capsys: pytest.CaptureFixture[str], tmp_path: Path, jobsets: Path) -> tuple[int, str]:
    return run(capsys, "plan", "--cluster", write_cluster(tmp_path), *FAST, jobsets)


def _tree(top: Path) -> list[str]:
    return sorted(p.relative_to(top).as_posix() for p in top.rglob("*"))


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        pytest.param("../../victim", "x", id="namespace-climbs"),
        pytest.param("default", "x/../../../victim2/pwn", id="name-climbs"),
    ],
)
def test_emit_never_writes_outside_its_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, namespace: str, name: str
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    cluster = write_cluster(inputs)
    jobsets = write_jobsets(inputs, jobset_manifest(name, namespace=namespace))
    emit = tmp_path / "a" / "b" / "emit"
    emit.mkdir(parents=True)
    before = _tree(tmp_path)
    code, err = run(capsys, "plan", "--cluster", cluster, *FAST, "--emit", emit, jobsets)
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("placer: error: ")
    assert _tree(tmp_path) == before


# --- item 2: one quantity parser, every quantity finite and by Kubernetes' grammar -------------

CONTAINER = "spec.replicatedJobs[0].template.spec.template.spec.containers[0]"


def _with_cpu(value: Any, where: str = "requests") -> dict[str, Any]:
    manifest = jobset_manifest("x")
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {where: {"cpu": value}}
    return manifest


GRAMMAR = (
    "must be a number with an optional suffix (Ki .. Ei, n, u, m, k, M .. E, or e<exponent>), "
    "such as 500m, 4 or 16Gi"
)


@pytest.mark.parametrize(
    ("value", "where", "message"),
    [
        pytest.param(
            math.nan, "requests", "invalid quantity nan: must be a finite number", id="yaml-nan"
        ),
        pytest.param(
            math.inf, "limits", "invalid quantity inf: must be a finite number", id="yaml-inf"
        ),
        pytest.param("NaN", "requests", f"invalid quantity 'NaN': {GRAMMAR}", id="string-nan"),
        pytest.param("١٢", "requests", f"invalid quantity '١٢': {GRAMMAR}", id="arabic-digits"),
        pytest.param("1_000", "limits", f"invalid quantity '1_000': {GRAMMAR}", id="underscore"),
        pytest.param(
            "9" * 5000,
            "requests",
            f"invalid quantity '{'9' * 80}'... (5000 characters): longer than 100 characters",
            id="5000-digits",
        ),
    ],
)
def test_quantities_in_jobsets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: Any, where: str, message: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(_with_cpu(value, where)))
    code, err = plan(capsys, tmp_path, path)
    assert (code, err) == (
        2,
        f"placer: error: {path}: default/x: {CONTAINER}.resources.{where}.cpu: {message}\n",
    )


def test_json_nan_is_not_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(_with_cpu(math.nan)))
    assert "NaN" in path.read_text()
    code, err = plan(capsys, tmp_path, path)
    assert (code, err) == (
        2,
        f"placer: error: {path}: invalid JSON: NaN is not a number JSON allows\n",
    )


def _kubectl_nodes(allocatable: dict[str, Any]) -> dict[str, Any]:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": allocatable},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [node]}


def test_nan_allocatable_in_a_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = tmp_path / "nodes.yaml"
    cluster.write_text(yaml.safe_dump(_kubectl_nodes({"cpu": math.nan, "pods": "110"})))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "plan", "--cluster", cluster, *FAST, jobsets)
    assert (code, err) == (
        2,
        f"placer: error: {cluster}: Node/n1: status.allocatable.cpu: invalid quantity nan: "
        "must be a finite number\n",
    )


def _description(allocatable: dict[str, Any]) -> dict[str, Any]:
    pool = {"name": "p-{i}", "count": 1, "hosts": 2, "allocatable": allocatable}
    return {"kind": "ClusterDescription", "pools": [pool]}


def test_nan_in_descriptions_catalogs_and_added_pools(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    nan = {"cpu": math.nan}
    described = tmp_path / "described.yaml"
    described.write_text(yaml.safe_dump(_description(nan)))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    field = "pools[0].allocatable.cpu: invalid quantity 'nan': must be a number with"
    code, err = run(capsys, "plan", "--cluster", described, *FAST, jobsets)
    assert code == 2 and err.startswith(f"placer: error: {described}: {field}")
    added = tmp_path / "added.yaml"
    added.write_text(yaml.safe_dump(_description(nan)))
    cluster = write_cluster(tmp_path)
    code, err = run(capsys, "capacity", "--cluster", cluster, "--add-pool", added, jobsets)
    assert code == 2 and err.startswith(f"placer: error: {added}: {field}")
    catalog = yaml.safe_load(CATALOG.read_text())
    catalog["poolTypes"][0]["pool"]["allocatable"]["cpu"] = math.nan
    bad = tmp_path / "catalog.yaml"
    bad.write_text(yaml.safe_dump(catalog))
    code, err = run(capsys, "capacity", "--cheapest", "--catalog", bad, *FAST, jobsets)
    assert code == 2
    assert err.startswith(f"placer: error: {bad}: pools[0].allocatable.cpu: invalid quantity 'nan'")


# --- item 2: one helper opens every input file -------------------------------------------------


def run_guarded(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    """`run` in a thread: a command that blocks on a FIFO fails the test instead of hanging it
    (a guard against a hang, not a time measurement)."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main([str(a) for a in argv])))
    worker.daemon = True
    worker.start()
    worker.join(120)
    assert result, f"{argv[0]} blocked on its input"
    return result[0], capsys.readouterr().err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


def _plan_inputs(tmp_path: Path) -> tuple[Path, Path]:
    return write_cluster(tmp_path), write_jobsets(tmp_path, jobset_manifest("a"))


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/null"])
@pytest.mark.parametrize("flag", ["--cluster", "JOBSETS", "--kubeconfig"])
def test_special_files_are_refused_by_every_plan_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fifo: Path, special: str, flag: str
) -> None:
    path = fifo if special == "fifo" else Path(special)
    cluster, jobsets = _plan_inputs(tmp_path)
    if flag == "--cluster":
        argv: list[str | Path] = ["plan", "--cluster", path, jobsets]
    elif flag == "JOBSETS":
        argv = ["plan", "--cluster", cluster, path]
    else:
        argv = ["plan", "--kubeconfig", path, jobsets]
    code, err = run_guarded(capsys, *argv)
    kind = "a FIFO" if special == "fifo" else "a character device"
    field = " --kubeconfig:" if flag == "--kubeconfig" else ""
    assert (code, err) == (2, f"placer: error: {path}:{field} is {kind}, not a regular file\n")


def test_special_files_are_refused_by_catalogs_and_added_pools(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fifo: Path
) -> None:
    cluster, jobsets = _plan_inputs(tmp_path)
    refused = f"placer: error: {fifo}: is a FIFO, not a regular file\n"
    assert run_guarded(capsys, "capacity", "--cheapest", "--catalog", fifo, jobsets) == (2, refused)
    assert run_guarded(capsys, "capacity", "--cluster", cluster, "--add-pool", fifo, jobsets) == (
        2,
        refused,
    )
    assert run_guarded(capsys, "prepare", fifo) == (2, refused)


def test_a_directory_is_no_kubeconfig(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run_guarded(capsys, "plan", "--kubeconfig", tmp_path, jobsets)
    assert (code, err) == (
        2,
        f"placer: error: {tmp_path}: --kubeconfig: is a directory, not a regular file\n",
    )


SERVE = ["--host", "127.0.0.1", "--port", "0"]


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_extender_plan_and_certificate_must_be_regular_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fifo: Path, special: str
) -> None:
    path = fifo if special == "fifo" else Path(special)
    kind = "a FIFO" if special == "fifo" else "a character device"
    code, err = run_guarded(capsys, "extender", *SERVE, "--plan", path)
    assert (code, err) == (2, f"placer: error: {path}: --plan: is {kind}, not a regular file\n")
    plan_file, _ = write_inputs(tmp_path)
    files = make_server_files(tmp_path)
    tls: list[str | Path] = ["--tls-cert-file", path, "--tls-key-file", files.key]
    code, err = run_guarded(capsys, "extender", *SERVE, "--plan", plan_file, *tls)
    assert (code, err) == (
        2,
        f"placer: error: {path}: --tls-cert-file: is {kind}, not a regular file\n",
    )


def test_webhook_certificate_must_be_a_regular_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fifo: Path
) -> None:
    files = make_server_files(tmp_path)
    tls: list[str | Path] = ["--tls-cert-file", fifo, "--tls-private-key-file", files.key]
    code, err = run_guarded(capsys, "webhook", *SERVE, "--metrics-port", "0", *tls)
    assert (code, err) == (
        2,
        f"placer: error: {fifo}: --tls-cert-file: is a FIFO, not a regular file\n",
    )


@pytest.mark.parametrize(
    ("start", "message"),
    [
        pytest.param("NaN", "{plan}: invalid plan JSON: NaN is not a number JSON allows", id="nan"),
        pytest.param(
            "-1e30",
            "{plan}: jobsets.0.expected_start_seconds: not a placer plan: Input should be "
            "greater than or equal to 0",
            id="negative",
        ),
        pytest.param(
            "1e30",
            "{plan}: ml/wait: jobsets.0.expected_start_seconds: must be at most 10000000000 "
            "seconds (about 300 years), got 1e+30",
            id="centuries-away",
        ),
    ],
)
def test_extender_refuses_plan_starts_it_cannot_keep(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, start: str, message: str
) -> None:
    plan_file, cluster = write_inputs(tmp_path)
    doc = json.loads(plan_file.read_text())
    waiting = {
        "namespace": "ml",
        "name": "wait",
        "status": "unschedulable",
        "expected_start_seconds": 1.0,
        "reserved_domains": [{"key": "pool", "value": "p1", "path": [["pool", "p1"]]}],
    }
    doc["jobsets"].insert(0, waiting)
    plan_file.write_text(
        json.dumps(doc).replace(
            '"expected_start_seconds": 1.0', f'"expected_start_seconds": {start}'
        )
    )
    code, err = run_guarded(capsys, "extender", *SERVE, "--plan", plan_file, "--cluster", cluster)
    assert (code, err) == (2, "placer: error: " + message.format(plan=plan_file) + "\n")


def test_description_templates_with_thousands_of_digits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    described = tmp_path / "described.yaml"
    template = "p-{i*" + "9" * 5000 + "}"
    doc = {"kind": "ClusterDescription", "pools": [{"name": template, "allocatable": {"cpu": "1"}}]}
    described.write_text(yaml.safe_dump(doc))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "plan", "--cluster", described, *FAST, jobsets)
    shown = "'{i*" + "9" * 77 + "'... (5004 characters)"
    assert (code, err) == (
        2,
        f"placer: error: {described}: pools[0].name: bad template field {shown} in "
        f"'p-{{i*{'9' * 75}'... (5006 characters) (known: {{i}})\n",
    )


def test_prepare_refuses_gates_that_are_not_a_list(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = jobset_manifest("x")
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["schedulingGates"] = "gate"
    path = write_jobsets(tmp_path, manifest)
    code, err = run(capsys, "prepare", path)
    assert (code, err) == (
        2,
        f"placer: error: {path}: default/x: spec.replicatedJobs[0].template.spec.template.spec."
        "schedulingGates: must be a list of gates, each an object with a name\n",
    )


# --- item 3: YAML bounded by what it expands to ---------------------------------------------


def _alias_bomb_jobset() -> str:
    """A 6 KB JobSet whose node affinity repeats aliases three levels deep: 50 x 50 x 50 values
    in a few lines, millions of nodes once every later step walks them."""
    manifest = yaml.safe_dump(jobset_manifest("bomb"))
    level1 = "&l1 [" + ", ".join(f"v{i}" for i in range(50)) + "]"
    level2 = "&l2 [" + ", ".join(["*l1"] * 50) + "]"
    level3 = "&l3 [" + ", ".join(["*l2"] * 50) + "]"
    extra = (
        f"  x-values: [{level1}, {level2}, {level3}]\n"
        + "  x-more: ["
        + ", ".join(["*l3"] * 40)
        + "]\n"
    )
    return manifest.replace("spec:\n  replicatedJobs:", f"spec:\n{extra}  replicatedJobs:", 1)


def test_an_alias_bomb_jobset_is_refused_before_it_expands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb_jobset())
    assert path.stat().st_size < 6 * 1024
    code, err = plan(capsys, tmp_path, path)
    assert code == 2
    assert err.startswith(f"placer: error: {path}: aliases expand to more than 100000 nodes")
    assert err.endswith("written out (YAML anchors count as what they stand for)\n")


def test_aliases_count_at_the_depth_they_are_used(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = "&d " + "[" * 60 + "]" * 60
    text = f"kind: JobSet\nx: {deep}\ny: " + "[" * 45 + "*d" + "]" * 45 + "\n"
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    code, err = plan(capsys, tmp_path, path)
    assert (code, err) == (2, f"placer: error: {path}: nested deeper than 100 levels\n")


def test_aliased_running_entries_are_bounded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (
        "kind: ClusterDescription\n"
        "pools:\n"
        "- {name: 'p-{i}', count: 2500, hosts: 4, allocatable: {cpu: '8', pods: '110'}}\n"
        "running:\n"
        "- &r {pools: ['*'], requests: {cpu: 1m}, pods: 0}\n" + "- *r\n" * 1800
    )
    described = tmp_path / "described.yaml"
    described.write_text(text)
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "plan", "--cluster", described, *FAST, jobsets)
    assert (code, err) == (
        2,
        f"placer: error: {described}: running[20].pools[0]: the running entries take capacity on "
        "more than 200000 nodes together (a node counted once per entry)\n",
    )


# --- item 4: names as the API server has them, once, at parse time ---------------------------

POD = "spec.replicatedJobs[0].template.spec.template.spec"
HUGE = f"'{'a' * 80}'... (100000 characters)"


def _edit(manifest: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set `a.b[0].c` in the manifest (creating mappings on the way)."""
    node: Any = manifest
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return manifest


@pytest.mark.parametrize(
    ("path", "value", "obj", "field", "message"),
    [
        pytest.param(
            "metadata.name",
            "",
            "default/",
            "metadata.name",
            "'' must not be empty",
            id="empty-name",
        ),
        pytest.param(
            "metadata.name",
            "a" * 100_000,
            f"default/{'a' * 80}... (100000 characters)",
            "metadata.name",
            f"{HUGE} must be at most 253 characters, got 100000",
            id="huge-name",
        ),
        pytest.param(
            "metadata.name",
            "x\x1b[2J",
            "default/x\\x1b[2J",
            "metadata.name",
            f"'x\\x1b[2J' {SUBDOMAIN}",
            id="control-characters",
        ),
        pytest.param(
            "metadata.namespace",
            "team/a",
            "team/a/x",
            "metadata.namespace",
            f"'team/a' {LABEL}",
            id="namespace-slash",
        ),
        pytest.param(
            "metadata.namespace",
            "..",
            "../x",
            "metadata.namespace",
            f"'..' {LABEL}",
            id="namespace-dots",
        ),
        pytest.param(
            "metadata.labels.team",
            "v" * 64,
            "default/x",
            "metadata.labels[team]",
            f"'{'v' * 64}' must be at most 63 characters, got 64",
            id="long-label-value",
        ),
        pytest.param(
            "metadata.labels.bad key",
            "v",
            "default/x",
            "metadata.labels[bad key]",
            f"key 'bad key' {QUALIFIED}",
            id="label-key",
        ),
        pytest.param(
            f"{POD}.nodeSelector.-x",
            "v",
            "default/x",
            f"{POD}.nodeSelector[-x]",
            f"key '-x' {QUALIFIED}",
            id="node-selector-key",
        ),
        pytest.param(
            "metadata.annotations.alpha\\.jobset\\.sigs\\.k8s\\.io/exclusive-topology",
            "",
            "default/x",
            "metadata.annotations[alpha.jobset.sigs.k8s.io/exclusive-topology]",
            "node label key '' must not be empty",
            id="empty-exclusive-key",
        ),
        pytest.param(
            "spec.replicatedJobs[0].name",
            "Workers",
            "default/x",
            "spec.replicatedJobs[0].name",
            f"'Workers' {LABEL}",
            id="replicated-job-name",
        ),
    ],
)
def test_jobset_names_follow_the_api_server(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    path: str,
    value: Any,
    obj: str,
    field: str,
    message: str,
) -> None:
    manifest = jobset_manifest("x")
    if "\\." in path:  # an annotation key with dots
        key = path.split(".", 2)[2].replace("\\.", ".")
        manifest["metadata"]["annotations"][key] = value
    else:
        _edit(manifest, path, value)
    target = tmp_path / "x.yaml"
    target.write_text(yaml.safe_dump(manifest))
    code, err = plan(capsys, tmp_path, target)
    assert (code, err) == (2, f"placer: error: {target}: {obj}: {field}: {message}\n")
    assert "\x1b" not in err


def _snapshot(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def _node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"allocatable": {"cpu": "8", "pods": "110"}},
    }


@pytest.mark.parametrize(
    ("items", "where"),
    [
        pytest.param(
            [_node("Node_1")], f"Node/Node_1: metadata.name: 'Node_1' {SUBDOMAIN}", id="node-name"
        ),
        pytest.param(
            [_node("n1", {"pool": "p" * 64})],
            f"Node/n1: metadata.labels[pool]: '{'p' * 64}' must be at most 63 characters, got 64",
            id="node-label-value",
        ),
        pytest.param(
            [_node("n1"), {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 2**40}],
            "PriorityClass/high: value: must be an int32 (-2147483648 .. 2147483647), got "
            "1099511627776",
            id="priority-class-value",
        ),
    ],
)
def test_snapshot_names_follow_the_api_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, items: list[dict[str, Any]], where: str
) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(_snapshot(*items)))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "plan", "--cluster", cluster, *FAST, jobsets)
    assert (code, err) == (2, f"placer: error: {cluster}: {where}\n")


@pytest.mark.parametrize(
    ("description", "where"),
    [
        pytest.param(
            {"levels": ["pool", ""]}, "levels[1]: level '' must not be empty", id="empty-level"
        ),
        pytest.param(
            {"levels": ["pool", "pool"]}, "levels[1]: level 'pool' listed twice", id="twice"
        ),
        pytest.param(
            {"pools": [{"name": "P-{i}", "allocatable": {"cpu": "1"}}]},
            f"pools[0].nodeName: node name 'P-0-0' {SUBDOMAIN}",
            id="node-name-template",
        ),
        pytest.param(
            {"pools": [{"name": "p-{i}", "labels": {"zone": "a b"}}]},
            "pools[0].labels[zone]: 'a b' must be a label value: empty, or letters, digits, '-', "
            "'_' and '.', starting and ending with a letter or digit",
            id="label-value",
        ),
    ],
)
def test_description_names_follow_the_api_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, description: dict[str, Any], where: str
) -> None:
    doc = {"kind": "ClusterDescription", "pools": [{"name": "p-{i}"}], **description}
    described = tmp_path / "described.yaml"
    described.write_text(yaml.safe_dump(doc))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "plan", "--cluster", described, *FAST, jobsets)
    assert (code, err) == (2, f"placer: error: {described}: {where}\n")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            10**30,
            "must be a positive integer of at most 9223372036854775807 (int64), got "
            "1000000000000000000000000000000",
            id="deadline-past-int64",
        ),
    ],
)
def test_active_deadline_beyond_int64(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: Any, message: str
) -> None:
    manifest = jobset_manifest("x")
    manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] = value
    path = write_jobsets(tmp_path, manifest)
    code, err = plan(capsys, tmp_path, path)
    field = "spec.replicatedJobs[0].template.spec.activeDeadlineSeconds"
    assert (code, err) == (2, f"placer: error: {path}: default/x: {field}: {message}\n")


@pytest.mark.parametrize("duration", ["\u0661h", "\uff11h", "9" * 200_000 + "h"])
def test_durations_take_ascii_digits_and_are_echoed_cut(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, duration: str
) -> None:
    manifest = jobset_manifest("x")
    manifest["metadata"]["annotations"]["placer.dev/expected-duration"] = duration
    path = write_jobsets(tmp_path, manifest)
    code, err = plan(capsys, tmp_path, path)
    assert code == 2 and len(err.splitlines()) == 1 and len(err) < 400
    field = "metadata.annotations[placer.dev/expected-duration]"
    assert err.startswith(f"placer: error: {path}: default/x: {field}: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["plan", "--workers", "100000"],
            "placer plan: error: argument --workers: must be at most 256, got 100000",
            id="workers",
        ),
        pytest.param(
            ["plan", "--now", ""],
            "placer plan: error: argument --now: '' is not an RFC 3339 time such as "
            "2026-12-01T06:00:00Z",
            id="now-empty",
        ),
        pytest.param(
            ["plan", "--levels", "pool,,host"],
            "placer plan: error: argument --levels: level '' must not be empty",
            id="levels-empty",
        ),
        pytest.param(
            ["plan", "--levels", "pool,pool"],
            "placer plan: error: argument --levels: level 'pool' listed twice",
            id="levels-twice",
        ),
        pytest.param(
            [
                "webhook",
                "--tls-cert-file",
                "c",
                "--tls-private-key-file",
                "k",
                "--tls-reload-interval",
                "1e-9",
            ],
            "placer webhook: error: argument --tls-reload-interval: must be 0 (never) or at "
            "least 1, got 1e-9",
            id="reload-interval",
        ),
        pytest.param(
            ["plan", "--bogus\x1b[31m"],
            "placer: error: unrecognized arguments: --bogus\\x1b[31m",
            id="unknown-flag",
        ),
    ],
)
def test_flags_refused_in_one_line_with_a_pointer_to_help(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    cluster, jobsets = _plan_inputs(tmp_path)
    if argv[0] == "plan":
        argv = [*argv, "--cluster", str(cluster), str(jobsets)]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    prog = message.split(": error:")[0]
    assert capsys.readouterr().err == f"{message} (see '{prog} --help')\n"


def test_catalog_levels_are_node_label_keys_none_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    catalog = yaml.safe_load(CATALOG.read_text())
    catalog["levels"] = ["cloud.google.com/gke-nodepool", "cloud.google.com/gke-nodepool"]
    bad = tmp_path / "catalog.yaml"
    bad.write_text(yaml.safe_dump(catalog))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "capacity", "--cheapest", "--catalog", bad, *FAST, jobsets)
    assert (code, err) == (
        2,
        f"placer: error: {bad}: levels[1]: level 'cloud.google.com/gke-nodepool' listed twice\n",
    )


def test_a_template_priority_admission_refuses_is_an_error_naming_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The snapshot holds the cluster's classes: a template stating another priority than its
    class gives could never have a pod created, so it is bad input, not a JobSet to plan."""
    cluster = write_cluster(tmp_path)
    listing = json.loads(cluster.read_text())
    listing["items"].append(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    cluster.write_text(json.dumps(listing))
    manifest = jobset_manifest("x")
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.update(priorityClassName="high", priority=5000)
    target = write_jobsets(tmp_path, manifest)
    code, err = run(capsys, "plan", "--cluster", cluster, *FAST, target)
    field = "spec.replicatedJobs[0].template.spec.template.spec.priority"
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"placer: error: {target}: default/x: {field}: 5000 differs from 1000")
    pod["priority"] = 1000  # the class's own value: admitted, planned
    target = write_jobsets(tmp_path, manifest)
    assert run(capsys, "plan", "--cluster", cluster, *FAST, target)[0] == 0
