"""The run page in a real browser: the round that streams, the model's Markdown rendered the same live
and after a reload (and nothing it writes runs), reasoning that grows and collapses, candidates
highlighted with their verdicts' times, what a queued verdict waits for, the kernels found before
the run, and a dropped connection said while it lasts. Screenshots at desktop and phone widths; no page scrolls sideways.

The model is a replay server of our own speaking vLLM's protocol (tests/inference/model_server.py),
streaming hostile Markdown: the server under test runs the run loop in embedded mode against it.
"""

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from court.models import Evaluation, OptimizationRun, RunEvent
from evaluation.harness import HARNESS_VERSION
from inference.markdown import render_markdown
from tests.court.factories import make_candidate, make_evaluation, make_problem
from tests.court.test_kernel_page import VERDICT
from tests.e2e.conftest import assert_fits_the_width, screenshot
from tests.inference.model_server import SERVED_MODEL, ReplayServer, Scenario
from tests.inference.test_markdown import HOSTILE
from tests.verification.conftest import register
from verification.evaluations import record_verdict

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Split across deltas where a naive renderer would join them into markup.
REASONING = [
    "# Plan\n\nThe model **multiplies** then adds; fuse both.\n",
    "A model may write <scr",
    "ipt>window.pwned = 'script'</scr",
    "ipt> or <img src=x onerror=\"window.pwned='img'\"> or ",
    "[a link](javascript:window.pwned='link') or <a href=\"javascript:alert(1)\">this</a>.\n\n",
    "| op | cost |\n|:--|--:|\n| matmul | 90% |\n\n",
    "- first\n- second\n\n> quoted <svg onload=\"window.pwned='svg'\">\n\n",
    "A [reference](https://arxiv.org/abs/2507.14111).\nSecond line.\n" * 12,
]
ANSWER = [
    "Here is the kernel ![x](https://tracker.invalid/pixel.png):\n\n```python\n",
    "class ModelNew:\n    pass  # <script>window.pwned='fence'</script>\n```\n",
]
SEEN_AS_TEXT = "<script>window.pwned = 'script'</script>"


def sse(reasoning: list[str], answer: list[str]) -> str:
    def chunk(delta: dict, finish=None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        body = {"id": "chatcmpl-hostile", "object": "chat.completion.chunk", "model": SERVED_MODEL, "choices": [choice]}
        return f"data: {json.dumps(body)}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": text}) for text in reasoning]
    events += [chunk({"content": text}) for text in answer]
    events.append(chunk({"content": ""}, finish="stop"))
    return "".join(events) + "data: [DONE]\n\n"


@pytest.fixture
def hostile_model(tmp_path, monkeypatch):
    """A model server streaming hostile Markdown slowly enough to watch, seen by the server under
    test (court_server reads the environment when it starts)."""
    transcript = tmp_path / "hostile.sse"
    transcript.write_text(sse(REASONING, ANSWER))
    server = ReplayServer(Scenario(str(transcript), event_delay_s=0.15))  # an absolute path stays itself
    monkeypatch.setenv("INFERENCE_VLLM_URL", server.url)
    monkeypatch.setenv("INFERENCE_VLLM_MODEL", SERVED_MODEL)
    yield server
    server.stop()


@pytest.fixture
def court(hostile_model, court_server):
    return court_server


def rendered(page):
    """The page once every delta it received is rendered (run.js renders at most every 50 ms)."""
    expect(page.locator("#transcript:not([data-pending])")).to_have_count(1)
    return page


def markdown_blocks(page) -> list[list[str]]:
    """Each Markdown block of the page as [kind, round, HTML], as the browser serialises it."""
    return page.locator("#transcript").evaluate(
        """transcript => Array.from(transcript.querySelectorAll("[data-kind]"))
             .filter((block) => block.querySelector(".markdown"))
             .map((block) => [block.dataset.kind, block.dataset.round, block.querySelector(".markdown").innerHTML])"""
    )


def server_markdown_blocks(page, url: str) -> list[list[str]]:
    """The same, from the page as the server renders it (no script run), parsed by this browser."""
    html = page.request.get(url).text()
    return page.evaluate(
        """html => Array.from(new DOMParser().parseFromString(html, "text/html").querySelectorAll("#transcript [data-kind]"))
             .filter((block) => block.querySelector(".markdown"))
             .map((block) => [block.dataset.kind, block.dataset.round, block.querySelector(".markdown").innerHTML])""",
        html,
    )


