from demo_app.services import OrderBuilder, apply_discount


def test_discount_reduces_total():
    order = OrderBuilder("A-1").add("p1", "Pen", 10.0).add("p2", "Pad", 30.0).build()
    assert apply_discount(order, 10) == 36.0


def test_discount_is_clamped():
    order = OrderBuilder("A-2").add("p1", "Pen", 10.0).build()
    assert apply_discount(order, 90) == 5.0
