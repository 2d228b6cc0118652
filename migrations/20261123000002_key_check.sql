-- One row proving which keys the data was written with: a ciphertext of a
-- fixed value under DATA_ENCRYPTION_KEY and an HMAC of a fixed value under
-- SSN_HASH_KEY. Written by the first binary that starts (or `i9-admin
-- migrate`/`seed`), checked at every start (common/src/key_check.rs), so a
-- valid key that is not the data's is refused at start, not at the first read.
CREATE TABLE key_check (
    id                      BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    data_key_ciphertext     BYTEA NOT NULL,
    ssn_hash_key_mac        BYTEA NOT NULL,
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now()
);
