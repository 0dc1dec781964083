"""Kueue TAS annotations on a JobSet's pod templates: read into the request, bad ones refused."""

from __future__ import annotations

import re
from typing import Any

import pytest

from placer.model.errors import InputError
from placer.model.jobset.parse import parse_jobset
from placer.model.kueue.annotations import check_topology_levels, read_kueue_topology
from tests.model.jobset.test_jobset import manifest

REQ = "kueue.x-k8s.io/podset-required-topology"
PREF = "kueue.x-k8s.io/podset-preferred-topology"
SLICE = "kueue.x-k8s.io/podset-slice-required-topology"
SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
FREE = "kueue.x-k8s.io/podset-unconstrained-topology"
LEVELS = ("block", "rack", "kubernetes.io/hostname")


def parsed(annotations: dict[str, str], **job: Any) -> Any:
    return parse_jobset(manifest(pod_annotations=annotations, **job), source="js.yaml")


def test_every_annotation_is_read() -> None:
    r = parsed({PREF: "block", SLICE: "rack", SIZE: "2"}, parallelism=4).replicated_jobs[0]
    assert (r.preferred_topology, r.slice_topology, r.slice_size, r.podset_group) == (
        "block",
        "rack",
        2,
        None,
    )
    assert r.pod_count == 8 and r.kueue_topology and not r.unconstrained


def test_a_slice_topology_needs_a_slice_size_as_kueues_webhook_has_it() -> None:
    """Kueue v0.19.2 refuses a slice topology without a size (`ValidateTASPodSetRequest`)."""
    with pytest.raises(InputError) as refused:
        parsed({REQ: "block", SLICE: "rack"}, parallelism=3)
    assert refused.value.message == f"needs {SIZE}, the pods of one slice"
    assert refused.value.field.endswith(f"annotations[{SLICE}]")


def test_unconstrained_is_a_boolean() -> None:
    assert parsed({FREE: "true"}).replicated_jobs[0].unconstrained
    assert not parsed({FREE: "false"}).replicated_jobs[0].kueue_topology


@pytest.mark.parametrize(
    ("text", "value"),
    [
        *((t, True) for t in ("1", "t", "T", "TRUE", "true", "True")),
        *((f, False) for f in ("0", "f", "F", "FALSE", "false", "False")),
    ],
)
def test_unconstrained_takes_what_kueues_webhook_takes(text: str, value: bool) -> None:
    """Kueue reads the annotation with Go's strconv.ParseBool (`validateTASUnconstrained`)."""
    assert parsed({FREE: text}).replicated_jobs[0].unconstrained is value


@pytest.mark.parametrize("text", ["tRuE", "yes", "", " true", "2"])
def test_unconstrained_refuses_what_kueues_webhook_refuses(text: str) -> None:
    with pytest.raises(InputError, match="must be a boolean"):
        parsed({FREE: text})


@pytest.mark.parametrize(
    ("group", "refused"),
    [
        ("7", True),
        ("18446744073709551615", True),  # 2**64 - 1: still a uint64
        ("18446744073709551616", False),  # out of range: Kueue's ParseUint fails, a name
        ("9" * 5000, False),  # past Python's 4,300-digit conversion limit: a name, no traceback
        ("\u0663", False),  # an Arabic-Indic three: a digit to Python, not to Go
        ("+7", False),
        ("g7", False),
    ],
)
def test_a_group_name_is_refused_when_kueue_reads_it_as_a_number(group: str, refused: bool) -> None:
    """Kueue refuses a name Go's strconv.ParseUint(name, 10, 64) reads (its webhook)."""
    annotations = {REQ: "block", GROUP: group}
    if refused:
        with pytest.raises(InputError, match="must not be a number"):
            read_kueue_topology(annotations, index=0, pods_per_job=1, replicas=1)
    else:
        read = read_kueue_topology(annotations, index=0, pods_per_job=1, replicas=1)
        assert read.podset_group == group


def test_a_slice_level_equal_to_the_podset_level_is_not_above_it() -> None:
    """Kueue refuses a slice level strictly above the podset's (`tas_flavor_snapshot.go`)."""
    same = parsed({REQ: "rack", SLICE: "rack", SIZE: "2"}, parallelism=2)
    check_topology_levels([same], LEVELS)
    above = parsed({REQ: "rack", SLICE: "block", SIZE: "2"}, parallelism=2)
    with pytest.raises(InputError, match="is above the podset topology"):
        check_topology_levels([above], LEVELS)


