"""The run page as the server renders it (a reload, a late visitor): the round it is in, the kernels
found before it, its Markdown rendered safely, its candidates highlighted, its verdicts' times and
what a queued verdict waits for."""

import pytest
from django.utils import timezone

from court.models import Evaluation, OptimizationRun, RunEvent
from court.presentation import format_ms
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import PROBLEM_SOURCE, make_candidate, make_evaluation, make_problem
from tests.court.test_kernel_page import VERDICT
from tests.verification.conftest import register
from verification.evaluations import record_verdict

pytestmark = pytest.mark.django_db


def run_with_events(*events, problem=None, **fields) -> OptimizationRun:
    run = OptimizationRun.objects.create(problem=problem or make_problem(), **fields)
    for seq, (kind, round, text, data) in enumerate(events, start=1):
        RunEvent.objects.create(run=run, seq=seq, kind=kind, round=round, text=text, data=data)
    return run


def status(name: str, round: int, rounds_completed: int):
    return ("status", round, name.capitalize(), {"status": name, "rounds_completed": rounds_completed, "error": ""})


def candidate_event(candidate, round=1):
    data = {"candidate": candidate.pk, "language": candidate.language, "url": candidate.get_absolute_url()}
    return ("candidate", round, candidate.code, data)


def page(client, run) -> str:
    response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def test_the_round_shown_is_the_round_that_streams(client):
    run = run_with_events(status("running", 1, 0), ("reasoning", 1, "Thinking.", {}), status="running", max_rounds=2)
    assert 'round <span id="round">1</span> of 2' in page(client, run)


def test_a_run_not_started_names_no_round(client):
    content = page(client, run_with_events(max_rounds=2))
    assert '<span id="round-part" hidden>' in content


def test_a_finished_run_shows_the_last_round_it_ran(client):
    run = run_with_events(
        status("running", 1, 0), status("running", 2, 1), status("done", 2, 2), status="done", rounds_completed=2
    )
    assert 'round <span id="round">2</span> of 2' in page(client, run)


def test_the_runs_own_kernels_are_not_listed_as_found_before(client):
    problem = make_problem()
    earlier = make_candidate(problem=problem, scale=3)
    make_evaluation(earlier, speedup_eager=1.5)
    run = run_with_events(problem=problem)
    own = make_candidate(problem=problem, run=run, round=1)
    make_evaluation(own, speedup_eager=3.0)
    run_with_events(problem=problem)  # another run, to see that "found before" is per run
    content = page(client, run)
    found_before = content.split("Already verified for this problem", 1)[1].split("</section>", 1)[0]
    assert f"Kernel #{earlier.pk}" in found_before
    assert f"Kernel #{own.pk}" not in found_before


def test_no_found_before_section_when_only_the_run_found_kernels(client):
    run = run_with_events()
    make_evaluation(make_candidate(problem=run.problem, run=run, round=1))
    assert "Already verified for this problem" not in page(client, run)


def test_reasoning_and_answers_are_markdown_rendered_once_per_block(client):
    run = run_with_events(
        ("reasoning", 1, "**Fuse** the", {}),
        ("reasoning", 1, " ops <script>alert(1)</script>", {}),
        ("answer", 1, "[x](javascript:alert(1))\n```python\nx = 1\n```", {}),
    )
    content = page(client, run)
    assert '<div class="markdown"><p><strong>Fuse</strong> the ops &lt;script&gt;alert(1)&lt;/script&gt;</p>' in content
    assert content.count('class="reasoning"') == 1
    assert "javascript:" not in content.split('id="transcript"', 1)[1].replace("[x](javascript:alert(1))", "")
    assert '<pre><code class="language-python">x = 1' in content


def test_candidate_code_is_highlighted(client):
    run = run_with_events()
    candidate = make_candidate(problem=run.problem, run=run, round=1)
    run.events.create(seq=1, kind="candidate", round=1, text=candidate.code, data=candidate_event(candidate)[3])
    content = page(client, run)
    assert '<div class="code"><div class="highlight"><pre>' in content
    assert '<span class="k">class</span>' in content or '<span class="kn">import</span>' in content


def test_a_verdict_shows_the_times_beside_the_speedups(client):
    run = run_with_events()
    candidate = make_candidate(problem=run.problem, run=run, round=1)
    run.events.create(seq=1, kind="candidate", round=1, text=candidate.code, data=candidate_event(candidate)[3])
    evaluation = Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    record_verdict(evaluation, VERDICT, worker="gpu-host:h100:0")
    content = page(client, run)
    assert '<td data-label="This kernel" class="time">0.250 ms</td>' in content
    assert '<td data-label="vs eager" class="speedup">2.00x <small>eager 0.500 ms</small></td>' in content


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.25, "0.250 ms"), (0.01234, "0.0123 ms"), (1.5, "1.50 ms"), (12.345, "12.3 ms"), (1234.5, "1234 ms"), (None, "")],
)
def test_times_have_three_significant_figures(value, shown):
    assert format_ms(value) == shown


def queued(candidate, arch="cpu") -> Evaluation:
    return Evaluation.objects.create(
        candidate=candidate, arch=arch, harness_version=HARNESS_VERSION, queue=f"gpu.{arch}", enqueued_at=timezone.now()
    )


def test_a_queued_verdict_says_what_it_waits_for(client):
    run = run_with_events()
    candidate = make_candidate(problem=run.problem, run=run, round=1)
    other = queued(make_candidate(scale=5))
    queued(candidate)
    Evaluation.objects.filter(pk=other.pk).update(status="running", started_at=timezone.now())
    register("cpu")
    run.events.create(seq=1, kind="candidate", round=1, text=candidate.code, data=candidate_event(candidate)[3])
    content = page(client, run)
    assert "Next in line for the only cpu worker (busy: 1 running, the longest for 0 s)." in content


def test_the_waits_answer_for_the_runs_queued_verdicts(client):
    run = run_with_events(status="waiting")
    evaluation = queued(make_candidate(problem=run.problem, run=run, round=1))
    response = client.get(f"/runs/{run.pk}/waits/")
    assert response.json() == {
        "waits": {
            str(evaluation.pk): "Waiting for a cpu worker: none is running now. "
            "It is verified when one starts; nothing is lost meanwhile."
        },
        "run": "",
    }


def test_a_queued_run_says_what_it_waits_for(client):
    problem = make_problem()
    run_with_events(problem=problem, status="running")
    run_with_events(problem=problem, status="queued")
    run = run_with_events(problem=problem)  # queued, behind the other two

    said = "Waiting for a free model loop: 1 run running, 1 queued before it."
    assert client.get(f"/runs/{run.pk}/waits/").json()["run"].startswith(said)
    assert said in page(client, run)


def test_the_waits_of_a_hidden_run_are_not_found(client):
    run = run_with_events()
    OptimizationRun.objects.filter(pk=run.pk).update(requester=None, session_key="someone-else")
    run.problem.visibility = "hidden"
    run.problem.save()
    assert client.get(f"/runs/{run.pk}/waits/").status_code == 404


def test_a_pasted_module_is_titled_by_its_docstring(client):
    # Issue 33: a paste that says what it is at its top, its Model undocumented, was only "Problem 251".
    source = '"""A fused scale by seven."""\n' + PROBLEM_SOURCE.format(scale=7).replace('    """Scales by 7."""\n', "")
    client.post("/", {"source": source, "backend": "builtin", "max_rounds": "1"})
    run = OptimizationRun.objects.get()

    lead = page(client, run).split('<p class="lead">', 1)[1].split("</p>", 1)[0]

    assert lead == "A fused scale by seven."
