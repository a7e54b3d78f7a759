"""The command line: the same `verify()` the worker calls, with files for sources.

    python -m evaluation.harness verify --problem P.py --candidate C.py [--device cpu|cuda]
        [--baselines eager,compile,compile-ro,cudagraph] [--json] [--proof-inputs F.py]
        [--baseline-cache DIR] [--keep-control] [--plan JSON] [--limits JSON]
    python -m evaluation.harness inspect --problem P.py [--device cpu|cuda]
    python -m evaluation.harness probe --problem P.py --baseline-cache DIR [--device cpu|cuda]
    python -m evaluation.harness build --problem P.py --candidate C.py [--device cuda] [--ahead]
    python -m evaluation.harness release pack --state DIR --name NAME --out FILE.jsonl.gz [--partial]
    python -m evaluation.harness release check FILE.jsonl.gz
    python -m evaluation.harness release report FILE.jsonl.gz|STATE

`verify` prints exactly one JSON verdict on stdout and exits 0 whatever the verdict; a bad
argument exits 2. `build` only loads and instantiates the candidate (filling the build cache), so
a batch can compile many candidates in parallel and then time them one at a time; `build --ahead`
only executes the candidate's module, with no device at all (run it with CUDA_VISIBLE_DEVICES="" and
TORCH_CUDA_ARCH_LIST set, as the verification will be), so its load_inline builds use CPU cores
while the GPUs verify. `release pack`
writes a batch's state folder as a measured release, `release check` reads one (release.py), and
`release report` says what it found and where its verdicts' time went (release_report.py).
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evaluation.harness import release, release_report
from evaluation.harness.pipeline import build, inspect_problem, probe, verify
from evaluation.harness.verdict import BASELINES


def _read(parser: argparse.ArgumentParser, path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        parser.error(f"cannot read {path}: {exc.strerror}")


def _json_arg(parser: argparse.ArgumentParser, text: str | None, what: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        parser.error(f"--{what} must be a JSON object, like '{{\"trials\": 1}}'")
    if not isinstance(value, dict):
        parser.error(f"--{what} must be a JSON object")
    return value


def _baselines(parser: argparse.ArgumentParser, text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        parser.error(f"unknown baselines {unknown}; choose from {','.join(BASELINES)}")
    return names


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m evaluation.harness", description=__doc__.split("\n\n")[0])
    commands = root.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="verify a candidate and print its verdict as JSON")
    build = commands.add_parser("build", help="load and instantiate a candidate only, filling the build cache")
    for sub in (check, build):
        sub.add_argument("--problem", required=True)
        sub.add_argument("--candidate", required=True)
        sub.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
        sub.add_argument("--limits", help="JSON object of Limits fields to change")
    build.add_argument(
        "--ahead", action="store_true", help="load the module only, with no device: its load_inline builds on the CPU"
    )
    check.add_argument("--plan", help="JSON object of Plan fields to change")
    check.add_argument("--baselines", default="eager", help=f"comma-separated, from {','.join(BASELINES)}")
    check.add_argument("--json", action="store_true", help="one line of JSON (default: indented)")
    check.add_argument("--proof-inputs", help="a file defining get_inputs() with a hack reporter's inputs")
    check.add_argument("--baseline-cache", help="folder where baseline timings are kept between runs")
    check.add_argument(
        "--keep-control",
        action="store_true",
        help="keep the A/A control in --baseline-cache as the device's: only where you vouch for the problem and the candidate",
    )
    probe_parser = commands.add_parser(
        "probe", help="an A/A probe of the device: the problem's own Model as the candidate, its control kept as the device's"
    )
    probe_parser.add_argument("--problem", required=True, help="a problem you vouch for (KernelBench's)")
    probe_parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    probe_parser.add_argument("--baseline-cache", required=True, help="where the device's controls are kept")
    probe_parser.add_argument("--plan", help="JSON object of Plan fields to change")
    probe_parser.add_argument("--limits", help="JSON object of Limits fields to change")
    look = commands.add_parser("inspect", help="run the problem alone and report degeneracy, scale, FLOPs and bytes")
    look.add_argument("--problem", required=True)
    look.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    releases = commands.add_parser("release", help="write or check a measured release (release.py)")
    release_commands = releases.add_subparsers(dest="release_command", required=True)
    pack = release_commands.add_parser("pack", help="write a batch's state folder as a release")
    pack.add_argument("--state", required=True, help="the batch's state folder (benchmarks/release_batch.py)")
    pack.add_argument("--name", required=True, help="the release's name, e.g. h100-2026-11-26-cuda-l1")
    pack.add_argument("--out", required=True, help="the file to write, e.g. data/releases/h100-2026-11-26-cuda-l1.jsonl.gz")
    pack.add_argument("--partial", action="store_true", help="pack what is measured; the header lists what is missing")
    check_release = release_commands.add_parser("check", help="read a release, check it throughout and summarize it")
    check_release.add_argument("file")
    report = release_commands.add_parser("report", help="statuses, checks, kinds, speedups by level and claims, costs")
    report.add_argument("file", help="a release (.jsonl.gz) or a batch's state folder")
    return root


def release_main(args: argparse.Namespace) -> int:
    try:
        if args.release_command == "report":
            print(release_report.report(args.file))
            return 0
        if args.release_command == "pack":
            packed = release.pack(args.state, name=args.name, out=args.out, partial=args.partial)
        else:
            packed = release.read(args.file)
    except release.ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(release.describe(packed))
    return 0


def main(argv: list[str] | None = None) -> int:
    args_parser = parser()
    args = args_parser.parse_args(argv)
    if args.command == "inspect":
        print(json.dumps(inspect_problem(_read(args_parser, args.problem), device=args.device), indent=2))
        return 0
    if args.command == "release":
        return release_main(args)
    if args.command == "probe":
        verdict = probe(
            _read(args_parser, args.problem),
            device=args.device,
            baseline_cache_dir=args.baseline_cache,
            plan=_json_arg(args_parser, args.plan, "plan"),
            limits=_json_arg(args_parser, args.limits, "limits"),
        )
        control = (verdict.get("timing") or {}).get("control") or {}
        print(json.dumps({"status": verdict["status"], "reason": verdict["reason"], "control": control}))
        return 0
    problem = _read(args_parser, args.problem)
    candidate = _read(args_parser, args.candidate)
    limits = _json_arg(args_parser, args.limits, "limits")
    if args.command == "build":
        verdict = build(problem, candidate, device=args.device, limits=limits, ahead=args.ahead)
        failed = next((c for c in verdict["checks"] if not c["passed"]), None)
        print(
            json.dumps(
                {
                    "built": failed is None or failed["name"] == "candidate_runs",
                    "status": verdict["status"],
                    "reason": verdict["reason"] if failed else "built",
                    "failed_check": failed["name"] if failed else None,
                    "steps_s": (verdict.get("cost") or {}).get("steps_s"),
                }
            )
        )
        return 0
    plan = _json_arg(args_parser, args.plan, "plan")
    proof = _read(args_parser, args.proof_inputs) if args.proof_inputs else None
    verdict = verify(
        problem,
        candidate,
        device=args.device,
        baselines=_baselines(args_parser, args.baselines),
        limits=limits,
        plan=plan,
        baseline_cache_dir=args.baseline_cache,
        proof_inputs_source=proof,
        keep_control=args.keep_control,
    )
    print(json.dumps(verdict, separators=(",", ":")) if args.json else json.dumps(verdict, indent=2))
    if not args.json:
        print(f"{verdict['status']}: {verdict['reason']}", file=sys.stderr)
    return 0
