"""What the service benchmarks share: a dedicated PostgreSQL database and platform processes."""

import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]


def require_services() -> tuple[str, str]:
    """DATABASE_URL (PostgreSQL, a database ending in _load) and REDIS_URL, or exit saying so."""
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database_url.startswith("postgres") or not redis_url:
        sys.exit(
            "Set DATABASE_URL (PostgreSQL, a database ending in _load) and REDIS_URL: the benchmark is of the production path."
        )
    ensure_database(database_url)
    return database_url, redis_url


def ensure_database(url: str) -> None:
    import psycopg

    name = urlparse(url).path.lstrip("/")
    if not name.endswith("_load"):
        sys.exit(f"DATABASE_URL names {name!r}: use a dedicated database whose name ends in _load (its data is deleted).")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summary(values: list[float], *, scale: float = 1.0, digits: int = 3) -> dict:
    """Median, p90, p99, max and mean of `values`, each times `scale` and rounded."""
    figures = {
        "median": statistics.median(values),
        "p90": percentile(values, 0.9),
        "p99": percentile(values, 0.99),
        "max": max(values),
        "mean": statistics.fmean(values),
    }
    return {name: round(value * scale, digits) for name, value in figures.items()}


def start(command: list[str], log: Path, **env) -> subprocess.Popen:
    """A platform process (manage.py, daphne) in its own session, its output in `log`."""
    return subprocess.Popen(
        command, cwd=REPO, env=dict(os.environ, **env), stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
