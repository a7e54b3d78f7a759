"""Writing the fused-epilogue candidate: a Triton kernel, its PyTorch twin, and the traced forward
that calls them, all from the `Epilogue` the analysis found.

Each extra operand is read according to how it broadcasts: a scalar is loaded once, a full-size
tensor at the element's own offset, and a tensor along one axis (a per-channel bias) at
`(offset // inner) % size`.
"""

import string
import textwrap

from inference.backends.builtin.analysis.pointwise import POINTWISE
from inference.backends.builtin.analysis.profile import Epilogue


def _operand(arg: dict) -> str:
    if "value" in arg:
        return arg["value"]
    if "side" in arg:
        return f"s{arg['side']}"
    return repr(float(arg["const"]))


def _expression(op: dict, flavour: str) -> str:
    spec = POINTWISE[op["op"]]
    operands = [_operand(a) for a in op["args"]]
    values = dict(zip("ab", operands))
    values.update({name: repr(float(op["params"][name])) for name in spec.params})
    return getattr(spec, flavour).format(**values)


def describe(epilogue: Epilogue) -> str:
    return f"{epilogue.anchor} → " + " → ".join(epilogue.op_names)


def _indent(lines: list[str], spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in lines)


def render_fused_epilogue(epilogue: Epilogue, template: str) -> str:
    """The candidate's code after the problem's module: kernel, wrapper and ModelNew."""
    sides = [f"s{i}" for i in range(len(epilogue.sides))]
    operands = ", ".join(["x", *sides])
    kernel_params, loads, fits, prep, launch = ["x_ptr", "out_ptr"], [], [], [], ["x", "out"]
    for name, side in zip(sides, epilogue.sides):
        kernel_params.append(f"{name}_ptr")
        if side["mode"] == "scalar":
            loads.append(f"{name} = tl.load({name}_ptr)")
            fits.append(f"and {name}.numel() == 1")
            launch.append(name)
        elif side["mode"] == "full":
            loads.append(f"{name} = tl.load({name}_ptr + offsets, mask=mask)")
            fits.append(f"and {name}.shape == x.shape")
            prep.append(f"{name} = {name}.contiguous()")
            launch.append(name)
        else:
            axis = side["axis"]
            kernel_params += [f"{name}_inner", f"{name}_size"]
            loads.append(f"{name} = tl.load({name}_ptr + (offsets // {name}_inner) % {name}_size, mask=mask)")
            fits.append(f"and x.dim() >= {-axis} and {name}.numel() == x.shape[{axis}]")
            prep.append(f"{name}_inner, {name}_size = _broadcast_index(x, {axis})")
            prep.append(f"{name} = {name}.contiguous()")
            launch += [name, f"{name}_inner", f"{name}_size"]
    kernel_body = [f"{op['out']} = {_expression(op, 'triton')}" for op in epilogue.ops]
    reference_body = [f"{op['out']} = {_expression(op, 'torch')}" for op in epilogue.ops]
    forward = textwrap.indent(epilogue.forward_code.strip("\n"), "    ")
    return string.Template(template).substitute(
        kernel_params=", ".join(kernel_params),
        kernel_loads=_indent(loads, 8),
        kernel_body=_indent(kernel_body, 8),
        reference_body=_indent(reference_body, 4),
        fits_checks=_indent(fits, 12),
        launch_prep=_indent(prep, 8),
        launch_args=", ".join(launch),
        operands=operands,
        result=epilogue.result,
        description=" → ".join(epilogue.op_names),
        op_count=len(epilogue.ops),
        anchor=epilogue.anchor,
        forward=forward,
    )
