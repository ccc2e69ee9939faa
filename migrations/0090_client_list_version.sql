-- The order form's client select: a distributor's 10,000 clients are 1 MB of <option>s and were most
-- of the form's CPU (make bench growth: 3.7 → 48.5 ms a page, issue 14). Each web process builds them
-- once and keeps them while the client list's version stands (nexo/orders/client_options.py).
--
-- The version changes in the same transaction as any change the select shows: a new client, a removed
-- one, a new name or tier (TRUNCATE too: the tests' reset). A credit charge (exposure_cents) does not
-- touch it, so the thousands of orders a morning never invalidate the list. It is a random value, not
-- a counter: a version never comes back, even after this table is emptied, so a process can never
-- mistake an old list for the current one. Being a row, it is seen only once its transaction commits.
-- A load that switches triggers off (session_replication_role = replica, a restore with
-- --disable-triggers) must set a new version itself, as bench/grow.py does.
CREATE TABLE list_version (
    list    text PRIMARY KEY,
    version uuid NOT NULL
);

CREATE FUNCTION client_list_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_version (list, version) VALUES ('client', gen_random_uuid())
        ON CONFLICT (list) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$;

CREATE TRIGGER client_list_changed
    AFTER INSERT OR DELETE OR UPDATE OF name, tier OR TRUNCATE ON client
    FOR EACH STATEMENT EXECUTE FUNCTION client_list_changed();

INSERT INTO list_version (list, version) VALUES ('client', gen_random_uuid());
