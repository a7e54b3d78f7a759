"""Two architectures' leaderboards side by side, problem by problem, each side from its own board."""

import statistics
from dataclasses import dataclass

from court.leaderboard.boards import board
from court.leaderboard.rows import BoardRow, problem_order


@dataclass
class ComparedRow:
    """One problem's best kernel on each of two architectures (None where it has none there)."""

    first: BoardRow | None
    second: BoardRow | None

    @property
    def problem(self) -> BoardRow:
        """The row whose problem fields (label, title, level, url) the page shows."""
        row = self.first or self.second
        assert row is not None  # compare() makes a row only for a problem on either side
        return row

    @property
    def sides(self) -> tuple[BoardRow | None, BoardRow | None]:
        return self.first, self.second

    @property
    def same_kernel(self) -> bool:
        return bool(self.first and self.second and self.first.kernel == self.second.kernel)

    @property
    def time_ratio(self) -> float | None:
        """The second architecture's best kernel's time over the first's: below 1, the problem runs
        faster there (each side's own best kernel, each timed on its own GPU)."""
        if self.first and self.second and self.first.candidate_ms and self.second.candidate_ms:
            return self.second.candidate_ms / self.first.candidate_ms
        return None


@dataclass
class Comparison:
    """Two architectures' leaderboards side by side, problem by problem, and what they say together."""

    first: str
    second: str
    rows: list[ComparedRow]

    @property
    def on_both(self) -> list[ComparedRow]:
        return [row for row in self.rows if row.first and row.second]

    @property
    def only_first(self) -> int:
        return sum(1 for row in self.rows if row.second is None)

    @property
    def only_second(self) -> int:
        return sum(1 for row in self.rows if row.first is None)

    @property
    def same_kernel(self) -> int:
        return sum(1 for row in self.rows if row.same_kernel)

    def median_speedup(self, side: str) -> float | None:
        """The median speedup over eager of one side's best kernels, over the problems on both."""
        values = [getattr(row, side).values["eager"] for row in self.on_both]
        return statistics.median(values) if values else None

    @property
    def median_speedup_first(self) -> float | None:
        return self.median_speedup("first")

    @property
    def median_speedup_second(self) -> float | None:
        return self.median_speedup("second")

    @property
    def median_time_ratio(self) -> float | None:
        ratios = [row.time_ratio for row in self.on_both if row.time_ratio]
        return statistics.median(ratios) if ratios else None


def compare(first: str, second: str) -> Comparison:
    """Every problem with a verified kernel on either architecture, in problem order, each side from
    its own leaderboard (the same snapshots its page reads)."""
    firsts = {row.problem: row for row in board(first).rows}
    seconds = {row.problem: row for row in board(second).rows}
    rows = [ComparedRow(firsts.get(pk), seconds.get(pk)) for pk in firsts.keys() | seconds.keys()]
    return Comparison(first, second, sorted(rows, key=lambda row: problem_order(row.problem)))
