"""What every backend is: given chat messages, it yields events until it is done or told to stop.

Two ways to stop one: the caller stops iterating (closing the generator closes the backend's
connection or child process), or it passes `cancel`, a callable the backend asks between
steps; when it answers True the backend ends the stream with an `Error` saying so.
"""

from collections.abc import Callable, Iterator
from typing import Protocol, TypedDict

from inference.backends.events import Event


class Message(TypedDict):
    role: str  # "system" or "user"
    content: str


CancelCheck = Callable[[], bool]

CANCELLED_MESSAGE = "Cancelled: the run was asked to stop."


def never_cancelled() -> bool:
    return False


class Backend(Protocol):
    name: str

    def stream(self, messages: list[Message], *, cancel: CancelCheck = never_cancelled) -> Iterator[Event]: ...
