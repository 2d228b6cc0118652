-- While the SSN hash key rotates, employees' hashes are made with different
-- keys, so the unique index on ssn_hash alone no longer sees every duplicate.
-- Every write of an SSN also sets ssn_hash_check: the SSN's hash under every
-- key of the writer's ring (common/src/crypto.rs, ssn_search_hashes). This
-- trigger refuses the write if another employee holds any of them, raising the
-- same error as the unique index (so callers answer 409 as before), and clears
-- the column: it is never stored.
--
-- Two writers of the same SSN under different current keys (processes
-- restarted one at a time) would not see each other's uncommitted row: writers
-- of SSNs with the same last four digits (stored in clear already) take turns
-- on a transaction advisory lock, so the later one checks after the earlier
-- one committed.
ALTER TABLE employees ADD COLUMN ssn_hash_check BYTEA[] CHECK (ssn_hash_check IS NULL);

CREATE FUNCTION employees_ssn_unique() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.ssn_hash IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(1765364563, hashtext(coalesce(NEW.ssn_last4, '')));
        IF EXISTS (
            SELECT 1 FROM employees e
            WHERE e.ssn_hash = ANY (coalesce(NEW.ssn_hash_check, '{}') || NEW.ssn_hash)
              AND e.id <> NEW.id
              -- An upsert by profileId (i9-admin seed) updates that row: not another holder.
              AND (TG_OP = 'UPDATE' OR NEW.profile_id IS NULL
                   OR lower(e.profile_id) IS DISTINCT FROM lower(NEW.profile_id))
        ) THEN
            RAISE unique_violation USING
                MESSAGE = 'duplicate key value violates unique constraint "employees_ssn_hash_key"',
                CONSTRAINT = 'employees_ssn_hash_key',
                TABLE = 'employees';
        END IF;
    END IF;
    NEW.ssn_hash_check := NULL;
    RETURN NEW;
END $$;

CREATE TRIGGER employees_ssn_unique
    BEFORE INSERT OR UPDATE OF ssn_hash, ssn_hash_check ON employees
    FOR EACH ROW EXECUTE FUNCTION employees_ssn_unique();
