//! `GET /v1/i9s/{id}/pdf` (docs/inspection.md): the PDF of an I-9 read back
//! with `pdftotext` (poppler-utils; scripts/test.sh installs it).

use i9_tests::{spawn_app, TestApp, ADMIN, BOSTON_VIEWER};
use serde_json::json;

const EAD: &str = "Employment Authorization Document (Form I-766)";

/// An I-9 with Section 1 (an employee who is a noncitizen authorized to
/// work, with an SSN), a preparer (Supplement A), Section 2 (an EAD) and
/// Completed, of an employee of the legal entity `acme-us`.
async fn executed_i9(app: &TestApp, first: &str, last: &str, ssn: &str) -> (i64, i64) {
    let employee = app.insert_employee(first, last, "Acme", Some(ssn)).await;
    sqlx::query(
        "UPDATE employees SET legal_entity_id = (SELECT id FROM legal_entities WHERE seed_key = 'acme-us')
         WHERE id = $1",
    )
    .bind(employee)
    .execute(app.pool())
    .await
    .unwrap();
    let i9 = app.insert_i9(employee, "Completed").await;
    sqlx::query(
        "UPDATE i9s SET attestation = 'alien authorized to work', date_of_birth = DATE '1990-04-12',
                address_street = '12 Harbor Rd', address_city = 'Portland', address_state = 'OR',
                address_zip = '97201', signed_date_employee = DATE '2026-11-02',
                work_authorization_expiration = DATE '2027-06-30',
                list_a1_doc_title = $2, list_a1_doc_issuer = 'USCIS', list_a1_doc_number = $3,
                list_a1_doc_expiration = DATE '2027-06-30', i9_expiration = DATE '2027-06-30',
                employer_first_name = 'Ada', employer_last_name = 'Admin', employer_title = 'HR Lead',
                employer_business = 'Acme Staffing US LLC', signed_date_employer = DATE '2026-11-03',
                date_completed = DATE '2026-11-03',
                employment_period_id = (SELECT max(id) FROM employment_periods WHERE employee_id = $4)
         WHERE id = $1",
    )
    .bind(i9)
    .bind(EAD)
    .bind("EAD0001234")
    .bind(employee)
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO i9_preparers (i9_id, position, last_name, first_name, address, city, state, zip,
                                   signature, signed_date)
         VALUES ($1, 1, 'Mendez', 'Rosa', '400 Main St', 'Salem', 'OR', '97301', 'Rosa Mendez',
                 DATE '2026-11-02')",
    )
    .bind(i9)
    .execute(app.pool())
    .await
    .unwrap();
    (employee, i9)
}

/// The text of `pdf`, by `pdftotext` (pages end with a form feed).
pub(crate) fn pdf_text(pdf: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("i9-pdf-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("i9.pdf");
    std::fs::write(&file, pdf).unwrap();
    let out = std::process::Command::new("pdftotext")
        .arg(&file)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils) is installed: scripts/test.sh installs it");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
    String::from_utf8(out.stdout).unwrap()
}

