"""The platform's data: problems, runs, candidates (kernels once verified), evaluations, reports."""

from court.models.audit import AuditEntry
from court.models.candidates import Candidate, Claim, Curation
from court.models.evaluations import Evaluation
from court.models.leaderboard import LeaderboardSnapshot, LeaderboardVersion
from court.models.problems import Problem
from court.models.proofs import ProofCheck
from court.models.releases import Release
from court.models.reports import HackReport
from court.models.runs import OptimizationRun
from court.models.transcripts import RunEvent

__all__ = [
    "AuditEntry",
    "Candidate",
    "Claim",
    "Curation",
    "Evaluation",
    "HackReport",
    "LeaderboardSnapshot",
    "LeaderboardVersion",
    "OptimizationRun",
    "Problem",
    "ProofCheck",
    "Release",
    "RunEvent",
]
