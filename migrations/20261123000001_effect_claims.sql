-- processed_jobs also holds claims on effects outside the database (an email
-- sent, a callback delivered): a row with processed_at NULL is an effect
-- under way, claimed until claimed_until (docs/operations.md, "At least once").
-- job_id is the job's idempotency key: its job id, or for a partner callback
-- the event id (several jobs may carry one event).
ALTER TABLE processed_jobs ALTER COLUMN processed_at DROP NOT NULL;
ALTER TABLE processed_jobs ADD COLUMN claimed_until TIMESTAMPTZ;

-- Events delivered before claims existed are done.
INSERT INTO processed_jobs (job_id, kind, processed_at)
SELECT id, 'post_status_callback', delivered_at FROM partner_events WHERE delivered_at IS NOT NULL
ON CONFLICT (job_id) DO NOTHING;
