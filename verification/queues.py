"""Queue names: one queue per architecture, and a bulk queue beside it for re-verification; and
whether the broker still holds a message."""

import logging
from collections.abc import Callable

import dramatiq
from django.db import transaction
from dramatiq import Message
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name
from dramatiq.middleware import CurrentMessage

logger = logging.getLogger(__name__)

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


def job_message(queue: str, actor_name: str, *args) -> Message:
    """A job's message, made by actor name (a row records its id before the row commits)."""
    return Message(queue_name=queue, actor_name=actor_name, args=args, kwargs={}, options={})


def send_after_commit(message: Message, *, before: Callable[[], None] | None = None) -> None:
    """Send `message` once the current transaction commits (`before` runs first). A broker that
    cannot take it is logged, not raised: the row that records the message stays pending with a
    message the broker does not hold, and the reconciler sends a new one."""

    def send():
        if before is not None:
            before()
        try:
            broker = dramatiq.get_broker()
            broker.declare_queue(message.queue_name)
            broker.enqueue(message)
        except Exception:
            logger.exception(
                "could not send %s%s to %s; the reconciler will send it again",
                message.actor_name,
                message.args,
                message.queue_name,
            )

    transaction.on_commit(send)


def current_message_id() -> str | None:
    """The running job's message id; None outside a worker (a direct call)."""
    message = CurrentMessage.get_current_message()
    return message.message_id if message else None


class HeldMessages:
    """Which job messages the broker still has, per queue: waiting, delayed for a retry, or taken
    by a worker that has not acknowledged them yet. The reconciler and the staff tools send a new
    message for a pending row whose message the broker lost (a Redis restart, a failed send).

    One instance reads each queue once (a pass of the reconciler); a new one reads afresh.

    The in-process broker of embedded mode cannot see the messages its worker threads took (they
    hold them until done); there a taken message counts as lost, and a new one is sent, which the
    old one's claim makes harmless (verification.evaluations).
    """

    def __init__(self):
        self._held: dict[str, set[str]] = {}

    def holds(self, queue: str, message_id: str) -> bool:
        if queue not in self._held:
            self._held[queue] = {Message.decode(data).message_id for data in _stored_messages(queue)}
        return message_id in self._held[queue]


def _stored_messages(queue: str) -> list[bytes]:
    broker = dramatiq.get_broker()
    names = (queue, dq_name(queue))
    if isinstance(broker, RedisBroker):
        # dramatiq's Redis layout: a message's body stays in the hash "<namespace>:<queue>.msgs"
        # (".DQ" for retries waiting out their delay) from its send until its acknowledgement,
        # keyed by an id of the send, not of the message: hence reading the bodies.
        return [data for name in names for data in broker.client.hvals(f"{broker.namespace}:{name}.msgs")]
    if isinstance(broker, StubBroker):
        return [data for name in names if name in broker.queues for data in list(broker.queues[name].queue)]
    raise TypeError(f"cannot tell which messages a {type(broker).__name__} holds")
