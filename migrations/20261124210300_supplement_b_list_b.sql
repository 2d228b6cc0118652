-- A List B document in Supplement B: only as the real document replacing a
-- List B document shown as a receipt in Section 2 (docs/reverification.md,
-- "Receipts"); never to reverify (the API refuses it there).
ALTER TABLE i9_supplement_b DROP CONSTRAINT i9_supplement_b_document_list_check;
ALTER TABLE i9_supplement_b ADD CONSTRAINT i9_supplement_b_document_list_check
    CHECK (document_list IN ('A', 'B', 'C'));
