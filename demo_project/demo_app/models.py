"""Data classes for the demo shop: a Product and an Order of products."""

from dataclasses import dataclass, field


@dataclass
class Product:
    sku: str
    name: str
    price: float


@dataclass
class Order:
    order_id: str
    items: list[Product] = field(default_factory=list)

    def total(self) -> float:
        """Sum of the item prices."""
        return sum(item.price for item in self.items)
