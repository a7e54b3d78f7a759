"""Building the call site (callsite.c) on the parent's side, before any sandbox starts.

The parent compiles the C source with the host's C compiler into a folder of its own, keyed by the
source and the Python it is for; sandboxed processes see that folder read-only. Nothing a
sandboxed process wrote is ever loaded here: the build is the harness's own code, made by the
harness. Standard library only.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("callsite.c")
MODULE = "kernel_court_callsite"


class BuildError(RuntimeError):
    """The call site could not be compiled on this host; the message says what is missing."""


def default_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kernel-court" / "callsite"


def _key(source: bytes) -> str:
    parts = [
        source,
        sys.version.encode(),
        sysconfig.get_platform().encode(),
        (sysconfig.get_config_var("EXT_SUFFIX") or "").encode(),
    ]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:24]


def build(root: Path | None = None) -> Path:
    """The folder holding the built module, compiling it if this source has not been built yet."""
    source = SOURCE.read_bytes()
    folder = (root or default_root()) / _key(source)
    target = folder / f"{MODULE}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    if target.exists():
        return folder
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise BuildError("the harness builds a small C module and needs a C compiler (cc or gcc) on this host")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise BuildError(
            f"the harness builds a small C module and needs Python's headers ({include}/Python.h): "
            "install the python3-dev package (or your Python's development headers)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        built = Path(work) / target.name
        command = [
            compiler,
            "-O2",
            "-shared",
            "-fPIC",
            "-std=gnu11",
            f"-I{include}",
            str(SOURCE),
            "-o",
            str(built),
            "-ldl",
            "-lpthread",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise BuildError(f"compiling the harness's call site failed: {done.stderr.strip()[-2000:]}")
        os.chmod(built, 0o755)
        os.replace(built, target)
    return folder
