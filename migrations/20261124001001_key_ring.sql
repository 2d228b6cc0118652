-- One row per key id of each key ring (common/src/keys.rs): a ciphertext of a
-- fixed value under that data key, or an HMAC of a fixed value under that SSN
-- hash key. Written by the first binary that starts with the key, checked at
-- every start (common/src/key_check.rs): a valid key that is not the one the
-- data was written with under its id is refused at start, not at the first
-- read. `unused_since` is set by `i9-admin rekey` once no stored value uses
-- the key: until then a ring without it is refused at start, naming the id.
CREATE TABLE key_ring (
    kind          TEXT NOT NULL CHECK (kind IN ('data', 'ssn_hash')),
    key_id        BIGINT NOT NULL CHECK (key_id BETWEEN 1 AND 4294967295),
    check_value   BYTEA NOT NULL,
    recorded_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    unused_since  TIMESTAMPTZ,
    PRIMARY KEY (kind, key_id)
);

-- The single keys recorded before key ids are key 1 of each ring.
INSERT INTO key_ring (kind, key_id, check_value, recorded_at)
SELECT 'data', 1, data_key_ciphertext, created_at FROM key_check
UNION ALL
SELECT 'ssn_hash', 1, ssn_hash_key_mac, created_at FROM key_check;

DROP TABLE key_check;
