"""The build caches on the host: a folder per candidate source (and per problem, for its baselines)
where load_inline, Triton and Inductor keep what they build, bound as a whole.

Each is written only by sandboxes of its own source (processes.start binds it). Every folder is
bound while a verification uses it (`in_use`); after a run, the folders together are kept within
`Limits.build_caches_bytes`, the least recently used removed first, never one in use. A single
folder is bound while its build runs (SandboxedProcess watches it) and after it
(`Limits.build_cache_bytes`): N submissions cannot keep N full caches. Standard library only.
"""

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

# What one entry costs at least, whatever its size: an inode and a block. A cache of 40,000 empty
# folders and files read 0 bytes by their sizes (an attacker's candidate left one behind, issue 32's
# review); counted so, it is 160 MiB, and a build making them for ten minutes passes the bound.
ENTRY_BYTES = 4096


def footprint(info: os.stat_result) -> int:
    """What an entry takes from the host's disk: its size (a sparse file's too), its blocks, one entry."""
    return max(info.st_size, info.st_blocks * 512, ENTRY_BYTES)


def size_of(folder: Path) -> int:
    """The footprint of every entry under `folder`, folders and links included (links not followed)."""
    total = 0
    for directory, folders, names in os.walk(folder):
        for name in folders + names:
            try:
                total += footprint(os.lstat(os.path.join(directory, name)))
            except OSError:
                continue
    return total


def _lock_path(folder: Path) -> Path:
    return folder.with_name(folder.name + ".lock")


@contextlib.contextmanager
def in_use(*folders: Path) -> Iterator[None]:
    """The folders marked used now (their time of use is what eviction orders by) and held so that no
    eviction removes them while this verification runs."""
    handles = []
    try:
        for folder in folders:
            handle = open(_lock_path(folder), "a")  # noqa: SIM115  (held until the verification ends)
            fcntl.flock(handle, fcntl.LOCK_SH)
            handles.append(handle)
            os.utime(_lock_path(folder))
        yield
    finally:
        for handle in handles:
            handle.close()


def evict(root: Path, limit_bytes: int) -> list[str]:
    """The least recently used caches under `root` removed until the rest fit `limit_bytes`; a cache
    some verification holds (`in_use`) is skipped. What was removed, for the verdict's cost."""
    entries = []
    for kind in ("candidates", "baselines"):
        for lock in (root / kind).glob("*.lock"):
            if not lock.with_suffix("").exists():
                lock.unlink(missing_ok=True)  # a cache removed after its run (over its own bound)
        for folder in (root / kind).glob("*"):
            if folder.is_dir():
                lock = _lock_path(folder)
                used = lock.stat().st_mtime if lock.exists() else folder.stat().st_mtime
                entries.append((used, folder))
    sizes = {folder: size_of(folder) for _, folder in entries}
    total = sum(sizes.values())
    removed = []
    for _, folder in sorted(entries, key=lambda entry: entry[0]):
        if total <= limit_bytes:
            break
        with open(_lock_path(folder), "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            _lock_path(folder).unlink(missing_ok=True)
        total -= sizes[folder]
        removed.append(f"{folder.parent.name}/{folder.name}: {sizes[folder] / 2**20:.0f} MiB, least recently used")
    return removed
