-- The employee read in one round trip (docs/operations.md, "Performance"):
--
-- 1. Whether an active legal hold covers an employee (docs/retention.md,
--    "Legal holds"): a hold on the employee or on its legal entity. One
--    definition, read by the employee record and by retention::held.
CREATE FUNCTION employee_held(employee BIGINT, legal_entity BIGINT) RETURNS BOOLEAN
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT EXISTS (
        SELECT 1 FROM legal_holds h
        WHERE h.lifted_at IS NULL
          AND (h.employee_id = employee OR h.legal_entity_id = legal_entity))
$$;

-- 2. API processes cache each user's visible groups (the user's groups and
--    every group below them) beside its tokens: a change of a user's groups
--    or of the group tree tells every process to drop its cache, as the
--    other changes of what a caller reaches do (20261122000006).
CREATE TRIGGER user_groups_auth_change AFTER INSERT OR UPDATE OR DELETE ON user_groups
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER groups_auth_change AFTER INSERT OR UPDATE OF parent_id OR DELETE ON groups
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
