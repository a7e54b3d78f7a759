"""Reading a published kernel release in CUDA-L1's JSONL shape (one KernelBench task per line).

Plain or gzip-compressed files are both read. A candidate's code may be missing: null, or the
four-letter string "None" as CUDA-L1's files have it; both mean there is no candidate.
"""

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

# CUDA-L1's score fields and the baseline each is measured against.
CLAIM_FIELDS = {
    "score_default": "speedup_eager",
    "score_torch_compile_default": "speedup_compile",
    "score_torch_compile_reduce_overhead": "speedup_compile_ro",
    "score_cuda_graph": "speedup_cudagraph",
    "score_cudnn": "speedup_cudnn",
}


class ReleaseError(ValueError):
    """A release file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class ReleaseEntry:
    line: int
    level: int
    task: int
    ref_code: str
    custom_code: str | None
    claims: dict[str, float | None]


def _custom_code(value) -> str | None:
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    return value


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def claims_of(scores: dict) -> dict[str, float | None]:
    """A publisher's scores, under CUDA-L1's names, as a Claim's fields."""
    return {field: _number(scores.get(key)) for key, field in CLAIM_FIELDS.items()}


def read_release(path: str | Path) -> list[ReleaseEntry]:
    path = Path(path)
    if not path.exists():
        raise ReleaseError(f"{path} does not exist: give the path of a CUDA-L1 style .jsonl (or .jsonl.gz) file.")
    opener = gzip.open if path.suffix == ".gz" else open
    entries = []
    with opener(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReleaseError(f"{path}:{number} is not JSON: {exc.msg}.") from None
            missing = [key for key in ("level_id", "task_id", "ref_code") if key not in row]
            if missing:
                raise ReleaseError(f"{path}:{number} lacks {', '.join(missing)}: each line needs level_id, task_id and ref_code.")
            if not (isinstance(row["level_id"], int) and isinstance(row["task_id"], int)):
                raise ReleaseError(f"{path}:{number}: level_id and task_id must be integers.")
            entries.append(
                ReleaseEntry(
                    line=number,
                    level=row["level_id"],
                    task=row["task_id"],
                    ref_code=row["ref_code"],
                    custom_code=_custom_code(row.get("custom_code")),
                    claims=claims_of(row),
                )
            )
    return entries
