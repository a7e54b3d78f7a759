"""Measured releases: verdicts the harness gave on a real GPU, with their provenance, in one file.

A GPU box writes a release (`python -m evaluation.harness release pack`, or `pack()` from a batch
script: benchmarks/release_batch.py) and the platform imports it (`manage.py import_release`), so
both sides read and write it here. Standard library only: the GPU box has no Django.

A release is a gzip-compressed JSON-lines file (`*.jsonl.gz`):

- line 1, the header: `format` ("kernel-court-release") and `version` (FORMAT_VERSION); the
  release's `name` and `arch`; the `harness` that measured (`version`, git `commit`, `dirty`);
  `measured` (`from`, `to`: the first and last verdict's time, UTC); the `env` the verdicts were
  measured in (device, GPU, compute capability, driver, CUDA, torch, triton, Python: ENV_KEYS, from
  the verdicts' own `env`); the `device`, `baselines`, `plan` and `limits` used (the plan and limits
  in full, the limits without host paths); the `sources` the candidates came from (origin, path and
  sha256 of the file, e.g. CUDA-L1's data/cuda-l1/h100.jsonl.gz); `entries`, how many lines follow;
  and `missing`, the keys planned but not measured (empty in a complete release).
- one line per candidate: its `key`, `level` and `task` (KernelBench's), `problem_sha256` (of the
  problem's source, byte for byte), `origin` ("cuda-l1", "builtin", ...), `source` and
  `source_sha256`, `claims` (null, or what its publisher claimed: `by`, `arch` and `scores` under the
  publisher's own names, e.g. CUDA-L1's `score_default`), `measured_at`, and `verdict`: the
  harness's full verdict as `python -m evaluation.harness verify ... --json` prints it.

`read()` checks all of it (format and version, every verdict's harness version against the
header's, every hash) and says what to fix. A batch keeps its progress in a state folder
(`STATE_BATCH`, `STATE_RECORDS`: one entry line per JSON line, appended as verdicts come) that
`pack()` turns into a release; the same state packs to the same bytes.
"""

import dataclasses
import gzip
import hashlib
import io
import json
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluation.harness.limits import Limits, Plan, coerce
from evaluation.harness.verdict import BASELINES, HARNESS_VERSION, STATUSES

FORMAT = "kernel-court-release"
FORMAT_VERSION = 1

# What of a verdict's environment says where it was measured (the rest is the host's: its platform,
# paths); every verdict that has an environment must agree with the header on these.
ENV_KEYS = ("device", "gpu", "compute_capability", "driver", "cuda", "torch", "triton", "python")

# A batch's state folder: what it runs (written once, when it starts) and the records (one entry line each).
STATE_BATCH = "batch.json"
STATE_RECORDS = "verdicts.jsonl"

NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
ARCH = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
ORIGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
SHA256 = re.compile(r"[0-9a-f]{64}")

HEADER_KEYS = (
    "format",
    "version",
    "name",
    "arch",
    "harness",
    "measured",
    "env",
    "device",
    "baselines",
    "plan",
    "limits",
    "sources",
    "entries",
    "missing",
)
ENTRY_KEYS = (
    "key",
    "level",
    "task",
    "problem_sha256",
    "origin",
    "source",
    "source_sha256",
    "claims",
    "measured_at",
    "verdict",
)


class ReleaseError(ValueError):
    """A release (or a state folder) that cannot be read or written; the message says where and what to fix."""


@dataclass(frozen=True)
class Entry:
    key: str
    level: int
    task: int
    problem_sha256: str
    origin: str
    source: str
    source_sha256: str
    claims: dict[str, Any] | None
    measured_at: str
    verdict: dict[str, Any]

    @property
    def status(self) -> str:
        status: str = self.verdict["status"]
        return status

    @property
    def failed_check(self) -> str | None:
        """The check that decided the status, where one failed."""
        return next((c["name"] for c in self.verdict.get("checks") or [] if not c.get("passed")), None)


@dataclass(frozen=True)
class Release:
    header: dict[str, Any]
    entries: list[Entry]
    sha256: str  # of the file, byte for byte

    @property
    def name(self) -> str:
        name: str = self.header["name"]
        return name

    @property
    def arch(self) -> str:
        arch: str = self.header["arch"]
        return arch

    @property
    def harness_version(self) -> str:
        version: str = self.header["harness"]["version"]
        return version


