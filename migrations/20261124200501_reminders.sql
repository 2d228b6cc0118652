-- Expiring-document reminders (docs/reminders.md).
--
-- Whether an I-9 still needs its reverification or receipt update followed
-- up on `today`: not Parked, and its employee still employed (the current,
-- latest, period of employment has not ended today or earlier; one ending
-- later is still employed). Written once, here: the `reverification`,
-- `receipt` and `expiring` work queues of GET /v1/i9s and the reminder job
-- both call it. (Arguments are positional: a SQL function's column names
-- win over its argument names.)
CREATE FUNCTION i9_awaits_follow_up(i9_status TEXT, i9_employee BIGINT, today DATE)
RETURNS BOOLEAN LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT $1 <> 'Parked' AND NOT EXISTS (
        SELECT 1 FROM (SELECT p.terminated_date FROM employment_periods p
                       WHERE p.employee_id = $2
                       ORDER BY p.id DESC LIMIT 1) AS latest
        WHERE latest.terminated_date <= $3)
$$;

-- One row per I-9, kind of date, due date and threshold reached: `sent` when
-- the reminder went out (its emails and partner event queued in the same
-- transaction), not sent when the job first saw the I-9 already past that
-- threshold and sent only the tightest one. The key makes a reminder go out
-- once, whichever worker and however often a round runs; a new due date
-- starts a new cycle.
CREATE TABLE reminders (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    i9_id       BIGINT NOT NULL REFERENCES i9s (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('reverification', 'receipt')),
    due_date    DATE NOT NULL,
    threshold   TEXT NOT NULL CHECK (threshold ~ '^([0-9]{1,4}|overdue)$'),
    sent        BOOLEAN NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (i9_id, kind, due_date, threshold)
);

-- The receipt queue and the reminder job read I-9s by receipt due date.
CREATE INDEX i9s_receipt_due_idx ON i9s (receipt_due_date)
    WHERE receipt_due_date IS NOT NULL AND status <> 'Parked';
