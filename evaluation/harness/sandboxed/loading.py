"""Loading sources into modules of their own, and building model instances from a seed.

The problem, the candidate and a hack reporter's proof inputs each get a fresh module under a
private name: a candidate that redefines the problem's constants or `get_inputs` changes only its
own module, never what the harness reads from the problem's.
"""

import contextlib
import copy
import random
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import torch

PROBLEM_MODULE = "kernel_court_problem"
CANDIDATE_MODULE = "kernel_court_candidate"
PROOF_MODULE = "kernel_court_proof"


def load_module(name: str, source: str, filename: str, *, initial_globals: dict[str, Any] | None = None) -> types.ModuleType:
    """`filename` is where the source lies: Triton's @jit and `inspect` read a function's source from it."""
    module = types.ModuleType(name)
    module.__file__ = filename
    if initial_globals:
        module.__dict__.update(initial_globals)
    # Registered because dataclasses, pickling and torch.compile look modules up by name.
    sys.modules[name] = module
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)
    return module


def load_proof(source: str, problem: types.ModuleType, filename: str = "proof_inputs.py") -> types.ModuleType:
    """Proof inputs may use the problem's constants (batch_size, ...), so they start from a copy."""
    inherited = {k: v for k, v in vars(problem).items() if not k.startswith("__")}
    return load_module(PROOF_MODULE, source, filename, initial_globals=inherited)


def load_problem(problem_path: str, proof_path: str | None) -> tuple[types.ModuleType, types.ModuleType | None]:
    """The problem's module and, when a hack report gave some, the proof inputs' module."""
    with open(problem_path) as handle:
        problem = load_module(PROBLEM_MODULE, handle.read(), problem_path)
    proof = None
    if proof_path:
        with open(proof_path) as handle:
            proof = load_proof(handle.read(), problem, proof_path)
    return problem, proof


# A value and the same value moved (`to_device`) or converted (`to_float64`): tensors, in lists and tuples too.
_Value = TypeVar("_Value")


# Taken at import, before any candidate code runs, like the timers.
_cpu_generator = torch.default_generator
_seed_generator = torch._C.Generator.manual_seed
_cuda_generators: tuple[torch.Generator, ...] = ()


def _generators() -> tuple[torch.Generator, ...]:
    global _cuda_generators
    if not _cuda_generators and torch.cuda.is_available() and torch.cuda.is_initialized():
        _cuda_generators = tuple(torch.cuda.default_generators)
    return (_cpu_generator, *_cuda_generators)


def seed_everything(seed: int) -> None:
    """What torch.manual_seed does to the CPU's and CUDA's generators, without its cost per call
    (a millisecond: it queues a call, with a traceback, for each device type not initialized)."""
    for generator in _generators():
        _seed_generator(generator, seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


@contextlib.contextmanager
def problem_constants(problem: types.ModuleType, variant: dict[str, Any] | None) -> Iterator[None]:
    """The problem's size constants replaced by `variant` for the duration, then restored."""
    if not variant:
        yield
        return
    saved = {name: problem.__dict__[name] for name in variant}
    problem.__dict__.update(variant)
    try:
        yield
    finally:
        problem.__dict__.update(saved)


def init_inputs(problem: types.ModuleType, variant: dict[str, Any] | None = None) -> list[Any]:
    with problem_constants(problem, variant):
        return list(problem.get_init_inputs()) if hasattr(problem, "get_init_inputs") else []


def to_device(value: _Value, device: str) -> _Value:
    if isinstance(value, torch.Tensor):
        return cast(_Value, value.to(device))
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def build_model(cls: Callable[..., object], init_args: list[Any], seed: int, device: str) -> torch.nn.Module:
    """KernelBench's rule: both models are built right after the same seed, so equal layers get equal weights."""
    seed_everything(seed)
    model = cls(*to_device(init_args, device))
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    return model


def _double_attributes(module: torch.nn.Module) -> None:
    # Plain tensor attributes (KernelBench level 3 keeps initial LSTM states as `self.h0`) are not
    # converted by Module.double().
    for sub in module.modules():
        for name, value in list(vars(sub).items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not isinstance(value, torch.nn.Parameter):
                setattr(sub, name, value.double())


def float64_copy(model: torch.nn.Module) -> torch.nn.Module:
    copied = copy.deepcopy(model).double()
    _double_attributes(copied)
    return copied


def to_float64(value: _Value) -> _Value:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return cast(_Value, value.double())
    if isinstance(value, (list, tuple)):
        return type(value)(to_float64(v) for v in value)
    return value
