-- Which Section 2 document was a receipt for a lost, stolen or damaged one
-- (the form writes "Receipt" with its title; docs/reverification.md,
-- "Receipts"): shown on the I-9's record and named by the receipt reminder.
-- Kept after the receipt update, as the form keeps it.
ALTER TABLE i9s
    ADD COLUMN list_a1_doc_receipt BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN list_b_doc_receipt  BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN list_c_doc_receipt  BOOLEAN NOT NULL DEFAULT FALSE;
