#!/usr/bin/env python3
"""Replays the ten verification requests with two MCP clients this project
did not write, against the release binary and the container image.

Start it through `evidence/run.sh`, which installs the pinned clients,
builds the binary and the image, and then runs this file with the Python of
`evidence/.venv`:

    evidence/run.sh            # regenerate evidence/ (README, transcripts, log)
    evidence/run.sh --check    # same run, written to target/evidence-check/;
                               # exits 1 when any expectation fails

Clients:
  python-sdk     the official Python SDK (`mcp` from PyPI), one session per
                 target; messages are recorded at its stdio transport.
  inspector-cli  the MCP Inspector CLI (`--cli`), one process per call; it
                 starts the server through evidence/wiretap.py, a relay that
                 records every line unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio

REPO = Path(__file__).resolve().parent.parent
EVIDENCE = REPO / "evidence"
DEMO = REPO / "demo_project"
BINARY = REPO / "target/static/x86_64-unknown-linux-gnu/dist/mcp-project-helper"
IMAGE = "mcp-project-helper:test"
PODMAN = REPO / "tests/support/podman.sh"
INSPECTOR_PACKAGE = EVIDENCE / "node_modules/@modelcontextprotocol/inspector"
INSPECTOR = EVIDENCE / "node_modules/.bin/mcp-inspector"
WIRETAP = EVIDENCE / "wiretap.py"
RUN_DIR = REPO / "target/evidence-run"
CHECK_OUT = REPO / "target/evidence-check"

# Generous: the first container start on a cold machine and pytest both take a while.
CALL_TIMEOUT_S = 180

TOOLS = [
    "search_project_files",
    "read_project_file",
    "list_project_directory",
    "find_project_files",
    "outline_project_file",
    "find_symbol_definitions",
    "find_symbol_references",
    "get_docs",
    "run_project_check",
]
READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}
EXPECTED_ANNOTATIONS = {name: READ_ONLY for name in TOOLS if name != "run_project_check"} | {
    "run_project_check": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
}


def crate_version() -> str:
    """The `version` of `[package]` in Cargo.toml (regex: no tomllib before 3.11)."""
    text = (REPO / "Cargo.toml").read_text(encoding="utf-8")
    package = text.split("[package]", 1)[-1]
    match = re.search(r'^version\s*=\s*"([^"]+)"', package, re.MULTILINE)
    return match.group(1) if match else "unknown"


# ---------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    name: str
    description: str

    def server_command(self, log_name: str) -> list[str]:
        """The command a client starts; the server's log goes to RUN_DIR/logs/log_name."""
        if self.name == "binary":
            return [str(BINARY), "--root", str(DEMO), "--log-file", str(RUN_DIR / "logs" / log_name)]
        return [
            str(PODMAN), "run", "-i", "--rm", "--network", "none", "--read-only",
            "--user", "65532",
            "-v", f"{DEMO}:/project:ro",
            "-v", f"{RUN_DIR / 'logs'}:/logs",
            IMAGE, "--log-file", f"/logs/{log_name}",
        ]  # fmt: skip


TARGETS = [
    Target("binary", "the static release binary, `--root demo_project`"),
    Target(
        "image",
        f"the container image `{IMAGE}` (scratch, `--read-only`, `--network none`, "
        "`--user 65532`, demo_project mounted read-only at /project)",
    ),
]


