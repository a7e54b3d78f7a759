"""Signals the domain app (court) sends for work other apps do (it may not import them).

candidate_created(sender=Candidate, candidate): a new candidate, sent inside the transaction that
  created it (court.services.create_candidate); its receivers send their jobs once it commits.
reverification_requested(sender=Candidate, candidates, priority): evaluate these again on every
  live architecture, under the current harness.
proof_check_requested(sender=HackReport, report, archs): run the report's proof inputs against its
  kernel on these architectures.
"""

from django.dispatch import Signal

candidate_created = Signal()
reverification_requested = Signal()
proof_check_requested = Signal()
