-- Employees' own sign-ins on the web pages (docs/api.md, "The employee's own page"): one row per
-- signed-in browser, found by the SHA-256 of the cookie's secret (the secret itself is never stored).
-- A session ends when it is signed out, after `idle` minutes without a page, or at `expires_at`.
CREATE TABLE account_sessions (
    token_hash   BYTEA PRIMARY KEY,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX account_sessions_user_idx ON account_sessions (user_id);
CREATE INDEX account_sessions_expires_idx ON account_sessions (expires_at);
