-- nexo: no-transaction
-- The order form's SKU lookup finds a product by any word of its SKU or name, in any order, whatever
-- the case and the accents ("200", "cortadora 200", "ceramica" all find COR-200): every word typed must
-- appear somewhere in them (nexo/orders/queries.py, find_skus). A trigram index answers "contains" as a
-- B-tree answers "starts with". pg_trgm and unaccent ship in PostgreSQL's contrib and are trusted
-- extensions: the database's owner may create them.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS unaccent;
-- The text a lookup compares: lower case, no accents. IMMUTABLE so that a stored column may hold it
-- (unaccent is only STABLE because its rules could be edited; Nexo never edits them). The SQL-standard
-- body is bound when the function is created, the extension's schema included, not on each call.
CREATE OR REPLACE FUNCTION searchable(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN lower(unaccent('unaccent'::regdictionary, $1));
-- Stored, not computed on each read: a lookup of one or two letters (no trigram to look up) walks the
-- catalog by SKU, and unaccent on every row it reads made that ten times slower. Adding it rewrites the
-- product table once, under a lock order entry waits for (about a second and a half at 50,000 SKUs).
ALTER TABLE product ADD COLUMN IF NOT EXISTS search_text text GENERATED ALWAYS AS (searchable(sku || ' ' || name)) STORED;
-- Built CONCURRENTLY: the catalog can hold tens of thousands of products and the build never blocks
-- order entry (ADR-019).
CREATE INDEX CONCURRENTLY IF NOT EXISTS product_search_idx ON product USING gin (search_text gin_trgm_ops);
-- The prefix indexes of the lookup before it (migration 0080): nothing reads them any more.
DROP INDEX CONCURRENTLY IF EXISTS product_sku_prefix_idx;
DROP INDEX CONCURRENTLY IF EXISTS product_name_prefix_idx;
