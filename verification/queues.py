"""Queue names: one queue per architecture, and a bulk queue beside it for re-verification. (A job
row's messages, and whether the broker still holds one, are jobrows.messages.)"""

INTERACTIVE = "interactive"
BULK = "bulk"


def queue_for(arch: str, *, priority: str = INTERACTIVE) -> str:
    if priority not in (INTERACTIVE, BULK):
        raise ValueError(f"priority is {priority!r}: use {INTERACTIVE!r} or {BULK!r}.")
    return f"gpu.{arch}" if priority == INTERACTIVE else f"gpu.{arch}.bulk"


def priority_of(queue: str) -> str | None:
    """The priority a queue name stands for; None for a name that is not one of ours (or empty)."""
    if not queue.startswith("gpu."):
        return None
    return BULK if queue.endswith(".bulk") else INTERACTIVE


def queues_of(arch: str) -> list[str]:
    """What a worker of this architecture consumes: its interactive queue first, then bulk."""
    return [queue_for(arch), queue_for(arch, priority=BULK)]
