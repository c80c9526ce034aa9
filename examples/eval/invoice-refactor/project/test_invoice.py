import unittest

from invoice import render_discount, render_item


class RenderTest(unittest.TestCase):
    def test_item(self):
        self.assertEqual(
            render_item("Tea", 2, 3.5), "Tea                     2 x     3.50 =      7.00"
        )

    def test_long_name_is_cut(self):
        self.assertTrue(render_item("A very long product name indeed", 1, 1).startswith("A very long product~ "))

    def test_discount(self):
        self.assertEqual(
            render_discount("Tea", 2, 5.0, 10),
            "Tea                     2 x     5.00 =      9.00 (-10%)",
        )


if __name__ == "__main__":
    unittest.main()
