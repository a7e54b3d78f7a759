"""Streaming latency: from a backend's delta to its arrival at a WebSocket client, many runs at once.

The production path on one machine: a daphne web process, an inference worker process, Redis for
the broker and the channel layer, PostgreSQL for the transcript. A local OpenAI-compatible server
plays the model: each run's answer is a stream of deltas stamped with the wall-clock time they are
sent. A client per run connects to the run's WebSocket before it starts and records, for every
stamp it receives, the time since it was sent. Everything runs on this machine, so one clock.
Each client also counts events it missed, got twice or out of order (it is connected from the
start, so it should get every event once, in order), and runs whose end never reached it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kernel_court_load REDIS_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python benchmarks/stream_latency.py --runs 50 --deltas 100 --rate 20 --out var/stream.json
"""

import argparse
import asyncio
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from services import REPO, require_services, start, stop, summary

sys.path.insert(0, str(REPO))

MODEL = "latency-probe"
# The ASGI server of the web process, with the options it would run with in production.
WEB_SERVERS = {
    "daphne": lambda port: [
        sys.executable,
        "-m",
        "daphne",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "config.asgi:application",
    ],
    "uvicorn": lambda port: [
        sys.executable,
        "-m",
        "uvicorn",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--ws",
        "websockets",
        "--no-access-log",
        "config.asgi:application",
    ],
}
WORKER_READY = "Worker process is ready for action."  # what each Dramatiq worker process logs once it consumes
STAMP = re.compile(r"<t=(\d+\.\d+)>")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ModelServer(ThreadingHTTPServer):
    """Answers /v1/chat/completions with `deltas` stamped chunks, `rate` per second."""

    daemon_threads = True

    def __init__(self, port: int, deltas: int, rate: float):
        self.deltas, self.interval = deltas, 1.0 / rate
        super().__init__(("127.0.0.1", port), self._handler())

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for _ in range(server.deltas):
                    chunk = {
                        "id": "c",
                        "object": "chat.completion.chunk",
                        "model": MODEL,
                        "choices": [{"index": 0, "delta": {"reasoning": f"<t={time.time():.6f}> "}}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(server.interval)
                end = {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "model": MODEL,
                    "choices": [{"index": 0, "delta": {"content": "No kernel this time."}, "finish_reason": "stop"}],
                }
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()

        return Handler


async def watch(
    url: str, origin: str, latencies: list[tuple[float, float]], ready: asyncio.Event, counts: dict, seqs: list[int]
) -> None:
    """Record (send time, latency) of every stamp and the sequence number of every event this run's socket gets."""
    import websockets

    async with websockets.connect(url, origin=origin, max_size=None) as socket_:
        async for raw in socket_:
            message = json.loads(raw)
            if message.get("kind") == "replayed":
                counts["connected"] += 1
                if counts["connected"] == counts["runs"]:
                    ready.set()
                continue
            now = time.time()
            if message.get("replay"):
                continue
            if message.get("seq") is not None:
                seqs.append(message["seq"])
            for stamp in STAMP.findall(message.get("text") or ""):
                latencies.append((float(stamp), now - float(stamp)))
            if message.get("kind") == "status" and (message.get("data") or {}).get("status") in ("done", "failed", "cancelled"):
                counts[message["data"]["status"]] = counts.get(message["data"]["status"], 0) + 1
                return


def gaps(seqs: list[int]) -> dict:
    """Events a client connected from the start should get exactly once, in order: 1, 2, 3, ..."""
    return {
        "missing": len(set(range(1, max(seqs, default=0) + 1)) - set(seqs)),
        "duplicated": len(seqs) - len(set(seqs)),
        "out_of_order": sum(b < a for a, b in zip(seqs, seqs[1:])),
    }


async def probe_loop_lag(lags: list[tuple[float, float]]) -> None:
    """How late this process's event loop wakes from a 10 ms sleep: a delta that arrives while the
    loop is busy waits as long before its receive time is taken (the clients' own share of the tail)."""
    while True:
        asked = time.monotonic()
        await asyncio.sleep(0.01)
        lags.append((time.time(), time.monotonic() - asked - 0.01))


def cpu_seconds(group: int) -> float:
    """User + system CPU of every live process in process group `group` (a platform process started
    in its own session, and its children: the Dramatiq workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == group:  # pgrp; fields[11:13] are utime and stime
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / ticks, sum(values) / ticks


def by_half_second(latencies: list[tuple[float, float]], began: float) -> list[dict]:
    """Latency of the deltas sent in each half-second since the runs were sent: where the tail is."""
    buckets: dict[int, list[float]] = {}
    for sent, latency in latencies:
        buckets.setdefault(int((sent - began) / 0.5), []).append(latency)
    return [
        {"from_s": index / 2, "deltas": len(values), **summary(values, scale=1000, digits=1)}
        for index, values in sorted(buckets.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=100, help="deltas per run")
    parser.add_argument("--rate", type=float, default=20, help="deltas per second per run")
    parser.add_argument(
        "--inference-processes",
        type=int,
        default=os.cpu_count(),
        help="inference worker processes; the runs' threads are spread over them",
    )
    parser.add_argument("--out", default="var/stream.json")
    parser.add_argument(
        "--server",
        choices=sorted(WEB_SERVERS),
        default="daphne",
        help="the web process's ASGI server (uvicorn needs `pip install uvicorn uvloop httptools`)",
    )
    parser.add_argument(
        "--ramp-s",
        type=float,
        default=0.0,
        help="send the runs spread over this many seconds (0: all at once, the thundering herd)",
    )
    args = parser.parse_args()

    _, redis_url = require_services()
    model_port, web_port = free_port(), free_port()
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        INFERENCE_VLLM_URL=f"http://127.0.0.1:{model_port}/v1",
        INFERENCE_VLLM_MODEL=MODEL,
        COURT_EMBEDDED_WORKER="false",
    )
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    from court.models import OptimizationRun, Problem
    from court.source import normalized_source_hash
    from inference.actors import run_optimization

    call_command("migrate", verbosity=0)
    OptimizationRun.objects.all().delete()
    redis.Redis.from_url(redis_url).flushdb()

    model = ModelServer(model_port, args.deltas, args.rate)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    threads = -(-args.runs // args.inference_processes)
    log_dir = REPO / "var" / "stream"
    log_dir.mkdir(parents=True, exist_ok=True)
    processes = [
        start(WEB_SERVERS[args.server](web_port), log_dir / "web.log"),
        # Dramatiq prefetches twice its threads: one process would take every run, and half of
        # them would wait for a thread while the other process idles.
        start(
            [
                sys.executable,
                "manage.py",
                "rundramatiq",
                "--queues",
                "inference",
                "--processes",
                str(args.inference_processes),
                "--threads",
                str(threads),
            ],
            log_dir / "inference.log",
            dramatiq_queue_prefetch=str(threads),
        ),
    ]
    try:
        source = (
            "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x + 1\n\n"
            "def get_inputs():\n    return [torch.randn(8)]\n\ndef get_init_inputs():\n    return []\n"
        )
        problem, _ = Problem.objects.get_or_create(
            normalized_hash=normalized_source_hash(source), defaults={"title": "Stream latency probe", "source": source}
        )
        runs = [OptimizationRun.objects.create(problem=problem, backend="vllm", max_rounds=1) for _ in range(args.runs)]
        deadline = time.monotonic() + 60
        while True:  # the web process is up when it accepts connections
            try:
                socket.create_connection(("127.0.0.1", web_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(f"{args.server} did not start; see {log_dir / 'web.log'}")
                time.sleep(0.3)
        # Runs sent while the worker processes still import the app started in two waves ~0.7 s
        # apart, the first streaming on one core while the other process booted on the other:
        # the first second's latency measured the boot, not the streaming (benchmarks/RESULTS.md).
        while (log_dir / "inference.log").read_text().count(WORKER_READY) < args.inference_processes:
            if time.monotonic() > deadline:
                sys.exit(f"the inference workers did not start; see {log_dir / 'inference.log'}")
            time.sleep(0.1)

        received: dict[int, list[tuple[float, float]]] = {run.pk: [] for run in runs}
        lags: list[tuple[float, float]] = []
        counts = {"runs": args.runs, "connected": 0}
        seqs: dict[int, list[int]] = {run.pk: [] for run in runs}

        def cpu_now() -> dict[str, float]:
            busy, every = machine_busy_seconds()
            return {
                "web": cpu_seconds(processes[0].pid),
                "inference": cpu_seconds(processes[1].pid),
                "benchmark": sum(os.times()[:2]),
                "machine_busy": busy,
                "machine_all": every,
            }

        cpu_before: dict[str, float] = {}
        cpu_after: dict[str, float] = {}

        async def measure():
            ready = asyncio.Event()
            origin = f"http://127.0.0.1:{web_port}"
            watchers = [
                asyncio.create_task(
                    watch(f"ws://127.0.0.1:{web_port}/ws/runs/{run.pk}/", origin, received[run.pk], ready, counts, seqs[run.pk])
                )
                for run in runs
            ]
            await asyncio.wait_for(ready.wait(), timeout=60)
            prober = asyncio.create_task(probe_loop_lag(lags))
            cpu_before.update(cpu_now())
            began = time.time()
            for run in runs:
                run_optimization.send(run.pk)
                if args.ramp_s:  # as users arrive: one run every ramp_s / runs seconds
                    await asyncio.sleep(args.ramp_s / len(runs))
            _, unfinished = await asyncio.wait(watchers, timeout=args.deltas / args.rate * 4 + 120)
            for watcher in unfinished:  # reported below as runs whose end never arrived
                watcher.cancel()
            prober.cancel()
            cpu_after.update(cpu_now())
            return began

        began = asyncio.run(measure())
        wall = time.time() - began
    finally:
        stop(processes)
        model.shutdown()

    latencies = [pair for pairs in received.values() for pair in pairs]
    # The window in which every run streams: after the last run's first delta, before the first run's last.
    opened = max((min(sent for sent, _ in pairs) for pairs in received.values() if pairs), default=0.0)
    closed = min((max(sent for sent, _ in pairs) for pairs in received.values() if pairs), default=0.0)
    all_streaming = [latency for sent, latency in latencies if opened <= sent <= closed]
    expected = args.runs * args.deltas
    finished = {k: v for k, v in counts.items() if k not in ("runs", "connected")}
    result = {
        "server": args.server,
        "runs": args.runs,
        "deltas_per_run": args.deltas,
        "rate_per_run": args.rate,
        "cores": os.cpu_count(),
        "inference_processes": args.inference_processes,
        "deltas_expected": expected,
        "deltas_received": len(latencies),
        "events": {
            name: sum(gaps(run_seqs)[name] for run_seqs in seqs.values()) for name in ("missing", "duplicated", "out_of_order")
        },
        "runs_finished": finished,
        "runs_without_end": args.runs - sum(finished.values()),
        "wall_s": round(wall, 1),
        "ramp_s": args.ramp_s,
        # CPU seconds each part spent from the runs' send to the last run's end, and per 1000 deltas:
        # steadier than a tail latency on a shared machine, and what the tail depends on.
        "cpu_s": {name: round(cpu_after[name] - cpu_before[name], 2) for name in cpu_before},
        "cpu_ms_per_delta": {
            name: round(1000 * (cpu_after[name] - cpu_before[name]) / max(len(latencies), 1), 3)
            for name in ("web", "inference", "benchmark", "machine_busy")
        },
        "latency_ms": summary([latency for _, latency in latencies], scale=1000, digits=1),
        "all_streaming_window_s": round(max(closed - opened, 0.0), 2),
        "latency_ms_all_streaming": summary(all_streaming, scale=1000, digits=1) if all_streaming else None,
        "latency_ms_by_half_second": by_half_second(latencies, began),
        "client_loop_lag_ms_by_half_second": by_half_second(lags, began),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
