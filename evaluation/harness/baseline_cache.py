"""Baseline timings and device ceilings kept on disk, per problem, device and environment.

A key holds everything that could change a baseline's time: the problem's source, the GPU and
its compute capability, driver, CUDA, torch, triton, the flush size and the harness version.
Re-verifying a candidate (or another candidate of the same problem) then skips the compiled and
graphed baselines; eager is always timed again, interleaved with the candidate.
"""

import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from evaluation.harness.measurement import MIN_CONTROLS, SHORT_CALL_MS

ENV_FIELDS = ("device", "gpu", "compute_capability", "driver", "cuda", "torch", "triton", "python", "cpu", "harness_version")


def _digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]


def environment_key(env: dict[str, Any], flush_bytes: int | None) -> dict[str, Any]:
    return {**{k: env.get(k) for k in ENV_FIELDS}, "flush_bytes": flush_bytes}


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return None


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(handle, "w") as out:
        json.dump(data, out, sort_keys=True, indent=1)
    os.replace(name, path)


def _baseline_path(root: str, problem_source: str, env_key: dict[str, Any]) -> Path:
    problem = hashlib.sha256(problem_source.encode()).hexdigest()
    return Path(root) / f"baselines-{_digest({'problem': problem, **env_key})}.json"


def load_baselines(root: str | None, problem_source: str, env_key: dict[str, Any]) -> dict[str, Any]:
    if not root:
        return {}
    data = _read(_baseline_path(root, problem_source, env_key)) or {}
    baselines: dict[str, Any] = data.get("baselines", {})
    return baselines


def store_baselines(root: str | None, problem_source: str, env_key: dict[str, Any], measured: dict[str, Any]) -> None:
    if not root or not measured:
        return
    path = _baseline_path(root, problem_source, env_key)
    data = _read(path) or {"key": env_key, "baselines": {}}
    data["baselines"].update(measured)
    _write(path, data)


def load_rates(root: str | None, env_key: dict[str, Any]) -> dict[str, Any] | None:
    if not root:
        return None
    return (_read(Path(root) / f"rates-{_digest(env_key)}.json") or {}).get("rates")


RATE_FIELDS = ("bandwidth_gb_s", "matrix_tflop_s")
# Two measurements of a quiet device agree within this share (RESULTS.md, harness 11).
RATES_AGREE = 0.15


def best_rates(*measured: dict[str, Any]) -> dict[str, Any]:
    """Each ceiling at its highest: contention only ever lowers one."""
    best = dict(measured[0])
    for rates in measured[1:]:
        for name in RATE_FIELDS:
            if isinstance(rates.get(name), (int, float)) and rates[name] > (best.get(name) or 0):
                best[name] = rates[name]
    return best


def rates_agree(first: dict[str, Any], second: dict[str, Any]) -> bool:
    for name in RATE_FIELDS:
        a, b = first.get(name), second.get(name)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or min(a, b) <= 0:
            return False
        if abs(a - b) > RATES_AGREE * max(a, b):
            return False
    return True


def store_rates(root: str | None, env_key: dict[str, Any], rates: dict[str, Any] | None) -> None:
    """Kept with whatever was kept before: a new measurement never lowers a ceiling."""
    if not root or not rates:
        return
    kept = load_rates(root, env_key)
    _write(Path(root) / f"rates-{_digest(env_key)}.json", {"key": env_key, "rates": best_rates(rates, kept) if kept else rates})


# The latest controls of this many problems are kept per device (older ones describe another day).
CONTROLS_KEPT = 200


def _controls_path(root: str, env_key: dict[str, Any]) -> Path:
    return Path(root) / f"controls-{_digest(env_key)}.jsonl"


def load_controls(root: str | None, env_key: dict[str, Any]) -> list[dict[str, Any]]:
    """This device's A/A controls, the latest of each problem, oldest first."""
    if not root:
        return []
    latest = {}
    try:
        lines = _controls_path(root, env_key).read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            record = json.loads(line)
            latest[record["problem"]] = {
                **{k: record[k] for k in ("problem", "log_ratio", "within", "off", "at")},
                "call_ms": record.get("call_ms"),
            }
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a crash
    return sorted(latest.values(), key=lambda r: r["at"])[-CONTROLS_KEPT:]


def record_control(root: str | None, env_key: dict[str, Any], problem_source: str, record: dict[str, Any]) -> None:
    """One A/A control, appended as one line, and the device's state beside it (`probes_due`), under a
    lock that concurrent verifications of a device share."""
    if not root:
        return
    path = _controls_path(root, env_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"problem": hashlib.sha256(problem_source.encode()).hexdigest(), **record}, sort_keys=True) + "\n"
    with open(Path(root) / "controls-devices.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # After a line a crash cut short, on a line of its own: the cut line is lost, not this one too.
        with open(path, "a+b") as out:
            cut = out.seek(0, os.SEEK_END) > 0 and out.seek(-1, os.SEEK_END) >= 0 and out.read(1) != b"\n"
            out.write((("\n" if cut else "") + line).encode())
        slots = _read(_slot_path(root)) or {}
        kept = load_controls(root, env_key)
        slots[_digest(env_key)] = {
            "device": env_key.get("device"),
            "harness_version": env_key.get("harness_version"),
            "controls": len(kept),
            "short_controls": sum(1 for c in kept if _short(c)),
            "off": record["off"],
            "at": record["at"],
        }
        _write(_slot_path(root), slots)


def _slot_path(root: str) -> Path:
    return Path(root) / "controls-devices.json"


def _short(control: dict[str, Any]) -> bool:
    return (control.get("call_ms") or float("inf")) < SHORT_CALL_MS


# Probes the harness vouches for whose calls are short on any device (under SHORT_CALL_MS): the controls
# that measure a short call's spread between processes (measurement.between_process).
SHORT_PROBES = sorted((Path(__file__).parent / "probe_problems").glob("small_*.py"))


def _latest_state(root: str | None, device: str, harness_version: str) -> dict[str, Any] | None:
    """The device's state as it last probed here, of this kind and harness (record_control)."""
    if not root:
        return None
    states = [
        s
        for s in (_read(_slot_path(root)) or {}).values()
        if isinstance(s, dict) and s.get("device") == device and s.get("harness_version") == harness_version
    ]
    return max(states, key=lambda s: s.get("at") or 0) if states else None


def probes_due(root: str | None, device: str, harness_version: str) -> list[str]:
    """Which probes (`pipeline.probe`) a worker of `device` should run now, before it has described
    itself: "short" where the device lacks controls of short calls (run one of SHORT_PROBES), "long"
    where it lacks controls of longer ones (a KernelBench problem), "again" where its last control read
    off 1.0 (it states no win until one reads 1.0 again). Nothing when none is due."""
    latest = _latest_state(root, device, harness_version)
    if latest is None:
        return ["long", "short"]
    short = latest.get("short_controls") or 0
    due = ["again"] if latest.get("off") else []
    if (latest.get("controls") or 0) - short < MIN_CONTROLS:
        due.append("long")
    if short < MIN_CONTROLS:
        due.append("short")
    return due


def control_due(root: str | None, device: str, harness_version: str) -> bool:
    """Whether a worker of `device` should probe it now (`probes_due`)."""
    return bool(probes_due(root, device, harness_version))


def short_probe(root: str | None, device: str, harness_version: str) -> Path:
    """The short probe to run next: the one after as many as the device has kept."""
    latest = _latest_state(root, device, harness_version) or {}
    return SHORT_PROBES[(latest.get("short_controls") or 0) % len(SHORT_PROBES)]
