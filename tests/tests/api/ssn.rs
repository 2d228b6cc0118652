//! Social security numbers: masked without permission 12, whole with it, and
//! every whole read written to the audit log.

use i9_tests::{spawn_app, ADMIN, WEST_HR};
use serde_json::Value;

async fn ssn_reads(app: &i9_tests::TestApp) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as("SELECT resource_type, resource_id, request_id FROM audit_log WHERE action = 'ssn.read' ORDER BY id")
        .fetch_all(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn users_without_permission_12_see_masked_numbers_and_leave_no_audit() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let west = app.token(WEST_HR).await;
    let list = app.get_json("/v1/employees", &west).await;
    assert_eq!(
        list["searchResult"][0]["socialSecurityNumber"],
        "***-**-6789"
    );
    let one = app.get_json(&format!("/v1/employees/{maria}"), &west).await;
    assert_eq!(one["socialSecurityNumber"], "***-**-6789");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &west).await;
    assert_eq!(record["ssn"], "***-**-6789");
    assert!(!list.to_string().contains("123-45"));
    assert!(ssn_reads(&app).await.is_empty());
    // Searching by SSN works without seeing it.
    let found = app
        .get_json("/v1/employees?socialSecurityNumber=123-45-6789", &west)
        .await;
    assert_eq!(
        found["searchResult"][0]["socialSecurityNumber"],
        "***-**-6789"
    );
}

#[tokio::test]
async fn permission_12_reveals_numbers_and_each_read_is_audited() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Signed Sec 1").await;
    let no_ssn = app.insert_employee("No", "Number", "Acme", None).await;
    let admin = app.token(ADMIN).await;

    let r = app.get(&format!("/v1/employees/{maria}"), &admin).await;
    let request_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let one: Value = r.json().await.unwrap();
    assert_eq!(one["socialSecurityNumber"], "123-45-6789");
    assert_eq!(
        ssn_reads(&app).await,
        vec![("employee".to_owned(), maria.to_string(), Some(request_id))]
    );

    let list = app.get_json("/v1/employees", &admin).await;
    let numbers: Vec<&Value> = list["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["socialSecurityNumber"])
        .collect();
    assert_eq!(
        numbers,
        [
            &Value::from("123-45-6789"),
            &Value::from("234-56-7890"),
            &Value::from("345-67-8901"),
            &Value::Null
        ]
    );
    let reads = ssn_reads(&app).await;
    assert_eq!(
        reads.len(),
        1 + 3,
        "one entry per number shown, none for the employee without one"
    );
    assert!(!reads.iter().any(|(_, id, _)| *id == no_ssn.to_string()));

    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["ssn"], "123-45-6789");
    let last = ssn_reads(&app).await.pop().unwrap();
    assert_eq!((last.0.as_str(), last.1), ("i9", i9.to_string()));

    let who: (i64, String) =
        sqlx::query_as("SELECT user_id, action FROM audit_log WHERE action = 'ssn.read' LIMIT 1")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(who, (1, "ssn.read".to_owned()));
}
