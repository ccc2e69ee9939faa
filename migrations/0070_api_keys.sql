-- Orders API for integrations (issue 13, docs/adr/ADR-015).
--
-- One row per API key. Only the SHA-256 of the key is kept: a key is 256 random bits, so a fast hash
-- is as strong as a slow one here (nothing to brute-force) and costs microseconds on every request,
-- where scrypt would cost tens of milliseconds of CPU per call. The key itself is shown once.
CREATE TABLE api_key (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL CHECK (name <> ''),
    user_id      bigint NOT NULL REFERENCES app_user(id),
    key_sha256   text NOT NULL UNIQUE CHECK (length(key_sha256) = 64),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,                    -- refreshed at most once a minute (nexo/api/keys.py)
    revoked_at   timestamptz
);
-- A name names one live key: `apikeys revoke NAME` must know which one it means.
CREATE UNIQUE INDEX api_key_live_name_idx ON api_key (name) WHERE revoked_at IS NULL;

-- Where an order came from: NULL is the browser form, otherwise the API key that posted it.
ALTER TABLE orders ADD COLUMN api_key_id bigint REFERENCES api_key(id);

-- GET /api/v1/orders pages by (created_at, id) newest first: keyset pagination, no OFFSET.
CREATE INDEX orders_salesperson_keyset_idx ON orders (salesperson_id, created_at DESC, id DESC);
