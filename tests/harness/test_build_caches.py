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
    oldest = _cache(tmp_path, "candidates", "a", 40_000, now - 300)
    older = _cache(tmp_path, "baselines", "b", 40_000, now - 200)
    newest = _cache(tmp_path, "candidates", "c", 40_000, now - 100)

    removed = build_caches.evict(tmp_path, 50_000)

    assert not oldest.exists() and not older.exists() and newest.exists()
    assert len(removed) == 2 and "least recently used" in removed[0]


def test_a_cache_in_use_is_never_removed(tmp_path):
    now = time.time()
    busy = _cache(tmp_path, "candidates", "busy", 40_000, now - 300)
    idle = _cache(tmp_path, "candidates", "idle", 40_000, now - 100)

    with build_caches.in_use(busy):
        build_caches.evict(tmp_path, 100)

    assert busy.exists() and not idle.exists()


def test_within_the_bound_nothing_is_removed(tmp_path):
    kept = _cache(tmp_path, "candidates", "a", 40_000, time.time())

    assert build_caches.evict(tmp_path, 100_000) == []
    assert kept.exists()


def test_empty_files_and_folders_count_for_the_disk_they_take(tmp_path):
    # An attacker's candidate left 40,000 empty folders and files in its cache: 0 bytes by their sizes.
    for index in range(200):
        (tmp_path / f"d{index}").mkdir()
        (tmp_path / f"d{index}" / "empty").touch()

    assert build_caches.size_of(tmp_path) >= 400 * build_caches.ENTRY_BYTES


def test_a_relative_cache_folder_or_lock_is_made_absolute_where_the_limits_are_made(tmp_path, monkeypatch):
    # The sandboxes bind these paths and start in folders of their own: a relative path read there
    # names another file.
    monkeypatch.chdir(tmp_path)
    limits = coerce(Limits, {"build_cache_dir": "state/builds", "device_lock_path": "state/device-0.lock"})

    assert limits.build_cache_dir == str(tmp_path / "state" / "builds")
    assert limits.device_lock_path == str(tmp_path / "state" / "device-0.lock")
    assert Limits().build_cache_dir is None
