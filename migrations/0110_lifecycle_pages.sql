-- The pages of an order's life (guarantee 19) read from indexes, whatever the history's size.

-- The warehouse page: the confirmed orders not fully dispatched, oldest first (first in, first out).
-- Partial, so it holds only the orders still waiting for the warehouse, not the history.
CREATE INDEX IF NOT EXISTS orders_to_dispatch_idx ON orders (created_at, id)
    WHERE status IN ('CONFIRMADO', 'DESPACHADO_PARCIAL');

-- The warehouse page: the latest dispatches, newest first.
CREATE INDEX IF NOT EXISTS shipment_created_idx ON shipment (created_at DESC, id DESC);
