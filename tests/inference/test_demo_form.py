"""Every refusal of the demo's form is shown beside its field, in words that say what to do."""

import pytest

from court.models import OptimizationRun, Problem
from tests.court.factories import PROBLEM_SOURCE, make_candidate, make_evaluation, make_problem

pytestmark = pytest.mark.django_db


def post(client, **fields):
    data = {"source": PROBLEM_SOURCE.format(scale=7), "backend": "builtin", "max_rounds": "1", **fields}
    return client.post("/", data)


def errors_of(content: str, field: str) -> str:
    return content.split(f'id="{field}-errors"', 1)[1].split("</ul>", 1)[0]


def test_an_empty_paste_says_to_paste_a_module(client):
    content = post(client, source="").content.decode()
    assert "Paste a PyTorch module (Model, get_inputs, get_init_inputs) into the editor" in errors_of(content, "source")
    assert 'aria-describedby="source-errors"' in content
    assert "{#" not in content and "{%" not in content
    assert not OptimizationRun.objects.exists()


def test_a_module_without_get_inputs_names_it_as_code(client):
    source = PROBLEM_SOURCE.format(scale=7).replace("def get_inputs(", "def make_inputs(")
    errors = errors_of(post(client, source=source).content.decode(), "source")

    assert "No function <code>get_inputs()</code> is defined at module level" in errors
    assert "`" not in errors


@pytest.mark.parametrize("rounds", ["0", "-1"])
def test_too_few_rounds_says_how_many(client, rounds):
    content = post(client, max_rounds=rounds).content.decode()
    assert "A run needs at least one round: choose from 1 to 5." in errors_of(content, "max_rounds")
    assert not Problem.objects.exists()


def test_too_many_rounds_says_how_many(client):
    assert "at most 5 rounds here" in errors_of(post(client, max_rounds="9").content.decode(), "max_rounds")


def test_an_unknown_backend_names_those_there_are(client):
    content = post(client, backend="gpt-9").content.decode()
    assert "That backend is not available here: choose one of Builtin optimizer" in errors_of(content, "backend")


def test_a_refused_run_is_said_above_the_form(client, monkeypatch):
    from inference import services

    def refuse(**kwargs):
        raise services.RunError("Unknown backend 'builtin': choose one of vllm.")

    monkeypatch.setattr(services, "start_run", refuse)
    content = post(client).content.decode()
    assert "Unknown backend &#x27;builtin&#x27;: choose one of vllm." in errors_of(content, "run")


def test_a_public_module_pasted_without_kernels_says_none_is_verified(client):
    make_problem(scale=7)  # listed, as a KernelBench problem is
    response = client.post("/", {"source": PROBLEM_SOURCE.format(scale=7), "backend": "builtin", "max_rounds": 1}, follow=True)
    content = response.content.decode()
    assert "known already; no kernel for it is verified yet" in content
    assert "listed below" not in content


def test_a_public_module_with_kernels_says_they_are_listed_below(client):
    make_evaluation(make_candidate(problem=make_problem(scale=7), scale=3))
    response = client.post("/", {"source": PROBLEM_SOURCE.format(scale=7), "backend": "builtin", "max_rounds": 1}, follow=True)
    content = response.content.decode()
    assert "kernels already verified for it are listed below" in content
    assert "Already verified for this problem" in content


def test_a_paste_pasted_again_says_nothing_of_the_first(client):
    # A paste is its run's: pasting the same module tells a visitor nothing of someone else's run.
    post(client)
    response = client.post("/", {"source": PROBLEM_SOURCE.format(scale=7), "backend": "builtin", "max_rounds": 1}, follow=True)
    content = response.content.decode()
    assert "known already" not in content and "listed below" not in content
