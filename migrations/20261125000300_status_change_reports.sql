-- E-Verify's Status Change Report (docs/everify.md, "The Status Change
-- Report (2025)"): the reverification requests its rows open on I-9s, and a
-- record of each import. The report file itself is never kept (it holds
-- names and A-Numbers): only what was applied.

-- One reverification request per I-9 the report named, with a revoked EAD
-- that is still the I-9's document: the employer reverifies on Supplement B
-- by `due_on`; the Supplement B entry that does clears it. A row is never
-- applied twice: (legal entity, case number, revoked document number) is
-- its key. The rows belong to their I-9: deleted when it is purged
-- (common/src/models/retention.rs, I9_PERSONAL_TABLES).
CREATE TABLE i9_reverification_requests (
    id                        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    i9_id                     BIGINT NOT NULL REFERENCES i9s (id) ON DELETE CASCADE,
    legal_entity_id           BIGINT NOT NULL REFERENCES legal_entities (id),
    reason                    TEXT NOT NULL CHECK (reason IN ('ead_revoked')),
    -- The report's revocation date, when it gave one.
    revoked_on                DATE,
    -- The import day and the day reverification is due (import day + N
    -- business days, EVERIFY_REVOCATION_DUE_BUSINESS_DAYS).
    requested_on              DATE NOT NULL,
    due_on                    DATE NOT NULL,
    case_number               TEXT NOT NULL CHECK (length(case_number) BETWEEN 1 AND 40),
    -- The revoked EAD's number, as the report wrote it: a document number,
    -- stored as the I-9's own (`i9s.list_a1_doc_number`, ...).
    revoked_document_number   TEXT NOT NULL CHECK (length(revoked_document_number) BETWEEN 1 AND 60),
    -- The import that applied it.
    import_id                 BIGINT,
    cleared_at                TIMESTAMPTZ,
    cleared_by_supplement_b_id BIGINT REFERENCES i9_supplement_b (id) ON DELETE SET NULL,
    created_at                TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (cleared_by_supplement_b_id IS NULL OR cleared_at IS NOT NULL),
    UNIQUE (legal_entity_id, case_number, revoked_document_number)
);
CREATE INDEX i9_reverification_requests_open_idx ON i9_reverification_requests (i9_id)
    WHERE cleared_at IS NULL;

-- The earliest due day of the open reverification requests of an I-9, or
-- NULL: the `reverification` and `expiring` work queues and the list's
-- `documentDueDate` read it (api/src/routes/i9s.rs). Written once, here.
CREATE FUNCTION i9_revocation_due(i9 BIGINT)
RETURNS DATE LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT min(due_on) FROM i9_reverification_requests
    WHERE i9_id = $1 AND cleared_at IS NULL
$$;

-- Each import of a report: who, when, for which legal entity, and the
-- counts of its rows by outcome. Never the file or its values.
CREATE TABLE everify_status_change_imports (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    legal_entity_id    BIGINT NOT NULL REFERENCES legal_entities (id),
    imported_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    imported_on        DATE NOT NULL,
    -- The user (NULL: `i9-admin`, or a client without a user); no foreign
    -- key, as the audit log: the record outlives them.
    imported_by_user_id   BIGINT,
    imported_by_client_id BIGINT,
    rows_total         INTEGER NOT NULL,
    applied            INTEGER NOT NULL,
    already_applied    INTEGER NOT NULL,
    not_current        INTEGER NOT NULL,
    document_mismatch  INTEGER NOT NULL,
    not_found          INTEGER NOT NULL
);
CREATE INDEX everify_status_change_imports_entity_idx
    ON everify_status_change_imports (legal_entity_id, id DESC);

ALTER TABLE i9_reverification_requests
    ADD FOREIGN KEY (import_id) REFERENCES everify_status_change_imports (id) ON DELETE SET NULL;
