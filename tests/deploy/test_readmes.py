"""deploy/*/README.md against what placer does now: each flag synopsis (`    placer CMD ... [--`)
names exactly the flags of `placer CMD --help`, with the defaults it shows; the metrics and
admission outcomes listed are the ones exported; and the webhook session shown there (started by
hand, then `curl`) prints what the README shows. Offline `$ placer` blocks are run by
tests/cli/test_readme_examples.py."""

from __future__ import annotations

import http.client
import os
import re
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, get_args

import pytest

from placer.cli import build_parser
from placer.commands.completion import _flags, _subcommands
from placer.controller.metrics import Metrics
from plugins.webhook.admission import Outcome
from tests.webhook.certs import make_server_files

ROOT = Path(__file__).resolve().parents[2]
READMES = sorted((ROOT / "deploy").glob("*/README.md"))
NOT_LISTED = {"--help", "--verbose"}
"""Every command has them; a synopsis shows `-v` at most."""


def _blocks(readme: Path, start: str) -> list[list[str]]:
    """Indented blocks (4 spaces stripped) whose first line starts with `start`, up to the first
    line that is not indented."""
    lines = readme.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.startswith("    " + start):
            block = [line[4:]]
            for more in lines[i + 1 :]:
                if not more.startswith("    "):
                    break
                block.append(more[4:])
            blocks.append(block)
    return blocks


def _synopses() -> list[Any]:
    """(readme, command, synopsis text) for every flag synopsis in the deploy READMEs."""
    found = []
    for readme in READMES:
        for block in _blocks(readme, "placer "):
            text = " ".join(line.strip() for line in block)
            if "[--" in block[0]:
                command = text.split()[1]
                found.append(pytest.param(command, text, id=f"{readme.parent.name}:{command}"))
    return found


SYNOPSES = _synopses()


def test_the_deploy_readmes_have_flag_synopses() -> None:
    assert {p.id for p in SYNOPSES} >= {
        "controller:controller",
        "scheduler:extender",
        "webhook:webhook",
    }


@pytest.mark.parametrize(("command", "synopsis"), SYNOPSES)
def test_a_flag_synopsis_lists_every_flag_of_the_command_and_no_other(
    command: str, synopsis: str
) -> None:
    shown = set()
    for flag in re.findall(r"--(?:\[no-\])?[a-z][a-z0-9-]*", synopsis):
        shown |= {flag.replace("[no-]", ""), flag.replace("[no-]", "no-")}
    assert shown == set(_flags(_subcommands(build_parser())[command])) - NOT_LISTED


@pytest.mark.parametrize(("command", "synopsis"), SYNOPSES)
def test_a_default_a_synopsis_shows_is_the_default(command: str, synopsis: str) -> None:
    """`[--port 9443]`: a literal value (a number, an address, a duration) is the default."""
    defaults = {
        s: a.default
        for a in _subcommands(build_parser())[command]._actions
        for s in a.option_strings
    }
    for flag, value in re.findall(r"\[(--[a-z-]+) ([0-9][0-9a-z.]*)\]", synopsis):
        default = defaults[flag]
        assert value == (f"{default:g}" if isinstance(default, float) else str(default)), flag


def _bullet(readme: Path, starts: str) -> str:
    """The text of the bullet item beginning with `starts`."""
    text = readme.read_text()
    at = text.index(starts)
    end = text.find("\n- ", at)
    return text[at:end]


def _names(registry: Any) -> set[str]:
    return {f.name + ("_total" if f.type == "counter" else "") for f in registry.collect()}


def test_the_controller_readme_lists_its_metrics() -> None:
    listed = _bullet(ROOT / "deploy/controller/README.md", "- **Metrics**")
    assert set(re.findall(r"placer_[a-z_]+", listed)) == _names(Metrics().registry)


def test_the_webhook_readme_lists_its_admission_outcomes() -> None:
    listed = _bullet(ROOT / "deploy/webhook/README.md", "- `--metrics-port`")
    outcomes = listed.split("placer_webhook_admissions_total{outcome}")[1].split(")")[0]
    assert re.findall(r"`([a-z-]+)`", outcomes) == list(get_args(Outcome))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _post(url: str, body: bytes, ca: Path) -> bytes:
    """What `curl -s --cacert CA URL --data BODY` prints: the response body, whatever the status."""
    host_port, path = url.removeprefix("https://").split("/", 1)
    host, port = host_port.split(":")
    context = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
    try:
        conn.request("POST", "/" + path, body=body)
        return conn.getresponse().read()
    finally:
        conn.close()


def _ready(port: int, proc: subprocess.Popen[str]) -> bool:
    """Whether the probe port answers /readyz with 200 within a minute, while `proc` runs."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def test_the_webhook_session_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """The README's `$ placer webhook` (its ports swapped for free ones, its tls.crt/tls.key
    made here for 127.0.0.1), then each `$ curl` against it: same lines, and SIGTERM exits 0."""
    readme = ROOT / "deploy/webhook/README.md"
    [start] = _blocks(readme, "$ placer webhook")
    curls = _blocks(readme, "$ curl ")
    assert len(curls) >= 2
    command = " ".join(line.strip() for line in start if not line.startswith("placer webhook:"))
    argv = shlex.split(command.replace("\\ ", ""))[2:]
    ports = {
        argv[argv.index("--port") + 1]: str(_free_port()),
        argv[argv.index("--metrics-port") + 1]: str(_free_port()),
    }
    files = make_server_files(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    proc = subprocess.Popen(
        [sys.executable, "-m", "placer", *(ports.get(a, a) for a in argv)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        if not _ready(int(ports[argv[argv.index("--metrics-port") + 1]]), proc):
            proc.kill()
            raise AssertionError(f"placer webhook did not get ready: {proc.communicate()[1]}")
        for block in curls:
            curl = shlex.split(block[0].removeprefix("$ "))
            url = next(a for a in curl if a.startswith("https://"))
            data = curl[curl.index("--data") + 1]
            for readme_port, port in ports.items():
                url = url.replace(f":{readme_port}/", f":{port}/")
            if data.startswith("@"):  # curl --data @FILE sends the file without its line breaks
                body = (tmp_path / data[1:]).read_bytes().replace(b"\r", b"").replace(b"\n", b"")
            else:
                body = data.encode()
            assert _post(url, body, files.ca).decode() == block[1], block[0]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    announced = next(line for line in start if line.startswith("placer webhook:"))
    for readme_port, port in ports.items():
        announced = announced.replace(f":{readme_port}/", f":{port}/")
        announced = re.sub(rf":{readme_port}$", f":{port}", announced)
    assert (out + err).splitlines()[0] == announced
