-- Retention and purge of I-9s (docs/retention.md).
--
-- 1. The rule, written once: `i9_retention_date(hired, terminated)` is the
--    later of hire + 3 years and termination + 1 year (8 CFR
--    274a.2(b)(2)(i)(A); M-274 section 10.0), NULL while employed or when the
--    hire date is unknown. "N years after" a date is the same day N years on;
--    a Feb 29 on a year without one is Mar 1 (never a day early).
-- 2. `i9s.retention_date` is stored, by triggers, in the transaction of every
--    write that changes what it depends on: an I-9's period of employment
--    (`employment_period_id`, or the employee's latest period for an I-9
--    without one) and that period's start and termination dates. A purged
--    I-9 keeps the date it was purged under.
-- 3. Legal holds, destruction records, and `purged_at` on I-9s and employees.

CREATE FUNCTION i9_years_after(d DATE, years INTEGER) RETURNS DATE
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- Postgres clamps Feb 29 + N years to Feb 28 on a common year: that day
    -- would be a day early, the anniversary is Mar 1.
    SELECT CASE WHEN extract(day FROM (d + make_interval(years => years))) <> extract(day FROM d)
                THEN (d + make_interval(years => years))::DATE + 1
                ELSE (d + make_interval(years => years))::DATE END
$$;

CREATE FUNCTION i9_retention_date(hired DATE, terminated DATE) RETURNS DATE
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN hired IS NOT NULL AND terminated IS NOT NULL THEN
        GREATEST(i9_years_after(hired, 3), i9_years_after(terminated, 1))
    END
$$;

-- The retention date of an I-9 of employee `employee`, period `period` (NULL:
-- the employee's latest, as the record always read it), start date `i9_start`
-- (the date of hire when the period has none).
CREATE FUNCTION i9_retention_of(employee BIGINT, period BIGINT, i9_start DATE) RETURNS DATE
LANGUAGE sql STABLE AS $$
    SELECT i9_retention_date(COALESCE(p.start_date, i9_start), p.terminated_date)
    FROM employment_periods p
    WHERE p.id = period OR (period IS NULL AND p.employee_id = employee)
    ORDER BY p.id DESC LIMIT 1
$$;

ALTER TABLE i9s ADD COLUMN purged_at TIMESTAMPTZ;
ALTER TABLE employees ADD COLUMN purged_at TIMESTAMPTZ;
-- A purged employee's names are empty.
ALTER TABLE employees DROP CONSTRAINT employees_first_name_check;
ALTER TABLE employees ADD CONSTRAINT employees_first_name_check
    CHECK (length(first_name) BETWEEN 1 AND 40 OR (purged_at IS NOT NULL AND first_name = ''));
ALTER TABLE employees DROP CONSTRAINT employees_last_name_check;
ALTER TABLE employees ADD CONSTRAINT employees_last_name_check
    CHECK (length(last_name) BETWEEN 1 AND 40 OR (purged_at IS NOT NULL AND last_name = ''));

CREATE FUNCTION i9s_store_retention() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.purged_at IS NULL THEN
        NEW.retention_date := i9_retention_of(NEW.employee_id, NEW.employment_period_id, NEW.start_date);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER i9s_store_retention
    BEFORE INSERT OR UPDATE OF employee_id, employment_period_id, start_date ON i9s
    FOR EACH ROW EXECUTE FUNCTION i9s_store_retention();

CREATE FUNCTION employment_periods_store_retention() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The I-9s of this period, and those without a period of this employee
    -- (a new period changes which one is their latest).
    UPDATE i9s i SET retention_date = i9_retention_of(i.employee_id, i.employment_period_id, i.start_date)
    WHERE i.purged_at IS NULL
      AND (i.employment_period_id = NEW.id
           OR (i.employment_period_id IS NULL AND i.employee_id = NEW.employee_id))
      AND i.retention_date IS DISTINCT FROM
          i9_retention_of(i.employee_id, i.employment_period_id, i.start_date);
    RETURN NULL;
END $$;

CREATE TRIGGER employment_periods_store_retention
    AFTER INSERT OR UPDATE OF start_date, terminated_date ON employment_periods
    FOR EACH ROW EXECUTE FUNCTION employment_periods_store_retention();

-- Backfill: every I-9 as the rule has it (NULL while employed).
UPDATE i9s SET retention_date = i9_retention_of(employee_id, employment_period_id, start_date)
WHERE retention_date IS DISTINCT FROM i9_retention_of(employee_id, employment_period_id, start_date);

CREATE INDEX i9s_retention_due_idx ON i9s (retention_date) WHERE purged_at IS NULL;

-- A legal hold keeps every I-9 of an employee, or of every employee of a
-- legal entity, from the purge until it is lifted. Lifted holds stay as
-- history. `reason` names a matter, never a person (docs/retention.md).
-- `set_by`/`lifted_by` are user ids (no foreign keys, like the audit log);
-- NULL for `i9-admin`.
CREATE TABLE legal_holds (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    employee_id      BIGINT REFERENCES employees (id),
    legal_entity_id  BIGINT REFERENCES legal_entities (id),
    reason           TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    set_by           BIGINT,
    set_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    lifted_by        BIGINT,
    lifted_at        TIMESTAMPTZ,
    CHECK ((employee_id IS NULL) <> (legal_entity_id IS NULL))
);
CREATE INDEX legal_holds_employee_idx ON legal_holds (employee_id) WHERE lifted_at IS NULL;
CREATE INDEX legal_holds_legal_entity_idx ON legal_holds (legal_entity_id) WHERE lifted_at IS NULL;

-- What remains of a purged I-9: which record, when, under which rule, the
-- date it was due. No personal data (no names, no dates of employment).
CREATE TABLE i9_destructions (
    i9_id            BIGINT PRIMARY KEY REFERENCES i9s (id),
    employee_id      BIGINT NOT NULL,
    legal_entity_id  BIGINT,
    retention_date   DATE NOT NULL,
    rule             TEXT NOT NULL,
    purged_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    purged_by        TEXT NOT NULL CHECK (purged_by IN ('worker', 'admin'))
);
CREATE INDEX i9_destructions_purged_idx ON i9_destructions (purged_at);
