"""Loaded with `-p` (pyproject.toml), before Django reads its settings: under pytest-xdist each worker
gets a Redis database of its own (15 for gw0, 14 for gw1, ...), so one worker's flush or job
consumer never touches another's broker, cache or channel layer (whose Pub/Sub names carry the
database: config/settings.py). The SQL databases are kept apart by pytest-django (a suffix per
worker)."""

import os

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_url = os.environ.get("REDIS_URL", "")
if _worker.startswith("gw") and _url:
    _base, _, _database = _url.rpartition("/")
    os.environ["REDIS_URL"] = f"{_base}/{int(_database or 0) - int(_worker[2:])}"
