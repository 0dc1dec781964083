"""deploy/'s RBAC, decided by the real API server: each component's shipped rights are enough for
what it does and no more than it uses.

The manifests' ServiceAccounts, Roles and bindings are applied to the control plane as `resolve`
reads them (tests/deploy/test_manifests.py checks `kubectl kustomize` renders the same), and every
question of who may do what is the API server's to answer (SubjectAccessReview, or a component
running with its account's token), never a re-implementation of RBAC's rules.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from placer.cli import build_parser
from placer.controller.act.cache import KUEUE_KINDS
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.decide.observe.kueue import CONTROLLER_NAME
from placer.controller.decide.records.ledger import LEDGER_NAME
from placer.controller.reconcile import Clocks, Controller, ControllerConfig
from tests.cluster.access import Authorizer, rbac_documents, renamed_account
from tests.cluster.kube import apply_all, delete_all, service_account_token
from tests.cluster.processes import LOOPBACK, free_port, wait_until
from tests.cluster.scenario import Scenario
from tests.controller.apiserver import ApiServer, Request
from tests.controller.builders import tpu_cluster
from tests.controller.test_kueue_admission import CHECK, check_of, submit
from tests.deploy.test_manifests import DEPLOY, resolve
from tests.extender.builders import request
from tests.extender.test_deploy import controller_ledger_namespace, expanded_command

Doc = dict[str, Any]


def deployment_named(docs: list[Doc], name: str) -> Doc:
    [deployment] = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name]
    return deployment


def account_of(deployment: Doc) -> tuple[str, str]:
    """The (namespace, name) of the ServiceAccount a Deployment's pods run as."""
    name = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    return deployment["metadata"]["namespace"], name


def test_the_extender_may_read_the_ledger_where_the_controller_keeps_it(
    scenario: Scenario,
) -> None:
    """The scheduler's manifests let the extender list and watch the controller's ledger (the
    ConfigMap, by name, in the controller's namespace) and nothing else of ConfigMaps; the
    controller's let it write there."""
    ledger_ns = controller_ledger_namespace()
    scheduler, controller = resolve(DEPLOY / "scheduler"), resolve(DEPLOY / "controller")
    apply_all(scenario.admin, rbac_documents(scheduler + controller))
    deployment = deployment_named(scheduler, "placer-extender")
    args = build_parser().parse_args(expanded_command(deployment)[1:])
    assert args.ledger_namespace == ledger_ns
    may = Authorizer(scenario.admin, *account_of(deployment))
    assert may(Request("list", "configmaps", ledger_ns, LEDGER_NAME))
    assert may(Request("watch", "configmaps", ledger_ns, LEDGER_NAME))
    assert not may(Request("list", "configmaps", ledger_ns, None))  # every ConfigMap: no
    assert not may(Request("get", "configmaps", ledger_ns, "other"))
    assert not may(Request("patch", "configmaps", ledger_ns, LEDGER_NAME))
    assert not may(Request("watch", "configmaps", "default", LEDGER_NAME))
    writer = Authorizer(
        scenario.admin, *account_of(deployment_named(controller, "placer-controller"))
    )
    for verb in ("get", "list", "watch", "patch"):
        assert writer(Request(verb, "configmaps", ledger_ns, LEDGER_NAME)), verb


