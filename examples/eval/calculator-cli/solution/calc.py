"""A calculator on the command line: python3 calc.py "2 + 3 * 4" prints 14."""

import ast
import operator
import sys

OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    raise ValueError("only numbers, + - * / and parentheses")


def evaluate(expression):
    result = _value(ast.parse(expression, mode="eval").body)
    return int(result) if result == int(result) else result


if __name__ == "__main__":
    try:
        print(evaluate(" ".join(sys.argv[1:])))
    except (SyntaxError, ValueError, ZeroDivisionError) as error:
        sys.exit(f"calc: {error}")
