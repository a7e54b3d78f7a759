"""The leaderboard: the best verified kernel per problem and architecture, and its statistics.

Only evaluations of the current harness version count, only listed or featured kernels, and
only problems that are listed and not degenerate. It is computed once per change and kept in the
database (snapshots: `changed()` is what every owner of a change it may show calls).

By role: `query` (what the database is asked), `rows` (a problem's best kernel, with its links),
`summary` (statistics and chart), `boards` (one architecture's board, from its snapshot),
`comparison` (two architectures side by side), `export` (CUDA-L1's release shape) and `snapshots`
(versions and the kept snapshots). Callers use the names below.
"""

from court.leaderboard.boards import Board, best_per_arch, board, compute_board, leaderboard_archs
from court.leaderboard.comparison import ComparedRow, Comparison, compare
from court.leaderboard.export import export_body, export_lines
from court.leaderboard.query import (
    SPEEDUP_COLUMNS,
    arch_exists,
    best_per_problem,
    computed_archs,
    in_statistics,
    leaderboard_evaluations,
)
from court.leaderboard.rows import BoardRow, problem_order
from court.leaderboard.snapshots import MAX_AGE, SHAPE, changed
from court.leaderboard.summary import DISTRIBUTION_BUCKETS, Summary, distribution, summarize, summary_table

__all__ = [
    "DISTRIBUTION_BUCKETS",
    "MAX_AGE",
    "SHAPE",
    "SPEEDUP_COLUMNS",
    "Board",
    "BoardRow",
    "ComparedRow",
    "Comparison",
    "Summary",
    "arch_exists",
    "best_per_arch",
    "best_per_problem",
    "board",
    "changed",
    "compare",
    "compute_board",
    "computed_archs",
    "distribution",
    "export_body",
    "export_lines",
    "in_statistics",
    "leaderboard_evaluations",
    "leaderboard_archs",
    "problem_order",
    "summarize",
    "summary_table",
]
