"""Queue names: one queue per architecture, and a bulk queue beside it for re-verification; and
whether the broker still holds a message."""

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name

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


def broker_holds(queue: str, message_id: str) -> bool:
    """Whether the broker still has this message: waiting, delayed for a retry, or taken by a worker
    that has not acknowledged it yet. The reconciler and the staff tools send a new message for a
    pending row whose message the broker lost (a Redis restart, a send that failed).

    The in-process broker of embedded mode cannot see the messages its worker threads took (they
    hold them until done); there a message a worker took counts as lost, and a new one is sent,
    which the old one's claim makes harmless (verification.evaluations).
    """
    broker = dramatiq.get_broker()
    if isinstance(broker, RedisBroker):
        # dramatiq's Redis layout: a message's body stays in "<namespace>:<queue>.msgs" from its
        # send until its acknowledgement (".DQ" is the delay queue of retries).
        return any(broker.client.hexists(f"{broker.namespace}:{name}.msgs", message_id) for name in (queue, dq_name(queue)))
    if isinstance(broker, StubBroker):
        marker = message_id.encode()
        return any(
            marker in data
            for name in (queue, dq_name(queue))
            if name in broker.queues
            for data in list(broker.queues[name].queue)
        )
    raise TypeError(f"cannot tell which messages a {type(broker).__name__} holds")
