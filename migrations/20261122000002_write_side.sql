-- The write side: the Section 1 link token is also kept encrypted (AES-GCM)
-- so the remote-hire email can carry the same link the API returned; the role
-- of employee sign-ins created by createLogin.

ALTER TABLE i9_requests ADD COLUMN section1_token_ciphertext BYTEA NOT NULL;

INSERT INTO roles (name, description)
VALUES ('Employee self-service', 'Sign-in of an employee created with createLogin; no access to records')
ON CONFLICT ((lower(name))) DO NOTHING;

CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