def server_env() -> dict[str, str]:
    """The environment both clients give the server.

    The operator's own MCP_PROJECT_HELPER_* settings must not leak in. The
    driver's venv (with pinned pytest) goes first on PATH so that the demo's
    detected `tests` check (`python -m pytest -q`) finds pytest; Python must
    not write caches into demo_project.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MCP_PROJECT_HELPER_") and key != "PROJECT_ROOT"
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    return env


# ---------------------------------------------------------------- clients


@dataclass
class CallOutcome:
    """One tools/call as the client saw it."""

    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None = None  # the CallToolResult, wire field names
    error: str | None = None  # the client raised or exited non-zero


@dataclass
class Handshake:
    initialize: dict[str, Any] | None
    tools: list[dict[str, Any]] | None
    error: str | None = None


@dataclass
class Step:
    """What one request exchanged; becomes one transcript."""

    calls: list[CallOutcome] = field(default_factory=list)
    exchange: list[dict[str, Any]] = field(default_factory=list)
    client_runs: list[dict[str, Any]] = field(default_factory=list)
    handshake: Handshake | None = None


def wire_record(origin: str, line: str) -> dict[str, Any]:
    try:
        message: Any = json.loads(line)
    except ValueError:
        message = line
    return {"from": origin, "message": message}


class PythonSdkClient:
    """One session of the official Python SDK over stdio."""

    name = "python-sdk"

    def __init__(self, target: Target):
        self.target = target
        self.command = target.server_command(f"{self.name}-{target.name}.log")
        self.step = Step()
        self._stack = contextlib.AsyncExitStack()
        self._session: Any = None

    @staticmethod
    def version() -> str:
        return f"mcp {importlib.metadata.version('mcp')} (PyPI)"

    async def __aenter__(self) -> PythonSdkClient:
        from mcp import ClientSession
        from mcp.client import stdio

        _install_incoming_recorder(stdio, self)
        errlog = self._stack.enter_context(
            open(RUN_DIR / f"{self.name}-{self.target.name}.stderr", "w", encoding="utf-8")
        )
        # stdio_client passes only a whitelisted environment unless env= is given.
        parameters = stdio.StdioServerParameters(
            command=self.command[0], args=self.command[1:], env=server_env()
        )
        read, write = await self._stack.enter_async_context(
            stdio.stdio_client(parameters, errlog=errlog)
        )
        self._session = await self._stack.enter_async_context(
            ClientSession(read, _RecordingWriteStream(write, self), read_timeout_seconds=CALL_TIMEOUT_S)
        )
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()

    def begin(self) -> Step:
        self.step = Step()
        return self.step

    def record(self, origin: str, line: str) -> None:
        self.step.exchange.append(wire_record(origin, line))

    async def handshake(self) -> Handshake:
        try:
            initialize = await self._session.initialize()
            listed = await self._session.list_tools()
        except Exception as error:  # noqa: BLE001 - any failure is a failed row
            return Handshake(None, None, error=describe(error))
        return Handshake(
            initialize.model_dump(by_alias=True, mode="json", exclude_none=True),
            [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in listed.tools],
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        outcome = CallOutcome(tool, arguments)
        self.step.calls.append(outcome)
        try:
            result = await self._session.call_tool(tool, arguments)
        except Exception as error:  # noqa: BLE001 - the SDK's complaint is the finding
            outcome.error = describe(error)
            return outcome
        outcome.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return outcome


class _RecordingWriteStream:
    """Records each outgoing message exactly as the SDK's stdio writer
    serializes it (`model_dump_json(by_alias=True, exclude_unset=True)`),
    then hands it on unchanged."""

    def __init__(self, inner: Any, client: PythonSdkClient):
        self._inner = inner
        self._client = client

    async def send(self, item: Any) -> None:
        self._client.record("client", item.message.model_dump_json(by_alias=True, exclude_unset=True))
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _RecordingWriteStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._inner.__aexit__(*exc_info)


def _install_incoming_recorder(stdio_module: Any, client: PythonSdkClient) -> None:
    """Records every line the SDK reads from the server's stdout, before it
    parses it (mcp.client.stdio parses each line with `_parse_line`)."""
    original = getattr(stdio_module, "_original_parse_line", None) or stdio_module._parse_line
    stdio_module._original_parse_line = original

    def recording_parse_line(line: str) -> Any:
        client.record("server", line)
        return original(line)

    stdio_module._parse_line = recording_parse_line


class InspectorClient:
    """The MCP Inspector CLI: one process (and one server) per method call."""

    name = "inspector-cli"

    def __init__(self, target: Target):
        self.target = target
        self.log_name = f"{self.name}-{target.name}.log"
        self.command = target.server_command(self.log_name)
        self.step = Step()
        self._runs = 0

    @staticmethod
    def version() -> str:
        manifest = json.loads((INSPECTOR_PACKAGE / "package.json").read_text(encoding="utf-8"))
        return f"@modelcontextprotocol/inspector {manifest['version']} (npm), `--cli`"

    async def __aenter__(self) -> InspectorClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        return None

    def begin(self) -> Step:
        self.step = Step()
        return self.step

    def _run(self, method_args: list[str]) -> tuple[Any, str | None]:
        """Runs one Inspector CLI call; returns (parsed stdout, error)."""
        self._runs += 1
        wire = RUN_DIR / "wire" / f"{self.name}-{self.target.name}-{self._runs:02}.jsonl"
        wire.unlink(missing_ok=True)
        # The server command goes first, the method options last: the CLI
        # keeps unknown options (the server's own flags) with the command.
        argv = [str(INSPECTOR), "--cli", sys.executable, str(WIRETAP), str(wire), *self.command, *method_args]
        try:
            done = subprocess.run(
                argv, env=server_env(), capture_output=True, text=True, timeout=CALL_TIMEOUT_S, cwd=REPO
            )
            exit_code, stdout, stderr = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as timeout:
            exit_code, stdout = None, _text(timeout.stdout)
            stderr = _text(timeout.stderr) + f"\n(no answer within {CALL_TIMEOUT_S} s; the CLI was killed)"
        try:
            output: Any = json.loads(stdout)
        except ValueError:
            output = stdout
        if wire.exists():
            for line in wire.read_text(encoding="utf-8").splitlines():
                self.step.exchange.append(json.loads(line))
        self.step.client_runs.append(
            {"argv": ["mcp-inspector", *argv[1:]], "exit_code": exit_code, "stdout": output, "stderr": stderr}
        )
        if exit_code != 0:
            return output, (stderr.strip() or f"the CLI exited with code {exit_code}")
        if not isinstance(output, dict):
            return output, "the CLI did not print a JSON object"
        return output, None

    async def handshake(self) -> Handshake:
        # The CLI prints the tools/list result; serverInfo comes from the
        # initialize response on the wire.
        output, error = self._run(["--method", "tools/list"])
        initialize = _initialize_response(self.step.exchange)
        if error:
            return Handshake(initialize, None, error=error)
        return Handshake(initialize, output.get("tools"))

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        outcome = CallOutcome(tool, arguments)
        self.step.calls.append(outcome)
        method_args = ["--method", "tools/call", "--tool-name", tool]
        for key, value in arguments.items():
            # The CLI takes key=value strings and converts them using the
            # tool's input schema.
            text = json.dumps(value) if isinstance(value, bool) else str(value)
            method_args += ["--tool-arg", f"{key}={text}"]
        output, error = self._run(method_args)
        if error:
            outcome.error = error
        else:
            outcome.result = output
        return outcome


def _initialize_response(exchange: list[dict[str, Any]]) -> dict[str, Any] | None:
    request_ids = [
        entry["message"].get("id")
        for entry in exchange
        if entry.get("from") == "client"
        and isinstance(entry.get("message"), dict)
        and entry["message"].get("method") == "initialize"
    ]
    for entry in exchange:
        message = entry.get("message")
        if entry.get("from") == "server" and isinstance(message, dict) and message.get("id") in request_ids:
            return message.get("result")
    return None


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value or ""


def describe(error: BaseException) -> str:
    """One readable line for an exception, including nested group members."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    text = str(error).strip() or repr(error)
    return f"{type(error).__name__}: {text}"


