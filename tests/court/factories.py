"""Small builders for test data, with valid defaults."""

from django.utils import timezone

from court.models import Candidate, Evaluation, Problem
from court.services import create_candidate
from court.source import normalized_source_hash
from evaluation.harness import HARNESS_VERSION

PROBLEM_SOURCE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """Scales by {scale}."""
    def forward(self, x):
        return x * {scale}

def get_inputs():
    return [torch.randn(8)]

def get_init_inputs():
    return []
'''

CANDIDATE_SOURCE = """import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x * {scale}
"""


def make_problem(scale=2, **fields) -> Problem:
    source = PROBLEM_SOURCE.format(scale=scale)
    fields.setdefault("title", f"Scales by {scale}.")
    return Problem.objects.create(source=source, normalized_hash=normalized_source_hash(source), **fields)


def make_candidate(problem=None, scale=2, code=None, curation=None, curation_reason="", **fields) -> Candidate:
    """A candidate made the one way candidates are made (create_candidate: validated, announced to
    the workers), then curated as asked."""
    code = code or CANDIDATE_SOURCE.format(scale=scale)
    fields.setdefault("origin", Candidate.Origin.PERSON)
    candidate, _ = create_candidate(problem=problem or make_problem(scale=scale), code=code, **fields)
    if curation is not None:
        candidate.curation, candidate.curation_reason = curation, curation_reason
        candidate.save(update_fields=["curation", "curation_reason"])
    return candidate


def make_evaluation(candidate: Candidate, *, arch: str = "cpu", status: str = "verified", **fields) -> Evaluation:
    """A finished evaluation of the current harness (verified unless told)."""
    fields.setdefault("harness_version", HARNESS_VERSION)
    return Evaluation.objects.create(candidate=candidate, arch=arch, status=status, finished_at=timezone.now(), **fields)