def start_vllm_run(page, base: str, *, rounds: int) -> OptimizationRun:
    problem = make_problem(scale=7, origin="kernelbench", level=1, task=1)
    page.goto(f"{base}/?example={problem.pk}")
    expect(page.locator("#id_source")).to_have_value(problem.source)
    page.get_by_label("Model backend").select_option("vllm")
    page.get_by_label("Rounds").fill(str(rounds))
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_url("**/runs/*/")
    return OptimizationRun.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def test_hostile_markdown_streams_rendered_runs_nothing_and_reloads_the_same(page, court, viewport):
    run = start_vllm_run(page, court, rounds=2)
    expect(page.locator(".messages")).to_have_text("This module is L1 T1, known already; no kernel for it is verified yet.")
    expect(page.locator("#round")).to_have_text("1")
    expect(page.locator("#round-part")).to_contain_text("round 1 of 2")
    reasoning = page.locator("details.reasoning .markdown").first
    expect(reasoning).to_contain_text("A model may write", timeout=30_000)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "running")
    screenshot(page, "run-streaming")
    expect(page.locator("#round-part")).to_contain_text("round 2 of 2", timeout=60_000)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=60_000)
    expect(page.locator("#round-part")).to_contain_text("round 2 of 2")

    # What the model wrote as markup is shown as text, and ran nothing.
    expect(reasoning).to_contain_text(SEEN_AS_TEXT)
    assert page.evaluate("() => window.pwned") is None
    transcript = page.locator("#transcript")
    assert transcript.locator("script, img, svg, iframe, [onerror], [onload], [style]").count() == 0
    assert transcript.locator('a[href^="javascript"]').count() == 0
    expect(reasoning.get_by_role("link", name="reference").first).to_have_attribute("href", "https://arxiv.org/abs/2507.14111")
    expect(reasoning.locator("table th").first).to_have_text("op")

    # Rendered live from deltas, from the replay after a reload, and by the server: the same.
    live = markdown_blocks(rendered(page))
    assert [(kind, round) for kind, round, _ in live] == [
        ("reasoning", "1"),
        ("answer", "1"),
        ("reasoning", "2"),
        ("answer", "2"),
    ]
    assert live == server_markdown_blocks(page, page.url)
    page.reload()
    expect(transcript).to_have_attribute("data-live", "true")
    assert markdown_blocks(rendered(page)) == live
    assert page.evaluate("() => window.pwned") is None
    screenshot(page, "run-markdown")
    assert_fits_the_width(page)
    assert RunEvent.objects.filter(run=run, kind="no_candidate").count() == 2


@pytest.mark.parametrize("viewport", ["desktop"])
def test_a_second_tab_follows_the_same_run(page, court):
    start_vllm_run(page, court, rounds=1)
    second = page.context.new_page()
    second.goto(page.url)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=60_000)
    expect(second.locator("#run-status")).to_have_attribute("data-status", "done", timeout=60_000)
    assert markdown_blocks(rendered(second)) == markdown_blocks(rendered(page))
    assert second.evaluate("() => window.pwned") is None


@pytest.mark.parametrize("viewport", ["desktop"])
def test_the_reasoning_grows_and_collapses(page, court):
    start_vllm_run(page, court, rounds=1)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=60_000)
    reasoning = page.locator("details.reasoning")
    box = reasoning.locator(".markdown")
    held = box.bounding_box()["height"]
    reasoning.get_by_role("button", name="Show all").click()
    expect(reasoning.get_by_role("button", name="Show less")).to_have_attribute("aria-expanded", "true")
    assert box.bounding_box()["height"] > held
    reasoning.locator("summary").click()
    expect(box).to_be_hidden()
    reasoning.locator("summary").click()
    expect(box).to_be_visible()


@pytest.fixture
def finished_run():
    """A run that found a verified kernel, on a problem with a kernel found before it, and whose second
    candidate waits behind a job that has held the only h100 worker for ten minutes."""
    problem = make_problem(scale=5, title="Scales by five.")
    earlier = make_candidate(problem=problem, scale=3)
    make_evaluation(earlier, arch="cpu", speedup_eager=1.4)
    run = OptimizationRun.objects.create(problem=problem, status="done", rounds_completed=2, max_rounds=2)
    kernel = make_candidate(problem=problem, run=run, round=1)
    waiting = make_candidate(problem=problem, run=run, round=2, code=kernel.code.replace("x * 2", "x.mul(2)"))
    record_verdict(Evaluation.objects.create(candidate=kernel, arch="h100", harness_version=HARNESS_VERSION), VERDICT)
    Evaluation.objects.create(
        candidate=waiting, arch="h100", harness_version=HARNESS_VERSION, queue="gpu.h100", enqueued_at=timezone.now()
    )
    busy = make_candidate(scale=11)
    worker = register("h100")
    Evaluation.objects.create(
        candidate=busy,
        arch="h100",
        harness_version=HARNESS_VERSION,
        status="running",
        stage="timing",
        worker=worker.name,
        queue="gpu.h100",
        enqueued_at=timezone.now() - timedelta(minutes=11),
        started_at=timezone.now() - timedelta(minutes=10),
    )
    events = [
        ("status", 1, "Generating", {"status": "running", "rounds_completed": 0, "error": ""}),
        ("reasoning", 1, "Fuse the **scale**.", {}),
        ("candidate", 1, kernel.code, {"candidate": kernel.pk, "language": "pytorch", "url": kernel.get_absolute_url()}),
        ("status", 2, "Generating", {"status": "running", "rounds_completed": 1, "error": ""}),
        ("candidate", 2, waiting.code, {"candidate": waiting.pk, "language": "pytorch", "url": waiting.get_absolute_url()}),
        ("status", 2, "Done", {"status": "done", "rounds_completed": 2, "error": ""}),
    ]
    for seq, (kind, round, text, data) in enumerate(events, start=1):
        RunEvent.objects.create(run=run, seq=seq, kind=kind, round=round, text=text, data=data)
    return run, earlier, kernel, waiting


