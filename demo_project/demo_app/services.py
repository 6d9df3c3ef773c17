"""Business rules for the demo shop.

Prices are plain floats rounded to cents; discounts are percentages.
"""

from demo_app.models import Order, Product

# A typo in a discount must never give goods away.
MAX_DISCOUNT_PERCENT = 50.0


def apply_discount(order: Order, percent: float) -> float:
    """Return the order total after a percentage discount.

    The percentage is clamped to 0..MAX_DISCOUNT_PERCENT.
    """
    percent = max(0.0, min(percent, MAX_DISCOUNT_PERCENT))
    return round(order.total() * (1 - percent / 100), 2)


class OrderBuilder:
    """Builds an Order step by step."""

    def __init__(self, order_id: str) -> None:
        self._order = Order(order_id=order_id)

    def add(self, sku: str, name: str, price: float) -> "OrderBuilder":
        self._order.items.append(Product(sku=sku, name=name, price=price))
        return self

    def build(self) -> Order:
        return self._order
