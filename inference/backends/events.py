"""What a backend yields while it answers: typed events, in the order they happen.

A stream is any number of `ReasoningDelta` and `AnswerDelta` events followed by exactly one
`Finished` or one `Error`. The run loop stores each event in the transcript as it arrives;
`as_dict()` is the JSON-able form it stores.
"""

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's thinking, shown to the person but never searched for code."""

    text: str


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of the answer proper, where the candidate's code block is looked for."""

    text: str


@dataclass(frozen=True)
class Finished:
    """The answer is complete. Token counts are None where the backend has none to report."""

    prompt_tokens: int | None
    completion_tokens: int | None
    time_to_first_token_s: float | None
    total_s: float
    finish_reason: str = "stop"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Error:
    """The answer could not be completed; `message` tells a person what to do about it."""

    message: str
    retryable: bool = False
    # The problem itself cannot run (it hung, say): the message is the public reason, and the run
    # ends rather than asking again.
    problem: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


Event = ReasoningDelta | AnswerDelta | Finished | Error