@pytest.mark.parametrize("with_role", [True, False], ids=["shipped", "without-ledger-role"])
def test_the_extender_is_ready_with_the_shipped_rights_and_not_without_its_ledger_role(
    scenario: Scenario, with_role: bool
) -> None:
    """`placer extender` with the Deployment's ledger namespace, as an account holding exactly
    deploy/scheduler's rights: it turns ready, since its watch selects the ledger by name. Without
    the ledger Role the API server refuses the list, and the extender says so and never turns
    ready rather than serve without reservations."""
    docs = resolve(DEPLOY / "scheduler")
    deployment = deployment_named(docs, "placer-extender")
    namespace, account = account_of(deployment)
    if not with_role:
        docs = [d for d in docs if d["kind"] not in ("Role", "RoleBinding")]
    suffix = f"-{secrets.token_hex(3)}"
    granted = renamed_account(docs, namespace, account, suffix)
    apply_all(scenario.admin, granted)
    try:
        token = service_account_token(scenario.admin, namespace, f"{account}{suffix}")
        kubeconfig = scenario.plane.token_kubeconfig(f"extender{suffix}", token)
        args = build_parser().parse_args(expanded_command(deployment)[1:])
        port = free_port()
        process = scenario._placer(
            "extender",
            "extender",
            f"--kubeconfig={kubeconfig}",
            f"--host={LOOPBACK}",
            f"--port={port}",
            f"--ledger-namespace={args.ledger_namespace}",
            health_url=f"http://{LOOPBACK}:{port}/healthz",
        )
        url = f"http://{LOOPBACK}:{port}"
        if with_role:
            wait_until(
                lambda: request(url, "GET", "/readyz")[0] == 200,
                timeout_s=30,
                what="the extender ready",
            )
            assert "forbidden" not in process.log_tail(200)
            return
        ledger = f"{args.ledger_namespace}/{LEDGER_NAME}"
        refused = f"listing the placement ledger {ledger} is forbidden"
        wait_until(lambda: refused in process.log_tail(200), timeout_s=30, what="the refusal")
        time.sleep(1)  # past the refusal: still not ready
        assert request(url, "GET", "/readyz")[0] == 503
    finally:
        scenario.processes.pop("extender").stop()
        # the account and its bindings; the roles are the shipped ones, shared with others
        delete_all(scenario.admin, [d for d in granted if d["metadata"]["name"].endswith(suffix)])


def test_the_controllers_kueue_rights_are_exactly_those_it_uses(scenario: Scenario) -> None:
    """With deploy/kueue beside deploy/controller, the controller may list and watch Kueue's
    objects, read a Workload and an AdmissionCheck back on a 409 and patch their status; every
    Kueue right granted is one it used.

    The controller talks to the API-server stand-in, which injects the two 409s (a fault the real
    server shows only under a race) and records each call; the real API server's RBAC decides
    every call (`Authorizer`), and any it refuses fails the test."""
    controller, kueue = resolve(DEPLOY / "controller"), resolve(DEPLOY / "kueue")
    apply_all(scenario.admin, rbac_documents(controller + kueue))
    allowed = Authorizer(
        scenario.admin, *account_of(deployment_named(controller, "placer-controller"))
    )
    seen: list[Request] = []

    def authorize(call: Request) -> bool:
        seen.append(call)
        return allowed(call)

    cluster = tpu_cluster(blocks=3)
    cluster.create(
        "admissionchecks",
        {"metadata": {"name": CHECK}, "spec": {"controllerName": CONTROLLER_NAME}},
    )
    submit(cluster, "a", jobs=2)
    cluster.inject("patch", "workloads", 409)  # another check's controller wrote first
    cluster.inject("patch", "admissionchecks", 409)
    with ApiServer(cluster, authorize=authorize) as api:
        ctl = Controller(
            KubeAdapter(api.client(), request_timeout_s=5),
            ControllerConfig(solver="best-fit", window_s=0.0, kueue_admission_check=True),
            clocks=Clocks(sleep=lambda s: None),
        )
        report = ctl.run_once()
    assert report.executed is not None and report.executed.failed == []
    assert check_of(cluster, "a")["state"] == "Ready"
    [active] = cluster.get("admissionchecks", CHECK)["status"]["conditions"]
    assert (active["type"], active["status"]) == ("Active", "True")
    assert [c for c in seen if not allowed(c)] == []
    kueue_resources = {*KUEUE_KINDS, "workloads/status", "admissionchecks/status"} - {"topologies"}
    used = {(c.resource, c.verb) for c in seen if c.resource in kueue_resources}
    used |= {(s.kind, "watch") for s in ctl.cache.streams if s.kind in kueue_resources}
    granted = {
        (resource, verb)
        for role in kueue
        if role["kind"] == "ClusterRole"
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == used