Client = PythonSdkClient | InspectorClient
CLIENTS: list[type[PythonSdkClient] | type[InspectorClient]] = [PythonSdkClient, InspectorClient]


# ---------------------------------------------------------------- expectations


def payload(outcome: CallOutcome) -> dict[str, Any] | None:
    """structuredContent, or the JSON text copy for a client that dropped it."""
    result = outcome.result or {}
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    for item in result.get("content") or []:
        if item.get("type") == "text":
            with contextlib.suppress(ValueError):
                data = json.loads(item.get("text", ""))
                if isinstance(data, dict):
                    return data
    return None


def message_of(outcome: CallOutcome) -> str:
    result = outcome.result or {}
    return " ".join(item.get("text", "") for item in result.get("content") or [] if item.get("type") == "text")


def success(outcome: CallOutcome, problems: list[str]) -> dict[str, Any] | None:
    """The successful result's data, or None after saying why there is none."""
    label = outcome.tool
    if outcome.error:
        problems.append(f"{label}: the client reported an error: {outcome.error}")
        return None
    if (outcome.result or {}).get("isError"):
        problems.append(f"{label}: the server answered with a tool error: {message_of(outcome)}")
        return None
    data = payload(outcome)
    if data is None:
        problems.append(f"{label}: the result has no structuredContent")
        return None
    if data.get("status") != "success":
        problems.append(f"{label}: status is {data.get('status')!r}, expected 'success'")
    return data


def tool_error(outcome: CallOutcome, problems: list[str]) -> str | None:
    """The message of an expected tool error (isError: true), or None after saying why not."""
    if outcome.error:
        problems.append(f"{outcome.tool}: the client reported an error instead of a tool result: {outcome.error}")
        return None
    if not (outcome.result or {}).get("isError"):
        problems.append(f"{outcome.tool}: expected isError: true, got a successful result")
        return None
    return message_of(outcome)


def failure_summary(problems: list[str]) -> str:
    return problems[0] if problems else ""


@dataclass(frozen=True)
class Request:
    number: int
    title: str
    tools: str
    expectation: Callable[[Target], str]
    run: Callable[[Any, Target], Awaitable[tuple[str, list[str]]]]


# The protocol revision each client negotiated with each target, for the README.
NEGOTIATED: dict[tuple[str, str], str] = {}


