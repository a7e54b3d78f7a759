"""What a measured release found and what it cost: `python -m evaluation.harness release report FILE`.

FILE is a release (`*.jsonl.gz`) or a batch's state folder (benchmarks/release_batch.py), whose
builds.jsonl and runs.jsonl add the builds ahead and each verification's GPU and wall time. The
report gives the verdicts by status and by the check that decided them, the kinds of optimization
(static_analysis.optimization_kind), the geomean speedup by level against each baseline beside the
publisher's claims for the same entries, and where a verdict's time went, from the `cost` each
verdict carries. Standard library only.
"""

import gzip
import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluation.harness import release
from evaluation.harness.static_analysis import optimization_kind
from evaluation.harness.verdict import BASELINES

REPO = Path(__file__).resolve().parents[2]

# CUDA-L1's score names for our baselines (its release's `score_*` fields).
CLAIMED_AS = {
    "eager": "score_default",
    "compile": "score_torch_compile_default",
    "compile-ro": "score_torch_compile_reduce_overhead",
    "cudagraph": "score_cuda_graph",
}


def load(path: str | Path) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(title, entries, builds ahead, verifications, sources) of a release file or a state folder."""
    path = Path(path)
    if path.is_dir():
        settings, records = release.read_state(path)
        title = f"{path.name} (state folder): {settings['arch']}, harness {settings['harness']['version']}"
        extra = [_lines(path / name) for name in ("builds.jsonl", "runs.jsonl")]
        return title, list(records.values()), *extra, settings["sources"]
    packed = release.read(path)
    where = packed.header["env"].get("gpu") or packed.header["device"]
    title = f"{packed.name}: {packed.arch} ({where}), harness {packed.harness_version}"
    entries = [{key: getattr(e, key) for key in release.ENTRY_KEYS} for e in packed.entries]
    return title, entries, [], [], packed.header["sources"]


def problem_sources(sources: list[dict[str, Any]]) -> dict[str, str]:
    """The problems' sources by sha256, from the CUDA-L1 files the candidates came from where this
    checkout has them (a release names its problems by hash only): what tells a candidate that is
    the problem's own code from a rewrite."""
    found = {}
    for source in sources:
        path = REPO / source["path"]
        if source.get("origin") == "cuda-l1" and path.is_file() and release.sha256_file(path) == source["sha256"]:
            with gzip.open(path, "rt") as handle:
                for row in map(json.loads, handle):
                    found[release.sha256_text(row["ref_code"])] = row["ref_code"]
    return found


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]


def geomean(values: Iterable[object]) -> float | None:
    """Of the positive numbers among `values`: anything else (a claim the publisher did not make: None) is left out."""
    numbers = [v for v in values if isinstance(v, (int, float)) and v > 0]
    return math.exp(sum(math.log(v) for v in numbers) / len(numbers)) if numbers else None


def _shown(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _failed_check(verdict: dict[str, Any]) -> str | None:
    return next((c["name"] for c in verdict.get("checks") or [] if not c.get("passed")), None)


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counter.most_common()) or "none"


def speedups_by_level(entries: list[dict[str, Any]]) -> list[str]:
    """Geomean speedups of the verified entries by level, each baseline beside the claims for the same entries."""
    lines = ["geomean speedup of verified entries by level (ours / claimed for the same entries):"]
    by_level = defaultdict(list)
    for entry in entries:
        if entry["verdict"]["status"] == "verified":
            by_level[entry["level"]].append(entry)
    for level in sorted(by_level):
        cells = []
        for baseline in BASELINES:
            ours: list[float] = []
            pairs: list[tuple[float, float]] = []
            for entry in by_level[level]:
                speedup = ((entry["verdict"].get("timing") or {}).get("speedups") or {}).get(baseline)
                if speedup:
                    ours.append(speedup)
                    claim = ((entry.get("claims") or {}).get("scores") or {}).get(CLAIMED_AS[baseline])
                    if claim:
                        pairs.append((speedup, claim))
            if not ours:
                continue
            # Ours and the claims over the same entries: an entry without a claim is counted apart.
            paired = f"{_shown(geomean([o for o, _ in pairs]))}/{_shown(geomean([c for _, c in pairs]))} (n={len(pairs)})"
            if len(pairs) == len(ours):
                cells.append(f"{baseline} {paired}")
            else:
                cells.append(f"{baseline} {paired}, ours alone over all {_shown(geomean(ours))} (n={len(ours)})")
        lines.append(f"  level {level}: " + ("; ".join(cells) or "no timing"))
    return lines


