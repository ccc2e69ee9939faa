-- Sessions that end on the server, accounts the owner manages, a second factor, scoped API keys
-- (docs/adr/ADR-018-sessions-and-accounts.md, guarantee 22).

-- One row per login. The cookie carries a random session id; only its SHA-256 is kept here, so a copy
-- of this table opens no session. A session is live while ended_at IS NULL and it is within the idle
-- and absolute limits (SESSION_IDLE_S, SESSION_MAX_S); ended_at is set once and never cleared, so
-- reactivating a user revives none of their old sessions.
CREATE TABLE user_session (
    id           bigserial PRIMARY KEY,
    token_sha256 text NOT NULL UNIQUE CHECK (length(token_sha256) = 64),
    user_id      bigint NOT NULL REFERENCES app_user(id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),  -- refreshed at most once a minute (nexo/auth/sessions.py)
    ended_at     timestamptz,
    end_reason   text CHECK (end_reason IN ('logout', 'idle', 'expired', 'closed_by_user', 'password_changed',
                                            'password_reset', 'deactivated', 'roles_changed', 'mfa_enrolled')),
    client_addr  text NOT NULL,                        -- after TRUSTED_PROXIES (nexo/security.py)
    user_agent   text NOT NULL,
    CHECK ((ended_at IS NULL) = (end_reason IS NULL))
);
CREATE INDEX user_session_live_idx ON user_session (user_id) WHERE ended_at IS NULL;
CREATE INDEX user_session_ended_idx ON user_session (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX user_session_last_seen_idx ON user_session (last_seen_at) WHERE ended_at IS NULL;

-- A one-time password (set by the owner or `flask users create`' caller) must be changed at first login.
ALTER TABLE app_user
    ADD COLUMN must_change_password boolean NOT NULL DEFAULT false,
    ADD COLUMN password_changed_at timestamptz,
    ADD COLUMN totp_secret text,                       -- base32; NULL: no second factor enrolled
    ADD COLUMN totp_enrolled_at timestamptz,
    ADD COLUMN totp_last_step bigint,                  -- the last 30 s step accepted: a code is good once
    ADD CONSTRAINT app_user_totp_enrolled CHECK ((totp_secret IS NULL) = (totp_enrolled_at IS NULL));

-- Recovery codes: shown once at enrolment, kept as SHA-256 (each is 80 random bits), good once each.
CREATE TABLE recovery_code (
    id          bigserial PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES app_user(id),
    code_sha256 text NOT NULL UNIQUE CHECK (length(code_sha256) = 64),
    created_at  timestamptz NOT NULL DEFAULT now(),
    used_at     timestamptz
);
CREATE INDEX recovery_code_user_idx ON recovery_code (user_id) WHERE used_at IS NULL;

INSERT INTO permission (name, description) VALUES
    ('users.admin', 'Crear usuarios, cambiar sus roles, desactivarlos y restablecer sus contraseñas');
INSERT INTO role_permission (role_name, permission_name) VALUES ('dueno', 'users.admin');

-- API keys: scopes (NULL: every permission of the key's user; otherwise only those of the user's
-- permissions named here) and an optional expiry.
ALTER TABLE api_key
    ADD COLUMN scopes text[],
    ADD COLUMN expires_at timestamptz;

-- The owner's page of authentication events reads the newest first.
CREATE INDEX audit_log_auth_idx ON audit_log (occurred_at DESC, id DESC) WHERE action LIKE 'auth.%' OR action LIKE 'api_key.%';
