//! `i9-admin seed`: idempotent, ids reported, bad files refused whole.

use i9_common::{
    crypto::DataCipher,
    seed::{self, Outcome, SeedError},
    Config,
};
use i9_tests::{fixture, TestDb};

async fn count(db: &TestDb, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn seeding_twice_changes_nothing() {
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    let first = seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    assert_eq!(first.len(), 2 + 6 + 4 + 4 + 3 + 3);
    assert!(first
        .iter()
        .all(|a| a.outcome == Outcome::Created && a.id > 0));
    let snapshot: Vec<String> =
        sqlx::query_scalar("SELECT row_to_json(e)::TEXT FROM employees e ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let hashes: Vec<String> = sqlx::query_scalar("SELECT password_hash FROM users ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();

    let second = seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    assert!(
        second.iter().all(|a| a.outcome == Outcome::Unchanged),
        "{second:?}"
    );
    assert_eq!(
        first.iter().map(|a| (a.kind, a.id)).collect::<Vec<_>>(),
        second.iter().map(|a| (a.kind, a.id)).collect::<Vec<_>>(),
        "the same ids"
    );
    let after: Vec<String> =
        sqlx::query_scalar("SELECT row_to_json(e)::TEXT FROM employees e ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(snapshot, after);
    let hashes_after: Vec<String> =
        sqlx::query_scalar("SELECT password_hash FROM users ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(hashes, hashes_after, "passwords are not rehashed");
    for (table, n) in [
        ("legal_entities", 2),
        ("groups", 6),
        ("roles", 4 + 1), // + the built-in Employee self-service role
        ("users", 4),
        ("oauth_clients", 3),
        ("employees", 3),
        ("employment_periods", 3),
        ("user_groups", 4),
        ("role_permissions", 12 + 9 + 4 + 3),
    ] {
        assert_eq!(count(&db, table).await, n, "{table}");
    }
    assert_eq!(
        count(&db, "audit_log").await,
        1,
        "only the first run changed anything"
    );
}

#[tokio::test]
async fn a_changed_file_updates_what_changed() {
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    let mut org = fixture();
    org.employees[0].job_title = Some("Shift Lead".into());
    org.roles[2].permissions.push(8);
    let out = seed::load(&db.pool, &cipher, &org).await.unwrap();
    let changed: Vec<(&str, &str)> = out
        .iter()
        .filter(|a| a.outcome != Outcome::Unchanged)
        .map(|a| (a.kind, a.key.as_str()))
        .collect();
    assert_eq!(changed, [("role", "Viewer"), ("employee", "EMP-1001")]);
}

#[tokio::test]
async fn a_bad_file_names_every_problem_and_writes_nothing() {
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    let mut org = fixture();
    org.users[1].role = "Janitor".into();
    org.employees[2].location = "Mars Office".into();
    org.employees[0].social_security_number = Some("123-45-678".into());
    org.clients[2].integration.as_mut().unwrap().signing_secret = "plain".into();
    let err = seed::load(&db.pool, &cipher, &org).await.unwrap_err();
    let SeedError::Invalid(errors) = &err else {
        panic!("{err}")
    };
    let all = errors.join("\n");
    for needle in [
        "users[1].role",
        "employees[2].location",
        "employees[0].socialSecurityNumber",
        "clients[2].integration.signingSecret",
    ] {
        assert!(all.contains(needle), "{needle} in {all}");
    }
    assert!(!all.contains("123-45-678"), "no SSN in an error");
    assert_eq!(count(&db, "roles").await, 1, "only the built-in role");
    for table in [
        "legal_entities",
        "groups",
        "users",
        "oauth_clients",
        "employees",
    ] {
        assert_eq!(count(&db, table).await, 0, "{table} untouched");
    }

    // Not even a syntax error half-loads.
    let err =
        seed::parse(r#"{"groups": [{"name": "A", "parent": null}], "users": [{"login": 5}]}"#)
            .unwrap_err();
    assert!(err.to_string().contains("users[0].login"), "{err}");
    let err = seed::parse(r#"{"groups": [], "employes": []}"#).unwrap_err();
    assert!(
        err.to_string().contains("employes"),
        "unknown sections are named: {err}"
    );
}

#[tokio::test]
async fn a_database_conflict_rolls_the_whole_load_back() {
    let db = TestDb::new().await;
    let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
    seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
    // A new employee whose SSN already belongs to someone in the database.
    let mut org = fixture();
    let mut text = std::fs::read_to_string(i9_tests::fixture_path()).unwrap();
    text = text
        .replace("\"EMP-1003\"", "\"EMP-2003\"")
        .replace("Research Associate", "Intern");
    let clash = seed::parse(&text).unwrap();
    org.employees = clash.employees;
    org.roles[0].description = "changed in the failed run".into();
    let err = seed::load(&db.pool, &cipher, &org).await.unwrap_err();
    assert!(err.to_string().contains("socialSecurityNumber"), "{err}");
    let description: String =
        sqlx::query_scalar("SELECT description FROM roles WHERE name = 'Administrator'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(description, "Full access to every record", "rolled back");
}
