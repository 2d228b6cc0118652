-- Indexes the I-9 writes and lists were missing (docs/operations.md,
-- "Performance"):
--
-- - A new or changed period of employment restamps the retention date of its
--   I-9s (employment_periods_store_retention): "the period's I-9s, or the
--   employee's without a period". With the period's column indexed beside
--   i9s_employee_idx, the two sides of that OR are two index scans; without
--   it, every new hire scanned the I-9s still kept.
-- - The I-9 list's filters compare text as lower(column) = lower($1)
--   (api/src/list.rs) and dates by range: the names, the start date and the
--   due date are now served by an index, as the employee list's are.
CREATE INDEX i9s_employment_period_idx ON i9s (employment_period_id)
    WHERE employment_period_id IS NOT NULL;
CREATE INDEX i9s_last_name_idx ON i9s (lower(last_name));
CREATE INDEX i9s_first_name_idx ON i9s (lower(first_name));
CREATE INDEX i9s_start_date_idx ON i9s (start_date);
CREATE INDEX i9s_date_due_idx ON i9s (date_due);
