"""Earlier candidates as the contrastive prompt shows them: trimmed code and measured verdicts.

The section format is also read back (see `inference.prompts.reading`), so the builtin optimizer
sees exactly what a model sees: each candidate is a `### Candidate from round N` heading, one
bullet per verdict, then the code.
"""

from dataclasses import asdict, dataclass, field

# A long candidate keeps its head (imports, kernels' signatures) and its tail (ModelNew).
CODE_HEAD_LINES = 60
CODE_TAIL_LINES = 40
REASON_MAX_CHARS = 500
MAX_CANDIDATES = 6

OMITTED_MARKER = "# ... [{count} lines omitted] ..."
VERIFIED = "verified"


@dataclass(frozen=True)
class PriorVerdict:
    arch: str
    status: str
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    reason: str = ""
    # The lower end of the speedup's 95% interval over eager (None where the harness measured none).
    speedup_eager_low: float | None = None


@dataclass(frozen=True)
class PriorCandidate:
    code: str
    round: int
    verdicts: list[PriorVerdict] = field(default_factory=list)

    @property
    def best_speedup(self) -> float | None:
        speedups = [v.speedup_eager for v in self.verdicts if v.status == VERIFIED and v.speedup_eager is not None]
        return max(speedups, default=None)

    @property
    def surely_faster(self) -> float | None:
        """The best lower end of a verified speedup's interval: how much faster it is beyond doubt."""
        lows = [v.speedup_eager_low for v in self.verdicts if v.status == VERIFIED and v.speedup_eager_low is not None]
        return max(lows, default=None)

    def as_dict(self) -> dict:
        return asdict(self)


def trim_code(code: str, *, head: int = CODE_HEAD_LINES, tail: int = CODE_TAIL_LINES) -> str:
    lines = code.rstrip("\n").splitlines()
    if len(lines) <= head + tail:
        return "\n".join(lines)
    omitted = len(lines) - head - tail
    return "\n".join([*lines[:head], OMITTED_MARKER.format(count=omitted), *lines[-tail:]])


def _speedup(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.2f}x"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= REASON_MAX_CHARS else flat[: REASON_MAX_CHARS - 3] + "..."


def verdict_line(verdict: PriorVerdict) -> str:
    line = f"- {verdict.arch}: {verdict.status}"
    if verdict.status == VERIFIED:
        line += f"; {_speedup(verdict.speedup_eager)} vs eager; {_speedup(verdict.speedup_compile)} vs torch.compile"
    if verdict.reason:
        line += f"; reason: {_one_line(verdict.reason)}"
    return line


def _rank(candidate: PriorCandidate) -> tuple:
    best = candidate.best_speedup
    return (best is None, -(best or 0.0), -candidate.round)


def candidates_shown(history: list[PriorCandidate], limit: int = MAX_CANDIDATES) -> list[PriorCandidate]:
    """The fastest verified first, then the rest, newest first; at most `limit` of them."""
    return sorted(history, key=_rank)[:limit]


def history_section(history: list[PriorCandidate], *, limit: int = MAX_CANDIDATES) -> str:
    shown = candidates_shown(history, limit)
    parts = []
    for candidate in shown:
        verdicts = [verdict_line(v) for v in candidate.verdicts] or ["- not evaluated: no verdict arrived in time"]
        parts.append(
            f"### Candidate from round {candidate.round}\n\n"
            + "\n".join(verdicts)
            + f"\n\n```python\n{trim_code(candidate.code)}\n```"
        )
    if len(history) > len(shown):
        parts.append(f"({len(history) - len(shown)} older candidates not shown.)")
    return "\n\n".join(parts)
