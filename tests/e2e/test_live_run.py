"""A run in a real browser: a module typed into the demo's editor streams reasoning and a candidate,
the CPU worker verifies it, and the kernel reaches its page, its download and a hack report; being
a paste's, it reaches the leaderboard once staff promote the module.
A page reloaded mid-run picks the stream up again without repeating or losing an event.

Everything after the click on Run happens in the server: the builtin optimizer and the CPU
evaluation worker run there in embedded mode, so the waits are generous for a loaded 2-core machine.
"""

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from court.curation import promote_problem
from court.models import Candidate, Evaluation, HackReport, OptimizationRun, RunEvent
from tests.e2e.conftest import assert_fits_the_width, log_in, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Three elementwise kernels on a small vector: the builtin optimizer proposes CUDA graph capture
# first, which on CPU runs Model unchanged, so the harness verifies it in about half a minute on
# two busy cores. No docstring: the editor closes triple quotes as they are typed.
MODULE = """import torch
import torch.nn as nn


class Model(nn.Module):
    # Doubles the positive part of a vector and shifts it by one.

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0 + 1.0


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
"""
FIRST_WORDS_S = 60_000
VERDICT_S = 120_000
DISPLAYED = {
    RunEvent.Kind.REASONING,
    RunEvent.Kind.ANSWER,
    RunEvent.Kind.CANDIDATE,
    RunEvent.Kind.NO_CANDIDATE,
    RunEvent.Kind.ERROR,
}