def where_time_went(entries: list[dict[str, Any]], builds: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[str]:
    """Medians over the verdicts of each part of their `cost` (verdicts that reached it)."""
    parts = defaultdict(list)
    for entry in entries:
        cost = entry["verdict"].get("cost") or {}
        steps = cost.get("steps_s") or {}
        for name, value in (
            ("total", cost.get("total_s")),
            ("process starts", (cost.get("sandbox_start_s") or 0) + steps.get("start_up", 0) if "start_up" in steps else None),
            ("waiting for the device", cost.get("device_wait_s")),
            ("prepare (baselines built, problem inspected)", steps.get("prepare")),
            ("load (the candidate's build)", steps.get("load")),
            ("checks", steps.get("check")),
            ("timing", steps.get("time")),
            ("  one call at a time (latency)", (cost.get("timing_s") or {}).get("latency")),
            ("  steady state", (cost.get("timing_s") or {}).get("steady_state")),
            ("  device time (graph replays)", (cost.get("timing_s") or {}).get("device_time")),
            ("profile", steps.get("profile")),
            ("shapes", steps.get("shapes")),
        ):
            if value is not None:
                parts[name].append(value)
        for baseline, seconds in (cost.get("baselines_built_s") or {}).items():
            parts[f"baseline {baseline} built"].append(seconds)
        for baseline in cost.get("baselines_cached") or []:
            parts[f"baseline {baseline} built"].append(0.0)
    lines = ["where a verdict's time went, seconds (median, sum, verdicts):"]
    for name, values in parts.items():
        lines.append(f"  {name:45s} {statistics.median(values):8.1f} {sum(values):9.0f} {len(values):5d}")
    if builds:
        walls = [b["wall_s"] for b in builds]
        built = sum(1 for b in builds if b.get("built"))
        lines.append(
            f"  builds ahead: {len(builds)} ({built} built), median {statistics.median(walls):.1f} s, {sum(walls):.0f} s in all"
        )
    if runs:
        walls = [r["wall_s"] for r in runs]
        gpus = Counter(r["gpu"] for r in runs)
        waited = sum(r.get("build_wait_s") or 0 for r in runs)
        lines.append(
            f"  verifications: {len(runs)} on {len(gpus)} GPUs ({_counts(gpus)}), median wall {statistics.median(walls):.1f} s, "
            f"{waited:.0f} s waiting for builds"
        )
        timed = [r for r in runs if r.get("ended")]
        if timed:
            # The batch's span while it verified (runs cut by a resumption count their own span only).
            hours = (max(r["ended"] for r in timed) - min(r["ended"] - r["wall_s"] for r in timed)) / 3600
            lines.append(f"  verdicts per GPU-hour: {len(timed) / (hours * len(gpus)):.0f} over {hours * 60:.0f} min")
    return lines


def report(path: str | Path) -> str:
    title, entries, builds, runs, sources = load(path)
    problems = problem_sources(sources)
    statuses = Counter(entry["verdict"]["status"] for entry in entries)
    deciding = Counter(_failed_check(entry["verdict"]) or "-" for entry in entries if entry["verdict"]["status"] != "verified")
    kinds: Counter[str] = Counter()
    verified_kinds: Counter[str] = Counter()
    for entry in entries:
        # Without its problem's source (not a CUDA-L1 file here), "unchanged" and "flags" count as rewrites.
        static = entry["verdict"].get("static") or {}
        facts = static if "defines_model_new" in static else None
        kind = optimization_kind(entry["source"], problems.get(entry["problem_sha256"]), facts=facts)
        kinds[kind] += 1
        verified_kinds[kind] += entry["verdict"]["status"] == "verified"
    lines = [
        title,
        f"{len(entries)} verdicts: {_counts(statuses)}",
        f"deciding checks of the rest: {_counts(deciding)}",
        "kinds (verified of all): " + ", ".join(f"{kind} {verified_kinds[kind]}/{count}" for kind, count in kinds.most_common()),
        *speedups_by_level(entries),
        *where_time_went(entries, builds, runs),
    ]
    return "\n".join(lines)