async fn audited(app: &TestApp, action: &str, i9: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = $1 AND resource_type = 'i9' AND resource_id = $2",
    )
    .bind(action)
    .bind(i9.to_string())
    .fetch_one(app.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn the_pdf_of_an_i9_shows_every_section_with_the_ssn_masked() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let ssn = ["612", "38", "4417"].join("-");
    let (employee, i9) = executed_i9(&app, "Maria", "Quiñones", &ssn).await;
    // Supplement B through the API.
    let r = app
        .post_json(
            &format!("/v1/i9s/{i9}/reverify"),
            &token,
            &json!({"documentTitle": EAD, "documentNumber": "SRC98765", "documentExpiration": "2029-01-31",
                    "employerName": "Ada Admin", "employerSignature": "ada admin"}),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let ssn_reads = audited(&app, "ssn.read", i9).await;

    let r = app.get(&format!("/v1/i9s/{i9}/pdf"), &token).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/pdf");
    assert_eq!(
        r.headers()["content-disposition"],
        format!("attachment; filename=i9-{i9}.pdf").as_str()
    );
    let pdf = r.bytes().await.unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    let text = pdf_text(&pdf);
    for expected in [
        "Form I-9, Employment Eligibility Verification",
        "Acme Staffing US LLC",
        &format!("I-9 {i9}"),
        &employee.to_string(),
        "Section 1. Employee Information and Attestation",
        "Maria",
        "Quiñones",
        "12 Harbor Rd",
        "1990-04-12",
        "***-**-4417",
        "4. A noncitizen authorized to work",
        "Supplement A. Preparer and/or Translator Certification",
        "Mendez, Rosa",
        "Section 2. Employer Review and Verification",
        "EAD0001234",
        "USCIS",
        "2027-06-30",
        "Supplement B. Reverification and Rehire",
        "Entry 1: Reverification",
        "SRC98765",
        "2029-01-31",
        "No E-Verify case.",
        "Audit trail of the record",
        "i9.reverify",
        "Completed",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    assert!(
        !text.contains(&ssn) && !text.contains("612384417"),
        "{text}"
    );
    let pages = text.matches('\u{c}').count();
    assert!(pages >= 2, "{pages} pages");
    assert!(text.contains(&format!("Page 1 of {pages}")), "{text}");
    assert!(text.contains(&format!("Page {pages} of {pages}")), "{text}");

    // One export audited, and no full SSN read by it.
    assert_eq!(audited(&app, "i9.pdf_exported", i9).await, 1);
    assert_eq!(audited(&app, "ssn.read", i9).await, ssn_reads);
    // The second export's trail shows the first.
    let again = app.get(&format!("/v1/i9s/{i9}/pdf"), &token).await;
    assert_eq!(again.status(), 200);
    assert!(pdf_text(&again.bytes().await.unwrap()).contains("i9.pdf_exported"));
    assert_eq!(audited(&app, "i9.pdf_exported", i9).await, 2);

    // A closed E-Verify case shows its outcome and the employer's note (the
    // HR trial found both missing).
    let employee: i64 = sqlx::query_scalar("SELECT employee_id FROM i9s WHERE id = $1")
        .bind(i9)
        .fetch_one(app.pool())
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number, status,
                                    result, basis, created_on, due_on, created_by_user_id, creator_name,
                                    closure_reason, closure_statement, employed_at_closure,
                                    closure_note, closed_on)
         VALUES ($1, $2, (SELECT min(id) FROM legal_entities), 'simulator', $3, 'Closed',
                 'Final Nonconfirmation', 'agency', DATE '2026-11-05', DATE '2026-11-05', 1, 'Admin',
                 'EMPLOYEE_CONTINUES_TO_WORK_AFTER_FNC', $4, TRUE, $5, DATE '2026-11-20')",
    )
    .bind(i9)
    .bind(employee)
    .bind("SIM000000000077")
    .bind("The employee continues to work for the employer after receiving a Final Nonconfirmation result.")
    .bind("Counsel reviewed the result")
    .execute(app.pool())
    .await
    .unwrap();
    let text = pdf_text(
        &app.get(&format!("/v1/i9s/{i9}/pdf"), &token)
            .await
            .bytes()
            .await
            .unwrap(),
    );
    for expected in [
        "SIM000000000077",
        "SIMULATED",
        "Final Nonconfirmation",
        "Closure note",
        "Counsel reviewed the result",
        "Employed at closure",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
}

#[tokio::test]
async fn the_pdf_is_read_as_the_record_is() {
    let app = spawn_app().await;
    let ssn = ["123", "45", "6780"].join("-");
    let (_, i9) = executed_i9(&app, "Lee", "Park", &ssn).await;
    // Outside the viewer's groups: 404, nothing audited.
    let viewer = app.token(BOSTON_VIEWER).await;
    assert_eq!(
        app.get(&format!("/v1/i9s/{i9}/pdf"), &viewer)
            .await
            .status(),
        404
    );
    let admin = app.token(ADMIN).await;
    assert_eq!(app.get("/v1/i9s/999999/pdf", &admin).await.status(), 404);
    // Purged: 410, as GET /v1/i9s/{id}.
    sqlx::query(
        "INSERT INTO i9_destructions (i9_id, employee_id, purged_at, rule, retention_date, purged_by)
         SELECT id, employee_id, now(), '8 CFR 274a.2(b)(2)(i)(A)', DATE '2026-01-01', 'admin' FROM i9s WHERE id = $1",
    )
    .bind(i9)
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE i9s SET purged_at = now() WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let r = app.get(&format!("/v1/i9s/{i9}/pdf"), &admin).await;
    assert_eq!(r.status(), 410);
    assert_eq!(
        app.get(&format!("/v1/i9s/{i9}"), &admin).await.status(),
        410
    );
    assert_eq!(audited(&app, "i9.pdf_exported", i9).await, 0);
}