@pytest.mark.parametrize(
    ("annotations", "key", "words"),
    [
        pytest.param(
            {REQ: "block", SLICE: "rack", SIZE: "3"}, SIZE, "does not divide", id="divide"
        ),
        pytest.param({REQ: "block", SIZE: "2"}, SIZE, "needs", id="size-without-level"),
        pytest.param({REQ: "block", SLICE: "rack", SIZE: "0"}, SIZE, "positive", id="size-zero"),
        pytest.param({REQ: "block", SLICE: "rack", SIZE: "two"}, SIZE, "positive", id="size-text"),
        pytest.param({REQ: "rack", FREE: "true"}, FREE, "cannot be combined", id="req-and-free"),
        pytest.param({PREF: "rack", FREE: "true"}, FREE, "cannot be combined", id="pref-and-free"),
        pytest.param({FREE: "yes"}, FREE, "true or false", id="free-not-bool"),
        pytest.param({REQ: "block", GROUP: ""}, GROUP, "empty", id="group-empty"),
        pytest.param({REQ: "block", GROUP: "42"}, GROUP, "not be a number", id="group-number"),
        pytest.param({GROUP: "g"}, GROUP, "needs kueue.x-k8s.io/podset-required", id="group-alone"),
        pytest.param({FREE: "true", GROUP: "g"}, GROUP, "needs", id="group-unconstrained"),
        pytest.param(
            {REQ: "block", SLICE: "rack", SIZE: "2", GROUP: "g"},
            GROUP,
            "cannot be combined with kueue.x-k8s.io/podset-slice-required-topology",
            id="group-slices",
        ),
    ],
)
def test_bad_annotations_name_file_object_and_field(
    annotations: dict[str, str], key: str, words: str
) -> None:
    with pytest.raises(InputError) as e:
        parsed(annotations, parallelism=2)
    assert e.value.source == "js.yaml" and e.value.obj == "team/js"
    assert (
        e.value.field
        == f"spec.replicatedJobs[0].template.spec.template.metadata.annotations[{key}]"
    )
    assert words in str(e.value)


def test_slice_count_is_over_the_whole_replicated_job() -> None:
    """2 replicas x 3 pods = 6 pods: slices of 2 divide them though 2 does not divide 3."""
    assert (
        parsed({REQ: "block", SLICE: "rack", SIZE: "2"}, parallelism=3)
        .replicated_jobs[0]
        .slice_size
        == 2
    )


def test_levels_named_must_be_declared() -> None:
    js = parsed({REQ: "zone"})
    with pytest.raises(InputError, match="unknown topology level 'zone'") as e:
        check_topology_levels([js], LEVELS)
    assert e.value.field.endswith(f"annotations[{REQ}]") and e.value.obj == "team/js"
    check_topology_levels(
        [js], ()
    )  # no declared levels: derived from the JobSets, nothing to check


def test_slice_level_above_podset_level_is_refused() -> None:
    js = parsed({REQ: "rack", SLICE: "block", SIZE: "2"}, parallelism=2)
    with pytest.raises(InputError, match="slice topology block is above the podset topology rack"):
        check_topology_levels([js], LEVELS)
    check_topology_levels([parsed({REQ: "block", SLICE: "rack", SIZE: "1"})], LEVELS)
    host = {REQ: "block", SLICE: "kubernetes.io/hostname", SIZE: "1"}
    check_topology_levels([parsed(host)], ("block",))


def placers(annotations: dict[str, str]) -> dict[str, str]:
    """The same annotations in placer's spelling (placer.dev/podset-...)."""
    return {k.replace("kueue.x-k8s.io/", "placer.dev/"): v for k, v in annotations.items()}


