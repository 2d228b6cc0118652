-- The audit log only grows and is read by time range: a BRIN index is
-- enough there and costs writes almost nothing.
DROP INDEX audit_log_occurred_idx;
CREATE INDEX audit_log_occurred_brin ON audit_log USING brin (occurred_at);
