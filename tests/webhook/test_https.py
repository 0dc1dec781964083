"""`placer webhook` over real HTTPS on 127.0.0.1, with certificates made in the test: answers,
error answers, body limit, probes, metrics, certificate renewal, graceful stop, and the command."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from placer.cli import main
from placer.model.assignment import PLACEMENT_GATE
from placer.serving import ServingLimits
from plugins.webhook.server import MUTATE_PATH
from tests.webhook.certs import make_ca, make_server_files
from tests.webhook.harness import RunningWebhook, review
from tests.webhook.test_admission import jobset_pod

ROOT = Path(__file__).resolve().parents[2]


def test_gates_a_jobset_pod_over_https(tmp_path: Path) -> None:
    with RunningWebhook(make_server_files(tmp_path)) as hook:
        status, body = hook.post(review(jobset_pod()))
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    response = body["response"]
    assert response["uid"] == "0b5a-uid" and response["allowed"] is True
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": PLACEMENT_GATE}]}
    ]


def test_untrusted_client_cannot_complete_the_handshake(tmp_path: Path) -> None:
    files = make_server_files(tmp_path / "server")
    other = make_server_files(tmp_path / "other")
    with RunningWebhook(files) as hook:
        conn = hook.connection(ca=other.ca)
        with pytest.raises(ssl.SSLCertVerificationError):
            conn.request("POST", MUTATE_PATH, body=b"{}")
        conn.close()
        # And the server keeps serving afterwards.
        assert hook.post(review(jobset_pod()))[0] == 200


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        pytest.param(b"\xff\xfe garbage", 400, "body is not JSON", id="garbage"),
        pytest.param(b"", 400, "body is not JSON", id="empty"),
        pytest.param(json.dumps({"kind": "AdmissionReview"}).encode(), 400, "expected apiVersion",
                     id="no-version"),
    ],
)  # fmt: skip
def test_malformed_reviews_get_an_admission_error_answer(
    tmp_path: Path, body: bytes, status: int, message: str
) -> None:
    with RunningWebhook(make_server_files(tmp_path)) as hook:
        got_status, got = hook.post(body)
        assert hook.post(review(jobset_pod()))[0] == 200  # still serving
    assert got_status == status
    assert got["kind"] == "AdmissionReview"
    response = got["response"]
    assert response["allowed"] is False and response["status"]["code"] == status
    assert message in response["status"]["message"]


def test_serving_refusals_on_the_https_port_are_admission_reviews(tmp_path: Path) -> None:
    """A wrong path is answered by placer.serving's router, in the AdmissionReview shape."""
    with RunningWebhook(make_server_files(tmp_path)) as hook:
        status, got = hook.post(review(jobset_pod()), path="/validate")
    assert status == 404
    assert got["kind"] == "AdmissionReview" and got["response"]["allowed"] is False
    assert got["response"]["status"]["code"] == 404


def test_malformed_pod_is_refused_with_http_200(tmp_path: Path) -> None:
    body = review({})
    body["request"]["object"] = {"metadata": {"labels": {"jobset.sigs.k8s.io/jobset-name": "t"}}}
    with RunningWebhook(make_server_files(tmp_path)) as hook:
        status, got = hook.post(body)
    assert status == 200
    assert got["response"]["uid"] == "0b5a-uid" and got["response"]["allowed"] is False


def test_oversized_body_is_answered_413(tmp_path: Path) -> None:
    pod = jobset_pod()
    pod["metadata"]["annotations"]["big"] = "x" * 4096
    limits = ServingLimits(max_body_bytes=2048, max_in_flight_bytes=2048)
    with RunningWebhook(make_server_files(tmp_path), limits=limits) as hook:
        status, got = hook.post(review(pod))
        small = hook.post(review(jobset_pod()))
    assert status == 413 and got["response"]["allowed"] is False
    assert "over the limit of 2048" in got["response"]["status"]["message"]
    assert small[0] == 200


def test_probes_and_metrics_on_the_plain_port(tmp_path: Path) -> None:
    with RunningWebhook(make_server_files(tmp_path)) as hook:
        assert hook.get("/healthz")[0] == 200
        assert hook.get("/readyz")[0] == 200
        hook.post(review(jobset_pod()))
        hook.post(b"nope")
        status, text = hook.get("/metrics")
        assert hook.server.port != hook.server.metrics_port
    assert status == 200
    assert 'placer_webhook_admissions_total{outcome="gated"} 1.0' in text
    assert 'placer_webhook_admissions_total{outcome="malformed"} 1.0' in text
    assert "placer_webhook_admission_seconds_count 2.0" in text


