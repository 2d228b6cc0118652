-- A partner's signing secrets that were replaced but still sign callbacks
-- until `valid_until` (the overlap: `i9-admin partners rotate-secret`, or
-- `i9-admin seed` with a changed signingSecret), so the partner can switch
-- without losing a delivery. Encrypted under the data key like the current
-- one (oauth_clients.signing_secret_ciphertext). Rows past `valid_until` sign
-- nothing and are purged by the worker.
CREATE TABLE previous_signing_secrets (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    oauth_client_id    BIGINT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    secret_ciphertext  BYTEA NOT NULL,
    replaced_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    valid_until        TIMESTAMPTZ NOT NULL
);
CREATE INDEX previous_signing_secrets_client ON previous_signing_secrets (oauth_client_id, valid_until);
CREATE INDEX previous_signing_secrets_expiry ON previous_signing_secrets (valid_until);
