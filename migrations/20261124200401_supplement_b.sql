-- Supplement B of Form I-9 (docs/reverification.md): each reverification,
-- rehire and receipt update recorded on an I-9, kept as history (never
-- updated). `i9s.i9_expiration` and `i9s.receipt_due_date` carry the
-- current state; these rows say how it came to be.
CREATE TABLE i9_supplement_b (
    id                            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The entries are part of their I-9: purged with it.
    i9_id                         BIGINT NOT NULL REFERENCES i9s (id) ON DELETE CASCADE,
    kind                          TEXT NOT NULL CHECK (kind IN ('reverification', 'rehire', 'receipt_update')),
    -- "Date of Rehire (if applicable)".
    rehire_date                   DATE,
    -- "New Name (if applicable)".
    new_last_name                 TEXT,
    new_first_name                TEXT,
    new_middle_initial            TEXT,
    -- The List A or List C document presented, when one was.
    document_list                 TEXT CHECK (document_list IN ('A', 'C')),
    document_title                TEXT,
    document_issuer               TEXT,
    document_number               TEXT,
    document_expiration           DATE,
    -- A receipt for the replacement of a lost, stolen or damaged document.
    receipt                       BOOLEAN NOT NULL DEFAULT FALSE,
    receipt_due_date              DATE,
    employer_name                 TEXT NOT NULL,
    employer_signature            TEXT NOT NULL,
    signed_on                     DATE NOT NULL,
    additional_information        TEXT,
    alternative_procedure         BOOLEAN NOT NULL DEFAULT FALSE,
    -- A rehire: the period the I-9 covered before, and the new one it covers now.
    previous_employment_period_id BIGINT REFERENCES employment_periods (id) ON DELETE SET NULL,
    employment_period_id          BIGINT REFERENCES employment_periods (id) ON DELETE SET NULL,
    -- `i9s.i9_expiration` as this entry left it.
    i9_expiration                 DATE,
    -- Who recorded it (as audit_log: no foreign keys, the entry outlives them).
    recorded_by_user_id           BIGINT,
    recorded_by_client_id         BIGINT,
    recorded_at                   TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (document_title IS NULL OR (document_list IS NOT NULL AND document_number IS NOT NULL)),
    CHECK (NOT receipt OR receipt_due_date IS NOT NULL),
    CHECK (kind <> 'rehire' OR rehire_date IS NOT NULL),
    CHECK (kind = 'rehire' OR document_title IS NOT NULL)
);
CREATE INDEX i9_supplement_b_i9_idx ON i9_supplement_b (i9_id, id);
