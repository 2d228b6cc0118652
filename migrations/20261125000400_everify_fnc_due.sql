-- A Final Nonconfirmation's next step, "Close the case", is due the day the
-- result arrived (docs/everify.md, "Deadlines passed"); cases that reached it
-- before that rule have no stored due date, so `nextStepDueDate` and the
-- `?overdue=` filter would miss them.
UPDATE everify_cases
SET next_step_due_on = result_issued_on
WHERE status = 'Final Nonconfirmation'
  AND next_step_due_on IS NULL
  AND result_issued_on IS NOT NULL;
