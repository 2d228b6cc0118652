-- Where what the employee attested in Section 1 and the employee record
-- disagree, recorded when Section 1 is signed (common/src/models/section1_feed.rs;
-- docs/api.md, "I-9s"): a JSON array of {"field", "reason"}, names only, never
-- values. NULL until Section 1 is signed (and on I-9s signed before this
-- column existed); [] when nothing differs.
ALTER TABLE i9s ADD COLUMN section1_differences JSONB
    CHECK (jsonb_typeof(section1_differences) = 'array');
