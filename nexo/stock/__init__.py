"""Stock: the only writer of stock_level and stock_reservation (ADR-002).

Orders reserve, credit decisions firm or release, and every writer locks stock rows in the one order
of `lock_order.py`. The functions of `reservations.py` take the caller's connection and never commit:
the use case that calls them owns the transaction.
"""