@pytest.mark.parametrize("replacement", ["fifo", "garbage", "device"])
def test_a_certificate_reload_that_fails_keeps_the_old_one_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, replacement: str
) -> None:
    """Issue 22: the certificate file replaced by a FIFO (or garbage, or a device) while the
    webhook runs: the reload is refused, logged, and never blocks; HTTPS keeps answering with the
    old certificate, and a restored file is picked up again."""
    ca = make_ca()
    first = make_server_files(tmp_path, ca)
    with RunningWebhook(first, reload_interval_s=0.05) as hook:
        renewed = make_server_files(tmp_path / "renewed", ca)
        first.cert.unlink()
        if replacement == "fifo":
            os.mkfifo(first.cert)
        elif replacement == "garbage":
            first.cert.write_bytes(os.urandom(512))
        else:
            first.cert.symlink_to("/dev/zero")
        with caplog.at_level("WARNING", logger="plugins.webhook.tls"):
            reloaded: list[bool] = []
            worker = threading.Thread(
                target=lambda: reloaded.append(hook.server.certificate.reload_if_changed()),
                daemon=True,
            )
            worker.start()
            worker.join(60)  # a guard against a hang, not a time measurement
            assert reloaded == [False], "the reload blocked on the replaced file"
            for _ in range(3):  # the periodic reload runs meanwhile, and must not stall answers
                assert hook.post(review(jobset_pod()))[0] == 200
                assert hook.peer_serial() == first.serial
                time.sleep(0.06)
        assert any("keeping the current" in r.getMessage() for r in caplog.records)
        first.cert.unlink()
        first.cert.write_bytes(renewed.cert.read_bytes())
        first.key.write_bytes(renewed.key.read_bytes())
        os.utime(first.cert, (time.time() + 5, time.time() + 5))
        # The periodic reload (every 0.05 s) may pick the restored pair up before this call
        # does, so the call may answer False; what must hold is the renewed certificate served.
        hook.server.certificate.reload_if_changed()
        assert hook.peer_serial() == renewed.serial
        assert hook.get("/readyz")[0] == 200


def test_renewed_certificate_is_served_without_restart(tmp_path: Path) -> None:
    ca = make_ca()
    first = make_server_files(tmp_path, ca)
    with RunningWebhook(first, reload_interval_s=0) as hook:
        assert hook.peer_serial() == first.serial
        time.sleep(0.01)  # a distinct mtime even on coarse clocks
        renewed = make_server_files(tmp_path, ca)  # cert-manager rewrote the Secret's files
        os.utime(renewed.cert, (time.time() + 5, time.time() + 5))
        # A broken pair (key written, cert not yet) keeps the old certificate in service.
        renewed_cert = renewed.cert.read_bytes()
        renewed.cert.write_text("-----BEGIN CERTIFICATE-----\ntruncated\n")
        assert not hook.server.certificate.reload_if_changed()
        assert hook.peer_serial() == first.serial
        renewed.cert.write_bytes(renewed_cert)
        os.utime(renewed.cert, (time.time() + 10, time.time() + 10))
        assert hook.server.certificate.reload_if_changed()
        assert hook.peer_serial() == renewed.serial
        assert hook.post(review(jobset_pod()))[0] == 200
        assert not hook.server.certificate.reload_if_changed()  # unchanged files: no reload


def test_bad_tls_files_are_one_line_errors(tmp_path: Path, capsys: Any) -> None:
    files = make_server_files(tmp_path)
    assert main(["webhook", "--tls-cert-file", str(tmp_path / "nope.crt"),
                 "--tls-private-key-file", str(files.key)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tls-cert-file" in err and "nope.crt" in err
    assert main(["webhook", "--tls-cert-file", str(files.key),
                 "--tls-private-key-file", str(files.key)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a PEM certificate and its private key" in err


def test_port_in_use_is_a_one_line_error(tmp_path: Path, capsys: Any) -> None:
    files = make_server_files(tmp_path)
    with RunningWebhook(files) as hook:
        port = hook.server.port
        code = main(["webhook", "--host", "127.0.0.1", "--port", str(port),
                     "--tls-cert-file", str(files.cert),
                     "--tls-private-key-file", str(files.key)])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err


def test_command_serves_until_sigterm_and_exits_0(tmp_path: Path) -> None:
    """`placer webhook` as a process: announces both listeners, answers, stops cleanly."""
    files = make_server_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from placer.cli import main; sys.exit(main())",
         "webhook", "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0",
         "--tls-cert-file", str(files.cert), "--tls-private-key-file", str(files.key)],
        stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("placer webhook: serving https://127.0.0.1:"), line
        assert "probes and /metrics" not in line  # --metrics-port 0 disables them
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        context = ssl.create_default_context(cafile=str(files.ca))
        import http.client

        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        conn.request("POST", MUTATE_PATH, body=json.dumps(review(jobset_pod())).encode())
        assert json.loads(conn.getresponse().read())["response"]["allowed"] is True
        conn.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        pytest.param("gzip", gzip.compress(b"")[:10] + b"\xff" * 64, id="gzip"),
        pytest.param("deflate", b"\x78\x9cgarbage", id="deflate"),
    ],
)
def test_a_body_that_does_not_decompress_is_a_400_review(
    tmp_path: Path, encoding: str, body: bytes
) -> None:
    with RunningWebhook(make_server_files(tmp_path)) as hook:
        conn = hook.connection()
        try:
            headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
            conn.request("POST", MUTATE_PATH, body=body, headers=headers)
            response = conn.getresponse()
            status, got = response.status, json.loads(response.read())
        finally:
            conn.close()
        assert hook.post(review(jobset_pod()))[0] == 200
    assert status == 400 and got["kind"] == "AdmissionReview"
    assert got["response"]["allowed"] is False
    assert (
        f"body cannot be decoded (Content-Encoding '{encoding}')"
        in (got["response"]["status"]["message"])
    )
