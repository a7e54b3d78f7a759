"""The harness's sandboxed side: what runs inside the reference, baseline, candidate and proof processes
(torch, triton), each started by the parent (processes.py) as `python -m evaluation.harness.sandboxed.<role>`.

The parent side, the package above, never imports these modules: it talks to the processes through
their channels and the call site's pipe only (import-linter's contracts in pyproject.toml).
"""
