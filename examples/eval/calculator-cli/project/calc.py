"""A calculator on the command line: python3 calc.py "2 + 3 * 4" prints 14."""

import sys


def evaluate(expression):
    raise NotImplementedError


if __name__ == "__main__":
    print(evaluate(" ".join(sys.argv[1:])))
