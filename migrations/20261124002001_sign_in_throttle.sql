-- Sign-in throttling per username and per client address, with growing
-- delays (docs/api.md, "Throttling"). One row per key that failed recently,
-- counted by a single upsert, so concurrent failures are all counted. The key
-- is an HMAC of the kind and the lower-cased username or the address: no
-- username (a user may type a password into it) or address is stored in clear.
-- `level` is the number of failures not yet forgotten (one is forgotten every
-- SIGN_IN_*_FORGET_SECS); it reaches zero at `forgotten_at`, after which the
-- worker purges the row.
DROP TABLE sign_in_failures;

CREATE TABLE sign_in_throttle (
    key           BYTEA PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('username', 'address')),
    -- Failures since the row was made (a successful sign-in deletes a username's row).
    failures      BIGINT NOT NULL,
    level         DOUBLE PRECISION NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    -- Until when the key is delayed; NULL: it never was.
    blocked_until TIMESTAMPTZ,
    forgotten_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX sign_in_throttle_forgotten_idx ON sign_in_throttle (forgotten_at);
