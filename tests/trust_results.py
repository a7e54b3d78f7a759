"""The trust report's evidence (court/trust.py): each test a hack family names, its outcome in this run.

Registered by tests/conftest.py. At the end of a run it writes the named tests' outcomes to a JSON
file (TRUST_RESULTS, else var/trust-results.json), which the trust page and /api/trust/ read, and it
fails the run when a family names a test that does not exist or that failed in this run.

Under pytest-xdist the controller sees every worker's reports (pytest_runtest_logreport), so it alone
judges and writes; each worker tells it which named tests it collected (`workeroutput`), since only
workers collect. Nothing waits on test order: the judgement is made once every worker is down.

A subset run (`make test-fast`, a path, `-k`, `-m`): a named test it did not run keeps its last
recorded result in the file and fails nothing. A named test "does not exist" when its file or
function is gone, or when its function was collected in this run from a file run in full and the
exact id (a parametrization) was not among its items.
"""

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEEN = "trust_seen"


def results_path() -> Path:
    return Path(os.environ.get("TRUST_RESULTS") or REPO / "var" / "trust-results.json")


class TrustResults:
    def __init__(self, named, path: Path):
        self.named = list(dict.fromkeys(named))
        self.wanted = set(self.named)
        self.path = Path(path)
        self.functions = {test.split("[")[0] for test in self.named}
        self.seen: set[str] = set()  # named tests collected in this run
        self.seen_functions: set[str] = set()  # their functions (node ids without parameters), likewise
        self.outcomes: dict[str, str] = {}
        self.problems: list[str] = []

    # -- collection (a worker, or the only process) ------------------------------------------------

    def pytest_itemcollected(self, item):
        # Before deselection (-m, -k, --deselect): a deselected test exists.
        if item.nodeid in self.wanted:
            self.seen.add(item.nodeid)
        if (function := item.nodeid.split("[")[0]) in self.functions:
            self.seen_functions.add(function)

    def pytest_collection_finish(self, session):
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[SEEN] = {"tests": sorted(self.seen), "functions": sorted(self.seen_functions)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        seen = getattr(node, "workeroutput", {}).get(SEEN, {})
        self.seen.update(seen.get("tests", ()))
        self.seen_functions.update(seen.get("functions", ()))

    # -- outcomes (the controller sees every worker's reports) ------------------------------------

    def pytest_runtest_logreport(self, report):
        if report.nodeid not in self.wanted:
            return
        before = self.outcomes.get(report.nodeid)
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and before != "failed":
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and report.passed and before is None:
            self.outcomes[report.nodeid] = "passed"

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        config = session.config
        if hasattr(config, "workerinput") or config.option.collectonly:
            return
        self.problems = [f"{test}: {why}" for test in self.named if (why := self.judge(config, test))]
        if self.outcomes:
            self.write()
        if self.problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not self.problems:
            return
        terminalreporter.section("trust report", red=True)
        terminalreporter.line("A hack family of court/trust.py names a test that does not exist or failed in this run:")
        for problem in self.problems:
            terminalreporter.line(f"  {problem}", red=True)

    # -- judging and writing -----------------------------------------------------------------------

    def judge(self, config, test: str) -> str:
        """Why the family's test fails the run, or "" when it does not."""
        if self.outcomes.get(test) == "failed":
            return "failed in this run"
        if test in self.seen:
            return ""
        file, _, rest = test.partition("::")
        function = rest.split("[")[0].split("::")[-1]
        source = Path(config.rootpath, file)
        if not source.is_file():
            return f"does not exist (no file {file})"
        if not re.search(rf"^\s*(async\s+)?def {re.escape(function)}\(", source.read_text(), re.MULTILINE):
            return f"does not exist (no function {function} in {file})"
        if test.split("[")[0] in self.seen_functions and _run_in_full(config, source):
            return "does not exist (its function was collected, not this parametrization)"
        return ""

    def write(self) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        earlier = _read(self.path).get("tests", {})
        tests = {test: earlier[test] for test in self.named if test in earlier}
        for test, outcome in self.outcomes.items():
            tests[test] = {"outcome": outcome, "at": now}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        written = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        written.write_text(json.dumps({"written_at": now, "tests": tests}, indent=1, sort_keys=True))
        os.replace(written, self.path)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _run_in_full(config, source: Path) -> bool:
    """Whether this run's arguments name the file, or a folder above it, without picking tests in it."""
    for arg in config.args:
        if "::" in arg:
            continue
        path = Path(config.invocation_params.dir, arg).resolve()
        if path == source.resolve() or path in source.resolve().parents:
            return True
    return False
