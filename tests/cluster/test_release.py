"""The control plane the cluster tests run is the Kubernetes release they are said to run against.

`python -m tests.cluster.build` stamps each binary with the release its module pins, and
`$PLACER_KUBERNETES` chooses another module: the API server's /version must name the release
`build.module_versions` gives, or a run would credit one release with another's results.
"""

from __future__ import annotations

from kubernetes import client as k8s

from tests.cluster import build
from tests.cluster.scenario import Scenario


def test_the_api_server_reports_the_release_the_build_pinned(scenario: Scenario) -> None:
    info = k8s.VersionApi(scenario.core.api_client).get_code()
    assert info.git_version == build.module_versions()[build.KUBERNETES]