async def handshake_request(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    shake = await client.handshake()
    client.step.handshake = shake
    if shake.initialize is not None:
        NEGOTIATED[(client.name, target.name)] = str(shake.initialize.get("protocolVersion"))
    if shake.initialize is None:
        problems.append(f"no initialize result: {shake.error or 'none seen'}")
    else:
        info = shake.initialize.get("serverInfo") or {}
        if info.get("name") != "mcp-project-helper":
            problems.append(f"serverInfo.name is {info.get('name')!r}, expected 'mcp-project-helper'")
        if info.get("version") != crate_version():
            problems.append(f"serverInfo.version is {info.get('version')!r}, expected {crate_version()!r} (Cargo.toml)")
        if "tools" not in (shake.initialize.get("capabilities") or {}):
            problems.append("capabilities has no 'tools'")
    if shake.tools is None:
        problems.append(f"no tools/list result: {shake.error or 'none seen'}")
        return failure_summary(problems), problems
    by_name = {tool.get("name"): tool for tool in shake.tools}
    if sorted(by_name) != sorted(TOOLS) or len(shake.tools) != len(TOOLS):
        problems.append(f"tools are {[tool.get('name') for tool in shake.tools]}, expected exactly {TOOLS}")
    for name, wanted in EXPECTED_ANNOTATIONS.items():
        tool = by_name.get(name)
        if tool is None:
            continue
        annotations = tool.get("annotations") or {}
        for hint, value in wanted.items():
            if annotations.get(hint) is not value:
                problems.append(f"{name}: annotations.{hint} is {annotations.get(hint)!r}, expected {value!r}")
        schema = tool.get("outputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"{name}: no outputSchema of type object")
    if problems:
        return failure_summary(problems), problems
    info = shake.initialize.get("serverInfo") or {}
    return (
        f"{info.get('name')} {info.get('version')}, protocol {shake.initialize.get('protocolVersion')}; "
        f"{len(shake.tools)} tools, annotations as specified, every tool has an outputSchema",
        problems,
    )


async def search_apply_discount(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("search_project_files", {"query": "apply_discount"}), problems)
    if data is None:
        return failure_summary(problems), problems
    matches = [m for m in data.get("matches") or [] if isinstance(m, dict)]
    if data.get("count") != 4 or len(matches) != 4:
        problems.append(f"count is {data.get('count')!r} with {len(matches)} matches, expected 4")
    definition = {
        "file": "demo_app/services.py",
        "line": 12,
        "text": "def apply_discount(order: Order, percent: float) -> float:",
    }
    if not any(all(match.get(key) == value for key, value in definition.items()) for match in matches):
        problems.append(f"no match {json.dumps(definition)}")
    in_tests = [match for match in matches if match.get("file") == "tests/test_services.py"]
    if len(in_tests) != 3:
        problems.append(f"{len(in_tests)} matches in tests/test_services.py, expected 3")
    if problems:
        return failure_summary(problems), problems
    return f"{len(matches)} matches: {locations(matches)}", problems


def locations(matches: list[dict[str, Any]]) -> str:
    """`a.py:1, 2; b.py:3`"""
    lines: dict[str, list[str]] = {}
    for match in matches:
        lines.setdefault(str(match.get("file")), []).append(str(match.get("line")))
    return "; ".join(f"{file}:{', '.join(numbers)}" for file, numbers in lines.items())


async def read_models(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("read_project_file", {"path": "demo_app/models.py"}), problems)
    if data is None:
        return failure_summary(problems), problems
    content = data.get("content")
    if not isinstance(content, str):
        problems.append("no content string")
        return failure_summary(problems), problems
    for needle in ("class Product", "class Order"):
        if needle not in content:
            problems.append(f"content lacks {needle!r}")
    if problems:
        return failure_summary(problems), problems
    return (
        f"{data.get('file')}: {data.get('total_lines')} lines, {data.get('size')} bytes; "
        "contains `class Product` and `class Order`",
        problems,
    )


async def docs_security(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("get_docs", {"query": "security"}), problems)
    if data is None:
        return failure_summary(problems), problems
    results = [r for r in data.get("results") or [] if isinstance(r, dict)]
    hit = next(
        (
            r
            for r in results
            if str(r.get("heading", "")).strip() == "Security" and str(r.get("file", "")).endswith("architecture.md")
        ),
        None,
    )
    if hit is None:
        found = [(r.get("file"), r.get("heading")) for r in results]
        problems.append(f"no result with heading 'Security' from architecture.md; got {found}")
        return failure_summary(problems), problems
    return f"{len(results)} result(s); {hit.get('file')} § {hit.get('heading')} (rank {results.index(hit) + 1})", problems


async def run_tests_check(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    outcome = await client.call("run_project_check", {"check_name": "tests"})
    if target.name == "image":
        # The scratch image has no Python: the check must fail clearly.
        message = tool_error(outcome, problems)
        if message is None:
            return failure_summary(problems), problems
        if "python" not in message.lower():
            problems.append(f"the error does not name the missing program (python): {message!r}")
            return failure_summary(problems), problems
        return f"isError: {message}", problems
    data = success(outcome, problems)
    if data is None:
        return failure_summary(problems), problems
    if data.get("exit_code") != 0:
        problems.append(f"exit_code is {data.get('exit_code')!r}, expected 0")
    if data.get("passed") is not True:
        problems.append(f"passed is {data.get('passed')!r}, expected true")
    stdout = data.get("stdout") or ""
    if "2 passed" not in stdout:
        problems.append(f"stdout lacks '2 passed': {stdout[-200:]!r}")
    if problems:
        return failure_summary(problems), problems
    last_line = next((line for line in reversed(stdout.splitlines()) if line.strip()), "")
    return f"exit_code 0, passed true; pytest: {last_line.strip()}", problems


async def search_then_read(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("search_project_files", {"query": "def apply_discount"}), problems)
    if data is None:
        return failure_summary(problems), problems
    matches = [m for m in data.get("matches") or [] if isinstance(m, dict)]
    if not matches:
        problems.append("search found no match for 'def apply_discount'")
        return failure_summary(problems), problems
    file, line = matches[0].get("file"), matches[0].get("line")
    if not isinstance(file, str) or not isinstance(line, int) or line < 1:
        problems.append(f"first match has no usable file and line: {matches[0]}")
        return failure_summary(problems), problems
    start, end = max(1, line - 1), line + 6
    read = success(
        await client.call("read_project_file", {"path": file, "start_line": start, "end_line": end}), problems
    )
    if read is None:
        return failure_summary(problems), problems
    content = read.get("content") or ""
    if read.get("start_line") != start:
        problems.append(f"read start_line is {read.get('start_line')!r}, expected {start}")
    for needle in ("def apply_discount", "percent"):
        if needle not in content:
            problems.append(f"lines {start}-{end} of {file} lack {needle!r}")
    if problems:
        return failure_summary(problems), problems
    return (
        f"search → {file}:{line}; read lines {read.get('start_line')}-{read.get('end_line')}: "
        "contains `def apply_discount` and `percent`",
        problems,
    )


MODELS_OUTLINE = [
    {"kind": "class", "name": "Product", "line": 7, "end_line": 10, "signature": "class Product:",
     "parent": None, "children": []},
    {
        "kind": "class",
        "name": "Order",
        "line": 14,
        "end_line": 20,
        "signature": "class Order:",
        "parent": None,
        "children": [
            {"kind": "method", "name": "total", "line": 18, "end_line": 20,
             "signature": "def total(self) -> float:", "parent": "Order", "children": []}
        ],
    },
]


async def outline_models(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("outline_project_file", {"path": "demo_app/models.py"}), problems)
    if data is None:
        return failure_summary(problems), problems
    for key, value in {"file": "demo_app/models.py", "language": "python", "count": 3, "truncated": False}.items():
        if data.get(key) != value:
            problems.append(f"{key} is {data.get(key)!r}, expected {value!r}")
    if data.get("symbols") != MODELS_OUTLINE:
        problems.append(f"symbols are {json.dumps(data.get('symbols'))}, expected {json.dumps(MODELS_OUTLINE)}")
    if problems:
        return failure_summary(problems), problems
    return "3 symbols: class Product 7-10; class Order 14-20 with method total 18-20 (parent Order)", problems


async def define_apply_discount(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("find_symbol_definitions", {"name": "apply_discount"}), problems)
    if data is None:
        return failure_summary(problems), problems
    expected = [{
        "file": "demo_app/services.py",
        "line": 12,
        "end_line": 18,
        "kind": "function",
        "name": "apply_discount",
        "parent": None,
        "signature": "def apply_discount(order: Order, percent: float) -> float:",
    }]
    definitions = data.get("definitions")
    if definitions != expected or data.get("count") != 1 or data.get("truncated") is not False:
        problems.append(f"definitions are {json.dumps(definitions)} (count {data.get('count')!r}), expected {json.dumps(expected)}")
    if problems:
        return failure_summary(problems), problems
    return "1 definition: demo_app/services.py:12-18 function apply_discount (the 3 uses in tests are not definitions)", problems


APPLY_DISCOUNT_USES = [
    {"file": "tests/test_services.py", "line": 1, "in": None,
     "text": "from demo_app.services import OrderBuilder, apply_discount"},
    {"file": "tests/test_services.py", "line": 6, "in": "test_discount_reduces_total",
     "text": "    assert apply_discount(order, 10) == 36.0"},
    {"file": "tests/test_services.py", "line": 11, "in": "test_discount_is_clamped",
     "text": "    assert apply_discount(order, 90) == 5.0"},
]

PRODUCT_USES = [
    {"file": "demo_app/models.py", "line": 16, "in": "Order",
     "text": "    items: list[Product] = field(default_factory=list)"},
    {"file": "demo_app/services.py", "line": 6, "in": None,
     "text": "from demo_app.models import Order, Product"},
    {"file": "demo_app/services.py", "line": 28, "in": "OrderBuilder.add",
     "text": "        self._order.items.append(Product(sku=sku, name=name, price=price))"},
]


ORDER_TOTAL_USES = [
    {"file": "demo_app/services.py", "line": 18, "in": "apply_discount",
     "text": "    return round(order.total() * (1 - percent / 100), 2)"},
]


async def references_request(
    client: Client, name: str, expected: list[dict[str, Any]]
) -> tuple[str, list[str]]:
    problems: list[str] = []
    data = success(await client.call("find_symbol_references", {"name": name}), problems)
    if data is None:
        return failure_summary(problems), problems
    for key, value in {
        "name": name, "count": len(expected), "truncated": False, "files_without_grammar": 0
    }.items():
        if data.get(key) != value:
            problems.append(f"{key} is {data.get(key)!r}, expected {value!r}")
    if data.get("references") != expected:
        problems.append(f"references are {json.dumps(data.get('references'))}, expected {json.dumps(expected)}")
    if problems:
        return failure_summary(problems), problems
    uses = "; ".join(f"{use['file']}:{use['line']} in {use['in'] or 'the top level'}" for use in expected)
    return f"{len(expected)} uses: {uses}", problems


async def references_apply_discount(client: Client, target: Target) -> tuple[str, list[str]]:
    return await references_request(client, "apply_discount", APPLY_DISCOUNT_USES)


async def references_product(client: Client, target: Target) -> tuple[str, list[str]]:
    return await references_request(client, "Product", PRODUCT_USES)


async def references_order_total(client: Client, target: Target) -> tuple[str, list[str]]:
    return await references_request(client, "Order.total", ORDER_TOTAL_USES)


def passwd_lines() -> list[str]:
    """The host's /etc/passwd lines (and the one every system has), to prove none leaked."""
    lines = {"root:x:0:0"}
    with contextlib.suppress(OSError):
        lines |= {line for line in Path("/etc/passwd").read_text(encoding="utf-8").splitlines() if ":" in line}
    return sorted(lines)


async def read_outside_root(client: Client, target: Target) -> tuple[str, list[str]]:
    problems: list[str] = []
    outcome = await client.call("read_project_file", {"path": "../../../../etc/passwd"})
    message = tool_error(outcome, problems)
    if message is not None and "leaves the project root" not in message:
        problems.append(f"the message does not say the path leaves the project root: {message!r}")
    everything = json.dumps([client.step.exchange, client.step.client_runs, outcome.result])
    leaked = [line for line in passwd_lines() if line in everything]
    if leaked:
        problems.append(f"the exchange contains {len(leaked)} line(s) of /etc/passwd, e.g. {leaked[0]!r}")
    if problems:
        return failure_summary(problems), problems
    return f"isError: {message}", problems


REQUESTS = [
    Request(
        0,
        "handshake",
        "initialize, tools/list",
        lambda t: "serverInfo.name `mcp-project-helper` and the crate version; exactly the nine tools; "
        "the eight read tools `readOnlyHint: true, openWorldHint: false`, run_project_check "
        "`readOnlyHint: false, destructiveHint: false, openWorldHint: false`; every tool has an outputSchema",
        handshake_request,
    ),
    Request(
        1,
        "search `apply_discount`",
        "search_project_files",
        lambda t: "4 matches: demo_app/services.py line 12 "
        "`def apply_discount(order: Order, percent: float) -> float:` and 3 in tests/test_services.py",
        search_apply_discount,
    ),
    Request(
        2,
        "read demo_app/models.py",
        "read_project_file",
        lambda t: "content contains `class Product` and `class Order`",
        read_models,
    ),
    Request(
        3,
        "docs about `security`",
        "get_docs",
        lambda t: "a result with heading `Security` from architecture.md",
        docs_security,
    ),
    Request(
        4,
        "run the `tests` check",
        "run_project_check",
        lambda t: "exit_code 0, passed true, stdout contains `2 passed`"
        if t.name == "binary"
        else "isError: true, and the message names the missing program (python): the scratch image has no Python",
        run_tests_check,
    ),
    Request(
        5,
        "search, then read around the hit",
        "search_project_files, read_project_file",
        lambda t: "search `def apply_discount`, take file and line of the first match, read lines line-1..line+6: "
        "content contains `def apply_discount` and `percent`",
        search_then_read,
    ),
    Request(
        6,
        "read `../../../../etc/passwd`",
        "read_project_file",
        lambda t: "isError: true, the message says the path leaves the project root, "
        "and no line of /etc/passwd (such as root's) anywhere in the exchange",
        read_outside_root,
    ),
    Request(
        7,
        "outline demo_app/models.py",
        "outline_project_file",
        lambda t: "language `python`, count 3, truncated false, and exactly the symbols of the SPEC example: "
        "class Product 7-10; class Order 14-20 with the method total 18-20, with their signatures; "
        "`parent` null for the classes and `Order` for total",
        outline_models,
    ),
    Request(
        8,
        "where is `apply_discount` defined",
        "find_symbol_definitions",
        lambda t: "exactly one definition: demo_app/services.py lines 12-18, kind function, parent null, "
        "signature `def apply_discount(order: Order, percent: float) -> float:`",
        define_apply_discount,
    ),
    Request(
        9,
        "who uses `apply_discount`",
        "find_symbol_references",
        lambda t: "exactly 3 uses, all in tests/test_services.py: the import on line 1 (`in` null), line 6 in "
        "test_discount_reduces_total, line 11 in test_discount_is_clamped; the definition in "
        "demo_app/services.py is not a use; files_without_grammar 0",
        references_apply_discount,
    ),
    Request(
        10,
        "who uses `Product`",
        "find_symbol_references",
        lambda t: "exactly 3 uses, sorted by path then line: demo_app/models.py:16 in Order (a field's type), "
        "demo_app/services.py:6 the import (`in` null), demo_app/services.py:28 in OrderBuilder.add "
        "(a method names its class)",
        references_product,
    ),
    Request(
        11,
        "who calls the method `Order.total`",
        "find_symbol_references",
        lambda t: "exactly 1 use: demo_app/services.py:18 in apply_discount, `order.total()` on the "
        "parameter annotated `order: Order`; the definition in demo_app/models.py is not a use",
        references_order_total,
    ),
]


# ---------------------------------------------------------------- running


@dataclass
class Row:
    request: Request
    client: str
    target: Target
    summary: str
    problems: list[str]
    transcript: str

    @property
    def passed(self) -> bool:
        return not self.problems


def row_order(row: Row) -> tuple[int, int, int]:
    """By request, then client, then target, in the order they run."""
    clients = [client.name for client in CLIENTS]
    targets = [target.name for target in TARGETS]
    return row.request.number, clients.index(row.client), targets.index(row.target.name)


async def run_client(client_type: Any, target: Target, out: Path) -> list[Row]:
    rows: list[Row] = []
    client = client_type(target)

    def add(request: Request, summary: str, problems: list[str], step: Step) -> None:
        name = f"{client.name}-{target.name}-{request.number}.json"
        write_transcript(out / "transcripts" / name, request, client, target, step, summary, problems)
        rows.append(Row(request, client.name, target, summary, problems, name))

    try:
        async with client:
            for request in REQUESTS:
                step = client.begin()
                try:
                    with anyio.fail_after(CALL_TIMEOUT_S * 2):
                        summary, problems = await request.run(client, target)
                except Exception as error:  # noqa: BLE001 - a crash in one row must not hide the others
                    problems = [f"the driver failed: {describe(error)}"]
                    summary = problems[0]
                    traceback.print_exc()
                add(request, summary, problems, step)
    except Exception as error:  # noqa: BLE001 - e.g. the server or podman could not start
        reason = f"the client could not run against the {target.name}: {describe(error)}"
        traceback.print_exc()
        for request in REQUESTS[len(rows) :]:
            add(request, reason, [reason], client.step)
    return rows


def write_transcript(
    path: Path, request: Request, client: Client, target: Target, step: Step, summary: str, problems: list[str]
) -> None:
    transcript: dict[str, Any] = {
        "request": request.number,
        "title": request.title,
        "client": client.name,
        "client_version": client.version(),
        "target": target.name,
        "server_command": client.command,
        "expectation": request.expectation(target),
        "verdict": "pass" if not problems else "fail",
        "result": summary,
        "problems": problems,
        "calls": [
            {"tool": call.tool, "arguments": call.arguments, "client_error": call.error} for call in step.calls
        ],
        "exchange": step.exchange,
    }
    if step.client_runs:
        transcript["inspector_runs"] = step.client_runs
    path.write_text(sanitize(json.dumps(transcript, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8")


def sanitize(text: str) -> str:
    """Machine-specific paths out, so that a rerun elsewhere diffs cleanly."""
    return text.replace(str(REPO), "<repo>")


def collect_logs(out: Path) -> None:
    parts = []
    for client_type in CLIENTS:
        for target in TARGETS:
            name = f"{client_type.name}-{target.name}.log"
            log = RUN_DIR / "logs" / name
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no log written)\n"
            parts.append(f"# ===== {client_type.name} -> {target.name} =====\n{text}")
    (out / "tool-calls.log").write_text(sanitize("".join(parts)), encoding="utf-8")


# ---------------------------------------------------------------- README


def command_output(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# What the binary and the image are built from, to name uncommitted changes.
SOURCE_PATHS = ["src", "Cargo.toml", "Cargo.lock", "Dockerfile"]


def setup_facts() -> list[tuple[str, str]]:
    binary = BINARY.read_bytes() if BINARY.exists() else b""
    protocols = sorted({f"{client}: {version}" for (client, _target), version in NEGOTIATED.items()})
    image_id = command_output([str(PODMAN), "image", "inspect", "--format", "{{.Id}}", IMAGE])
    commit = command_output(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    changed = command_output(["git", "-C", str(REPO), "status", "--porcelain", "--", *SOURCE_PATHS])
    if changed != "unknown":
        commit += "` plus uncommitted changes in `" + " ".join(sorted({line[3:] for line in changed.splitlines()}))
    return [
        ("server", f"mcp-project-helper {crate_version()} (Cargo.toml), source at git commit `{commit}`"),
        ("binary", f"`target/static/x86_64-unknown-linux-gnu/dist/mcp-project-helper`, "
                   f"{len(binary):,} bytes, sha256 `{hashlib.sha256(binary).hexdigest()}`"),
        ("image", f"`{IMAGE}`, id `{image_id[:19]}`"),
        ("python-sdk", PythonSdkClient.version()),
        ("inspector-cli", f"{InspectorClient.version()}, Node {command_output(['node', '--version'])}"),
        ("protocol negotiated", "; ".join(protocols) or "unknown"),
        ("machine", f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"),
    ]  # fmt: skip


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def write_readme(out: Path, rows: list[Row], started: datetime.datetime) -> None:
    passed = sum(row.passed for row in rows)
    table = [
        "| # | request | client | target | tool(s) called | result | pass/fail |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=row_order):
        table.append(
            f"| {row.request.number} | {cell(row.request.title)} | {row.client} | {row.target.name} | "
            f"{cell(row.request.tools)} | {cell(row.summary)} | "
            f"[{'PASS' if row.passed else '**FAIL**'}](transcripts/{row.transcript}) |"
        )
    expectations = []
    for request in REQUESTS:
        texts = {target.name: request.expectation(target) for target in TARGETS}
        if len(set(texts.values())) == 1:
            expectations.append(f"{request.number}. **{request.title}** — {texts['binary']}.")
        else:
            detail = "; ".join(f"{name}: {text}" for name, text in texts.items())
            expectations.append(f"{request.number}. **{request.title}** — {detail}.")
    facts = "\n".join(f"| {name} | {cell(value)} |" for name, value in setup_facts())
    failures = [
        f"- request {row.request.number} ({row.request.title}), {row.client} against the {row.target.name}: "
        + "; ".join(row.problems)
        for row in rows
        if not row.passed
    ]
    text = README.format(
        date=started.strftime("%Y-%m-%d %H:%M UTC"),
        passed=passed,
        total=len(rows),
        verdict="All rows pass." if passed == len(rows) else f"**{len(rows) - passed} rows fail** (listed below the table).",
        targets="\n".join(f"  - **{target.name}**: {target.description}" for target in TARGETS),
        facts=facts,
        table="\n".join(table),
        failures=("\n### Failures\n\n" + "\n".join(cell(f) for f in failures) + "\n") if failures else "",
        expectations="\n".join(expectations),
    )
    (out / "README.md").write_text(sanitize(text), encoding="utf-8")


README = """\
# Evidence: independent MCP clients against mcp-project-helper

<!-- Generated by evidence/run.sh; do not edit by hand, rerun the command. -->

Generated {date} by `evidence/run.sh`. {passed} of {total} rows pass. {verdict}

## Regenerate

```sh
evidence/run.sh            # rebuilds the binary and the image, reruns everything, rewrites evidence/
evidence/run.sh --check    # the same run, written to target/evidence-check/; exit code 1 if any row fails
```

`cargo test --test evidence` runs the check mode, so CI fails when any request
stops working with either client against either target.

Needs: `python3` 3.10 or newer with `venv`, `node` 18 or newer (this run:
see below; later Inspector releases than the pinned one need Node 22) with
`npm`, `cargo`, and podman (or docker with a running engine). The first run creates
`evidence/.venv` (pinned `mcp` and `pytest` from `evidence/requirements.txt`)
and `evidence/node_modules` (the Inspector pinned by
`evidence/package-lock.json`, about 150 MB); both are git-ignored and reused.
The container image is built by `tests/support/build-image.sh` and run through
`tests/support/podman.sh`.

## What this evidence is

- Two MCP clients that this project did not write drive the server exactly
  as an editor does: they start it as a subprocess and speak newline-delimited
  JSON-RPC over its stdin and stdout. The clients are the official Python SDK
  and the MCP Inspector CLI (which is built on the official TypeScript SDK).
- The requests are scripted: the same fixed calls every run, each checked
  against the written expectations below. Both clients also validate every
  `structuredContent` against the tool's `outputSchema` and reject a result
  that does not conform.
- Two targets, both built from the same source (commit below) and serving
  `demo_project`:
{targets}
- `transcripts/` holds, per row, the JSON-RPC messages as they were
  exchanged. The Python SDK's are recorded inside the client at its stdio
  transport, the lines it writes and reads; the Inspector's by
  `evidence/wiretap.py`, a relay between the Inspector and the server that
  copies every line unchanged (it also records the server's exit code after
  the Inspector closes its stdin). Each transcript also names the command that
  started the server and the expectation and verdict.
- `tool-calls.log` is the server's own log of the same run (`--log-file`),
  one line per tool call with parameters, counts, status and duration.

## What it is not

- Not a model choosing tools. No language model is involved, so this says
  nothing about whether a model picks the right tool or reads the tool
  descriptions well.
- Not an editor integration test: Claude Code, Cursor, VS Code and Claude
  Desktop, their configuration files, approval prompts and result budgets are
  not exercised.
- Not a security review. One path-traversal attempt is shown; the path gate's
  full rules are covered by the unit and property tests of the test suite.
- Not a measurement: durations in the transcripts are incidental (see
  [docs/performance.md](../docs/performance.md)).
- Not platform coverage: Linux x86_64 only, one small demo project, and only
  the protocol revision each client negotiates.
- The image row of request 4 shows a refusal by design: the scratch image has
  no Python, so the detected `tests` check (`python -m pytest -q`) cannot run
  there. It shows that this is a clear tool error, not that checks run in the
  image.
- For the binary, the driver puts its own venv (with the pinned pytest) first
  on the server's `PATH`, so `python3` there can run pytest; nothing is
  installed into `demo_project`. `PYTHONDONTWRITEBYTECODE=1` and
  `PYTEST_ADDOPTS=-p no:cacheprovider` keep Python from writing into it.

## Setup of this run

| | |
|---|---|
{facts}

## Results

{table}
{failures}
## The requests and their expectations

{expectations}

## Files

- `run.sh` — the one command: prepares the pinned clients, builds the binary
  and the image, runs `driver.py`.
- `driver.py` — the requests, the expectations, the Python SDK client, the
  Inspector CLI runs, and this README.
- `wiretap.py` — the recording relay used with the Inspector CLI.
- `requirements.txt`, `package.json`, `package-lock.json` — the pinned clients.
- `transcripts/<client>-<target>-<n>.json` — one per row; `n` is the request
  number, 0 the handshake.
- `tool-calls.log` — the server's log, one section per client and target.
"""


# ---------------------------------------------------------------- main


def prepare_run_dir() -> None:
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    (RUN_DIR / "wire").mkdir(parents=True)
    logs = RUN_DIR / "logs"
    logs.mkdir()
    # The container runs as user 65532 and appends its log here.
    logs.chmod(0o777)


def prepare_out(out: Path) -> None:
    transcripts = out / "transcripts"
    shutil.rmtree(transcripts, ignore_errors=True)
    transcripts.mkdir(parents=True)


def missing_prerequisites() -> list[str]:
    missing = []
    if not BINARY.exists():
        missing.append(f"the static binary {BINARY} (run tests/support/build-image.sh)")
    if not INSPECTOR.exists():
        missing.append(f"the Inspector CLI {INSPECTOR} (run `npm ci` in evidence/)")
    if not PODMAN.exists():
        missing.append(f"{PODMAN}")
    return missing


def print_rows(rows: list[Row]) -> None:
    for row in sorted(rows, key=row_order):
        verdict = "PASS" if row.passed else "FAIL"
        print(f"{verdict}  {row.request.number} {row.request.title:<36} {row.client:<14} {row.target.name:<7} {row.summary}")


async def main_async(check: bool) -> int:
    started = datetime.datetime.now(datetime.timezone.utc)
    out = CHECK_OUT if check else EVIDENCE
    missing = missing_prerequisites()
    if missing:
        print("evidence: missing " + "; ".join(missing), file=sys.stderr)
        return 2
    prepare_run_dir()
    prepare_out(out)
    rows: list[Row] = []
    for client_type in CLIENTS:
        for target in TARGETS:
            print(f"evidence: {client_type.name} -> {target.name}", file=sys.stderr, flush=True)
            rows += await run_client(client_type, target, out)
    collect_logs(out)
    write_readme(out, rows, started)
    print_rows(rows)
    failed = [row for row in rows if not row.passed]
    for row in failed:
        print(
            f"\nFAILED: request {row.request.number} ({row.request.title}) with {row.client} "
            f"against the {row.target.name}\n  expected: {row.request.expectation(row.target)}\n  "
            + "\n  ".join(row.problems)
            + f"\n  transcript: {(out / 'transcripts' / row.transcript).relative_to(REPO)}"
        )
    print(f"\n{len(rows) - len(failed)} of {len(rows)} rows pass; written to {out.relative_to(REPO)}/")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--check",
        action="store_true",
        help="write to target/evidence-check/ instead of evidence/; exit 1 when any expectation fails",
    )
    args = parser.parse_args()
    return anyio.run(main_async, args.check)


if __name__ == "__main__":
    sys.exit(main())
