"""After a harness change, staff re-verify the listed kernels it took off the leaderboard: with
`manage.py reverify` (per architecture) or the admin action (on the live architectures). Only
listed kernels, each once, on the bulk queues."""

import itertools

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from court.leaderboard import best_per_problem
from court.models import AuditEntry, Evaluation
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate
from tests.verification.conftest import register
from tests.verification.test_fanout import pending
from verification import reverify

pytestmark = pytest.mark.django_db(transaction=True)

OLD = "0-old"
_scales = itertools.count(10)


def verified_under_old_harness(arch: str = "h100", **fields):
    """A kernel as a harness change leaves it: verified, but under the older version only."""
    kernel = make_candidate(scale=next(_scales), **fields)
    Evaluation.objects.create(
        candidate=kernel, arch=arch, harness_version=OLD, status="verified", speedup_eager=2.0, finished_at=timezone.now()
    )
    return kernel


@pytest.fixture
def kernels():
    """Made before any worker registers, so saving them enqueues nothing of their own."""
    listed = verified_under_old_harness()
    Evaluation.objects.create(
        candidate=listed, arch="a100", harness_version=OLD, status="verified", speedup_eager=3.0, finished_at=timezone.now()
    )
    featured = verified_under_old_harness(curation="featured")
    verified_under_old_harness(curation="hidden")
    verified_under_old_harness(curation="delisted", curation_reason="caches")
    verified_under_old_harness(curation="under_review")
    done = verified_under_old_harness()
    Evaluation.objects.create(candidate=done, arch="h100", harness_version=HARNESS_VERSION, status="queued")
    never_verified = make_candidate(scale=99)
    Evaluation.objects.create(candidate=never_verified, arch="h100", harness_version=OLD, status="incorrect")
    return {"listed": listed, "featured": featured}


@pytest.fixture
def shared_broker(monkeypatch):
    """The command refuses an in-process broker; in these tests the worker would share this process."""
    monkeypatch.setattr(reverify, "broker_is_in_process", lambda: False)
    monkeypatch.setattr("verification.management.commands.reverify.broker_is_in_process", lambda: False)


def test_the_command_enqueues_each_listed_kernel_where_it_lacks_a_current_verdict(kernels, broker, shared_broker, capsys):
    call_command("reverify")
    listed, featured = kernels["listed"].pk, kernels["featured"].pk
    assert (pending(broker, "gpu.h100.bulk"), pending(broker, "gpu.a100.bulk")) == (2, 1)
    assert pending(broker, "gpu.h100") == 0
    assert set(
        Evaluation.objects.filter(arch="h100", harness_version=HARNESS_VERSION, candidate_id__in=[listed, featured]).values_list(
            "status", flat=True
        )
    ) == {"queued"}
    assert list(
        Evaluation.objects.filter(arch="a100", harness_version=HARNESS_VERSION).values_list("candidate_id", flat=True)
    ) == [listed]
    assert AuditEntry.objects.filter(action="kernel re-verification", actor=None).count() == 3
    assert f"h100: 2 kernels enqueued (#{listed}, #{featured}); no live h100 worker" in capsys.readouterr().out


def test_running_it_again_enqueues_nothing_more(kernels, broker, shared_broker, capsys):
    call_command("reverify")
    capsys.readouterr()
    call_command("reverify")
    assert (pending(broker, "gpu.h100.bulk"), pending(broker, "gpu.a100.bulk")) == (2, 1)
    assert "nothing to enqueue" in capsys.readouterr().out


def test_one_architecture_at_a_time(kernels, broker, shared_broker):
    register("a100")
    call_command("reverify", arch="a100")
    assert (pending(broker, "gpu.h100.bulk"), pending(broker, "gpu.a100.bulk")) == (0, 1)
    assert not Evaluation.objects.filter(arch="h100", harness_version=HARNESS_VERSION, candidate=kernels["listed"]).exists()


def test_a_dry_run_lists_and_enqueues_nothing(kernels, broker, capsys):
    call_command("reverify", dry_run=True)
    out = capsys.readouterr().out
    assert "h100: 2 kernels would be enqueued" in out and "a100: 1 kernels would be enqueued" in out
    assert pending(broker, "gpu.h100.bulk") == 0 and Evaluation.objects.filter(harness_version=HARNESS_VERSION).count() == 1
    assert not AuditEntry.objects.exists()


def test_the_command_refuses_a_broker_no_worker_can_read(kernels, monkeypatch):
    monkeypatch.setattr("verification.management.commands.reverify.broker_is_in_process", lambda: True)
    with pytest.raises(CommandError, match="in-process"):
        call_command("reverify")
    assert Evaluation.objects.filter(harness_version=HARNESS_VERSION).count() == 1


def test_the_admin_action_enqueues_listed_kernels_on_the_live_architectures(kernels, broker, admin_client, admin_user):
    register("h100")
    everything = list(Evaluation.objects.values_list("candidate_id", flat=True).distinct())
    body = {"action": "reverify_outdated", "_selected_action": everything}
    admin_client.post("/admin/kernels/candidate/", body)
    assert (pending(broker, "gpu.h100.bulk"), pending(broker, "gpu.a100.bulk")) == (2, 0)
    assert AuditEntry.objects.filter(actor=admin_user, action="kernel re-verification").count() == 3
    response = admin_client.post("/admin/kernels/candidate/", body, follow=True)
    assert pending(broker, "gpu.h100.bulk") == 2
    assert b"sent for re-verification" in response.content


def test_the_admin_lists_the_kernels_awaiting_re_verification(kernels, admin_client):
    response = admin_client.get("/admin/kernels/candidate/?current_harness=missing")
    assert sorted(c.pk for c in response.context["cl"].result_list) == sorted([kernels["listed"].pk, kernels["featured"].pk])


def test_a_re_verified_kernel_returns_to_the_leaderboard(kernels):
    assert best_per_problem("h100") == []
    evaluation = Evaluation.objects.create(candidate=kernels["listed"], arch="h100", harness_version=HARNESS_VERSION)
    Evaluation.objects.filter(pk=evaluation.pk).update(status="verified", speedup_eager=2.5, finished_at=timezone.now())
    assert [row.candidate for row in best_per_problem("h100")] == [kernels["listed"]]
