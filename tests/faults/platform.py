"""The platform in services mode, as separate processes, on PostgreSQL and Redis servers of its own.

The fault tests restart the database and the broker, and kill workers and the web process, so
everything they touch is theirs: a PostgreSQL cluster made with initdb (one per test session, one
database per test, copied from a migrated template) and a Redis server per test, both on ports of
their own. The suite's shared servers are never touched.

The processes are those the README's services section starts, read from it: daphne, an inference
worker (rundramatiq), a CPU verification worker and the reconciler, each restarted when it exits,
as compose's `restart: unless-stopped` does. The model is a vLLM-compatible server replaying a stream slowly
enough for a fault to land mid-stream (tests/inference/model_server.py).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from tests.conftest import REPO
from tests.e2e.conftest import _free_port
from tests.inference.model_server import ANSWER_NUMBER, SERVED_MODEL, ReplayServer, Scenario

# Every process beats each second and counts as dead after six silent ones (jobrows.liveness).
# The broker's own clean-up (handing a dead worker's messages on) comes after ten minutes, later
# than any test waits: a dead worker's jobs are released by its silence, not by the broker.
LIVENESS_ENV = {
    "COURT_HEARTBEAT_S": "1",
    "COURT_BROKER_HEARTBEAT_TIMEOUT_MS": "600000",
}
RECONCILE_EVERY_S = 1


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(candidates[-1]) if candidates else None


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120, **kwargs)


class PostgresServer:
    """A PostgreSQL cluster of its own. PostgreSQL refuses to run as root: as root, it runs as the
    `postgres` account Debian's package creates."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="court-faults-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.log = self.root / "server.log"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")

    @staticmethod
    def available() -> bool:
        return _binary("initdb") is not None and _binary("pg_ctl") is not None

    def _as_owner(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv

    def init(self) -> None:
        _run(
            self._as_owner([_binary("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
        )
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        _run(
            self._as_owner(
                [_binary("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"]
            )
        )

    def stop(self, mode: str = "immediate") -> None:
        """`immediate` is a crash: every session is cut, nothing is flushed."""
        _run(self._as_owner([_binary("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"]))

    def restart(self, *, down_s: float) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str) -> None:
        with psycopg.connect(self.url("postgres"), autocommit=True) as connection:
            connection.execute(sql)

    def remove(self) -> None:
        try:
            self.stop("fast")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """A Redis server of its own, keeping nothing on disk: a restart loses every queued job, the
    worst a broker restart can do."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.directory), "--logfile", str(self.directory / "redis.log")]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self._answers, timeout=20, what="redis-server to start")

    def _answers(self) -> bool:
        import redis

        try:
            return redis.Redis(port=self.port, socket_connect_timeout=0.5).ping()
        except redis.exceptions.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def restart(self, *, down_s: float) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()


class Service:
    """One of the platform's processes, started again whenever it exits until `stop` (compose's
    `restart: unless-stopped`). `starts` counts its processes, the first included."""

    def __init__(self, name: str, argv: list[str], env: dict, log: Path):
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self._stopped = threading.Event()
        self._supervisor: threading.Thread | None = None

    def start(self) -> "Service":
        self._stopped.clear()
        self._spawn()
        self._supervisor = threading.Thread(target=self._supervise, name=f"supervise {self.name}", daemon=True)
        self._supervisor.start()
        return self

    start_again = start

    def _spawn(self) -> None:
        with open(self.log, "a") as log:
            log.write(f"\n==== start {self.starts + 1} of {self.name} ====\n")
            log.flush()
            self.process = subprocess.Popen(
                self.argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.starts += 1

    def _supervise(self) -> None:
        while not self._stopped.is_set():
            if self.process.poll() is not None and not self._stopped.wait(1):
                self._spawn()
            self._stopped.wait(0.2)

    def kill(self) -> None:
        """SIGKILL to the process and its children: none has a chance to clean up."""
        os.killpg(self.process.pid, signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP: the process holds its connections and does nothing, heartbeats included."""
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.process.pid, signal.SIGCONT)

    @staticmethod
    def kill_pid(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def children(self) -> list[int]:
        found = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout.split()
        return [int(pid) for pid in found]

    def stop(self) -> None:
        self._stopped.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=5)
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def wait_until(condition: Callable, *, timeout: float, what: str, logs: tuple[Path, ...] = ()):
    """Poll until `condition` returns something true; a database or broker that is away counts as
    not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (psycopg.OperationalError, httpx.TransportError):
            value = None
        if value:
            return value
        time.sleep(0.25)
    details = "\n".join(f"---- {path.name}\n{path.read_text()[-4000:]}" for path in logs if path.exists())
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{details}")


def model_stream(path: Path, *, reasoning_words: int, code: str) -> Path:
    """A vLLM chat stream: reasoning deltas, then an answer holding `code`."""

    def chunk(delta: dict, finish=None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return "data: " + json.dumps(
            {"id": "chatcmpl-faults", "object": "chat.completion.chunk", "model": SERVED_MODEL, "choices": [choice]}
        )

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": f" step {n}"}) for n in range(reasoning_words)]
    events += [chunk({"content": line}) for line in f"Here it is.\n```python\n{code}```\n".splitlines(keepends=True)]
    events += [chunk({"content": ""}, finish="stop"), "data: [DONE]"]
    path.write_text("\n\n".join(events) + "\n\n")
    return path


@dataclass
class Platform:
    """What a fault test drives: the API as a signed-in user, the database, the processes."""

    postgres: PostgresServer
    redis: RedisServer
    database: str
    web_port: int
    token: str
    problem_id: int
    services: dict[str, Service] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def logs(self) -> tuple[Path, ...]:
        return tuple(service.log for service in self.services.values())

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Token {self.token}"}
        return httpx.request(method, self.base + path, headers=headers, timeout=10, **kwargs)

    def rows(self, sql: str, *params) -> list[tuple]:
        with psycopg.connect(self.postgres.url(self.database), connect_timeout=2) as connection:
            return connection.execute(sql, params).fetchall()

    def wait_until(self, condition: Callable, *, timeout: float, what: str):
        return wait_until(condition, timeout=timeout, what=what, logs=self.logs)

    def start_run(self, *, rounds: int) -> int:
        response = self.api("POST", "/api/runs/", json={"problem": self.problem_id, "backend": "vllm", "max_rounds": rounds})
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def run_status(self, run_id: int) -> str:
        return self.rows("SELECT status FROM kernels_optimizationrun WHERE id = %s", run_id)[0][0]


# Makes the template database's user, token and problem; prints their keys.
SEED = """
import json
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from court.models import Problem
from court.source import normalized_source_hash
from tests.court.factories import PROBLEM_SOURCE
user = User.objects.create_user("fault-tester", password="not-used-here")
source = PROBLEM_SOURCE.format(scale=7)
problem = Problem.objects.create(source=source, normalized_hash=normalized_source_hash(source), title="Scales by 7.")
print(json.dumps({"token": Token.objects.create(user=user).key, "problem": problem.pk}))
"""


def prepare_template(postgres: PostgresServer, template: str, env: dict) -> dict:
    """Migrate and seed the database every test copies."""
    postgres.execute(f'CREATE DATABASE "{template}"')
    env = dict(env, DATABASE_URL=postgres.url(template))
    _run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env)
    seeded = _run([sys.executable, "manage.py", "shell", "-c", SEED], cwd=REPO, env=env)
    return json.loads(seeded.stdout.strip().splitlines()[-1])


def process_env(*, database_url: str, redis_url: str, model: ReplayServer, tmp: Path, static_root: Path) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("COURT_", "INFERENCE_"))}
    env.update(
        LIVENESS_ENV,
        COURT_HARNESS_PLAN=os.environ.get("COURT_HARNESS_PLAN", "{}"),  # the suite's (tests/suite_plan.py)
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        COURT_MODE="embedded",
        COURT_EMBEDDED_WORKER="false",
        COURT_VAR_DIR=str(tmp / "var"),
        COURT_STATIC_ROOT=str(static_root),
        INFERENCE_VLLM_URL=f"{model.url}/v1",
        INFERENCE_VLLM_MODEL=SERVED_MODEL,
        CUDA_VISIBLE_DEVICES="",
        PYTHONUNBUFFERED="1",
    )
    return env


# The README's services block (by its first line), and the name each of its processes has here.
README_SERVICES = "export DATABASE_URL="
SERVICE_OF = {"rundramatiq": "inference", "verification_worker": "verification", "reconcile": "reconciler"}


def readme_processes() -> dict[str, list[str]]:
    """The processes of the README's services block as written there, by service: each
    `.venv/bin/python manage.py ...` line, with this environment's Python for .venv's. Only the
    reconciler's interval changes (every RECONCILE_EVERY_S, as the heartbeats here are a tenth of
    production's); `make run` is the web process, the daphne command it ends with."""
    from tests.test_readme import block

    processes = {}
    for line in block(README_SERVICES).splitlines():
        words = line.split("#", 1)[0].split()
        if words[:2] == [".venv/bin/python", "manage.py"]:
            processes[SERVICE_OF.get(words[2], words[2])] = [sys.executable, *words[1:]]
    reconcile = processes.get("reconciler", [])
    if "--every" in reconcile:
        reconcile[reconcile.index("--every") + 1] = str(RECONCILE_EVERY_S)
    assert sorted(processes) == sorted(SERVICE_OF.values()), f"the README's services block runs {sorted(processes)}"
    return processes


def start_services(env: dict, tmp: Path, web_port: int) -> dict[str, Service]:
    web = [sys.executable, "-m", "daphne", "--bind", "127.0.0.1", "--port", str(web_port), "config.asgi:application"]
    commands = {"web": web, **readme_processes()}
    return {
        name: Service(name, argv, dict(env, COURT_ROLE="web" if name == "web" else "worker"), tmp / f"{name}.log").start()
        for name, argv in commands.items()
    }


def scenario(
    tmp: Path, *, code: str, reasoning_words: int = 40, event_delay_s: float = 0.15, numbered: bool = False
) -> ReplayServer:
    """The model's server; `numbered`: every answer's code differs (its docstring names the call)."""
    if numbered:
        code = code.replace("(nn.Module):\n", f'(nn.Module):\n    """Answer {ANSWER_NUMBER}."""\n', 1)
    stream = model_stream(tmp / "stream.sse", reasoning_words=reasoning_words, code=code)
    return ReplayServer(Scenario(body=str(stream), event_delay_s=event_delay_s, numbered=numbered))


class Viewer:
    """A run page left open: the run's socket, opened again whenever it closes (as run.js does),
    every message of every connection kept."""

    def __init__(self, base: str, run_id: int):
        self.url = base.replace("http://", "ws://") + f"/ws/runs/{run_id}/"
        self.origin = base
        self.connections: list[list[dict]] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"viewer of run {run_id}", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        while not self._stopped.is_set():
            try:
                with connect(self.url, origin=self.origin, open_timeout=5, proxy=None) as socket:
                    received: list[dict] = []
                    self.connections.append(received)
                    while not self._stopped.is_set():
                        try:
                            received.append(json.loads(socket.recv(timeout=0.5)))
                        except TimeoutError:
                            continue
            except (OSError, WebSocketException):
                self._stopped.wait(0.5)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)

    def received_live(self) -> list[dict]:
        return [message for received in self.connections for message in received if not message.get("replay")]


def numbered(messages: list[dict]) -> list[dict]:
    return [message for message in messages if message.get("seq") is not None and message["kind"] != "replayed"]


def assert_no_number_told_twice(viewer: Viewer, stored: dict[int, tuple[str, str]]) -> None:
    """Each connection got its transcript's numbers in increasing order, and whatever a viewer was
    sent live under a number is what is stored under it (a reload shows what was seen)."""
    assert viewer.connections, "the viewer never connected"
    for received in viewer.connections:
        seqs = [message["seq"] for message in numbered(received)]
        assert seqs == sorted(set(seqs)), f"a connection got numbers out of order or twice: {seqs}"
    for message in numbered(viewer.received_live()):
        if message["seq"] in stored:
            assert stored[message["seq"]] == (message["kind"], message["text"]), (
                f"#{message['seq']} was sent as {message['kind']} {message['text']!r} and stored as {stored[message['seq']]}"
            )
