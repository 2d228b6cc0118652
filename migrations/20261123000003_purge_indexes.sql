-- Indexes for the worker's purge of rows that only matter for a while
-- (docs/operations.md, "Purging").
CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at);
CREATE INDEX password_set_tokens_expires_idx ON password_set_tokens (expires_at);
CREATE INDEX oauth_grants_created_idx ON oauth_grants (created_at);
CREATE INDEX sign_in_failures_failed_idx ON sign_in_failures (failed_at);
CREATE INDEX processed_jobs_settled_idx ON processed_jobs ((COALESCE(processed_at, claimed_until)));
CREATE INDEX job_outbox_published_idx ON job_outbox (published_at) WHERE published_at IS NOT NULL;