# The run is arranged before the server starts: its workers would verify on the CPU what is made after.
def test_verdicts_show_times_code_is_highlighted_and_a_queued_one_says_why(finished_run, page, court_server, viewport):
    run, earlier, kernel, waiting = finished_run
    page.goto(f"{court_server}{run.get_absolute_url()}")
    expect(page.locator("#transcript")).to_have_attribute("data-live", "true")

    found_before = page.locator("section", has=page.get_by_role("heading", name="Already verified for this problem"))
    expect(found_before).to_contain_text(f"Kernel #{earlier.pk}")
    expect(found_before).not_to_contain_text(f"Kernel #{kernel.pk}")
    expect(page.locator("#round-part")).to_contain_text("round 2 of 2")

    verdict = page.locator(f'section.candidate[data-candidate="{kernel.pk}"] tr[data-arch="h100"]')
    expect(verdict.locator("td.status")).to_have_text("verified")
    expect(verdict.locator("td.time")).to_have_text("0.250 ms")
    expect(verdict.locator("td.speedup").first).to_have_text("2.00x eager 0.500 ms")
    # The reason within the width, at 390 px too (issue 33: hidden off the side, behind a blank gap).
    reason = verdict.locator("td").last
    expect(reason).to_contain_text("checks passed")
    box = reason.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"], box
    code = page.locator(f'section.candidate[data-candidate="{kernel.pk}"] details.code')
    code.locator("summary").click()
    expect(code.locator(".highlight span.k").first).to_be_visible()

    queued = page.locator(f'section.candidate[data-candidate="{waiting.pk}"] tr[data-arch="h100"] td.status')
    expect(queued.locator(".wait")).to_have_text(
        "Next in line for the only h100 worker (busy: 1 running, the longest for 10 min)."
    )
    screenshot(page, "run-verdicts")
    assert_fits_the_width(page)


MARKDOWN_SAMPLES = [
    *HOSTILE,
    "".join(REASONING),
    "".join(ANSWER),
    "# T\n\n1) one\n2) two\n\n***\n\n~~gone~~ `a<b` **bold _both_**\\\nhard break",
    "[site](/leaderboard/ 'title') [mail](mailto:a@b.org) [ftp](ftp://x.org) <https://x.org/a_b>",
    '[ref][1]\n\n[1]: https://example.org "T"',
    "| a | b |\n|---|:-:|\n| `|` | **x** |",
    "    indented code\n\n> quote\n> > nested",
    "&amp; &lt;tag&gt; &#x27; &copy; \\*not em\\*",
]


@pytest.mark.parametrize("viewport", ["desktop"])
def test_the_browser_renders_markdown_as_the_server_does(page, court_server):
    run = OptimizationRun.objects.create(problem=make_problem())
    page.goto(f"{court_server}{run.get_absolute_url()}")
    expect(page.locator("#transcript")).to_have_attribute("data-live", "true")
    shown = page.evaluate(
        """([samples, served]) => samples.map((text, index) => {
             const browser = document.createElement("div");
             browser.replaceChildren(window.CourtMarkdown.render(text));
             const server = document.createElement("div");
             server.innerHTML = served[index];
             return [browser.innerHTML, server.innerHTML];
           })""",
        [MARKDOWN_SAMPLES, [str(render_markdown(text)) for text in MARKDOWN_SAMPLES]],
    )
    for text, (browser, server) in zip(MARKDOWN_SAMPLES, shown, strict=True):
        assert browser == server, text
    assert page.evaluate("() => window.pwned") is None


def test_a_dropped_socket_says_reconnecting_until_it_is_back(page, court_server):
    run = OptimizationRun.objects.create(problem=make_problem(scale=13), status="running", max_rounds=1)
    server_back = []

    def socket(route):
        if server_back:
            route.connect_to_server()
        else:
            route.close()  # as a restarting web process drops it

    page.route_web_socket("**/ws/runs/**", socket)
    page.goto(f"{court_server}{run.get_absolute_url()}")
    expect(page.locator("#reconnecting")).to_be_visible()

    server_back.append(True)
    expect(page.locator("#reconnecting")).to_be_hidden(timeout=15_000)
    expect(page.locator("#transcript")).to_have_attribute("data-live", "true")
