-- The employee read in one round trip (docs/operations.md, "Performance"):
--
-- 1. The active legal holds that cover each employee (docs/retention.md,
--    "Legal holds"): a hold on the employee, or on its legal entity. One
--    definition, read by the employee record and by retention::held. A view,
--    not a function: the planner inlines a view into the statement that reads
--    it, where a SQL function with a subquery runs as a call of its own (it
--    took 40% of the employee read's time in Postgres).
CREATE VIEW employee_holds AS
    SELECT e.id AS employee_id, h.id AS hold_id
    FROM employees e
    JOIN legal_holds h ON h.employee_id = e.id OR h.legal_entity_id = e.legal_entity_id
    WHERE h.lifted_at IS NULL;

-- 2. API processes cache each user's visible groups (the user's groups and
--    every group below them) beside its tokens: a change of a user's groups
--    or of the group tree tells every process to drop its cache, as the
--    other changes of what a caller reaches do (20261122000006).
CREATE TRIGGER user_groups_auth_change AFTER INSERT OR UPDATE OR DELETE ON user_groups
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER groups_auth_change AFTER INSERT OR UPDATE OF parent_id OR DELETE ON groups
    FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_change();
