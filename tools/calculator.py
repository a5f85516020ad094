"""A safe calculator: arithmetic by walking the ``ast`` (nothing is ever eval'd).

Every operation's operands are bounded before it runs, so the worst expression ends in
milliseconds with little memory: a CPU-bound big-integer operation is one C call that
holds the GIL, which neither a tool timeout nor Ctrl-C can interrupt (``round(7, -10**9)``
computed ``10**1000000000``). Integers stay within :data:`MAX_INT_BITS` (checked before a
power or a product is computed, and after every operation); ``round`` takes at most
:data:`MAX_ROUND_DIGITS` digits either way. The other operations cannot grow a number
past its operands' size (+, -, //, %, abs, min, max, floor, ceil) or work on floats.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from langchain_core.tools import tool
from pydantic import BaseModel, Field

from .guards import ToolError

__all__ = ["CalculatorArgs", "calculator", "evaluate_expression", "format_number"]

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 4096  # about 1233 decimal digits
MAX_ROUND_DIGITS = 1300  # round(x, n): |n| beyond every digit an allowed number has
SIGNIFICANT_DIGITS = 15  # floats are shown with 15 significant digits (0.1+0.2 -> 0.3)

Number = int | float

_BINARY_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPS: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,  # log(x) natural, log(x, base)
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

_NODE_NAMES = {
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Compare: "comparisons",
    ast.BoolOp: "boolean operators",
    ast.Lambda: "lambda",
    ast.IfExp: "conditional expression",
    ast.Tuple: "tuple (write decimals with '.', not ',')",
    ast.List: "list",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.JoinedStr: "string",
    ast.NamedExpr: "assignment",
}


def _check_int_size(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError(f"Result too large (more than {MAX_INT_BITS} bits); refusing to compute it.")
    return value


def _shown_int(value: int) -> str:
    """An integer for a message: in full when short, else its number of digits (no huge str())."""
    if value.bit_length() <= 64:
        return str(value)
    digits = int(value.bit_length() * math.log10(2)) + 1
    return f"{'-' if value < 0 else ''}(a number of about {digits} digits)"


def _check_binary(op: type[ast.operator], left: Number, right: Number) -> None:
    """Refuse, before computing, an operation whose integer result would exceed ``MAX_INT_BITS``."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # a float operation: a float result, or OverflowError
    if op is ast.Pow and abs(left) > 1 and right > 0:
        # 9**9**9 must not be attempted: estimate the size (right is compared as an int first).
        if right > MAX_INT_BITS or right * math.log2(abs(left)) > MAX_INT_BITS:
            raise ToolError(
                f"Result too large: the power has more than {MAX_INT_BITS} bits; refusing to compute it."
            )
    elif op is ast.Mult and left and right and left.bit_length() + right.bit_length() - 1 > MAX_INT_BITS:
        raise ToolError(f"Result too large: the product has more than {MAX_INT_BITS} bits; refusing to compute it.")


def _check_call(name: str, args: list[Number]) -> None:
    """Refuse, before calling it, a function call whose cost its arguments would make unbounded."""
    if name == "round" and len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        # round(7, -10**9) computes 10**1000000000 in one uninterruptible C call
        raise ToolError(
            f"round's digit count {_shown_int(args[1])} is beyond ±{MAX_ROUND_DIGITS}; refusing to compute it."
        )


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolError(f"Unsupported constant {node.value!r}: only numbers are allowed.")
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPS:
        return _UNARY_OPS[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.BitXor):
            raise ToolError("'^' is not supported; use '**' for powers.")
        if type(node.op) not in _BINARY_OPS:
            raise ToolError(f"Unsupported operator {type(node.op).__name__}: use + - * / // % **.")
        left, right = _eval(node.left), _eval(node.right)
        _check_binary(type(node.op), left, right)
        return _check_int_size(_BINARY_OPS[type(node.op)](left, right))
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise ToolError(f"Unknown name {node.id!r}. Allowed constants: {', '.join(CONSTANTS)}.")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise _unsupported(node.func)
        if node.func.id not in FUNCTIONS:
            raise ToolError(f"Unknown function {node.func.id!r}. Allowed functions: {', '.join(FUNCTIONS)}.")
        if node.keywords:
            raise ToolError("Keyword arguments are not supported.")
        args = [_eval(arg) for arg in node.args]
        _check_call(node.func.id, args)
        return _check_int_size(FUNCTIONS[node.func.id](*args))
    raise _unsupported(node)


def _unsupported(node: ast.AST) -> ToolError:
    what = _NODE_NAMES.get(type(node), type(node).__name__)
    return ToolError(
        f"Unsupported syntax: {what}. Use numbers, + - * / // % **, parentheses and the allowed functions."
    )


def evaluate_expression(expression: str) -> Number:
    """Evaluate an arithmetic expression safely; raise :class:`ToolError` on any problem."""
    expression = expression.strip()
    if not expression:
        raise ToolError("Empty expression.")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"Expression too long ({len(expression)} characters; the limit is {MAX_EXPRESSION_CHARS}).")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"Invalid expression {expression!r}: {exc.msg}.") from None
    except (RecursionError, MemoryError, ValueError):
        raise ToolError("Invalid expression: too deeply nested or malformed.") from None
    try:
        value = _eval(tree)
    except ToolError:
        raise
    except ZeroDivisionError:
        raise ToolError("Division by zero.") from None
    except OverflowError:
        raise ToolError("Numeric overflow: the result is too large.") from None
    except RecursionError:
        raise ToolError("Expression too deeply nested.") from None
    except (ValueError, TypeError) as exc:  # math domain errors, wrong argument counts...
        raise ToolError(f"Cannot evaluate {expression!r}: {exc}.") from None
    if isinstance(value, complex):  # e.g. (-8) ** 0.5
        raise ToolError("The result is a complex number; only real results are supported.")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("The result is not a finite number.")
    return value


def format_number(value: Number) -> str:
    """Integers (and integral floats) without ``.0``; floats with 15 significant digits."""
    if isinstance(value, int):
        _check_int_size(value)  # str() of a huge int is quadratic (and refused past 4300 digits)
        try:
            return str(value)
        except ValueError as exc:  # the interpreter's int max str digits, if set lower
            raise ToolError(f"Cannot show the result: {exc}.") from None
    rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    if rounded.is_integer() and abs(rounded) < 10**SIGNIFICANT_DIGITS:
        return str(int(rounded))
    return repr(rounded)


class CalculatorArgs(BaseModel):
    """Arguments of the calculator tool."""

    expression: str = Field(
        description="Arithmetic expression, e.g. '37*43', '(2+3)**2 / 7', 'sqrt(2) * pi'.",
        max_length=MAX_EXPRESSION_CHARS,
    )


@tool("calculator", args_schema=CalculatorArgs)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly and return the number.

    Supports numbers, + - * / // % ** (power), parentheses, the functions sqrt,
    log (natural; log(x, base)), log10, log2, exp, sin, cos, tan (radians), abs,
    round, min, max, floor, ceil, and the constants pi and e. Use it for any
    computation instead of doing arithmetic in your head.
    """
    return format_number(evaluate_expression(expression))
