-- Every partner signing secret ever replaced, as its SHA-256, so that a
-- replaced (possibly leaked) secret is refused as a client's current secret
-- for good, also after its overlap ended and its ciphertext was purged, and
-- after a replacement with no overlap (docs/operations.md, "Rotating a
-- partner's signing secret"). A secret is 24 to 64 bytes of key (32 random
-- bytes when generated): a fast hash gives a guesser nothing more than the HMAC
-- signature every callback carries. Kept as long as the client.
CREATE TABLE retired_signing_secrets (
    oauth_client_id BIGINT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    secret_sha256 BYTEA NOT NULL CHECK (length(secret_sha256) = 32),
    retired_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (oauth_client_id, secret_sha256)
);