@pytest.mark.parametrize(
    "annotations",
    [
        {REQ: "block", SLICE: "rack", SIZE: "2"},
        {PREF: "rack"},
        {FREE: "true"},
        {REQ: "block", SLICE: "rack", SIZE: "1"},
    ],
)
def test_placers_spelling_reads_as_kueues(annotations: dict[str, str]) -> None:
    """Under placer's admission check Kueue refuses its own spelling on a flavor without
    topologyName, so placer reads placer.dev/podset-* the same way."""
    theirs = parsed(annotations, parallelism=2).replicated_jobs[0]
    ours = parsed(placers(annotations), parallelism=2).replicated_jobs[0]
    assert ours.topology_prefix == "placer.dev/" and theirs.topology_prefix == "kueue.x-k8s.io/"
    assert ours.model_copy(update={"topology_prefix": theirs.topology_prefix}) == theirs


def test_both_spellings_on_one_template_are_refused() -> None:
    with pytest.raises(InputError, match=f"cannot be combined with {re.escape(REQ)}") as e:
        parsed({REQ: "block", "placer.dev/podset-slice-required-topology": "rack"})
    assert e.value.field.endswith("annotations[placer.dev/podset-slice-required-topology]")


def test_errors_name_the_key_as_written() -> None:
    with pytest.raises(InputError, match=r"needs placer\.dev/podset-slice-required-topology") as e:
        parsed(placers({REQ: "block", SIZE: "2"}), parallelism=2)
    assert e.value.field.endswith("annotations[placer.dev/podset-slice-size]")
    js = parsed(placers({REQ: "zone"}))
    with pytest.raises(InputError, match="unknown topology level 'zone'") as e:
        check_topology_levels([js], LEVELS)
    assert e.value.field.endswith("annotations[placer.dev/podset-required-topology]")


OWN = "placer.dev/podset-"


@pytest.mark.parametrize(
    "key",
    [
        REQ,
        PREF,
        SLICE,
        f"{OWN}required-topology",
        f"{OWN}preferred-topology",
        f"{OWN}slice-required-topology",
    ],
)
@pytest.mark.parametrize("level", ["", "a b", "rack/", "-rack", "x" * 64])
def test_a_topology_level_is_a_label_key_in_either_spelling(key: str, level: str) -> None:
    """Kueue's webhook validates each level with ValidateLabelName; placer's own spelling (for
    its admission check) names the same levels, so it is held to the same rule."""
    size = {(f"{OWN}slice-size" if key.startswith(OWN) else SIZE): "1"} if "slice" in key else {}
    with pytest.raises(InputError, match="node label key") as refused:
        parsed({key: level, **size})
    assert refused.value.field.endswith(f"annotations[{key}]")


def test_a_prefixed_label_key_is_a_level() -> None:
    block = "cloud.google.com/gce-topology-block"
    assert parsed({REQ: block}).replicated_jobs[0].required_topology == block
    assert parsed({f"{OWN}required-topology": block}).replicated_jobs[0].required_topology == block


@pytest.mark.parametrize(
    ("annotations", "refused", "other"),
    [
        ({REQ: "block", PREF: "rack"}, PREF, REQ),
        ({REQ: "block", FREE: "false"}, FREE, REQ),
        ({PREF: "rack", FREE: "true"}, FREE, PREF),
    ],
)
def test_one_level_annotation_at_most_whatever_the_values(
    annotations: dict[str, str], refused: str, other: str
) -> None:
    """Kueue's webhook counts the annotations present: `unconstrained: "false"` beside a required
    level is refused as much as `"true"` (`ValidateTASPodSetRequest`)."""
    with pytest.raises(InputError) as caught:
        parsed(annotations)
    assert caught.value.field.endswith(f"annotations[{refused}]")
    assert caught.value.message == f"cannot be combined with {other}"


@pytest.mark.parametrize(("text", "size"), [("2", 2), ("+2", 2), ("02", 2), ("8", 8)])
def test_a_slice_size_is_what_go_reads_as_an_int32(text: str, size: int) -> None:
    r = parsed({REQ: "block", SLICE: "rack", SIZE: text}, parallelism=8).replicated_jobs[0]
    assert r.slice_size == size


@pytest.mark.parametrize("text", ["2_0", " 2", "2.0", "\u0662", "2147483648", "0", "-2", ""])
def test_a_slice_size_go_does_not_read_as_a_positive_int32_is_refused(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parsed({REQ: "block", SLICE: "rack", SIZE: text}, parallelism=20)
    assert caught.value.message == f"must be a positive integer, got {text!r}"
