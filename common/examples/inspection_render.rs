//! The bare side of the inspection benchmark (BENCHMARKS.md, "Inspection
//! export"): the same rendering as `i9-admin inspection`, without the
//! database and without files, on a record shaped as the benchmark's load
//! (bench/sql/inspection-seed.sql).
//!
//!     cargo run --release -p i9-common --example inspection_render -- 10000

use std::time::Instant;

use chrono::{NaiveDate, TimeZone, Utc};
use i9_common::{
    domain::{Attestation, I9Status},
    inspection::{
        render_counted, AuditEntry, EverifyCase, EverifyStep, InspectionRecord, Preparer, UserRef,
    },
    models::{i9::RecordRow, supplement_b::Recorded},
};

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
}

fn record(id: i64) -> InspectionRecord {
    let at = Utc.with_ymd_and_hms(2026, 1, 2, 15, 0, 0).unwrap();
    let s = |v: &str| Some(v.to_owned());
    let i9 = RecordRow {
        id,
        employee_id: id + 4,
        legal_entity_id: Some(1),
        legal_entity_name: s("Acme Staffing US LLC"),
        ein: s("12-3456789"),
        status: I9Status::Completed,
        form_version: "01/20/25".into(),
        date_created: at,
        date_completed: Some(at),
        date_due: Some(day(2026, 1, 8)),
        start_date: Some(day(2026, 1, 5)),
        i9_expiration: Some(day(2027, 6, 30)),
        signed_date_employee: Some(day(2026, 1, 2)),
        signed_date_employer: Some(day(2026, 1, 6)),
        first_name: format!("Bench{id}"),
        last_name: format!("Employee-{id}"),
        middle_initial: s("Q"),
        other_name: Some(format!("Formerly Employee-{id}")),
        date_of_birth: Some(day(1970, 1, 6)),
        ssn_last4: Some(format!("{:04}", id % 10000)),
        email_address: Some(format!("bench{id}@mail.example")),
        phone_number: s("503-555-0005"),
        address_street: s("105 Harbor Road"),
        address_apartment: s("Unit 5"),
        address_city: s("Portland"),
        address_state: s("OR"),
        address_zip: s("97201"),
        attestation: Some(Attestation::AlienAuthorizedToWork),
        work_authorization_expiration: Some(day(2027, 6, 30)),
        employer_first_name: s("Ada"),
        employer_last_name: s("Admin"),
        employer_title: s("HR Lead"),
        employer_business: s("Acme Staffing US LLC"),
        employer_address: s("1 Commerce Way"),
        employer_city: s("Portland"),
        employer_state: s("OR"),
        employer_zip: s("97204"),
        list_a1_doc_title: s("Employment Authorization Document (Form I-766)"),
        list_a1_doc_issuer: s("USCIS"),
        list_a1_doc_number: Some(format!("EAD{id:010}")),
        list_a1_doc_expiration: Some(day(2027, 6, 30)),
        ..RecordRow::default()
    };
    let audit = [
        (
            "i9.section1",
            None,
            vec!["first_name", "last_name", "date_of_birth", "attestation"],
        ),
        (
            "i9.section2",
            Some(1),
            vec!["list_a1_doc_title", "list_a1_doc_number"],
        ),
        ("i9.complete", Some(1), vec![]),
        ("i9.approve", Some(1), vec![]),
        ("i9.reverify", Some(1), vec!["i9_expiration"]),
    ]
    .into_iter()
    .map(|(action, user, fields)| AuditEntry {
        occurred_at: at,
        action: action.into(),
        user_id: user,
        login: user.map(|_| "admin".to_owned()),
        client: None,
        request_id: s("bench"),
        fields: fields.into_iter().map(String::from).collect(),
        everify_case_id: None,
    })
    .collect();
    InspectionRecord {
        generated_at: at,
        i9,
        preparers: vec![Preparer {
            position: 1,
            last_name: "Mendez".into(),
            first_name: "Rosa".into(),
            middle_initial: s("L"),
            address: "400 Main St".into(),
            city: "Salem".into(),
            state: "OR".into(),
            zip: "97301".into(),
            signature: "Rosa Mendez".into(),
            signed_date: day(2026, 1, 2),
        }],
        supplement_b: vec![Recorded {
            id,
            kind: "reverification".into(),
            rehire_date: None,
            new_last_name: None,
            new_first_name: None,
            new_middle_initial: None,
            document_list: s("A"),
            document_title: s("Employment Authorization Document (Form I-766)"),
            document_issuer: s("USCIS"),
            document_number: Some(format!("SRC{id:010}")),
            document_expiration: Some(day(2029, 6, 30)),
            receipt: false,
            receipt_due_date: None,
            employer_name: "Ada Admin".into(),
            employer_signature: "ada admin".into(),
            signed_on: day(2027, 6, 1),
            additional_information: None,
            alternative_procedure: false,
            previous_employment_period_id: None,
            employment_period_id: None,
            i9_expiration: Some(day(2029, 6, 30)),
            recorded_by_user_id: None,
            recorded_by_client_id: None,
            recorded_at: at,
        }],
        everify: vec![EverifyCase {
            id,
            program: "simulator".into(),
            case_number: Some(format!("SIM{id:012}")),
            status: "Closed".into(),
            result: s("Employment Authorized"),
            agency: None,
            created_on: day(2026, 1, 6),
            closed_on: Some(day(2026, 1, 6)),
            closure_reason: s("Employment Authorized"),
            closure_statement: s("The employee continues to work for the employer after receiving an Employment Authorized result."),
            basis: None,
            employed_at_closure: Some(true),
            closure_note: None,
            due_on: Some(day(2026, 1, 8)),
            late_reason: None,
            late_reason_other: None,
            next_step: None,
            next_step_due_on: None,
            employee_notified_on: None,
            referred_on: None,
            closed_by: None,
            history: vec![
                EverifyStep { on_day: day(2026, 1, 6), status: "Pending".into(), result: None, step: "open".into(), by: Some(UserRef { id: 1, login: s("admin") }) },
                EverifyStep { on_day: day(2026, 1, 6), status: "Closed".into(), result: s("Employment Authorized"), step: "program".into(), by: None },
            ],
        }],
        audit: Some(audit),
    }
}

fn main() {
    let n: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let started = Instant::now();
    let (mut pages, mut bytes) = (0usize, 0usize);
    for id in 1..=n {
        let (pdf, p) = render_counted(&record(id));
        pages += p;
        bytes += std::hint::black_box(pdf).len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "rendered {n} PDFs ({pages} pages, {:.1} MB) in {secs:.2} s on one thread ({:.0} PDFs/s)",
        bytes as f64 / 1e6,
        n as f64 / secs
    );
}
