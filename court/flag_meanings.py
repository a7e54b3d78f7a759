"""What each flag means, in one table: every page that shows a flag explains it from here (as a
tooltip and in a list of the flags shown), and so do the leaderboard's filter and the API.

A flag is a warning the harness raises beside a verdict (evaluation.harness.checks.FLAGS), never
a failure: the kernel is verified, and the flag says what to weigh before trusting its number.
Each verdict also says what it found in its own words (`flag_details`); the words here are what
the flag means anywhere. tests/court/test_flags.py fails on a harness flag missing here.
"""

FLAGS = {
    "same_kernels_as_reference": (
        "The candidate launched exactly the kernels the reference does, and none of its own: it does the reference's "
        "work, so its speedup is stated as 1.0 by construction (what was measured is kept beside it) and is never a win."
    ),
    "control_off": (
        "The reference timed as a candidate would be read faster or slower than itself beyond doubt: this host did "
        "not time the two kinds of process alike during this verification, so none of its speedups counts as a win."
    ),
    "clock_unbounded": (
        "The host was too busy during this verification for the harness's own clock to vouch for the times the "
        "candidate's calls reported (its noise was larger than what a shortened time could hide in): the kernel is "
        "verified correct, but none of its speedups counts as a win. A quieter host measures it properly."
    ),
    "hidden_work": (
        "Some work was still running on the device after the call returned (another stream or thread), beyond what "
        "the eager reference leaves: that much was added to each call's time, so the number counts it."
    ),
    "host_bound": (
        "The host spent most of the call issuing work or waiting, so the figure measures the CPU as much as the GPU "
        "and varies more from one machine, and one run, to the next."
    ),
    "reduced_precision": (
        "The kernel's outputs are less precise than float32 eager (or it switched on a lower-precision mode such as "
        "TF32): it passed the tolerance, but it is not computing the same thing at the same precision."
    ),
    "global_state_changed": (
        "The candidate changed global state (a torch setting, a backend flag); it was kept to its own calls and the "
        "baselines ran without it."
    ),
    "beyond_speed_of_light": (
        "Its time is under the fastest the device could do the problem's work (its FLOPs at the measured matrix "
        "rate, or its bytes at the measured bandwidth): something is skipped or the measurement is wrong."
    ),
    "shape_specialized": (
        "Right at the problem's published sizes only: at other sizes of the same problem its outputs were wrong."
    ),
    "degenerate_problem": (
        "The problem itself is degenerate: its output is constant or ignores its inputs, so a fast answer need not "
        "compute anything. Kept out of the statistics unless staff count it in."
    ),
    "tiny_outputs": (
        "The reference's outputs are so small (root mean square under 0.01) that an absolute tolerance would pass "
        "anything; they are judged here by relative error."
    ),
    "float32_reference_inexact": (
        "The problem's own float32 output is far from its float64 truth (outputs that underflow, a long recurrence): "
        "candidates were held to the float32 eager output instead."
    ),
    "nondeterministic_problem": "The reference gives different outputs for the same inputs and seed.",
    "stateful_problem": (
        "The problem's forward carries state from one call to the next; the reference went through every call the "
        "candidate's model did, so the state is compared too."
    ),
    # A problem's mark, not a verdict's flag: the same words on the problem list and the leaderboard.
    "degenerate": (
        "The problem is degenerate: its output is constant or ignores its inputs. Kept out of the statistics unless "
        "staff count it in."
    ),
}

UNKNOWN = "A warning from the harness: the kernel's page says what it found."


def describe(flag: str) -> str:
    return FLAGS.get(flag, UNKNOWN)
