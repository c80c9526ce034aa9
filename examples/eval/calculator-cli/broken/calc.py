"""A calculator on the command line: python3 calc.py "2 + 3 * 4" prints 14."""

import sys


def evaluate(expression):
    # Left to right, one operator at a time: no precedence yet.
    tokens = expression.replace("(", " ").replace(")", " ").split()
    total = float(tokens[0])
    for operator, operand in zip(tokens[1::2], tokens[2::2]):
        value = float(operand)
        total = {"+": total + value, "-": total - value, "*": total * value}.get(
            operator, total / value if value else 0
        )
    return int(total) if total == int(total) else total


if __name__ == "__main__":
    print(evaluate(" ".join(sys.argv[1:])))
