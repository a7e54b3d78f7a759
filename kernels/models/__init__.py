"""The platform's data: problems, runs, candidates (kernels once verified), evaluations, reports."""

from kernels.models.audit import AuditEntry
from kernels.models.candidates import Candidate, Claim, Curation
from kernels.models.evaluations import Evaluation
from kernels.models.leaderboard import LeaderboardSnapshot, LeaderboardVersion
from kernels.models.problems import Problem
from kernels.models.proofs import ProofCheck
from kernels.models.releases import Release
from kernels.models.reports import HackReport
from kernels.models.runs import OptimizationRun
from kernels.models.transcripts import RunEvent

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
