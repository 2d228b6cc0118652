-- When each partner signing secret became current, so that the commands that
-- replace or stop one can name it without showing it ("the secret set on
-- 2026-11-24 10:02:31 UTC"; docs/operations.md, "Rotating a partner's signing
-- secret"). A replaced secret keeps its date in previous_signing_secrets.
-- Unknown (NULL) for a secret set before this column, except a client never
-- updated since its creation: its secret was set then.
ALTER TABLE oauth_clients ADD COLUMN signing_secret_set_at TIMESTAMPTZ;
UPDATE oauth_clients SET signing_secret_set_at = created_at
 WHERE signing_secret_ciphertext IS NOT NULL AND updated_at = created_at;
ALTER TABLE previous_signing_secrets ADD COLUMN set_at TIMESTAMPTZ;
