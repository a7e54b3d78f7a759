"""The release batch's scheduling (benchmarks/release_batch.py): every GPU of a host verifies at once,
each one candidate at a time here, while builds ahead run on the CPU cores in the order the GPUs
want them. The verifications and builds are stand-ins that record what ran where."""

import threading

from benchmarks.release_batch import arch_list, needs_build, run_work


def candidate(key: str, builds: bool = False) -> dict:
    source = "from torch.utils.cpp_extension import load_inline\n" if builds else "import torch\n"
    return {"key": key, "source": source + "class ModelNew: ..."}


def test_every_gpu_verifies_at_once_and_a_candidate_waits_only_for_its_own_build():
    todo = [candidate("a", builds=True), candidate("b"), candidate("c"), candidate("d", builds=True)]
    both_gpus = threading.Barrier(2, timeout=10)
    b_verified = threading.Event()
    events, faults = [], []

    def build(c):
        # The GPUs go on with what needs no build meanwhile.
        if not b_verified.wait(10):
            faults.append(f"{c['key']}'s build held the GPUs")
        events.append(("built", c["key"]))

    def verify(c, gpu, waited):
        events.append(("verified", c["key"], gpu))
        if c["key"] in ("b", "c"):
            try:
                both_gpus.wait()  # b and c at once: on two GPUs, one verification each
            except threading.BrokenBarrierError:
                faults.append("b and c did not run at once")
        if c["key"] == "b":
            b_verified.set()

    run_work(todo, gpus=["0", "1"], parallel=1, build_cpus=2, budget_s=60, verify=verify, build=build)

    assert faults == []
    verified = [e for e in events if e[0] == "verified"]
    assert sorted(e[1] for e in verified) == ["a", "b", "c", "d"]
    assert {e[2] for e in verified if e[1] in ("b", "c")} == {"0", "1"}
    for key in ("a", "d"):
        assert events.index(("built", key)) < next(i for i, e in enumerate(events) if e[:2] == ("verified", key))


def test_with_no_build_cpus_every_verification_builds_for_itself():
    built, verified = [], []

    run_work(
        [candidate("a", builds=True), candidate("b")],
        gpus=["cpu"],
        parallel=2,
        build_cpus=0,
        budget_s=60,
        verify=lambda c, gpu, waited: verified.append(c["key"]),
        build=built.append,
    )

    assert built == [] and sorted(verified) == ["a", "b"]


def test_nothing_starts_once_the_budget_is_spent():
    verified = []

    run_work([candidate("a")], gpus=["0"], parallel=1, build_cpus=0, budget_s=0, verify=verified.append, build=None)

    assert verified == []


def test_builds_ahead_compile_for_the_gpus_as_torch_would_with_them_visible():
    assert arch_list(["9.0", "9.0", "9.0", "9.0"]) == "9.0+PTX"
    assert arch_list(["9.0", "8.0"]) == "8.0;9.0+PTX"
    assert needs_build(candidate("a", builds=True)) and not needs_build(candidate("b"))


def test_a_verification_that_raises_leaves_its_gpu_verifying_the_rest():
    verified = []

    def verify(c, gpu, waited):
        if c["key"] == "a":
            raise OSError("disk full")
        verified.append(c["key"])

    run_work([candidate("a"), candidate("b")], gpus=["0"], parallel=1, build_cpus=0, budget_s=60, verify=verify, build=None)

    assert verified == ["b"]
