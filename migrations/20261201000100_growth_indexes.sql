-- Indexes the lists were missing on large tables (BENCHMARKS.md, "Growth":
-- the plan of every list and filter on 1,000,000 employees):
--
-- - GET /v1/everify-cases: each item's `resubmittedAs` looks up the case
--   that replaced it (`resubmit_of = c.id`); without an index every item of
--   a page scanned the whole table (50 scans per page).
-- - GET /v1/legal-holds: the employees a hold covers are those with its
--   employee id or its legal entity (`c.id = h.employee_id OR
--   c.legal_entity_id = h.legal_entity_id`): with the legal entity indexed
--   the two sides are two index scans, not a scan of every employee per
--   hold. The employee list's `legalEntity` filter reads the same index.
-- - Filters compared with no index: the employee list's `dateOfBirth` and
--   `integrationCandidateId` (the unique index is on the client and the raw
--   id; the filter compares lower(id)), the I-9 list's `i9Expiration` (the
--   index was partial, `status <> 'Parked'`, which an exact date does not
--   imply; the queues read the full index as well), and the E-Verify list's
--   `caseNumber` (compared as lower(case_number)).
-- - The employee list's `emailAddress`: its index is partial, and Postgres
--   keeps no statistics for the expression of a partial index, so it
--   guessed many matches and walked the whole table in id order for a page
--   of one. Statistics on the expression give the real count.
CREATE INDEX everify_cases_resubmit_of_idx ON everify_cases (resubmit_of)
    WHERE resubmit_of IS NOT NULL;
CREATE INDEX employees_legal_entity_idx ON employees (legal_entity_id);
CREATE INDEX employees_date_of_birth_idx ON employees (date_of_birth);
CREATE INDEX employees_integration_candidate_idx ON employees (lower(integration_candidate_id));
DROP INDEX i9s_expiration_idx;
CREATE INDEX i9s_expiration_idx ON i9s (i9_expiration);
CREATE INDEX everify_cases_case_number_idx ON everify_cases (lower(case_number));
CREATE STATISTICS employees_email_stats ON (lower(email_address)) FROM employees;
