"""After a harness change the leaderboard marks the listed kernels measured by an older harness, staff
send every one of them for re-verification from the admin in one action and watch its progress, and a
mark clears as its kernel's verdict of the current harness arrives; the kernel page keeps both."""

import pytest
from django.urls import reverse
from django.utils import timezone

from court import leaderboard
from court.models import Evaluation
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_evaluation
from tests.verification.conftest import register
from tests.verification.test_fanout import pending

pytestmark = pytest.mark.django_db(transaction=True)

OLD = "0-old"
PAGE = "/admin/kernels/candidate/older-harness/"


@pytest.fixture
def kernels():
    """On cpu: one kernel verified by the current harness, two by an older one (one of them hidden,
    which no board shows). Made before any worker registers: saving them enqueues nothing."""
    current = make_candidate(scale=3)
    make_evaluation(current, speedup_eager=1.5)
    older = make_candidate(scale=4)
    make_evaluation(older, harness_version=OLD, speedup_eager=2.5)
    hidden = make_candidate(scale=5, curation="hidden")
    make_evaluation(hidden, harness_version=OLD)
    return {"current": current, "older": older, "hidden": hidden}


def marked(client) -> str:
    page = client.get(reverse("kernels:leaderboard", args=["cpu"])).content.decode()
    return page[page.index('id="older-harness"') : page.index("</section>")] if 'id="older-harness"' in page else ""


def test_the_board_marks_a_kernel_of_an_older_harness_until_its_current_verdict_is_finished(client, kernels):
    older = kernels["older"]

    assert f'data-kernel="{older.pk}"' in marked(client)
    assert 'harness 0-old, 2.50x over eager then · <span class="mark">awaiting re-verification' in marked(client)
    assert f'data-kernel="{kernels["current"].pk}"' not in marked(client)
    assert f'data-kernel="{kernels["hidden"].pk}"' not in marked(client)

    evaluation = Evaluation.objects.create(candidate=older, arch="cpu", harness_version=HARNESS_VERSION, status="running")
    assert "re-verification queued" in marked(client)

    Evaluation.objects.filter(pk=evaluation.pk).update(status="verified", speedup_eager=2.2, finished_at=timezone.now())
    leaderboard.changed()
    assert marked(client) == ""
    assert f"/kernels/{older.pk}/" in client.get(reverse("kernels:leaderboard", args=["cpu"])).content.decode()


def test_a_rejected_current_verdict_clears_the_mark_and_the_kernel_page_keeps_both_verdicts(client, kernels):
    older = kernels["older"]
    make_evaluation(older, status="rejected", reason="no_background_threads: a thread was still working")

    page = client.get(older.get_absolute_url()).content.decode()

    assert marked(client) == ""
    assert page.count("<small>harness ") == 2
    assert f"<small>harness {HARNESS_VERSION}</small>" in page and "<small>harness 0-old</small>" in page


def test_staff_send_every_kernel_of_an_older_harness_in_one_action_and_see_its_progress(kernels, broker, admin_client):
    register("cpu")

    before = admin_client.get(PAGE).content.decode()
    response = admin_client.post(PAGE, follow=True)

    assert '<td class="done">0</td><td class="queued">0</td><td class="waiting">1</td>' in before
    assert "1 listed kernels of an older harness sent for re-verification" in response.content.decode()
    assert pending(broker, "gpu.cpu.bulk") == 1
    assert Evaluation.objects.get(candidate=kernels["older"], harness_version=HARNESS_VERSION).status == "queued"
    assert '<td class="done">0</td><td class="queued">1</td><td class="waiting">0</td>' in response.content.decode()
    assert '<meta http-equiv="refresh" content="5">' in response.content.decode()

    Evaluation.objects.filter(candidate=kernels["older"], harness_version=HARNESS_VERSION).update(
        status="verified", finished_at=timezone.now()
    )
    after = admin_client.get(PAGE).content.decode()
    assert '<td class="done">1</td><td class="queued">0</td><td class="waiting">0</td>' in after
    assert "http-equiv" not in after
    assert "No listed kernel lacks" in admin_client.post(PAGE, follow=True).content.decode()


def test_the_page_is_staff_only(client, kernels):
    assert client.get(PAGE).status_code == 302
    assert client.post(PAGE).status_code == 302
    assert not Evaluation.objects.filter(harness_version=HARNESS_VERSION, candidate=kernels["older"]).exists()
