"""The builtin optimizer: the embedded default backend, with no model weights.

It reads the problem and the earlier rounds' verdicts from the prompt like any backend, analyses
the problem in the OS sandbox (`inference.backends.builtin.analysis`), streams that analysis as reasoning, and
answers with one candidate per round from a fixed catalogue of transformations
(`transformations.CATALOGUE`): the highest-ranked one not tried yet. No Django here: the GPU
benchmark (`benchmarks/builtin_optimizer_gpu.py`) runs it on a box with only torch.
"""

import time
from collections.abc import Iterator

from inference.backends.builtin import narrative
from inference.backends.builtin.analysis import analyse_problem
from inference.backends.builtin.analysis.profile import ProblemProfile
from inference.backends.builtin.transformations import Plan, candidate_code, plan
from inference.backends.events import AnswerDelta, Error, Event, Finished, ReasoningDelta
from inference.backends.interface import CANCELLED_MESSAGE, CancelCheck, Message, never_cancelled
from inference.prompts import read_prompt


class BuiltinBackend:
    name = "builtin"

    def __init__(self, *, analysis_timeout_s: float = 60.0, allow_unconfined: bool = False):
        self.analysis_timeout_s = analysis_timeout_s
        # Embedded mode only: without bubblewrap the analysis still runs, unconfined (the run page warns).
        self.allow_unconfined = allow_unconfined

    def stream(self, messages: list[Message], *, cancel: CancelCheck = never_cancelled) -> Iterator[Event]:
        started = time.monotonic()
        content = read_prompt(messages)
        if content.problem_source is None:
            yield Error("The prompt holds no ```python block with the problem, so the builtin optimizer has nothing to analyse.")
            return
        yield ReasoningDelta(narrative.INTRODUCTION)
        first_token_s = time.monotonic() - started
        profile = analyse_problem(
            content.problem_source, timeout_s=self.analysis_timeout_s, cancel=cancel, allow_unconfined=self.allow_unconfined
        )
        if cancel():
            yield Error(CANCELLED_MESSAGE)
            return
        if profile.timed_out:
            yield Error(
                f"The problem cannot run on its own: {profile.error}, so no candidate can be checked against it.", problem=True
            )
            return
        chosen = plan(profile, content.history)
        for line in narrative.analysis_lines(profile, chosen) + narrative.ranking_lines(chosen):
            yield ReasoningDelta(line)
        yield AnswerDelta(self.answer(content.problem_source, profile, chosen))
        yield Finished(
            prompt_tokens=None,
            completion_tokens=None,
            time_to_first_token_s=first_token_s,
            total_s=time.monotonic() - started,
        )

    @staticmethod
    def answer(problem_source: str, profile: ProblemProfile, chosen: Plan) -> str:
        if chosen.choice is None:
            return narrative.exhausted_text(chosen)
        code = candidate_code(chosen.choice.transformation, problem_source, profile)
        return narrative.answer_text(chosen.choice, code, chosen)
