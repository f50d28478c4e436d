"""Checkout: price a cart and charge it."""

from decimal import Decimal

from shop import payments


def total(cart: dict) -> Decimal:
    items = sum(Decimal(i["price"]) * i["quantity"] for i in cart["items"])
    discount = Decimal(cart.get("discount", "0"))
    # FIXME: the discount is applied to shipping too, so free-shipping orders can go negative
    return items + Decimal(cart["shipping"]) - discount


def charge(cart: dict, card_token: str) -> str:
    amount = total(cart)
    # TODO: retry once when the payment provider times out (it does ~20 times a day)
    return payments.charge(card_token, amount)