def harness_order(version: str) -> tuple[int, ...]:
    """A harness version as numbers to compare ("10" after "9"; "10.1" after "10")."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def is_older_harness(version: str, than: str = HARNESS_VERSION) -> bool:
    return harness_order(version) < harness_order(than)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _is_date(value: Any) -> bool:
    try:
        datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return False
    return True


def _number_or_none(value: object) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


# -- checking ---------------------------------------------------------------------------------------


def check_header(header: Any, where: str) -> None:
    if not isinstance(header, dict):
        raise ReleaseError(f"{where}: the header must be a JSON object; line 1 of a release is its header.")
    if header.get("format") != FORMAT:
        raise ReleaseError(
            f"{where}: this is not a Kernel Court release (format {header.get('format')!r}, expected {FORMAT!r}): "
            "releases are written by `python -m evaluation.harness release pack`."
        )
    if header.get("version") != FORMAT_VERSION:
        raise ReleaseError(
            f"{where}: release format version {header.get('version')!r}; this code reads version {FORMAT_VERSION}. "
            "Pack it again with this checkout's harness, or update this checkout."
        )
    missing = [key for key in HEADER_KEYS if key not in header]
    if missing:
        raise ReleaseError(f"{where}: the header lacks {', '.join(missing)}; pack the release again.")
    if not isinstance(header["name"], str) or not NAME.fullmatch(header["name"]):
        raise ReleaseError(f"{where}: name {header['name']!r}: use lower case, digits, '.', '_', '-' (e.g. h100-2026-11-26).")
    if not isinstance(header["arch"], str) or not ARCH.fullmatch(header["arch"]):
        raise ReleaseError(f"{where}: arch {header['arch']!r}: use a short lower-case key such as h100, a100, cpu.")
    harness = header["harness"]
    if not (isinstance(harness, dict) and isinstance(harness.get("version"), str) and harness_order(harness["version"])):
        raise ReleaseError(f"{where}: harness must name its version, e.g. {{'version': '{HARNESS_VERSION}', 'commit': ...}}.")
    if not isinstance(harness.get("commit"), str):
        raise ReleaseError(f"{where}: harness.commit must be the git commit that measured (or 'unknown').")
    measured = header["measured"]
    if not (isinstance(measured, dict) and _is_date(measured.get("from")) and _is_date(measured.get("to"))):
        raise ReleaseError(f"{where}: measured must give 'from' and 'to' as ISO dates.")
    env = header["env"]
    if not isinstance(env, dict) or set(env) - set(ENV_KEYS):
        raise ReleaseError(f"{where}: env must be an object of {', '.join(ENV_KEYS)} only.")
    if header["device"] not in ("cpu", "cuda") or env.get("device") not in (None, header["device"]):
        raise ReleaseError(f"{where}: device {header['device']!r} must be cpu or cuda, and the verdicts' own.")
    if (header["device"] == "cpu") != (header["arch"] == "cpu"):
        raise ReleaseError(
            f"{where}: arch {header['arch']!r} with device {header['device']!r}: a release measured on the CPU is "
            "arch cpu, and one measured on a GPU names the GPU's architecture."
        )
    baselines = header["baselines"]
    if not (isinstance(baselines, list) and all(name in BASELINES for name in baselines)):
        raise ReleaseError(f"{where}: baselines must be a list from {', '.join(BASELINES)}.")
    for key in ("plan", "limits"):
        if not isinstance(header[key], dict):
            raise ReleaseError(f"{where}: {key} must be an object (the {key} the verdicts were measured with).")
    sources = header["sources"]
    if not isinstance(sources, list) or not all(
        isinstance(s, dict) and isinstance(s.get("origin"), str) and isinstance(s.get("path"), str) and s.get("sha256")
        for s in sources
    ):
        raise ReleaseError(f"{where}: sources must list each file the candidates came from: origin, path, sha256.")
    if not (isinstance(header["entries"], int) and header["entries"] >= 0):
        raise ReleaseError(f"{where}: entries must count the lines after the header.")
    if not isinstance(header["missing"], list):
        raise ReleaseError(f"{where}: missing must list the keys planned but not measured ([] when complete).")


def check_claims(claims: Any, where: str) -> None:
    if claims is None:
        return
    if not (
        isinstance(claims, dict)
        and isinstance(claims.get("by"), str)
        and isinstance(claims.get("arch"), str)
        and ARCH.fullmatch(claims["arch"])
        and isinstance(claims.get("scores"), dict)
        and all(isinstance(k, str) and _number_or_none(v) for k, v in claims["scores"].items())
    ):
        raise ReleaseError(
            f"{where}: claims must be null or {{'by': publisher, 'arch': where they measured, 'scores': {{name: number}}}}."
        )


def check_entry(entry: Any, where: str, *, harness_version: str, env: dict[str, Any]) -> Entry:
    if not isinstance(entry, dict):
        raise ReleaseError(f"{where}: each line after the header is one candidate's JSON object.")
    missing = [key for key in ENTRY_KEYS if key not in entry]
    if missing:
        raise ReleaseError(f"{where}: lacks {', '.join(missing)}.")
    if not (isinstance(entry["level"], int) and isinstance(entry["task"], int) and entry["level"] >= 1 and entry["task"] >= 1):
        raise ReleaseError(f"{where}: level and task must be KernelBench's, integers from 1.")
    label = f"{where} ({entry['key']})"
    if not (isinstance(entry["origin"], str) and ORIGIN.fullmatch(entry["origin"])):
        raise ReleaseError(f"{label}: origin {entry['origin']!r}: use a short label such as cuda-l1 or builtin.")
    if not (isinstance(entry["problem_sha256"], str) and SHA256.fullmatch(entry["problem_sha256"])):
        raise ReleaseError(f"{label}: problem_sha256 must be the sha256 of the problem's source, 64 hex digits.")
    if not isinstance(entry["source"], str) or sha256_text(entry["source"]) != entry["source_sha256"]:
        raise ReleaseError(
            f"{label}: the candidate's source does not hash to its source_sha256: the file was altered; pack it again."
        )
    check_claims(entry["claims"], label)
    if not _is_date(entry["measured_at"]):
        raise ReleaseError(f"{label}: measured_at must be an ISO date.")
    verdict = entry["verdict"]
    if not isinstance(verdict, dict) or verdict.get("status") not in STATUSES or not isinstance(verdict.get("checks"), list):
        raise ReleaseError(f"{label}: verdict must be the harness's verdict (a status of {', '.join(STATUSES)}, its checks).")
    if verdict.get("harness_version") != harness_version:
        raise ReleaseError(
            f"{label}: its verdict is of harness {verdict.get('harness_version')!r}, the header's {harness_version!r}: "
            "a release holds the verdicts of one harness; measure it again or pack it separately."
        )
    measured_in = {key: value for key, value in (verdict.get("env") or {}).items() if key in ENV_KEYS}
    differs = sorted(key for key, value in measured_in.items() if key in env and env[key] != value)
    if differs:
        raise ReleaseError(
            f"{label}: measured in another environment than the header's ({', '.join(differs)}): "
            "a release holds the verdicts of one machine's set-up."
        )
    return Entry(**{key: entry[key] for key in ENTRY_KEYS})


# -- reading ----------------------------------------------------------------------------------------


def read(path: str | Path) -> Release:
    """The release at `path`, checked throughout; ReleaseError says what is wrong and what to do."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read it ({exc.strerror}).") from None
    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError):
        raise ReleaseError(
            f"{path}: not a gzip-compressed UTF-8 file; releases are .jsonl.gz files written by "
            "`python -m evaluation.harness release pack`."
        ) from None
    lines = text.splitlines()
    if not lines:
        raise ReleaseError(f"{path}: empty; a release starts with its header line.")
    rows = []
    for number, line in enumerate(lines, start=1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ReleaseError(f"{path}:{number}: not JSON ({exc.msg}); the file was cut short or altered.") from None
    header = rows[0]
    check_header(header, f"{path}:1")
    if len(rows) - 1 != header["entries"]:
        raise ReleaseError(
            f"{path}: the header counts {header['entries']} entries and {len(rows) - 1} follow; the file was cut short "
            "or altered: copy it again."
        )
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        entry = check_entry(row, f"{path}:{number}", harness_version=header["harness"]["version"], env=header["env"])
        if entry.key in seen:
            raise ReleaseError(f"{path}:{number}: key {entry.key!r} is also on line {seen[entry.key]}; each candidate once.")
        seen[entry.key] = number
        entries.append(entry)
    return Release(header=header, entries=entries, sha256=hashlib.sha256(data).hexdigest())


# -- writing ----------------------------------------------------------------------------------------


def write(path: str | Path, header: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """Check and write a release; returns its sha256. The same header and entries give the same bytes."""
    header = {**header, "entries": len(entries)}
    check_header(header, "the header")
    for index, entry in enumerate(entries, start=1):
        check_entry(entry, f"entry {index}", harness_version=header["harness"]["version"], env=header["env"])
    body = io.BytesIO()
    # mtime 0 and no file name in the gzip header: the bytes depend on the content alone.
    with gzip.GzipFile(filename="", mode="wb", fileobj=body, mtime=0) as handle:
        for row in [header, *entries]:
            handle.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
    data = body.getvalue()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def git_commit(repo: str | Path) -> tuple[str, bool | None]:
    """The checkout's commit and whether the harness has uncommitted changes; ("unknown", None) without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=30)
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "evaluation/harness"], cwd=repo, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown", None
    if head.returncode != 0 or status.returncode != 0:
        return "unknown", None
    return head.stdout.strip(), bool(status.stdout.strip())


def public_limits(limits: dict[str, Any] | None) -> dict[str, Any]:
    """The limits in full, without host paths (the build cache, the device lock)."""
    resolved = dataclasses.asdict(coerce(Limits, limits))
    return {key: value for key, value in resolved.items() if not key.endswith(("_dir", "_path"))}


def full_plan(plan: dict[str, Any] | None) -> dict[str, Any]:
    return dataclasses.asdict(coerce(Plan, plan))


def batch_settings(
    *,
    arch: str,
    device: str,
    baselines: list[str],
    plan: dict[str, Any] | None,
    limits: dict[str, Any] | None,
    sources: list[dict[str, Any]],
    planned: list[str],
) -> dict[str, Any]:
    """What a batch measures with, written to its state folder once (STATE_BATCH) and into the header."""
    commit, dirty = git_commit(Path(__file__).resolve().parents[2])
    return {
        "arch": arch,
        "device": device,
        "baselines": list(baselines),
        "plan": full_plan(plan),
        "limits": public_limits(limits),
        "sources": sources,
        "planned": planned,
        "harness": {"version": HARNESS_VERSION, "commit": commit, "dirty": dirty},
    }


def read_state(state: str | Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A batch's settings and its records by key (a key recorded twice: the later record)."""
    state = Path(state)
    try:
        settings = json.loads((state / STATE_BATCH).read_text())
    except (OSError, ValueError):
        raise ReleaseError(f"{state}: no readable {STATE_BATCH}; is this a batch's state folder?") from None
    records = {}
    path = state / STATE_RECORDS
    if path.exists():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                # The batch was killed mid-line: that record is measured again on resumption.
                continue
            if not isinstance(record, dict) or "key" not in record:
                raise ReleaseError(f"{path}:{number}: each record is an entry line with its key.")
            records[record["key"]] = record
    return settings, records


def header_env(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """The environment the verdicts were measured in: the first full one's ENV_KEYS (a verdict decided
    before any process started, such as a candidate that is not Python, has none)."""
    for verdict in verdicts:
        env = verdict.get("env") or {}
        if env.get("torch"):
            return {key: env[key] for key in ENV_KEYS if env.get(key) is not None}
    return {}


def pack(state: str | Path, *, name: str, out: str | Path, partial: bool = False) -> Release:
    """A state folder's records as a release at `out`, entries in (level, task, origin, key) order.

    A batch that has not measured everything it planned is refused unless `partial`; a partial
    release names what it lacks in the header's `missing`."""
    settings, records = read_state(state)
    planned = settings.get("planned") or sorted(records)
    missing = [key for key in planned if key not in records]
    if missing and not partial:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ReleaseError(
            f"{state}: {len(missing)} of {len(planned)} planned entries have no verdict yet ({shown}): run the batch "
            "again to measure them, or pack with --partial (the header then lists them as missing)."
        )
    entries = sorted(records.values(), key=lambda r: (r["level"], r["task"], r["origin"], r["key"]))
    stamps = [entry["measured_at"] for entry in entries] or [now()]
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": name,
        "arch": settings["arch"],
        "harness": settings["harness"],
        "measured": {"from": min(stamps), "to": max(stamps)},
        "env": header_env([entry["verdict"] for entry in entries]),
        "device": settings["device"],
        "baselines": settings["baselines"],
        "plan": settings["plan"],
        "limits": settings["limits"],
        "sources": settings["sources"],
        "entries": len(entries),
        "missing": missing,
    }
    write(out, header, [{key: entry[key] for key in ENTRY_KEYS} for entry in entries])
    return read(out)


def describe(release: Release) -> str:
    """A few lines on a release: what `release check` prints."""
    header = release.header
    statuses: dict[str, int] = {}
    for entry in release.entries:
        statuses[entry.status] = statuses.get(entry.status, 0) + 1
    env = header["env"]
    where = env.get("gpu") or env.get("device") or header["device"]
    return "\n".join(
        [
            f"{header['name']}: {len(release.entries)} verdicts on {header['arch']} ({where}), harness "
            f"{header['harness']['version']} at {header['harness']['commit'][:12]}, measured {header['measured']['to'][:10]}",
            "  " + ", ".join(f"{count} {status}" for status, count in sorted(statuses.items())),
            f"  missing: {len(header['missing'])}; sha256 {release.sha256}",
        ]
    )
