-- Supplement A of Form I-9 (docs/supplement-a.md): each preparer and/or
-- translator who assisted the employee with Section 1, in the order the
-- employee gave them, written in the transaction that signs Section 1. The
-- first is also copied into the I-9's translator_* columns and
-- signed_date_translator. At most 5 per I-9 (the page's limit). Removed
-- with its I-9 (retention).
CREATE TABLE i9_preparers (
    i9_id           BIGINT NOT NULL REFERENCES i9s (id) ON DELETE CASCADE,
    position        SMALLINT NOT NULL CHECK (position BETWEEN 1 AND 5),
    last_name       TEXT NOT NULL,
    first_name      TEXT NOT NULL,
    middle_initial  TEXT,
    address         TEXT NOT NULL,
    city            TEXT NOT NULL,
    state           TEXT NOT NULL,
    zip             TEXT NOT NULL,
    -- The preparer's typed name: their electronic signature.
    signature       TEXT NOT NULL,
    signed_date     DATE NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (i9_id, position)
);
