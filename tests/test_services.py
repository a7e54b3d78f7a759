"""The real services the platform runs on in production: PostgreSQL, the Redis broker and channel layer."""

import pytest
from django.db import connection

from tests.conftest import IN_CI


@pytest.mark.django_db
def test_ci_runs_the_suite_on_postgresql():
    if not IN_CI:
        pytest.skip("outside CI the suite runs on whatever DATABASE_URL says (SQLite by default)")
    assert connection.vendor == "postgresql"


@pytest.mark.services
def test_a_job_sent_through_the_redis_broker_is_consumed_by_a_worker(redis_url):
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    broker = RedisBroker(url=redis_url)
    seen = []

    @dramatiq.actor(broker=broker, queue_name="gpu.test", max_retries=0)
    def record(value):
        seen.append(value)

    record.send("hello")
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        broker.join("gpu.test", timeout=10_000)
        worker.join()
    finally:
        worker.stop()
        broker.close()
    assert seen == ["hello"]


@pytest.mark.services
async def test_a_message_sent_to_a_group_reaches_its_member_over_redis(redis_url):
    from channels_redis.pubsub import RedisPubSubChannelLayer

    layer = RedisPubSubChannelLayer(hosts=[redis_url])
    channel = await layer.new_channel()
    await layer.group_add("run.1", channel)
    await layer.group_send("run.1", {"type": "run.delta", "text": "thinking"})
    message = await layer.receive(channel)
    await layer.flush()
    assert message == {"type": "run.delta", "text": "thinking"}


@pytest.mark.services
@pytest.mark.slow  # waits 7 s on purpose: left out of make test-fast
async def test_the_configured_redis_layer_survives_a_quiet_socket(redis_url, settings):
    """A watcher may hear nothing for minutes: a receive that waits past the client's
    default read timeout (5 s with redis-py 8) must still get the next message."""
    import asyncio

    from channels_redis.pubsub import RedisPubSubChannelLayer

    layer = RedisPubSubChannelLayer(hosts=[{"address": redis_url, **settings.CHANNEL_REDIS_OPTIONS}])
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(7)
    assert not receiving.done(), receiving.exception() if receiving.done() else None
    await layer.send(channel, {"type": "run.delta", "text": "late"})
    message = await asyncio.wait_for(receiving, timeout=10)
    await layer.flush()
    assert message == {"type": "run.delta", "text": "late"}
