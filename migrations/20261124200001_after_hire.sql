-- The I-9 after hire (docs/reverification.md): the day by which the real
-- document must replace a receipt shown for a lost, stolen or damaged one
-- (90 days), NULL when no receipt is pending. The expiring-document
-- reminders read it beside `i9_expiration`.
ALTER TABLE i9s ADD COLUMN receipt_due_date DATE;
