-- The load of the inspection benchmark (scripts/inspection-bench.sh,
-- BENCHMARKS.md "Inspection export"): :n Completed I-9s of the legal entity
-- `acme-us` of the example organization, each as full as a real one: Section
-- 1 and 2, a preparer (Supplement A), a reverification (Supplement B), a
-- closed simulator E-Verify case with two steps, and five audit entries.
-- Set-based INSERTs, one transaction. Every number is made from the row's
-- id at run time: no SSN- or A-Number-like literal is in this text.
\set ON_ERROR_STOP on
BEGIN;
CREATE TEMP TABLE bench_seed ON COMMIT DROP AS SELECT g AS n FROM generate_series(1, :n) g;

WITH emp AS (
    INSERT INTO employees (first_name, last_name, location_id, legal_entity_id)
    SELECT 'Bench' || n, 'Employee-' || n,
           (SELECT id FROM groups ORDER BY id LIMIT 1),
           (SELECT id FROM legal_entities WHERE seed_key = 'acme-us')
    FROM bench_seed
    RETURNING id)
INSERT INTO employment_periods (employee_id, start_date)
SELECT id, DATE '2026-01-05' FROM emp;

CREATE TEMP TABLE bench_i9s ON COMMIT DROP AS
WITH ins AS (
    INSERT INTO i9s (employee_id, employment_period_id, status, form_version, date_created,
                     date_completed, date_due, start_date, i9_expiration, signed_date_employee,
                     signed_date_employer, first_name, last_name, middle_initial, other_name,
                     date_of_birth, ssn_last4, email_address, phone_number, address_street,
                     address_apartment, address_city, address_state, address_zip, attestation,
                     work_authorization_expiration, employer_first_name, employer_last_name,
                     employer_title, employer_business, employer_address, employer_city,
                     employer_state, employer_zip, list_a1_doc_title, list_a1_doc_issuer,
                     list_a1_doc_number, list_a1_doc_expiration)
    SELECT e.id, p.id, 'Completed', '01/20/25', TIMESTAMPTZ '2026-01-02 15:00Z',
           TIMESTAMPTZ '2026-01-06 17:30Z', DATE '2026-01-08', DATE '2026-01-05', DATE '2027-06-30',
           DATE '2026-01-02', DATE '2026-01-06', e.first_name, e.last_name, 'Q', 'Formerly ' || e.last_name,
           DATE '1970-01-01' + (e.id % 12000)::INT, lpad((e.id % 10000)::TEXT, 4, '0'),
           'bench' || e.id || '@mail.example', '503-555-' || lpad((e.id % 10000)::TEXT, 4, '0'),
           (100 + e.id % 900) || ' Harbor Road', 'Unit ' || (e.id % 40), 'Portland', 'OR', '97201',
           'alien authorized to work', DATE '2027-06-30', 'Ada', 'Admin', 'HR Lead',
           'Acme Staffing US LLC', '1 Commerce Way', 'Portland', 'OR', '97204',
           'Employment Authorization Document (Form I-766)', 'USCIS',
           'EAD' || lpad(e.id::TEXT, 10, '0'), DATE '2027-06-30'
    FROM employees e JOIN employment_periods p ON p.employee_id = e.id
    WHERE e.first_name LIKE 'Bench%' AND NOT EXISTS (SELECT 1 FROM i9s x WHERE x.employee_id = e.id)
    RETURNING id, employee_id)
SELECT * FROM ins;

INSERT INTO i9_preparers (i9_id, position, last_name, first_name, middle_initial, address, city,
                          state, zip, signature, signed_date)
SELECT id, 1, 'Mendez', 'Rosa', 'L', '400 Main St', 'Salem', 'OR', '97301', 'Rosa Mendez',
       DATE '2026-01-02'
FROM bench_i9s;

INSERT INTO i9_supplement_b (i9_id, kind, document_list, document_title, document_issuer,
                             document_number, document_expiration, employer_name,
                             employer_signature, signed_on, i9_expiration)
SELECT id, 'reverification', 'A', 'Employment Authorization Document (Form I-766)', 'USCIS',
       'SRC' || lpad(id::TEXT, 10, '0'), DATE '2029-06-30', 'Ada Admin', 'ada admin',
       DATE '2027-06-01', DATE '2029-06-30'
FROM bench_i9s;

WITH c AS (
    INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number, status,
                               result, created_on, closed_on, closure_reason, closure_statement,
                               employed_at_closure, created_by_user_id, creator_name)
    SELECT b.id, b.employee_id, (SELECT id FROM legal_entities WHERE seed_key = 'acme-us'),
           'simulator', 'SIM' || lpad(b.id::TEXT, 12, '0'), 'Closed', 'Employment Authorized',
           DATE '2026-01-06', DATE '2026-01-06', 'Employment Authorized',
           'The employee continues to work for the employer after receiving an Employment Authorized result.',
           TRUE, 1, 'Ada Admin'
    FROM bench_i9s b
    RETURNING id)
INSERT INTO everify_case_history (case_id, status, result, step, on_day)
SELECT id, 'Pending', NULL, 'open', DATE '2026-01-06' FROM c
UNION ALL
SELECT id, 'Closed', 'Employment Authorized', 'close', DATE '2026-01-06' FROM c;

INSERT INTO audit_log (occurred_at, user_id, action, resource_type, resource_id, request_id, detail)
SELECT TIMESTAMPTZ '2026-01-02 15:00Z' + s.k * INTERVAL '1 day', CASE WHEN s.k = 0 THEN NULL ELSE 1 END,
       s.action, 'i9', b.id::TEXT, 'bench-' || b.id || '-' || s.k, s.detail::JSONB
FROM bench_i9s b
CROSS JOIN (VALUES (0, 'i9.section1', '{"fields": ["first_name", "last_name", "date_of_birth", "attestation"]}'),
                   (4, 'i9.section2', '{"fields": ["list_a1_doc_title", "list_a1_doc_number"]}'),
                   (4, 'i9.complete', '{}'),
                   (4, 'i9.approve', '{}'),
                   (500, 'i9.reverify', '{"fields": ["i9_expiration"]}')) AS s(k, action, detail);
COMMIT;
SELECT count(*) AS bench_i9s FROM i9s i JOIN employees e ON e.id = i.employee_id WHERE e.first_name LIKE 'Bench%';
