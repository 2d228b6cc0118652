-- E-Verify cases (docs/everify.md). One row per case the service opened for
-- an I-9, whichever program answered it (`program`: the built-in simulator
-- or E-Verify itself), so a simulated result can never pass for a real one.
--
-- `status` is E-Verify's name for where the case stands, plus the service's
-- `Pending` (written, the program has not answered) and `Closed` (E-Verify has
-- no such result; a closed case keeps its `result`). A case is *unresolved*
-- while it is not `Closed`: its employee then gets no new I-9
-- (docs/everify.md, "Unresolved verification records").
--
-- The rows belong to their I-9: deleted when the I-9 is purged
-- (common/src/models/retention.rs, I9_PERSONAL_TABLES). Who acted is kept as
-- ids without foreign keys, as the audit log does: the case outlives them.
CREATE TABLE everify_cases (
    id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    i9_id                 BIGINT NOT NULL REFERENCES i9s (id) ON DELETE CASCADE,
    employee_id           BIGINT NOT NULL REFERENCES employees (id),
    legal_entity_id       BIGINT NOT NULL REFERENCES legal_entities (id),
    program               TEXT NOT NULL CHECK (program IN ('simulator', 'e-verify')),
    -- The program's number; NULL until it answers.
    case_number           TEXT CHECK (length(case_number) BETWEEN 1 AND 40),
    status                TEXT NOT NULL CHECK (status IN (
                              'Pending', 'Case Incomplete', 'Duplicate Case',
                              'E-Verify Needs More Time', 'Tentative Nonconfirmation',
                              'Referred', 'Case in Continuance', 'Close Case and Resubmit',
                              'Final Nonconfirmation', 'Closed')),
    -- The program's latest result (E-Verify's words), kept when closed.
    result                TEXT CHECK (result IN (
                              'Employment Authorized', 'E-Verify Needs More Time',
                              'Tentative Nonconfirmation', 'Case in Continuance',
                              'Close Case and Resubmit', 'Final Nonconfirmation',
                              'Duplicate Case', 'Case Incomplete')),
    agency                TEXT CHECK (agency IN ('SSA', 'DHS', 'SSA and DHS')),
    -- Why a Final Nonconfirmation: the agency decided, the employee did not
    -- contact it in time, or chose not to take action.
    basis                 TEXT CHECK (basis IN ('agency', 'no_show', 'no_action')),
    -- The program's message when it refused the data (Case Incomplete).
    program_message       TEXT,
    -- Section 2 rested on a receipt when the case was opened (docs/everify.md,
    -- open question 8).
    from_receipt          BOOLEAN NOT NULL DEFAULT FALSE,
    -- The creation deadline (three business days after the start date) and
    -- whether the case was opened after it, with E-Verify's reason.
    created_on            DATE NOT NULL,
    due_on                DATE,
    late                  BOOLEAN NOT NULL DEFAULT FALSE,
    late_reason           TEXT,
    late_reason_other     TEXT CHECK (length(late_reason_other) BETWEEN 1 AND 200),
    -- The case creator (E-Verify asks for one): the signed-in user.
    created_by_user_id    BIGINT NOT NULL,
    creator_name          TEXT NOT NULL,
    creator_email         TEXT,
    creator_phone         TEXT,
    -- The steps, each on its U.S. Eastern day (docs/everify.md, "Windows").
    result_issued_on      DATE,
    employee_notified_on  DATE,
    notice_language       TEXT,
    referred_on           DATE,
    continuance_on        DATE,
    duplicate_reason      TEXT,
    duplicate_reason_other TEXT CHECK (length(duplicate_reason_other) BETWEEN 1 AND 200),
    -- What is to be done next and by when (NULL when nothing is): written by
    -- every change of the case, so the lists can filter on it.
    next_step             TEXT,
    next_step_due_on      DATE,
    -- The closure.
    closure_reason        TEXT,
    closure_statement     TEXT,
    employed_at_closure   BOOLEAN,
    closure_note          TEXT CHECK (length(closure_note) BETWEEN 1 AND 200),
    closed_on             DATE,
    closed_by_user_id     BIGINT,
    -- Close Case and Resubmit: the case this one replaced.
    resubmit_of           BIGINT REFERENCES everify_cases (id),
    -- Failed calls to an unavailable program, for the backoff and the
    -- three-day rule's extension (the MOU).
    unavailable_attempts  INTEGER NOT NULL DEFAULT 0,
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((status = 'Closed') = (closed_on IS NOT NULL)),
    CHECK (NOT late OR late_reason IS NOT NULL)
);
-- At most one open case per I-9; a second is refused up front.
CREATE UNIQUE INDEX everify_cases_one_open_per_i9 ON everify_cases (i9_id)
    WHERE status <> 'Closed';
CREATE UNIQUE INDEX everify_cases_number_key ON everify_cases (program, case_number);
-- "Has this employee an unresolved verification record?" (createI9).
CREATE INDEX everify_cases_unresolved_idx ON everify_cases (employee_id)
    WHERE status <> 'Closed';
CREATE INDEX everify_cases_i9_idx ON everify_cases (i9_id, id DESC);
CREATE INDEX everify_cases_employee_idx ON everify_cases (employee_id, id DESC);
CREATE INDEX everify_cases_legal_entity_idx ON everify_cases (legal_entity_id, id DESC);
CREATE INDEX everify_cases_next_step_due_idx ON everify_cases (next_step_due_on)
    WHERE status <> 'Closed';

-- Each status a case took, with its day: the case's `history`, and the
-- inspection PDF's account of it. Never case data.
CREATE TABLE everify_case_history (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    case_id     BIGINT NOT NULL REFERENCES everify_cases (id) ON DELETE CASCADE,
    status      TEXT NOT NULL,
    result      TEXT,
    -- The step that caused it (`open`, `notify`, `refer`, `close`, …) or
    -- `program` for the program's own update.
    step        TEXT NOT NULL,
    on_day      DATE NOT NULL,
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    by_user_id  BIGINT
);
CREATE INDEX everify_case_history_case_idx ON everify_case_history (case_id, id);
