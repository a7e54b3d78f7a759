"""One architecture's board (its rows, statistics and chart), the architectures that have one, and
a problem's best kernel on each: what the pages, the API and the socket read, from the snapshots.
"""

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TypeVar

from court.leaderboard.query import best_per_problem, computed_archs
from court.leaderboard.rows import BoardRow
from court.leaderboard.snapshots import snapshot
from court.leaderboard.summary import Summary, distribution, summary_table
from court.models import Problem

T = TypeVar("T")


@dataclass
class Board:
    """One architecture's leaderboard: its rows in problem order, its statistics and its chart."""

    arch: str
    rows: list[BoardRow]
    summary: list[Summary]
    chart: dict
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def kept(self, name: str, make: Callable[[], T]) -> T:
        """What a reader derives from this board (the API's representation), made once: a board
        is read again by this process until the leaderboard changes."""
        if name not in self.derived:
            self.derived[name] = make()
        return self.derived[name]

    def to_json(self) -> str:
        summary = [{**asdict(s), "speedups": []} for s in self.summary]
        return json.dumps({"arch": self.arch, "rows": [asdict(r) for r in self.rows], "summary": summary, "chart": self.chart})

    @classmethod
    def from_json(cls, body: str) -> "Board":
        data = json.loads(body)
        return cls(
            arch=data["arch"],
            rows=[BoardRow(**row) for row in data["rows"]],
            summary=[Summary(**s) for s in data["summary"]],
            chart=data["chart"],
        )


def compute_board(arch: str) -> Board:
    rows = [BoardRow.of(evaluation) for evaluation in best_per_problem(arch)]
    return Board(arch=arch, rows=rows, summary=summary_table(arch, rows=rows), chart=distribution(rows))


def leaderboard_archs() -> list[str]:
    """Architectures with something to show: a delisted or hidden kernel opens no tab."""
    return snapshot("archs", lambda: json.dumps(computed_archs()), json.loads)


def board(arch: str) -> Board:
    """The leaderboard of one architecture, as of the last change."""
    return snapshot(f"board:{arch}", lambda: compute_board(arch).to_json(), Board.from_json)


def best_per_arch(problem: Problem) -> dict[str, BoardRow]:
    """The problem's best kernel on each architecture whose leaderboard lists it, by architecture."""
    found = {arch: next((row for row in board(arch).rows if row.problem == problem.pk), None) for arch in leaderboard_archs()}
    return {arch: row for arch, row in found.items() if row is not None}
