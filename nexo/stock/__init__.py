"""Stock: the only writer of stock_level and stock_reservation (ADR-002).

Order entry reserves, credit decisions firm or release, a cancel releases, a dispatch consumes; the demo
loader opens the stock rows (`levels.py`). Every writer locks stock rows in the one order of
`lock_order.py`. The functions of `reservations.py` and `levels.py` take the caller's connection and never
commit: the use case that calls them owns the transaction.
"""
