-- The throttle counts more than sign-ins: writes of social security numbers
-- by callers who may not see them whole, per user and last four digits
-- (docs/api.md, "Social security numbers"). The table gets a name for what
-- it is, and the new kind.
ALTER TABLE sign_in_throttle RENAME TO throttle;
ALTER INDEX sign_in_throttle_pkey RENAME TO throttle_pkey;
ALTER INDEX sign_in_throttle_forgotten_idx RENAME TO throttle_forgotten_idx;
ALTER TABLE throttle DROP CONSTRAINT sign_in_throttle_kind_check;
ALTER TABLE throttle ADD CONSTRAINT throttle_kind_check
    CHECK (kind IN ('username', 'address', 'ssn_write'));
