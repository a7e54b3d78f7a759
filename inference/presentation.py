"""How a run is shown: its transcript as blocks of Markdown and highlighted candidates, its verdicts
with their times, where it stands. The run page renders these on the server; `static/js/run.js`
renders the same from the socket's events, and must agree with them (tests/e2e/test_run_page.py).
"""

from court.models import Evaluation, OptimizationRun, RunEvent
from court.models.evaluations import NO_DIFFERENCE, Speedup
from court.presentation import format_ms, highlighted_python
from court.selectors import REMOVED
from inference.markdown import render_markdown

MARKDOWN_KINDS = (RunEvent.Kind.REASONING, RunEvent.Kind.ANSWER)
# REMOVED: what staff hid of a round (court.selectors.RunRedaction), said once per round.
SHOWN_KINDS = (*MARKDOWN_KINDS, RunEvent.Kind.CANDIDATE, RunEvent.Kind.NO_CANDIDATE, RunEvent.Kind.ERROR, REMOVED)
# Baselines shown beside each verdict on the run page (the kernel page shows them all).
BASELINES = (("eager", "eager"), ("compile", "torch.compile"))


def with_highlighted_code(message: dict) -> dict:
    """A transcript message as the socket sends it: a candidate carries its code highlighted."""
    if message.get("kind") == RunEvent.Kind.CANDIDATE:
        return {**message, "html": str(highlighted_python(message["text"]))}
    return message


def transcript_blocks(messages: list[dict], evaluations: dict[int, list[Evaluation]], *, waits: dict[int, str]) -> list[dict]:
    """The stored transcript as the page shows it: one Markdown block per run of deltas of one kind
    and round (however the store chunked them), each candidate with its code and verdicts, and
    what each queued verdict waits for (`waits`, by evaluation); one note per round of what staff
    removed from it."""
    blocks: list[dict] = []
    for message in messages:
        kind = message["kind"]
        if kind not in SHOWN_KINDS:
            continue
        if kind == REMOVED and any(b["kind"] == REMOVED and b["round"] == message["round"] for b in blocks):
            continue
        last = blocks[-1] if blocks else None
        if kind in MARKDOWN_KINDS and last is not None and (last["kind"], last["round"]) == (kind, message["round"]):
            last["text"] += message["text"]
            continue
        block = {**message}
        if kind == RunEvent.Kind.CANDIDATE:
            block["code"] = highlighted_python(message["text"])
            found = evaluations.get(message["data"].get("candidate"), [])
            block["verdicts"] = [verdict_row(e, waits.get(e.pk, "")) for e in found]
        blocks.append(block)
    for block in blocks:
        if block["kind"] in MARKDOWN_KINDS:
            block["html"] = render_markdown(block["text"])
    return blocks


def current_round(run: OptimizationRun, messages: list[dict]) -> int:
    """The round the run is in (or ended in): its last status change says, as the live page reads it."""
    statuses = [m for m in messages if m["kind"] == RunEvent.Kind.STATUS]
    return statuses[-1]["round"] if statuses else run.rounds_completed


def format_speedup(speedup: Speedup) -> str:
    """A speedup as the run page shows it: noise (its interval reaching within 1% of 1) is said,
    never shown as a number (court.models.evaluations.Speedup); static/js/run.js does the same."""
    if speedup.value is None:
        return "—"
    return NO_DIFFERENCE if speedup.difference == NO_DIFFERENCE else f"{speedup.value:.2f}x"


def verdict_row(evaluation: Evaluation, wait: str = "") -> dict:
    times = evaluation.times_ms()
    return {
        "evaluation": evaluation,
        "status": evaluation.stage if evaluation.is_pending else evaluation.status,
        "time": format_ms(times.get("candidate")) or "—",
        "speedups": [
            {
                "baseline": label,
                "speedup": format_speedup(evaluation.speedup(name)),
                "time": format_ms(times.get(name)),
            }
            for name, label in BASELINES
        ],
        "wait": wait,
    }
