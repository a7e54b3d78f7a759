"""The build caches: bound as a whole, the least recently used removed first, never one in use."""

import os
import time

from evaluation.harness import build_caches
from evaluation.harness.limits import Limits, coerce


def _cache(root, kind, name, size, used):
    folder = root / kind / name
    folder.mkdir(parents=True)
    (folder / "build.so").write_bytes(b"x" * size)
    with build_caches.in_use(folder):
        pass
    os.utime(folder.with_name(name + ".lock"), (used, used))
    return folder


def test_the_least_recently_used_go_first_until_the_rest_fit(tmp_path):
    now = time.time()
    oldest = _cache(tmp_path, "candidates", "a", 400, now - 300)
    older = _cache(tmp_path, "baselines", "b", 400, now - 200)
    newest = _cache(tmp_path, "candidates", "c", 400, now - 100)

    removed = build_caches.evict(tmp_path, 500)

    assert not oldest.exists() and not older.exists() and newest.exists()
    assert len(removed) == 2 and "least recently used" in removed[0]


def test_a_cache_in_use_is_never_removed(tmp_path):
    now = time.time()
    busy = _cache(tmp_path, "candidates", "busy", 400, now - 300)
    idle = _cache(tmp_path, "candidates", "idle", 400, now - 100)

    with build_caches.in_use(busy):
        build_caches.evict(tmp_path, 100)

    assert busy.exists() and not idle.exists()


def test_within_the_bound_nothing_is_removed(tmp_path):
    kept = _cache(tmp_path, "candidates", "a", 400, time.time())

    assert build_caches.evict(tmp_path, 1000) == []
    assert kept.exists()


def test_a_relative_cache_folder_or_lock_is_made_absolute_where_the_limits_are_made(tmp_path, monkeypatch):
    # The sandboxes bind these paths and start in folders of their own: a relative path read there
    # names another file.
    monkeypatch.chdir(tmp_path)
    limits = coerce(Limits, {"build_cache_dir": "state/builds", "device_lock_path": "state/device-0.lock"})

    assert limits.build_cache_dir == str(tmp_path / "state" / "builds")
    assert limits.device_lock_path == str(tmp_path / "state" / "device-0.lock")
    assert Limits().build_cache_dir is None
