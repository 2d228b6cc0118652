-- Section 2's checkbox "Check here if you used an alternative procedure
-- authorized by DHS to examine documents" (docs/remote-examination.md).
ALTER TABLE i9s ADD COLUMN alternative_procedure BOOLEAN NOT NULL DEFAULT FALSE;
