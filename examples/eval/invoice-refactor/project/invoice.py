"""Invoice lines as text. Works, but the two renderers repeat each other."""


def render_item(name, quantity, price):
    total = quantity * price
    name = name.strip()
    if len(name) > 20:
        name = name[:19] + "~"
    return f"{name:<20} {quantity:>4} x {price:>8.2f} = {total:>9.2f}"


def render_discount(name, quantity, price, percent):
    total = quantity * price * (100 - percent) / 100
    name = name.strip()
    if len(name) > 20:
        name = name[:19] + "~"
    return f"{name:<20} {quantity:>4} x {price:>8.2f} = {total:>9.2f} (-{percent}%)"
