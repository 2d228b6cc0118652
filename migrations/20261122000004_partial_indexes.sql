-- Index only the rows that have the value: most employees have no SSN or
-- email on file at first, and every write pays for each index entry.
DROP INDEX employees_ssn_hash_key;
CREATE UNIQUE INDEX employees_ssn_hash_key ON employees (ssn_hash) WHERE ssn_hash IS NOT NULL;
DROP INDEX employees_email_idx;
CREATE INDEX employees_email_idx ON employees (lower(email_address)) WHERE email_address IS NOT NULL;
