-- The day the round found the threshold reached (docs/reminders.md): the
-- email counts its "in N days" / "N days overdue" from it, not from the day
-- the email job happens to run. NULL on rows written before this column.
ALTER TABLE reminders ADD COLUMN reached_on DATE;
