//! `i9-admin inspection` (docs/inspection.md), run as the operator runs it:
//! the I-9s of one legal entity still under retention, one PDF each, and
//! `index.csv`.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{os::unix::fs::PermissionsExt, process::Command};

use i9_tests::{spawn_app, TestApp};

fn admin(db_url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("APP_ENV", "development")
        .output()
        .unwrap();
    i9_tests::logs::keep_stderr("i9-admin", &out.stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn legal_entity(app: &TestApp, key: &str) -> i64 {
    sqlx::query_scalar("SELECT id FROM legal_entities WHERE seed_key = $1")
        .bind(key)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// A Completed I-9 of a new employee of legal entity `entity`.
async fn i9_of(app: &TestApp, first: &str, last: &str, entity: i64, ssn: &str) -> (i64, i64) {
    let employee = app.insert_employee(first, last, "Acme", Some(ssn)).await;
    sqlx::query("UPDATE employees SET legal_entity_id = $2 WHERE id = $1")
        .bind(employee)
        .bind(entity)
        .execute(app.pool())
        .await
        .unwrap();
    (employee, app.insert_i9(employee, "Completed").await)
}

#[tokio::test]
async fn an_inspection_writes_a_pdf_per_retained_i9_of_the_entity_and_an_index() {
    let app = spawn_app().await;
    let us = legal_entity(&app, "acme-us").await;
    let labs = legal_entity(&app, "acme-labs").await;
    let ssn = |last: &str| ["123", "45", last].join("-");
    let (ana, ana_i9) = i9_of(&app, "Ana", "Diaz", us, &ssn("1111")).await;
    let (_, bo_i9) = i9_of(&app, "Bo", "Chen", us, &ssn("2222")).await;
    let (_, gone_i9) = i9_of(&app, "Cy", "Gone", us, &ssn("3333")).await;
    let (_, labs_i9) = i9_of(&app, "Di", "Labs", labs, &ssn("4444")).await;
    sqlx::query("UPDATE i9s SET purged_at = now(), first_name = '', last_name = '' WHERE id = $1")
        .bind(gone_i9)
        .execute(app.pool())
        .await
        .unwrap();

    let out = std::env::temp_dir().join(format!("i9-inspection-{}", uuid::Uuid::new_v4()));
    let dir = out.to_str().unwrap();
    let (ok, stdout, stderr) = admin(
        &app.db.url,
        &[
            "inspection",
            "--legal-entity",
            &us.to_string(),
            "--out",
            dir,
        ],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("wrote 2 PDFs"), "{stdout}");

    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut expected = vec![
        format!("i9-{ana_i9}-employee-{ana}.pdf"),
        "index.csv".to_owned(),
    ];
    let bo_file = files
        .iter()
        .find(|f| f.starts_with(&format!("i9-{bo_i9}-")))
        .cloned()
        .unwrap();
    expected.push(bo_file);
    expected.sort();
    assert_eq!(files, expected, "two PDFs and the index");
    assert!(!files
        .iter()
        .any(|f| f.contains(&gone_i9.to_string()) || f.contains(&format!("i9-{labs_i9}-"))));

    let mut index = csv::Reader::from_path(out.join("index.csv")).unwrap();
    assert_eq!(
        index.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "i9Id",
            "employeeId",
            "lastName",
            "firstName",
            "status",
            "startDate",
            "completedDate",
            "retentionDate",
            "everifyCaseNumber",
            "everifyStatus",
            "everifyResult",
            "everifyClosureReason",
            "file"
        ]
    );
    let rows: Vec<csv::StringRecord> = index.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][0], ana_i9.to_string().as_str());
    assert_eq!(&rows[0][2], "Diaz");
    assert_eq!(&rows[0][4], "Completed");
    assert_eq!(
        &rows[0][12],
        format!("i9-{ana_i9}-employee-{ana}.pdf").as_str()
    );
    assert_eq!(&rows[1][0], bo_i9.to_string().as_str());
    // Private: the folder 0700, each file 0600 (the HR trial found them 0755/0644).
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&out), 0o700);
    for f in &files {
        assert_eq!(mode(&out.join(f)), 0o600, "{f}");
    }
    for f in &files {
        let bytes = std::fs::read(out.join(f)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&ssn("1111")) && !text.contains(&ssn("2222")));
    }

    // One audit entry, with the counts.
    let detail: Vec<serde_json::Value> = sqlx::query_scalar(
        "SELECT detail FROM audit_log WHERE action = 'inspection.exported' AND resource_id = $1",
    )
    .bind(us.to_string())
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(detail.len(), 1);
    assert_eq!(detail[0]["i9s"], 2);

    // A directory with something in it is refused, unless --force.
    let (ok, _, stderr) = admin(
        &app.db.url,
        &[
            "inspection",
            "--legal-entity",
            &us.to_string(),
            "--out",
            dir,
        ],
    );
    assert!(!ok && stderr.contains("--force"), "{stderr}");
    // --force rewrites into it: a folder and a file opened up meanwhile end private again.
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    let index_csv = out.join("index.csv");
    std::fs::set_permissions(&index_csv, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (ok, stdout, stderr) = admin(
        &app.db.url,
        &[
            "inspection",
            "--legal-entity",
            &us.to_string(),
            "--out",
            dir,
            "--force",
        ],
    );
    assert!(ok && stdout.contains("wrote 2 PDFs"), "{stderr}");
    assert_eq!((mode(&out), mode(&index_csv)), (0o700, 0o600));
    let (ok, _, stderr) = admin(
        &app.db.url,
        &[
            "inspection",
            "--legal-entity",
            "999999",
            "--out",
            dir,
            "--force",
        ],
    );
    assert!(!ok && stderr.contains("no legal entity 999999"), "{stderr}");
    std::fs::remove_dir_all(&out).unwrap();
}
