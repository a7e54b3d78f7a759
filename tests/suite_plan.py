"""Loaded with `-p` (pyproject.toml), before Django reads its settings: the verifications the platform
runs in the suite (its workers, in this process or in servers of their own) make every check of the
default plan, with a fraction of its sampling. The default plan samples a CPU verification for about
30 s (its timing budgets), which the platform's tests do not look at: they check what happens around
the harness. Nor do they look at the two steps that only add facts for the kernel page, the profile
and the speed-of-light floor, which cost each verification seconds of CPU (both load torch.compile's
tracer in a sandboxed process), or at the A/A control, a fourth process (tests/harness/test_control.py);
the release the browser tests show is measured with the profile (tests/releases.py), so its kernel
pages carry one. The harness's own tests choose their plans
(tests/harness/conftest.py), and the settings' tests read the settings with none of the suite's
environment (tests/config/environments.py)."""

import json
import os

SUITE_PLAN = {
    "warmup_rounds": 1,
    "min_samples": 5,
    "max_samples": 10,
    "timing_budget_s": 0.5,
    "steady_min_rounds": 3,
    "steady_max_rounds": 5,
    "steady_budget_s": 0.75,
    "device_time_budget_s": 0.5,
    "bootstrap_resamples": 200,
    "profile": False,
    "speed_of_light": False,
    "control": False,
}

os.environ.setdefault("COURT_HARNESS_PLAN", json.dumps(SUITE_PLAN))
