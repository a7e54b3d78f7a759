"""The verification harness's top-level package: evaluation.harness holds it all (DEVELOPERS.md)."""
