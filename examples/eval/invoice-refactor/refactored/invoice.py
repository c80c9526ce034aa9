"""Invoice lines as text: one line layout, shared by every renderer."""

NAME_WIDTH = 20


def _name(name):
    name = name.strip()
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "~"


def _line(name, quantity, price, total):
    return f"{_name(name):<{NAME_WIDTH}} {quantity:>4} x {price:>8.2f} = {total:>9.2f}"


def render_item(name, quantity, price):
    return _line(name, quantity, price, quantity * price)


def render_discount(name, quantity, price, percent):
    total = quantity * price * (100 - percent) / 100
    return f"{_line(name, quantity, price, total)} (-{percent}%)"
