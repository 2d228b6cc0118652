//! The content of the PDF (docs/inspection.md, "What the PDF shows"), in the
//! order of the form: the header, Section 1, Supplement A, Section 2,
//! Supplement B, then the E-Verify cases and the audit trail.

use chrono::{DateTime, NaiveDate, Utc};

use super::{
    layout::{Doc, TEXT_WIDTH},
    EverifyCase, InspectionRecord, UserRef,
};
use crate::{
    domain::{ssn_mask::mask_last4, Attestation},
    models::audit::api_field,
};

/// What an empty field shows.
const NONE: &str = "\u{2014}";

fn text(v: &Option<String>) -> String {
    match v.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => NONE.to_owned(),
    }
}

fn date(d: Option<NaiveDate>) -> String {
    d.map_or_else(|| NONE.to_owned(), |d| d.format("%Y-%m-%d").to_string())
}

fn stamp(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(
        || NONE.to_owned(),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

fn yes_no(b: bool) -> String {
    if b { "Yes" } else { "No" }.to_owned()
}

/// The attestation as the form words its boxes.
fn attestation(a: Option<&str>) -> String {
    match a {
        Some("citizen") => "1. A citizen of the United States".into(),
        Some("noncitizen national") => "2. A noncitizen national of the United States".into(),
        Some("permanent resident") => "3. A lawful permanent resident".into(),
        Some("alien authorized to work") => "4. A noncitizen authorized to work".into(),
        Some(other) => other.into(),
        None => NONE.into(),
    }
}

/// A user as the PDF names users: `user 2 (west.hr)`.
fn user(u: &UserRef) -> String {
    match &u.login {
        Some(l) => format!("user {} ({l})", u.id),
        None => format!("user {}", u.id),
    }
}

/// Who took a step of case `c`: its user, or for the program's own update
/// (no user) the program: `E-Verify`, or `simulator` for the service's
/// simulator (docs/everify.md, "The simulator").
fn step_by(c: &EverifyCase, by: &Option<UserRef>) -> String {
    match by {
        Some(u) => user(u),
        None if c.simulated() => "simulator".into(),
        None => "E-Verify".into(),
    }
}

fn supplement_b_kind(kind: &str) -> &str {
    match kind {
        "reverification" => "Reverification",
        "rehire" => "Rehire",
        "receipt_update" => "Receipt update",
        other => other,
    }
}

/// The PDF of `record`.
pub fn render(record: &InspectionRecord) -> Vec<u8> {
    render_counted(record).0
}

/// The PDF of `record` and its number of pages.
pub fn render_counted(record: &InspectionRecord) -> (Vec<u8>, usize) {
    let i = &record.i9;
    let head = format!(
        "Form I-9 inspection copy  \u{2022}  I-9 {}  \u{2022}  employee {}",
        i.id, i.employee_id
    );
    let mut doc = Doc::new(head);
    doc.title("Form I-9, Employment Eligibility Verification");
    let employer = match (&i.legal_entity_name, i.legal_entity_id) {
        (Some(name), Some(id)) => match i.ein.as_deref() {
            Some(ein) if !ein.is_empty() => format!("{name} (legal entity {id}, EIN {ein})"),
            _ => format!("{name} (legal entity {id})"),
        },
        _ => "No legal entity recorded".into(),
    };
    doc.fields(&[
        ("Employer (legal entity)", employer),
        ("Generated at", stamp(Some(record.generated_at))),
        ("I-9 id", i.id.to_string()),
        ("Employee id", i.employee_id.to_string()),
        ("Status", i.status.to_string()),
        ("Form edition", i.form_version.clone()),
        ("Created", stamp(Some(i.date_created))),
        ("Completed", stamp(i.date_completed)),
        ("Approved", stamp(i.date_approved)),
        ("Section 2 due", date(i.date_due)),
        ("Reverification date", date(i.i9_expiration)),
        (
            "Retention date",
            i.retention_date.map_or_else(
                || "None yet (employed, or date of hire unknown)".into(),
                |d| d.to_string(),
            ),
        ),
    ]);
    doc.paragraph(
        "The Social Security number is masked to its last four digits in this copy. \
         Dates are YYYY-MM-DD; times are UTC.",
    );

    // Section 1.
    doc.heading("Section 1. Employee Information and Attestation");
    let address = [
        i.address_street.clone(),
        i.address_apartment.as_ref().map(|a| format!("Apt. {a}")),
        i.address_city.clone(),
        match (&i.address_state, &i.address_zip) {
            (Some(s), Some(z)) => Some(format!("{s} {z}")),
            (s, z) => s.clone().or(z.clone()),
        },
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.trim().is_empty())
    .collect::<Vec<_>>()
    .join(", ");
    doc.fields(&[
        ("Last name (family name)", text(&Some(i.last_name.clone()))),
        ("First name (given name)", text(&Some(i.first_name.clone()))),
        ("Middle initial", text(&i.middle_initial)),
        ("Other last names used", text(&i.other_name)),
        (
            "Address",
            if address.is_empty() {
                NONE.into()
            } else {
                address
            },
        ),
        ("Date of birth", date(i.date_of_birth)),
        (
            "U.S. Social Security number",
            i.ssn_last4
                .as_deref()
                .map_or_else(|| NONE.to_owned(), mask_last4),
        ),
        ("Email address", text(&i.email_address)),
        ("Telephone number", text(&i.phone_number)),
        ("Remote Section 1", yes_no(i.remote)),
    ]);
    doc.subheading("Attestation");
    doc.fields(&[
        (
            "The employee attests to being",
            attestation(i.attestation.map(Attestation::as_str)),
        ),
        (
            "Work authorization expires",
            date(i.work_authorization_expiration),
        ),
        ("USCIS A-Number", text(&i.alien_number)),
        ("Form I-94 admission number", text(&i.admission_number)),
        ("Foreign passport number", text(&i.foreign_passport_number)),
        ("Country of issuance", text(&i.foreign_passport_country)),
        ("Signature of employee, dated", date(i.signed_date_employee)),
    ]);

    // Supplement A.
    doc.heading("Supplement A. Preparer and/or Translator Certification");
    if record.preparers.is_empty() {
        doc.paragraph("No preparer or translator assisted the employee with Section 1.");
    } else {
        let rows: Vec<Vec<String>> = record
            .preparers
            .iter()
            .map(|p| {
                let mi = p
                    .middle_initial
                    .as_deref()
                    .map(|m| format!(" {m}."))
                    .unwrap_or_default();
                vec![
                    p.position.to_string(),
                    format!("{}, {}{mi}", p.last_name, p.first_name),
                    format!("{}, {}, {} {}", p.address, p.city, p.state, p.zip),
                    p.signature.clone(),
                    p.signed_date.to_string(),
                ]
            })
            .collect();
        doc.table(
            &[24.0, 130.0, 190.0, 110.0, TEXT_WIDTH - 454.0],
            &["#", "Name", "Address", "Signature", "Signed"],
            &rows,
        );
    }

    // Section 2.
    doc.heading("Section 2. Employer Review and Verification");
    let docs = [
        (
            "A",
            &i.list_a1_doc_title,
            &i.list_a1_doc_issuer,
            &i.list_a1_doc_number,
            i.list_a1_doc_expiration,
            i.list_a1_doc_receipt,
        ),
        (
            "A (2)",
            &i.list_a2_doc_title,
            &i.list_a2_doc_issuer,
            &i.list_a2_doc_number,
            i.list_a2_doc_expiration,
            false,
        ),
        (
            "A (3)",
            &i.list_a3_doc_title,
            &i.list_a3_doc_issuer,
            &i.list_a3_doc_number,
            i.list_a3_doc_expiration,
            false,
        ),
        (
            "B",
            &i.list_b_doc_title,
            &i.list_b_doc_issuer,
            &i.list_b_doc_number,
            i.list_b_doc_expiration,
            i.list_b_doc_receipt,
        ),
        (
            "C",
            &i.list_c_doc_title,
            &i.list_c_doc_issuer,
            &i.list_c_doc_number,
            i.list_c_doc_expiration,
            i.list_c_doc_receipt,
        ),
    ];
    let rows: Vec<Vec<String>> = docs
        .iter()
        .filter(|d| d.1.is_some() || d.3.is_some())
        .map(|(list, title, issuer, number, exp, receipt)| {
            vec![
                (*list).to_owned(),
                text(title),
                text(issuer),
                text(number),
                date(*exp),
                yes_no(*receipt),
            ]
        })
        .collect();
    if rows.is_empty() {
        doc.paragraph("No document recorded.");
    } else {
        doc.table(
            &[34.0, 166.0, 106.0, 100.0, 62.0, TEXT_WIDTH - 468.0],
            &[
                "List",
                "Document title",
                "Issuing authority",
                "Document number",
                "Expires",
                "Receipt",
            ],
            &rows,
        );
    }
    let employer_name = [&i.employer_first_name, &i.employer_last_name]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let employer_address = [
        i.employer_address.clone(),
        i.employer_city.clone(),
        match (&i.employer_state, &i.employer_zip) {
            (Some(s), Some(z)) => Some(format!("{s} {z}")),
            (s, z) => s.clone().or(z.clone()),
        },
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    doc.fields(&[
        ("First day of employment", date(i.start_date)),
        (
            "Alternative procedure (remote examination)",
            yes_no(i.alternative_procedure),
        ),
        ("Receipt's replacement due", date(i.receipt_due_date)),
        ("Additional information", text(&i.i9_notes)),
    ]);
    doc.subheading("Certification of the employer or authorized representative");
    doc.fields(&[
        ("Name", text(&Some(employer_name))),
        ("Title", text(&i.employer_title)),
        (
            "Employer's business or organization",
            text(&i.employer_business),
        ),
        ("Business address", text(&Some(employer_address))),
        ("Signed on", date(i.signed_date_employer)),
        (
            "Preparer/translator signed on",
            date(i.signed_date_translator),
        ),
    ]);

    // Supplement B.
    doc.heading("Supplement B. Reverification and Rehire");
    if record.supplement_b.is_empty() {
        doc.paragraph("No reverification or rehire recorded.");
    }
    for (n, e) in record.supplement_b.iter().enumerate() {
        doc.subheading(&format!(
            "Entry {}: {} (recorded {})",
            n + 1,
            supplement_b_kind(&e.kind),
            stamp(Some(e.recorded_at))
        ));
        let new_name = [&e.new_last_name, &e.new_first_name, &e.new_middle_initial]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>();
        doc.fields(&[
            ("Date of rehire", date(e.rehire_date)),
            (
                "New name",
                if new_name.is_empty() {
                    NONE.into()
                } else {
                    new_name.join(", ")
                },
            ),
            (
                "Document",
                match (&e.document_list, &e.document_title) {
                    (Some(l), Some(t)) => format!("List {l}: {t}"),
                    (_, t) => text(t),
                },
            ),
            ("Issuing authority", text(&e.document_issuer)),
            ("Document number", text(&e.document_number)),
            ("Expiration date", date(e.document_expiration)),
            (
                "Receipt",
                if e.receipt {
                    format!("Yes, replacement due {}", date(e.receipt_due_date))
                } else {
                    "No".into()
                },
            ),
            ("Alternative procedure", yes_no(e.alternative_procedure)),
            ("Employer's name", e.employer_name.clone()),
            ("Employer's signature", e.employer_signature.clone()),
            ("Signed on", e.signed_on.to_string()),
            ("Additional information", text(&e.additional_information)),
        ]);
    }

    // E-Verify.
    doc.heading("E-Verify");
    if record.everify.is_empty() {
        doc.paragraph("No E-Verify case.");
    }
    for c in &record.everify {
        let number = c
            .case_number
            .clone()
            .unwrap_or_else(|| "(no number yet)".into());
        let label = if c.simulated() {
            format!("Case {number}: SIMULATED (the service's simulator, not E-Verify)")
        } else {
            format!("Case {number}")
        };
        doc.subheading(&label);
        let mut fields = vec![
            (
                "Program",
                if c.simulated() {
                    "SIMULATED".into()
                } else {
                    "E-Verify".into()
                },
            ),
            ("Case number", number.clone()),
            ("Status", c.status.clone()),
            ("Result", text(&c.result)),
            ("Agency", text(&c.agency)),
            ("Created on", c.created_on.to_string()),
            ("Due by (three business days)", date(c.due_on)),
            (
                "Late reason",
                match (&c.late_reason, &c.late_reason_other) {
                    (Some(r), Some(o)) => format!("{r}: {o}"),
                    (r, _) => text(r),
                },
            ),
            ("Final nonconfirmation basis", text(&c.basis)),
        ];
        // An open case's next step, and the steps' days once taken
        // (docs/inspection.md, "The PDF").
        if c.next_step.is_some() || c.next_step_due_on.is_some() {
            fields.push(("Next step", text(&c.next_step)));
            fields.push(("Next step due by", date(c.next_step_due_on)));
        }
        if c.employee_notified_on.is_some() {
            fields.push(("Employee notified on", date(c.employee_notified_on)));
        }
        if c.referred_on.is_some() {
            fields.push(("Referred on", date(c.referred_on)));
        }
        fields.extend([
            ("Closed on", date(c.closed_on)),
            (
                "Closed by",
                c.closed_by.as_ref().map_or_else(|| NONE.to_owned(), user),
            ),
            ("Closure reason", text(&c.closure_reason)),
            ("Closure statement", text(&c.closure_statement)),
            (
                "Employed at closure",
                match c.employed_at_closure {
                    Some(true) => "Yes".into(),
                    Some(false) => "No".into(),
                    None => text(&None),
                },
            ),
            ("Closure note", text(&c.closure_note)),
        ]);
        doc.fields(&fields);
        if !c.history.is_empty() {
            let rows: Vec<Vec<String>> = c
                .history
                .iter()
                .map(|s| {
                    vec![
                        s.on_day.to_string(),
                        s.step.clone(),
                        s.status.clone(),
                        text(&s.result),
                        step_by(c, &s.by),
                    ]
                })
                .collect();
            doc.table(
                &[68.0, 64.0, 130.0, 130.0, TEXT_WIDTH - 392.0],
                &["Day", "Step", "Status", "Result", "By"],
                &rows,
            );
        }
    }

    // The audit trail.
    doc.heading("Audit trail of the record");
    match &record.audit {
        None => doc.paragraph(
            "Not included: the audit trail is shown to readers with permission 12 \
             (see full social security numbers), as GET /v1/i9s/{id}/history is.",
        ),
        Some(entries) if entries.is_empty() => doc.paragraph("No entry."),
        Some(entries) => {
            doc.paragraph(
                "Every entry of the audit log on this I-9 and on its E-Verify cases (an entry \
                 of a case names it after the action), oldest first: what was done, by whom, \
                 and the names of the fields written (never their values).",
            );
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|a| {
                    let by = match (a.user_id, &a.login, &a.request_id) {
                        (Some(id), login, _) => {
                            let mut s = user(&UserRef {
                                id,
                                login: login.clone(),
                            });
                            if let Some(c) = &a.client {
                                s.push_str(&format!(" via {c}"));
                            }
                            s
                        }
                        (None, _, Some(_)) => "employee (Section 1 link)".into(),
                        (None, _, None) => "system".into(),
                    };
                    // An entry of an E-Verify case names its case.
                    let action = match a.everify_case_id {
                        Some(case) => format!("{} (case {case})", a.action),
                        None => a.action.clone(),
                    };
                    vec![
                        stamp(Some(a.occurred_at)),
                        action,
                        by,
                        a.fields
                            .iter()
                            .map(|f| api_field(f))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]
                })
                .collect();
            doc.table(
                &[105.0, 145.0, 130.0, TEXT_WIDTH - 380.0],
                &["When", "Action", "By", "Fields"],
                &rows,
            );
        }
    }

    doc.finish(
        &format!("Form I-9 {} (employee {})", i.id, i.employee_id),
        &format!("I-9 {}", i.id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::I9Status;
    use crate::inspection::{AuditEntry, EverifyStep};
    use crate::models::i9::RecordRow;

    fn case(program: &str) -> EverifyCase {
        let day = NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
        EverifyCase {
            id: 88,
            program: program.into(),
            case_number: Some("2026324123456AB".into()),
            status: "Tentative Nonconfirmation".into(),
            result: Some("Tentative Nonconfirmation".into()),
            agency: Some("SSA".into()),
            created_on: day,
            closed_on: None,
            closure_reason: None,
            closure_statement: None,
            basis: None,
            employed_at_closure: None,
            closure_note: None,
            due_on: Some(day),
            late_reason: None,
            late_reason_other: None,
            next_step: Some("The employee decides".into()),
            next_step_due_on: NaiveDate::from_ymd_opt(2026, 12, 4),
            employee_notified_on: Some(day),
            referred_on: None,
            closed_by: None,
            history: vec![
                EverifyStep {
                    on_day: day,
                    status: "Pending".into(),
                    result: None,
                    step: "open".into(),
                    by: Some(UserRef {
                        id: 2,
                        login: Some("west.hr".into()),
                    }),
                },
                EverifyStep {
                    on_day: day,
                    status: "Tentative Nonconfirmation".into(),
                    result: Some("Tentative Nonconfirmation".into()),
                    step: "program".into(),
                    by: None,
                },
            ],
        }
    }

    /// A step names its user, or the program for the program's own answer
    /// (docs/inspection.md, "The PDF").
    #[test]
    fn a_step_names_who_took_it() {
        for (program, answered_by) in [("e-verify", "E-Verify"), ("simulator", "simulator")] {
            let c = case(program);
            assert_eq!(step_by(&c, &c.history[0].by), "user 2 (west.hr)");
            assert_eq!(step_by(&c, &c.history[1].by), answered_by);
        }
        let nameless = UserRef { id: 5, login: None };
        assert_eq!(user(&nameless), "user 5");
    }

    /// An open case shows its next step, its due date and the day the
    /// employee was notified; a case not referred shows no referral.
    #[test]
    fn an_open_case_shows_its_next_step() {
        let now = Utc::now();
        let record = InspectionRecord {
            generated_at: now,
            i9: RecordRow {
                id: 7,
                employee_id: 3,
                status: I9Status::Completed,
                form_version: "01/20/25".into(),
                date_created: now,
                first_name: "Ana".into(),
                last_name: "Diaz".into(),
                ..RecordRow::default()
            },
            preparers: vec![],
            supplement_b: vec![],
            everify: vec![case("e-verify")],
            audit: None,
        };
        let pdf = render(&record);
        let text = String::from_utf8_lossy(&pdf);
        for expected in [
            "Next step due by",
            "2026-12-04",
            "The employee decides",
            "Employee notified on",
            "Closed by",
            "west.hr", // the step's user (parentheses are escaped in the PDF)
        ] {
            assert!(text.contains(expected), "{expected}");
        }
        assert!(!text.contains("Referred on"));
    }

    #[test]
    fn a_long_trail_runs_onto_numbered_pages() {
        let now = Utc::now();
        let record = InspectionRecord {
            generated_at: now,
            i9: RecordRow {
                id: 7,
                employee_id: 3,
                status: I9Status::Completed,
                form_version: "01/20/25".into(),
                date_created: now,
                first_name: "Ana".into(),
                last_name: "Diaz".into(),
                ssn_last4: Some("6789".into()),
                ..RecordRow::default()
            },
            preparers: vec![],
            supplement_b: vec![],
            everify: vec![],
            audit: Some(
                (0..200)
                    .map(|n| AuditEntry {
                        occurred_at: now,
                        action: format!("i9.step{n}"),
                        user_id: Some(1),
                        login: Some("admin".into()),
                        client: None,
                        request_id: None,
                        fields: vec!["first_name".into()],
                        everify_case_id: None,
                    })
                    .collect(),
            ),
        };
        let (pdf, pages) = render_counted(&record);
        assert!(pages >= 3, "{pages}");
        assert!(pdf.starts_with(b"%PDF-"));
        let text = String::from_utf8_lossy(&pdf);
        assert!(text.contains(&format!("Page {pages} of {pages}")));
        assert!(text.contains("***-**-6789"));
    }
}
