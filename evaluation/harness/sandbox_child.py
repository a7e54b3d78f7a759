"""The first step of every sandboxed process, before torch or any user code, whether bubblewrap
started it (`sandbox_command.BOOT`) or the fork server forked it into its sandbox (`fork_server`).
Standard library only: it runs before anything else is imported."""

import ctypes
import os
import resource
from typing import Any

_PR_SET_DUMPABLE = 4


def confine_self(settings: dict[str, Any]) -> None:
    """Run first in every child, before torch or any user code: the sandbox's own user where it was
    set up as root (`sandbox_userns`), limits it cannot raise (it has no capabilities) and no readable
    memory."""
    owner = settings.get("become")
    if owner is not None:
        # Its private folders first (bubblewrap made them as root), then the user: changing uid from
        # root drops every capability, for good (no new privileges).
        for folder in settings.get("own", []):
            os.chown(folder, owner, owner)
        os.setgroups([])
        os.setresgid(owner, owner, owner)
        os.setresuid(owner, owner, owner)
    # No descriptor but its standard streams and those the harness named: bubblewrap leaves the
    # user namespace's it was given open.
    kept = sorted({0, 1, 2, *(fd for fd in settings.get("fds", []) if fd >= 0)})
    for low, high in zip(kept, [*kept[1:], resource.getrlimit(resource.RLIMIT_NOFILE)[0]], strict=True):
        os.closerange(low + 1, high)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, key in (
        ("RLIMIT_FSIZE", "file_size_bytes"),
        ("RLIMIT_NOFILE", "open_files"),
        ("RLIMIT_NPROC", "processes"),
        ("RLIMIT_AS", "address_space_bytes"),
    ):
        value = settings.get(key)
        if value:
            soft, hard = resource.getrlimit(getattr(resource, name))
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(getattr(resource, name), (value, value))
    try:
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
