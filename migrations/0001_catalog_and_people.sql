-- Catalog, clients, people and the append-only audit log.
-- Money is always integer cents (ARS). Identifiers in English, business states in the seed's Spanish.

CREATE TABLE warehouse (
    id   text PRIMARY KEY,                  -- warehouse code, e.g. 'CEN'
    name text NOT NULL
);

CREATE TABLE product (
    id   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    sku  text NOT NULL UNIQUE CHECK (sku = upper(btrim(sku)) AND sku <> ''),
    name text NOT NULL
);

-- RN-03: the server's price list is the only source of prices. A product without a row here has
-- no authoritative price, and an order for it is rejected with price_source_unavailable.
CREATE TABLE price_list (
    product_id  uuid PRIMARY KEY REFERENCES product(id),
    price_cents bigint NOT NULL CHECK (price_cents > 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- RN-01: exposure_cents is what the client already owes plus its confirmed orders. It is kept as a
-- counter so that the credit decision is one conditional UPDATE on this row, like ADR-002 for stock:
-- concurrent orders of one client serialise on the row and can never approve past the limit together.
CREATE TABLE client (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name               text NOT NULL UNIQUE,
    tier               text NOT NULL CHECK (tier IN ('PLATINO', 'REGULAR')),
    credit_limit_cents bigint NOT NULL CHECK (credit_limit_cents >= 0),
    exposure_cents     bigint NOT NULL DEFAULT 0 CHECK (exposure_cents >= 0)
);

CREATE TABLE app_user (
    id            bigserial PRIMARY KEY,
    username      text NOT NULL UNIQUE CHECK (username = lower(username) AND username <> ''),
    full_name     text NOT NULL,
    password_hash text NOT NULL,
    active        boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE role (
    name        text PRIMARY KEY,
    description text NOT NULL
);

CREATE TABLE permission (
    name        text PRIMARY KEY,
    description text NOT NULL
);

CREATE TABLE role_permission (
    role_name       text NOT NULL REFERENCES role(name),
    permission_name text NOT NULL REFERENCES permission(name),
    PRIMARY KEY (role_name, permission_name)
);

CREATE TABLE user_role (
    user_id   bigint NOT NULL REFERENCES app_user(id),
    role_name text NOT NULL REFERENCES role(name),
    PRIMARY KEY (user_id, role_name)
);

INSERT INTO permission (name, description) VALUES
    ('orders.create',    'Cargar pedidos y ver los propios'),
    ('credit.authorize', 'Autorizar o rechazar pedidos que exceden el crédito'),
    ('warehouse.view',   'Ver los pedidos entregados al depósito'),
    ('ops.view',         'Ver el tablero de operaciones'),
    ('dlq.admin',        'Inspeccionar, reintentar y descartar entregas fallidas');

INSERT INTO role (name, description) VALUES
    ('ventas',   'Vendedor'),
    ('credito',  'Crédito y administración'),
    ('deposito', 'Depósito'),
    ('dueno',    'Dueña / administración de operaciones');

INSERT INTO role_permission (role_name, permission_name) VALUES
    ('ventas',   'orders.create'),
    ('credito',  'credit.authorize'),
    ('deposito', 'warehouse.view'),
    ('dueno',    'ops.view'),
    ('dueno',    'dlq.admin');

-- Guarantee 12: who did what, append-only. The triggers refuse UPDATE, DELETE and TRUNCATE for
-- every role, the table owner included; only dropping the trigger (DDL, itself visible) could change that.
CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,                  -- a username, or 'system' for the relay
    action      text NOT NULL,                  -- e.g. 'credit.approved', 'dead_letter.replayed'
    object_type text NOT NULL,                  -- e.g. 'order', 'dead_letter', 'outbox_event'
    object_id   text NOT NULL,
    details     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_object_idx ON audit_log (object_type, object_id);

CREATE FUNCTION audit_log_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();

CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
