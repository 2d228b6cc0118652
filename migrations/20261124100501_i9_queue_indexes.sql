-- The work queues of GET /v1/i9s (docs/api.md, "Work queues"): `section2-due`
-- and `overdue` read I-9s by status and deadline, `reverification` by the
-- reverification date of I-9s that are not Parked.
CREATE INDEX i9s_status_date_due_idx ON i9s (status, date_due);
CREATE INDEX i9s_expiration_idx ON i9s (i9_expiration) WHERE status <> 'Parked';