def type_into_editor(page, source: str):
    """Key by key, as a person types: the editor indents each new line itself, so the line's own
    indentation replaces what it inserted; Escape closes the completion list before Enter."""
    page.locator("#editor .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    for number, line in enumerate(source.split("\n")):
        if number:
            page.keyboard.press("Enter")
        page.keyboard.press("Shift+Home")
        if line:
            page.keyboard.type(line)
            page.keyboard.press("Escape")
        else:
            page.keyboard.press("Delete")


def type_module(page, base: str):
    page.goto(f"{base}/")
    type_into_editor(page, MODULE)
    expect(page.locator("#id_source")).to_have_value(MODULE)


def start_run(page, *, rounds: int = 1) -> OptimizationRun:
    """The builtin backend is the default; one round is one candidate."""
    expect(page.get_by_label("Model backend")).to_have_value("builtin")
    page.get_by_label("Rounds").fill(str(rounds))
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_url("**/runs/*/?key=*")  # a paste's run: its link carries its key
    return OptimizationRun.objects.get(pk=int(urlsplit(page.url).path.rstrip("/").rsplit("/", 1)[1]))


def verdict_cell(page, arch: str = "cpu"):
    return page.locator(f'section.candidate tr[data-arch="{arch}"] td.status')


# Each block of the transcript as [kind, title, content]: a Markdown block's HTML, a candidate's code.
TRANSCRIPT_BLOCKS = """root => Array.from(root.querySelectorAll("#transcript > *")).map((block) => {
  if (block.matches("details.reasoning"))
    return ["reasoning", block.querySelector("summary").textContent, block.querySelector(".markdown").innerHTML];
  if (block.matches("section.answer"))
    return ["answer", block.querySelector("h2").textContent, block.querySelector(".markdown").innerHTML];
  if (block.matches("section.candidate"))
    return ["candidate", block.dataset.candidate, block.querySelector("details.code pre").textContent];
  return ["note", "", block.textContent];
})"""


def page_transcript(page) -> list[list[str]]:
    """The transcript as the page shows it, once every delta it received is rendered."""
    expect(page.locator("#transcript:not([data-pending])")).to_have_count(1)
    return page.locator("html").evaluate(TRANSCRIPT_BLOCKS)


def server_transcript(page) -> list[list[str]]:
    """The same, from the page as the server renders it (what a reload shows before any script)."""
    html = page.request.get(page.url).text()
    return page.evaluate(f"html => ({TRANSCRIPT_BLOCKS})(new DOMParser().parseFromString(html, 'text/html'))", html)


def stored_transcript(run: OptimizationRun) -> list[list[str]]:
    """The stored events as the page shows them, less their rendering: consecutive deltas of one kind
    and round in one block."""
    blocks: list[list[str]] = []
    for event in RunEvent.objects.filter(run=run, kind__in=DISPLAYED).order_by("seq"):
        if event.kind in (RunEvent.Kind.REASONING, RunEvent.Kind.ANSWER):
            title = f"{event.kind.capitalize()}, round {event.round}"
            if blocks and blocks[-1][:2] == [event.kind, title]:
                continue
            blocks.append([event.kind, title, ""])
        elif event.kind == RunEvent.Kind.CANDIDATE:
            blocks.append(["candidate", str(event.data["candidate"]), event.text])
        else:
            blocks.append(["note", "", f"Round {event.round}: {event.text}"])
    return blocks


def test_a_typed_module_becomes_a_verified_kernel_to_download_and_report(page, court_server, viewport):
    type_module(page, court_server)
    screenshot(page, "demo")
    assert_fits_the_width(page)
    run = start_run(page)
    reasoning = page.locator("details.reasoning .markdown")
    expect(reasoning).to_contain_text("builtin optimizer", timeout=FIRST_WORDS_S)
    screenshot(page, "run-live")
    expect(reasoning).to_contain_text("Operations as eager PyTorch runs them", timeout=FIRST_WORDS_S)
    expect(page.locator("section.candidate")).to_have_count(1, timeout=FIRST_WORDS_S)
    expect(verdict_cell(page)).to_have_text("verified", timeout=VERDICT_S)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=FIRST_WORDS_S)
    screenshot(page, "run")
    assert_fits_the_width(page)
    candidate = Candidate.objects.get(run=run)
    assert Evaluation.objects.get(candidate=candidate).status == Evaluation.Status.VERIFIED

    page.goto(f"{court_server}/leaderboard/")
    expect(page.get_by_role("link", name=f"#{candidate.pk}", exact=True)).to_have_count(0)  # a paste's kernel
    promote_problem(problem=run.problem, by=None)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Leaderboard").click()
    page.wait_for_url("**/leaderboard/cpu/")
    expect(page.get_by_role("link", name="cpu", exact=True)).to_have_attribute("aria-current", "page")
    screenshot(page, "leaderboard-cpu")
    assert_fits_the_width(page)
    page.get_by_role("link", name=f"#{candidate.pk}", exact=True).click()
    page.wait_for_url(f"**/kernels/{candidate.pk}/")
    expect(page.get_by_role("heading", name=f"Kernel #{candidate.pk}")).to_be_visible()
    screenshot(page, "kernel-cpu")
    assert_fits_the_width(page)

    with page.expect_download() as download:
        page.get_by_role("link", name="Download .py").click()
    downloaded = Path(download.value.path()).read_bytes()
    assert download.value.suggested_filename.endswith(".py")
    assert downloaded == candidate.code.encode()
    assert downloaded == page.request.get(f"{court_server}/api/candidates/{candidate.pk}/").json()["code"].encode()

    users = get_user_model().objects
    users.create_user(f"reporter-{viewport}", password="pw-report-123")
    users.create_superuser(f"staff-{viewport}", "staff@example.org", "pw-staff-123")
    page.get_by_role("link", name="Report a reward hack").click()
    page.wait_for_url("**/accounts/login/**")
    page.get_by_label("Username").fill(f"reporter-{viewport}")
    page.get_by_label("Password").fill("pw-report-123")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**/kernels/{candidate.pk}/report/")
    page.get_by_label("What kind of hack").select_option("caching")
    page.get_by_label("What the kernel does").fill(f"Replays one captured output for every input ({viewport}).")
    page.get_by_role("button", name="File the report").click()
    page.wait_for_url(f"**/kernels/{candidate.pk}/")
    expect(page.get_by_text("the report is filed")).to_be_visible()
    assert HackReport.objects.filter(candidate=candidate, reporter__username=f"reporter-{viewport}").exists()

    page.get_by_role("button", name=f"Log out reporter-{viewport}").click()
    log_in(page, court_server, f"staff-{viewport}", "pw-staff-123", "/admin/kernels/hackreport/")
    page.wait_for_url("**/admin/kernels/hackreport/")
    expect(page.get_by_text(f"Replays one captured output for every input ({viewport}).")).to_be_visible()


@pytest.mark.parametrize("viewport", ["desktop"])
def test_a_reload_mid_run_resumes_the_stream_without_repeating_or_losing_events(page, court_server):
    type_module(page, court_server)
    run = start_run(page)
    expect(page.locator("details.reasoning .markdown")).to_contain_text("builtin optimizer", timeout=FIRST_WORDS_S)
    run.refresh_from_db()
    assert not run.is_finished, "the run ended before the page could be reloaded mid-run"
    page.reload()
    expect(page.locator("#transcript")).to_have_attribute("data-live", "true")

    expect(page.locator("section.candidate")).to_have_count(1, timeout=FIRST_WORDS_S)
    page.reload()
    expect(page.locator("#transcript")).to_have_attribute("data-live", "true")
    expect(verdict_cell(page)).to_have_text("verified", timeout=VERDICT_S)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=FIRST_WORDS_S)

    stored = stored_transcript(run)
    assert [kind for kind, _, _ in stored] == ["reasoning", "answer", "candidate"]
    shown = page_transcript(page)
    assert [block[:2] for block in shown] == [block[:2] for block in stored]
    assert shown[2][2].strip() == stored[2][2].strip()  # the highlighter drops blank lines at either end
    assert shown == server_transcript(page)
