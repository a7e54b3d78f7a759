"""A job row's messages: made and recorded on the row before it commits, sent after the commit; a
job runs a row only as the row's own message; and whether the broker still holds a row's message.

The row is the outbox: a send that failed (Redis down) leaves the row pending with a message the
broker does not hold, and the reconciler (jobrows.reconciler) sends a new one. A message that is not
the row's (a duplicate, or one replaced that way) finds nothing to do, so sending again is always safe.
"""

import logging
import time
from collections.abc import Callable, Sequence

import dramatiq
from django.db import transaction
from django.utils import timezone
from dramatiq import Message
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name
from dramatiq.middleware import CurrentMessage

from jobrows import liveness
from jobrows.models import JobRow, JobRowWithQueue

logger = logging.getLogger(__name__)


def job_message(queue: str, actor_name: str, *args) -> Message:
    """A job's message, made by actor name (a row records its id before the row commits)."""
    return Message(queue_name=queue, actor_name=actor_name, args=args, kwargs={}, options={})


def send(row: JobRow, message: Message, *, also: Sequence[str] = (), before: Callable[[], None] | None = None) -> None:
    """Record `message` on the row as the one that may run it (and its queue, on a row that names
    one), save that with the fields `also` names, and send the message once the row is committed
    (`before` runs first). A broker that cannot take it is logged, not raised."""
    row.message_id, row.enqueued_at = message.message_id, timezone.now()
    fields = ["message_id", "enqueued_at"]
    if isinstance(row, JobRowWithQueue):
        row.queue = message.queue_name
        fields.append("queue")
    row.save(update_fields=[*also, *fields])
    send_after_commit(message, before=before)


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


def forget(row: JobRow) -> None:
    """The row names no message any more (the caller saves): one still in the broker finds it
    finished and does nothing."""
    row.message_id, row.enqueued_at = "", None
    if isinstance(row, JobRowWithQueue):
        row.queue = ""


def current_message_id() -> str | None:
    """The running job's message id; None outside a worker (a direct call)."""
    message = CurrentMessage.get_current_message()
    return message.message_id if message else None


def may_run(row: JobRow, message_id: str | None) -> bool:
    """Whether the job of `message_id` may run the row (locked by the caller): the row's own
    message, any where the row names none, or a direct call (None). Another message has nothing to do."""
    if message_id is not None and row.message_id and message_id != row.message_id:
        logger.info(
            "%s %s belongs to message %s, not %s; nothing to do", row._meta.verbose_name, row.pk, row.message_id, message_id
        )
        return False
    return True


def start(row: JobRow, *, also: Sequence[str] = ()) -> None:
    """A job starts on the row (claimed by `may_run`): its start is counted and saved, with the
    fields `also` names."""
    row.attempts += 1
    row.save(update_fields=["attempts", *also])


def still_names(row: JobRow) -> bool:
    """Whether the row, locked until the transaction ends, still names the message it was claimed
    with: once it names another (the reconciler sent a new job), the old job must write nothing more."""
    owner = type(row)._default_manager.select_for_update().values_list("message_id", flat=True).get(pk=row.pk)
    return owner == row.message_id


class HeldMessages:
    """Which job messages the broker still has, per queue: waiting, delayed for a retry, or taken
    by a live worker that has not acknowledged them yet. The reconciler and the staff tools send a
    new message for a pending row whose message the broker lost (a Redis restart, a failed send)
    or a worker took and then went silent (killed, hung): its jobs are released by its silence,
    within `liveness.silence()`, not by the broker's own clean-up.

    One instance reads each queue once (a pass of the reconciler); a new one reads afresh.

    The in-process broker of embedded mode cannot see the messages its worker threads took (they
    hold them until done); there a taken message counts as lost, and a new one is sent, which the
    old one's claim makes harmless (`may_run`).
    """

    def __init__(self):
        self._held: dict[str, set[str]] = {}

    def holds(self, queue: str, message_id: str) -> bool:
        if queue not in self._held:
            self._held[queue] = {Message.decode(data).message_id for data in _stored_messages(queue)}
        return message_id in self._held[queue]

    def holds_job_of(self, row: JobRow, *, queue: str = "") -> bool:
        """Whether the broker holds the row's message: on the row's queue, or on `queue` for a row
        that names none (all of its kind go to one)."""
        if isinstance(row, JobRowWithQueue):
            queue = row.queue
        return bool(row.message_id and queue and self.holds(queue, row.message_id))


def _stored_messages(queue: str) -> list[bytes]:
    broker = dramatiq.get_broker()
    names = (queue, dq_name(queue))
    if isinstance(broker, RedisBroker):
        # dramatiq's Redis layout: a message's body stays in the hash "<namespace>:<queue>.msgs"
        # (".DQ" for retries waiting out their delay) from its send until its acknowledgement,
        # keyed by an id of the send, not of the message: hence reading the bodies.
        taken = _taken_by_silent_consumers(broker, names)
        return [
            data
            for name in names
            for key, data in broker.client.hgetall(f"{broker.namespace}:{name}.msgs").items()
            if key not in taken
        ]
    if isinstance(broker, StubBroker):
        return [data for name in names if name in broker.queues for data in list(broker.queues[name].queue)]
    raise TypeError(f"cannot tell which messages a {type(broker).__name__} holds")


def _taken_by_silent_consumers(broker: RedisBroker, names: tuple[str, ...]) -> set[bytes]:
    """The messages taken (running, or prefetched behind the running one) by worker processes
    silent for `liveness.silence()`: dead, as our own heartbeats count it. The broker gives them
    back only once its own timeout has passed and a maintenance pass happens to run (minutes, at
    random); until then they count as lost, and the reconciler sends new ones. A consumer process
    tells the broker it is alive on each fetch, about once a second while any of its queues is idle
    (the delay queues always are), so a live one is never this silent."""
    silent_since = time.time() - liveness.silence().total_seconds()
    silent = broker.client.zrangebyscore(f"{broker.namespace}:__heartbeats__", 0, int(silent_since * 1000))
    taken: set[bytes] = set()
    for consumer in silent:
        consumer = consumer.decode() if isinstance(consumer, bytes) else consumer
        for name in names:
            taken |= broker.client.smembers(f"{broker.namespace}:__acks__.{consumer}.{name}")
    return taken
