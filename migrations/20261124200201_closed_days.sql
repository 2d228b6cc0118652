-- The organization's closed days (docs/calendar.md): weekdays that are not
-- business days for its deadlines (Section 2 within three business days).
-- One deployment serves one organization, so the table is the organization's.
-- Adding or removing a day moves no deadline already computed.
CREATE TABLE closed_days (
    day        DATE PRIMARY KEY,
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    created_by BIGINT REFERENCES users (id),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
