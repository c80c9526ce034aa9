import unittest

from calc import evaluate


class EvaluateTest(unittest.TestCase):
    def test_adds(self):
        self.assertEqual(evaluate("2 + 3"), 5)

    def test_precedence(self):
        self.assertEqual(evaluate("2 + 3 * 4"), 14)

    def test_parentheses(self):
        self.assertEqual(evaluate("(2 + 3) * 4"), 20)

    def test_division(self):
        self.assertEqual(evaluate("7 / 2"), 3.5)


if __name__ == "__main__":
    unittest.main()
