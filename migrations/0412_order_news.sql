-- A salesperson hears about what happened to their orders (ADR-020): when credit decided, someone else
-- cancelled, or the warehouse dispatched one, the order's news_at moves; the menu counts the orders
-- with news since the salesperson last opened their list (app_user.orders_seen_at).
ALTER TABLE orders ADD COLUMN IF NOT EXISTS news_at timestamptz;
-- Existing people start with nothing new: what happened before this migration is not news.
ALTER TABLE app_user ADD COLUMN IF NOT EXISTS orders_seen_at timestamptz NOT NULL DEFAULT now();

-- Set in the database, beside the status, so no write path (the pages, the API, the credit decision, a
-- dispatch) can forget it. A salesperson cancelling their own order is not news to them.
CREATE OR REPLACE FUNCTION orders_note_news() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (NEW.status = 'ANULADO' AND NEW.cancelled_by IS NOT DISTINCT FROM NEW.salesperson_id) THEN
        NEW.news_at := now();
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS orders_news ON orders;
CREATE TRIGGER orders_news BEFORE UPDATE OF status ON orders FOR EACH ROW EXECUTE FUNCTION orders_note_news();

-- The menu's count: a salesperson's orders with news, newest first; only orders that ever had news.
CREATE INDEX IF NOT EXISTS orders_news_idx ON orders (salesperson_id, news_at DESC) WHERE news_at IS NOT NULL;
