"""What a Kueue Workload tells about its JobSet (`placer explain --kubeconfig`'s kueue line)."""

from __future__ import annotations

from typing import Any

import pytest

from placer.model.kueue.workload import kueue_standing, owner_of, waits_for_quota


def workload(*conditions: tuple[str, str, str], checks: list[dict[str, str]] | None = None) -> Any:
    return {
        "metadata": {
            "name": "jobset-b-1",
            "namespace": "ml",
            "ownerReferences": [
                {"kind": "Pod", "name": "x"},
                {"kind": "JobSet", "name": "b", "controller": True},
            ],
        },
        "spec": {"queueName": "training"},
        "status": {
            "conditions": [{"type": t, "status": s, "message": m} for t, s, m in conditions],
            "admissionChecks": checks or [],
        },
    }


QUOTA_MESSAGE = "couldn't assign flavors to pod set w: insufficient unused quota for google.com/tpu"


@pytest.mark.parametrize(
    ("wl", "waits", "standing"),
    [
        pytest.param(
            workload(("QuotaReserved", "False", QUOTA_MESSAGE)),
            True,
            "Kueue has not reserved quota for Workload ml/jobset-b-1 in LocalQueue training "
            f"(Kueue: {QUOTA_MESSAGE}); placer places it only once Kueue reserves quota",
            id="queued",
        ),
        pytest.param(
            workload(("QuotaReserved", "False", ""), ("Evicted", "True", "Preempted to fit a")),
            True,
            "Kueue evicted Workload ml/jobset-b-1 (Kueue: Preempted to fit a): it waits for "
            "quota again in LocalQueue training; placer places it only once Kueue reserves quota",
            id="evicted",
        ),
        pytest.param(
            workload(
                ("QuotaReserved", "True", ""),
                checks=[{"name": "placer", "state": "Pending"}, {"name": "prov", "state": "Ready"}],
            ),
            False,
            "Kueue reserved quota for Workload ml/jobset-b-1; it waits for its admission "
            "checks: placer Pending",
            id="checks",
        ),
        pytest.param(
            workload(("QuotaReserved", "True", ""), ("Admitted", "True", "")),
            False,
            "",
            id="admitted",
        ),
        pytest.param(
            workload(("Finished", "True", ""), ("QuotaReserved", "False", "")),
            False,
            "",
            id="finished",
        ),
    ],
)
def test_standing(wl: Any, waits: bool, standing: str) -> None:
    assert waits_for_quota(wl) is waits
    assert kueue_standing(wl) == standing


def test_a_long_kueue_message_is_cut_and_the_owner_is_the_controller() -> None:
    wl = workload(("QuotaReserved", "False", "x" * 5000))
    assert "... (5000 characters))" in kueue_standing(wl)
    assert len(kueue_standing(wl)) < 500
    assert owner_of(wl) == ("JobSet", "b")
    assert owner_of({"metadata": {}}) is None
