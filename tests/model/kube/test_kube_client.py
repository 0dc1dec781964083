"""placer's Kubernetes boundary on its own: which configuration is chosen, how each failure is
converted (temporary or permanent, 410 expired), paged lists and watches.

Lists and configuration run on fakes and files; watches run over HTTP against a loopback server
written here that answers one scripted watch stream, so the client's own `Watch` is exercised.
What only a real API server shows is covered by tests/cluster.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from placer.model.errors import ClusterError, ResourceExpired
from placer.model.kube import client as kube_client
from placer.model.kube.client import (
    PAGE_SIZE,
    KubeApis,
    WatchStop,
    api_client,
    api_error,
    converted,
    list_all,
    read_json,
    watch_events,
)

# --- error conversion ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "temporary"),
    [
        pytest.param(400, False, id="400 bad request"),
        pytest.param(401, False, id="401 unauthorized"),
        pytest.param(403, False, id="403 forbidden"),
        pytest.param(404, False, id="404 not found"),
        pytest.param(409, False, id="409 conflict"),
        pytest.param(422, False, id="422 invalid"),
        pytest.param(408, True, id="408 request timeout"),
        pytest.param(429, True, id="429 throttled"),
        pytest.param(500, True, id="500 internal error"),
        pytest.param(501, False, id="501 not implemented"),
        pytest.param(502, True, id="502 bad gateway"),
        pytest.param(503, True, id="503 unavailable"),
        pytest.param(504, True, id="504 gateway timeout"),
    ],
)
def test_an_api_status_is_temporary_or_permanent(status: int, temporary: bool) -> None:
    error = api_error("patching pods ml/p", ApiException(status=status, reason="Some Reason"))
    assert type(error) is ClusterError
    assert (error.status, error.temporary) == (status, temporary)
    assert str(error) == f"patching pods ml/p: HTTP {status}: Some Reason"


def test_410_is_resource_expired_not_a_failure_to_back_off_from() -> None:
    body = json.dumps({"kind": "Status", "message": "too old resource version: 5 (90)"})
    error = api_error("watching pods", ApiException(status=410, reason="Gone", body=body))
    assert isinstance(error, ResourceExpired) and isinstance(error, ClusterError)
    assert (error.status, error.temporary) == (410, False)
    assert str(error) == "watching pods: HTTP 410: too old resource version: 5 (90)"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            json.dumps({"message": 'pods "p" is forbidden:\n  no'}),
            'pods "p" is forbidden: no',
            id="status message, on one line",
        ),
        pytest.param("<html>proxy error</html>", "Forbidden", id="not JSON: the reason"),
        pytest.param("[1, 2]", "Forbidden", id="JSON but no Status: the reason"),
        pytest.param(json.dumps({"message": ""}), "Forbidden", id="empty message: the reason"),
    ],
)
def test_the_message_is_the_status_message_else_the_reason(body: str, message: str) -> None:
    error = api_error("reading pods ml/p", ApiException(status=403, reason="Forbidden", body=body))
    assert str(error) == f"reading pods ml/p: HTTP 403: {message}"


def test_a_refusal_of_the_client_itself_is_permanent_and_has_no_status() -> None:
    """The client raises status 0 for TLS failures (an unknown CA will not go away by retrying)."""
    raised = ApiException(status=0, reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED]")
    error = api_error("listing nodes", raised)
    assert (error.status, error.temporary) == (None, False)
    assert str(error) == "listing nodes: SSLError [SSL: CERTIFICATE_VERIFY_FAILED]"


POOL = urllib3.HTTPConnectionPool("127.0.0.1", 1)


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        pytest.param(
            urllib3.exceptions.MaxRetryError(
                POOL,
                "/api/v1/nodes",
                urllib3.exceptions.NewConnectionError(
                    None,  # type: ignore[arg-type]  # no connection: only the message is read
                    "Failed to establish a new connection: [Errno 111] Connection refused",
                ),
            ),
            "cannot connect to 127.0.0.1:1: [Errno 111] Connection refused",
            id="refused",
        ),
        pytest.param(
            urllib3.exceptions.MaxRetryError(
                POOL,
                "/api/v1/nodes",
                urllib3.exceptions.ReadTimeoutError(POOL, "/api/v1/nodes", "Read timed out."),
            ),
            "no answer from 127.0.0.1:1: Read timed out.",
            id="read timeout",
        ),
        pytest.param(
            urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead"),
            "ProtocolError: Connection broken: IncompleteRead",
            id="cut mid-answer",
        ),
        pytest.param(
            ConnectionResetError(104, "Connection reset by peer"),
            "ConnectionResetError: [Errno 104] Connection reset by peer",
            id="reset",
        ),
    ],
)
def test_connection_problems_are_temporary(raised: Exception, message: str) -> None:
    error = api_error("listing nodes", raised)
    assert type(error) is ClusterError
    assert (error.status, error.temporary) == (None, True)
    assert str(error) == f"listing nodes: {message}"


def test_converted_converts_client_errors_and_nothing_else() -> None:
    raised = ApiException(status=503, reason="Service Unavailable")
    with pytest.raises(ClusterError) as e, converted("creating events"):
        raise raised
    assert e.value.temporary and e.value.__cause__ is raised
    with pytest.raises(KeyError), converted("creating events"):  # a bug stays a bug
        raise KeyError("x")


class Answer:
    """What a client call with `_preload_content=False` returns: the body in `data`."""

    def __init__(self, doc: Any) -> None:
        self.data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"<html>", "reading nodes n: the server answered invalid JSON", id="html"),
        pytest.param(b"[]", "reading nodes n: the server answered list, not an object", id="list"),
    ],
)
def test_an_answer_that_is_no_object_is_a_permanent_error(data: bytes, message: str) -> None:
    with pytest.raises(ClusterError) as e:
        read_json(Answer(data), "reading nodes n")
    assert str(e.value).startswith(message) and not e.value.temporary


# --- paged lists --------------------------------------------------------------------------------


class PagedCall:
    """A list call answering `pages` in turn and recording the arguments of each call."""

    def __init__(self, *pages: Any) -> None:
        self.pages = list(pages)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Answer:
        self.calls.append(kwargs)
        page = self.pages.pop(0)
        if isinstance(page, Exception):
            raise page
        return Answer(page)


def test_a_list_is_read_page_by_page() -> None:
    call = PagedCall(
        {"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t1", "resourceVersion": "9"}},
        {"items": [{"n": 3}], "metadata": {"resourceVersion": "42"}},
    )
    items, version = list_all(call, "listing pods", request_timeout_s=5, label_selector="a=b")
    assert (items, version) == ([{"n": 1}, {"n": 2}, {"n": 3}], "42")
    common = {"limit": PAGE_SIZE, "_preload_content": False, "_request_timeout": 5}
    assert call.calls == [
        {**common, "_continue": None, "label_selector": "a=b"},
        {**common, "_continue": "t1", "label_selector": "a=b"},
    ]


def test_an_empty_list_has_no_items_and_its_version() -> None:
    call = PagedCall({"items": None, "metadata": {"resourceVersion": "3"}})
    assert list_all(call, "listing nodes") == ([], "3")


def test_a_continue_token_that_expired_mid_list_is_resource_expired() -> None:
    call = PagedCall(
        {"items": [{"n": 1}], "metadata": {"continue": "t1"}},
        ApiException(status=410, reason="Expired"),
    )
    with pytest.raises(ResourceExpired, match=r"^listing pods: HTTP 410: Expired$"):
        list_all(call, "listing pods")


def test_a_list_cut_by_the_network_is_temporary() -> None:
    call = PagedCall(urllib3.exceptions.ProtocolError("Connection aborted."))
    with pytest.raises(ClusterError) as e:
        list_all(call, "listing pods")
    assert e.value.temporary and str(e.value) == "listing pods: ProtocolError: Connection aborted."


# --- watches ------------------------------------------------------------------------------------


class WatchServer(http.server.ThreadingHTTPServer):
    """Answers every GET with `status` and the scripted watch `lines`, then holds the connection
    open (`hold`) until the test ends, as a quiet but healthy watch does, or closes it."""

    daemon_threads = True

    def __init__(self, lines: list[dict[str, Any]], *, status: int = 200, hold: bool = False):
        super().__init__(("127.0.0.1", 0), WatchHandler)
        self.lines = lines
        self.status = status
        self.hold = hold
        self.queries: list[dict[str, list[str]]] = []
        self.released = threading.Event()

    @property
    def client(self) -> client.ApiClient:
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{self.server_address[1]}"
        return client.ApiClient(cfg)


class WatchHandler(http.server.BaseHTTPRequestHandler):
    server: WatchServer

    protocol_version = "HTTP/1.1"  # chunked, as the API server streams a watch

    def do_GET(self) -> None:
        self.server.queries.append(parse_qs(urlsplit(self.path).query))
        if self.server.status != 200:
            body = json.dumps({"kind": "Status", "code": self.server.status, "message": "gone"})
            self.send_response(self.server.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in self.server.lines:
            chunk = json.dumps(line).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        if self.server.hold:
            self.server.released.wait(30)
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[WatchServer] = []

    def start(lines: list[dict[str, Any]], **kw: Any) -> WatchServer:
        server = WatchServer(lines, **kw)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.released.set()
        server.shutdown()
        server.server_close()


def node(name: str, version: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "resourceVersion": version}}


def test_a_watch_yields_raw_changes_and_asks_for_a_timeout_and_bookmarks(serve: Any) -> None:
    server = serve(
        [
            {"type": "ADDED", "object": node("a", "8")},
            {"type": "MODIFIED", "object": {**node("a", "9"), "unknownField": 1}},
            {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "10"}}},
            {"type": "DELETED", "object": node("a", "11")},
        ]
    )
    order: list[str] = []
    events = watch_events(
        KubeApis(server.client).core.list_node,
        "watching nodes",
        resource_version="7",
        timeout_s=30,
        on_connected=lambda: order.append("connected"),
        label_selector="pool=a",
    )
    for kind, obj in events:
        order.append(f"{kind} {obj['metadata']['resourceVersion']}")
    assert order == ["connected", "ADDED 8", "MODIFIED 9", "BOOKMARK 10", "DELETED 11"]
    [query] = server.queries
    assert query == {
        "watch": ["true"],
        "timeoutSeconds": ["30"],
        "allowWatchBookmarks": ["true"],
        "resourceVersion": ["7"],
        "labelSelector": ["pool=a"],
    }


def test_a_watch_from_the_start_sends_no_resource_version(serve: Any) -> None:
    server = serve([])
    call = KubeApis(server.client).core.list_node
    assert list(watch_events(call, "watching nodes", resource_version="", timeout_s=0.2)) == []
    [query] = server.queries
    assert "resourceVersion" not in query and query["timeoutSeconds"] == ["1"]


@pytest.mark.parametrize(
    ("code", "expected", "temporary"),
    [
        pytest.param(410, ResourceExpired, False, id="410 in the stream: expired"),
        pytest.param(500, ClusterError, True, id="500 in the stream: temporary"),
    ],
)
def test_an_error_event_ends_the_watch_with_its_status(
    serve: Any, code: int, expected: type[ClusterError], temporary: bool
) -> None:
    error = {"kind": "Status", "code": code, "reason": "Expired", "message": "too old"}
    server = serve(
        [{"type": "ADDED", "object": node("a", "8")}, {"type": "ERROR", "object": error}]
    )
    seen = []
    with pytest.raises(expected) as e:
        for _, obj in watch_events(
            KubeApis(server.client).core.list_node,
            "watching nodes",
            resource_version="7",
            timeout_s=30,
        ):
            seen.append(obj["metadata"]["name"])
    assert seen == ["a"]
    assert type(e.value) is expected and (e.value.status, e.value.temporary) == (code, temporary)
    assert str(e.value) == f"watching nodes: HTTP {code}: Expired: too old"


def test_a_watch_refused_with_410_is_expired(serve: Any) -> None:
    server = serve([], status=410)
    with pytest.raises(ResourceExpired, match=r"^watching nodes: HTTP 410: gone$"):
        list(
            watch_events(
                KubeApis(server.client).core.list_node,
                "watching nodes",
                resource_version="7",
                timeout_s=30,
                on_connected=lambda: pytest.fail("a refused watch never connected"),
            )
        )


def test_stop_ends_a_quiet_watch_at_once(serve: Any) -> None:
    """A watch blocked reading a stream that sends nothing more returns when `stop` is set (the
    server here would hold it open for 30 s); a watch started after `stop` yields nothing."""
    server = serve([{"type": "ADDED", "object": node("a", "8")}], hold=True)
    stop = WatchStop()
    seen: list[str] = []
    first = threading.Event()

    def follow() -> None:
        call = KubeApis(server.client).core.list_node
        for _, obj in watch_events(
            call, "watching nodes", resource_version="", timeout_s=60, stop=stop
        ):
            seen.append(obj["metadata"]["name"])
            first.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert first.wait(10), "the first event never arrived"
    stop.set()
    follower.join(10)  # a hang guard: without the socket shut down it blocks until released
    assert not follower.is_alive() and not server.released.is_set()
    assert seen == ["a"]
    late = watch_events(
        KubeApis(server.client).core.list_node,
        "watching nodes",
        resource_version="",
        timeout_s=60,
        stop=stop,
        on_connected=lambda: seen.append("connected"),
    )
    assert list(late) == [] and seen == ["a"]


# --- which configuration ------------------------------------------------------------------------


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "file-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture
def in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pod's environment: the service host and port, and a mounted service account."""
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token")
    (account / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(kube_client, "SERVICE_ACCOUNT_DIR", account)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return account


@pytest.fixture
def default_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A default kubeconfig ($KUBECONFIG or ~/.kube/config) naming another server."""
    path = kubeconfig(tmp_path / "default-config", "http://127.0.0.1:2222")
    monkeypatch.setattr(config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    return path


def not_in_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)


def test_an_explicit_kubeconfig_wins_even_in_a_pod(
    tmp_path: Path, in_cluster: Path, default_kubeconfig: Path
) -> None:
    given = kubeconfig(tmp_path / "given", "http://127.0.0.1:1111")
    api = api_client(str(given))
    assert api.configuration.host == "http://127.0.0.1:1111"
    assert api.configuration.api_key["BearerToken"] == "Bearer file-token"


def test_in_a_pod_the_service_account_wins_over_the_default_kubeconfig(
    in_cluster: Path, default_kubeconfig: Path
) -> None:
    default_host = client.Configuration.get_default_copy().host
    api = api_client(None)
    assert api.configuration.host == "https://10.96.0.1:443"
    assert api.configuration.api_key["BearerToken"] == "bearer pod-token"
    assert api.configuration.ssl_ca_cert == str(in_cluster / "ca.crt")
    # the client's process-wide default stays as it was: another client cannot inherit this one
    assert client.Configuration.get_default_copy().host == default_host


def test_outside_a_pod_the_default_kubeconfig_is_used(
    monkeypatch: pytest.MonkeyPatch, default_kubeconfig: Path
) -> None:
    not_in_a_pod(monkeypatch)
    assert api_client(None).configuration.host == "http://127.0.0.1:2222"


def test_a_pod_without_its_service_account_falls_back_to_the_default_kubeconfig(
    in_cluster: Path, default_kubeconfig: Path
) -> None:
    (in_cluster / "token").unlink()
    assert api_client(None).configuration.host == "http://127.0.0.1:2222"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- a\n- b\n", id="a YAML list"),
        pytest.param("a: [\n", id="not YAML"),
        pytest.param("\udcff", id="not UTF-8"),
        pytest.param("contexts: [5]\ncurrent-context: x\n", id="contexts of numbers"),
        pytest.param("apiVersion: v1\nkind: Config\n", id="no context"),
    ],
)
def test_a_kubeconfig_that_cannot_be_loaded_is_one_cluster_error_line(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ClusterError) as e:
        api_client(str(path))
    message = str(e.value)
    assert message.startswith(f"cannot load the Kubernetes configuration from {path}: ")
    assert "\n" not in message and not e.value.temporary


def test_no_configuration_anywhere_says_what_was_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_in_a_pod(monkeypatch)
    missing = tmp_path / "nowhere" / "config"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    monkeypatch.setattr(config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(missing))
    with pytest.raises(ClusterError) as e:
        api_client(None)
    assert str(e.value) == (
        f"no Kubernetes configuration: not running in a cluster, and $KUBECONFIG ({missing}): "
        "no such file; give one with --kubeconfig PATH (or set KUBECONFIG)"
    )
