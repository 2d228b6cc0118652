//! Every resource's field names and types, held against the specification's tables.

use std::collections::BTreeSet;

use i9_tests::{ids, spawn_app, ADMIN, WEST_HR};
use serde_json::Value;

#[derive(Debug, Clone, Copy)]
enum T {
    Int,
    Bool,
    Str,
    /// string or null
    OptStr,
    /// `YYYY-MM-DD` or null
    Date,
    /// ISO 8601, fractional seconds, no zone
    Timestamp,
    OptTimestamp,
    /// int or null
    OptInt,
    Links,
    /// `{id, name}`
    Named,
    NamedList,
    IntList,
    /// `null`, or an array of `{field, reason}`
    Differences,
    /// An array of objects (Supplement B entries: tests/tests/api/reverification.rs)
    Objects,
    /// An array of Supplement A's preparers (docs/supplement-a.md)
    Preparers,
    /// `null`, or an object (a reverification a Status Change Report asks
    /// for: tests/tests/api/status_change_report.rs)
    OptObject,
    /// `null`, or the latest E-Verify case of an employee or I-9
    /// (docs/everify.md, "REST resource"): exactly its six fields.
    EverifyCase,
}

fn check(value: &Value, t: T) -> bool {
    let date = |s: &str| s.len() == 10 && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok();
    let ts = |s: &str| {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
            && s.contains('.')
            && !s.ends_with('Z')
            && !s.contains('+')
    };
    let named = |v: &Value| {
        v["id"].is_i64() && v["name"].is_string() && v.as_object().is_some_and(|o| o.len() == 2)
    };
    match t {
        T::Int => value.is_i64(),
        T::Bool => value.is_boolean(),
        T::Str => value.is_string(),
        T::OptStr => value.is_string() || value.is_null(),
        T::Date => value.is_null() || value.as_str().is_some_and(date),
        T::Timestamp => value.as_str().is_some_and(ts),
        T::OptTimestamp => value.is_null() || value.as_str().is_some_and(ts),
        T::OptInt => value.is_null() || value.is_i64(),
        T::Links => value.as_array().is_some_and(|a| {
            !a.is_empty()
                && a.iter().all(|l| {
                    l["rel"].is_string()
                        && l["href"].as_str().is_some_and(|h| h.starts_with("/v1/"))
                })
        }),
        T::Named => named(value),
        T::NamedList => value.as_array().is_some_and(|a| a.iter().all(named)),
        T::IntList => value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_i64)),
        T::Objects => value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_object)),
        T::Differences => {
            value.is_null()
                || value.as_array().is_some_and(|a| {
                    a.iter().all(|d| {
                        d["field"].is_string()
                            && d["reason"].is_string()
                            && d.as_object().is_some_and(|o| o.len() == 2)
                    })
                })
        }
        T::OptObject => value.is_null() || value.is_object(),
        T::EverifyCase => {
            value.is_null()
                || value.as_object().is_some_and(|o| {
                    let names: BTreeSet<&str> = o.keys().map(String::as_str).collect();
                    names
                        == BTreeSet::from([
                            "id",
                            "caseNumber",
                            "status",
                            "result",
                            "nextStep",
                            "nextStepDueDate",
                        ])
                        && o["id"].is_i64()
                        && check(&o["caseNumber"], T::OptStr)
                        && o["status"].is_string()
                        && check(&o["result"], T::OptStr)
                        && check(&o["nextStep"], T::OptStr)
                        && check(&o["nextStepDueDate"], T::Date)
                })
        }
        T::Preparers => value.as_array().is_some_and(|a| {
            a.iter().all(|p| {
                p.as_object().is_some_and(|o| o.len() == 9)
                    && [
                        "lastName",
                        "firstName",
                        "address",
                        "city",
                        "state",
                        "zip",
                        "signature",
                    ]
                    .iter()
                    .all(|k| p[k].is_string())
                    && p["signedDate"].as_str().is_some_and(date)
            })
        }),
    }
}

fn assert_shape(what: &str, value: &Value, fields: &[(&str, T)]) {
    let obj = value
        .as_object()
        .unwrap_or_else(|| panic!("{what} is an object: {value}"));
    let got: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = fields.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        got,
        want,
        "{what}: field names (extra: {:?}, missing: {:?})",
        got.difference(&want).collect::<Vec<_>>(),
        want.difference(&got).collect::<Vec<_>>()
    );
    for (name, t) in fields {
        assert!(
            check(&value[*name], *t),
            "{what}.{name} should be {t:?}, is {}",
            value[*name]
        );
    }
}

fn assert_list(what: &str, body: &Value, item: &[(&str, T)]) {
    let keys: BTreeSet<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["links", "searchResult", "total"]),
        "{what} list keys"
    );
    assert!(check(&body["links"], T::Links));
    let items = body["searchResult"].as_array().unwrap();
    assert!(!items.is_empty(), "{what}: a non-empty list to check");
    for i in items {
        assert_shape(what, i, item);
    }
}

const EMPLOYEE_SUMMARY: &[(&str, T)] = &[
    ("id", T::Int),
    ("i9Status", T::Str),
    ("i9Expiration", T::Date),
    ("firstName", T::Str),
    ("lastName", T::Str),
    ("socialSecurityNumber", T::OptStr),
    ("profileId", T::OptStr),
];

fn employee_record() -> Vec<(&'static str, T)> {
    let mut f = vec![
        ("id", T::Int),
        ("fullName", T::Str),
        ("links", T::Links),
        ("firstName", T::Str),
        ("lastName", T::Str),
        ("middleName", T::OptStr),
        ("socialSecurityNumber", T::OptStr),
        ("dateOfBirth", T::Date),
        ("startDate", T::Date),
        ("terminatedDate", T::Date),
        ("profileId", T::OptStr),
        ("otherName", T::OptStr),
        ("jobTitle", T::OptStr),
        ("emailAddress", T::OptStr),
        ("locationId", T::Int),
        ("legalEntity", T::OptInt),
        ("languagePreference", T::OptInt),
        ("i9Status", T::Str),
        ("i9Expiration", T::Date),
        ("i9FormSection1Link", T::OptStr),
        ("i9FormSection2Link", T::OptStr),
        // docs/retention.md, "Legal holds".
        ("legalHold", T::Bool),
        // docs/everify.md, "REST resource": the latest case, and whether one is open.
        ("everifyCase", T::EverifyCase),
        ("unresolvedVerification", T::Bool),
    ];
    for name in [
        "custom1",
        "custom2",
        "custom3",
        "custom4",
        "custom5",
        "custom6",
        "custom7",
        "custom8",
        "notificationEmail1",
        "notificationEmail2",
        "addressStreet",
        "addressStreet2",
        "addressApartment",
        "addressCity",
        "addressState",
        "addressCountry",
        "addressZip",
        "workNumber",
        "workExtension",
        "homeNumber",
        "homeExtension",
        "cellNumber",
        "cellExtension",
        "integrationClientSystem",
        "integrationClientProcess",
        "integrationHrUrl",
        "IntegrationTransactionId",
        "integrationRequestId",
        "integrationCandidateId",
        "integrationServiceId",
        "integrationReportUrl",
        "employeeReturnUrl",
    ] {
        f.push((name, T::OptStr));
    }
    f
}

fn i9_record() -> Vec<(&'static str, T)> {
    let mut f = vec![
        ("id", T::Int),
        ("employeeId", T::Int),
        ("i9Status", T::Str),
        ("i9Notes", T::OptStr),
        ("formType", T::Int),
        ("formVersion", T::Str),
        ("attestation", T::OptStr),
        ("remote", T::Bool),
        // Section 2's alternative procedure (docs/remote-examination.md).
        ("alternativeProcedure", T::Bool),
        // Which Section 2 document was a receipt (docs/reverification.md).
        ("listA1DocReceipt", T::Bool),
        ("listBDocReceipt", T::Bool),
        ("listCDocReceipt", T::Bool),
        ("IntegrationTransactionId", T::OptStr),
        ("links", T::Links),
        ("dateCreated", T::Timestamp),
        ("dateCompleted", T::OptTimestamp),
        ("dateApproved", T::OptTimestamp),
        ("dateDue", T::Date),
        ("startDate", T::Date),
        ("i9Expiration", T::Date),
        ("retentionDate", T::Date),
        ("legalHold", T::Bool),
        ("signedDateEmployee", T::Date),
        ("signedDateEmployer", T::Date),
        ("signedDateTranslator", T::Date),
        ("firstName", T::Str),
        ("lastName", T::Str),
        ("dateOfBirth", T::Date),
        ("section1Differences", T::Differences),
        // Supplement B (docs/reverification.md).
        ("receiptDueDate", T::Date),
        ("supplementB", T::Objects),
        // E-Verify's Status Change Report (docs/everify.md).
        ("reverificationRequired", T::OptObject),
        // docs/everify.md, "REST resource": the I-9's latest case.
        ("everifyCase", T::EverifyCase),
        // Section 1's attested expiry (docs/api.md, "I-9s").
        ("workAuthorizationExpiration", T::Date),
        ("preparersAndTranslators", T::Preparers),
    ];
    for name in [
        "middleInitial",
        "otherName",
        "ssn",
        "emailAddress",
        "phoneNumber",
        "addressStreet",
        "addressApartment",
        "addressCity",
        "addressState",
        "addressZip",
        "workAuthorization",
        "alienNumber",
        "admissionNumber",
        "foreignPassportNumber",
        "foreignPassportCountry",
        "employerFirstName",
        "employerLastName",
        "employerTitle",
        "employerBusiness",
        "employerAddress",
        "employerCity",
        "employerState",
        "employerZip",
        "translatorFirstName",
        "translatorLastName",
        "translatorAddress",
        "translatorCity",
        "translatorState",
        "translatorZip",
    ] {
        f.push((name, T::OptStr));
    }
    for group in [
        "listA1Doc",
        "listA2Doc",
        "listA3Doc",
        "listBDoc",
        "listCDoc",
    ] {
        for (suffix, t) in [
            ("Title", T::OptStr),
            ("Issuer", T::OptStr),
            ("Number", T::OptStr),
            ("Expiration", T::Date),
        ] {
            f.push((Box::leak(format!("{group}{suffix}").into_boxed_str()), t));
        }
    }
    f
}

const LEGAL_ENTITY: &[(&str, T)] = &[
    ("id", T::Int),
    ("entityName", T::Str),
    ("ein", T::Str),
    ("everifyId", T::OptStr),
    ("everifyEffectiveDate", T::Date),
    ("everifyStatus", T::Str),
    ("active", T::Bool),
];

const USER_SUMMARY: &[(&str, T)] = &[
    ("id", T::Int),
    ("firstName", T::Str),
    ("lastName", T::Str),
    ("fullName", T::Str),
    ("title", T::OptStr),
    ("emailAddress", T::OptStr),
    ("retired", T::Bool),
    ("role", T::Named),
    ("groups", T::NamedList),
    ("profileId", T::OptStr),
];

#[tokio::test]
async fn every_resource_has_the_fields_and_types_of_the_specification() {
    let app = spawn_app().await;
    let maria = app.employee_id("EMP-1001").await;
    let i9 = app.insert_i9(maria, "Section 1 Incomplete").await;
    let token = app.token(ADMIN).await;

    assert_list(
        "employee summary",
        &app.get_json("/v1/employees", &token).await,
        EMPLOYEE_SUMMARY,
    );
    let employee = app
        .get_json(&format!("/v1/employees/{maria}"), &token)
        .await;
    assert_shape("employee", &employee, &employee_record());
    assert_eq!(employee["fullName"], "Lopez, Maria");
    assert_eq!(employee["socialSecurityNumber"], "123-45-6789");
    assert_eq!(employee["startDate"], "2026-10-05");
    assert_eq!(employee["languagePreference"], 2);
    assert_eq!(
        employee["i9Status"], "Started",
        "Section 1 Incomplete shows as Started on the employee"
    );
    assert_eq!(
        employee["links"][0],
        serde_json::json!({"rel": "self", "href": format!("/v1/employees/{maria}")})
    );
    assert_eq!(
        employee["links"][1],
        serde_json::json!({"rel": "i9s", "href": format!("/v1/i9s?employeeId={maria}")}),
        "the list of the employee's I-9s, always"
    );
    assert_eq!(
        employee["links"][2],
        serde_json::json!({"rel": "i9", "href": format!("/v1/i9s/{i9}")})
    );
    assert_eq!(
        employee["i9FormSection1Link"],
        Value::Null,
        "never shown on GET"
    );
    assert_eq!(
        employee["i9FormSection2Link"],
        Value::Null,
        "Section 2 is not due before Section 1 is signed"
    );
    sqlx::query("UPDATE i9s SET status = 'Signed Sec 1' WHERE id = $1")
        .bind(i9)
        .execute(app.pool())
        .await
        .unwrap();
    let employee = app
        .get_json(&format!("/v1/employees/{maria}"), &token)
        .await;
    assert_eq!(employee["i9Status"], "Signed Sec 1");
    assert_eq!(
        employee["i9FormSection2Link"],
        format!("{}/v1/i9s/{i9}/section2", app.config.public_base_url)
    );

    assert_list(
        "i9 summary",
        &app.get_json("/v1/i9s", &token).await,
        &[
            ("id", T::Int),
            ("firstName", T::Str),
            ("lastName", T::Str),
            ("emailAddress", T::OptStr),
            ("i9Status", T::Str),
            ("dateDue", T::OptStr),
            ("startDate", T::OptStr),
            ("employeeId", T::Int),
            ("i9Expiration", T::Date),
            // Expiring-document reminders (docs/reminders.md).
            ("documentDueDate", T::Date),
            ("documentDueKind", T::OptStr),
        ],
    );
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_shape("i9", &record, &i9_record());
    assert_eq!(record["i9Status"], "Signed Sec 1");
    assert_eq!(record["formType"], 1);
    assert_eq!(record["dateDue"], "2026-10-08");
    // With an E-Verify case, both records show it, its result included: a
    // `Closed` says how it ended (the ATS trial).
    let case: i64 = sqlx::query_scalar(
        "INSERT INTO everify_cases (i9_id, employee_id, legal_entity_id, program, case_number,
             status, result, basis, created_on, created_by_user_id, creator_name,
             closure_reason, employed_at_closure, closed_on)
         SELECT $1, $2, (SELECT id FROM legal_entities ORDER BY id LIMIT 1), 'simulator',
                'SIM000000000001', 'Closed', 'Final Nonconfirmation', 'agency', DATE '2026-10-06',
                1, 'Admin', 'EMPLOYEE_TERMINATED_FOR_FNC', FALSE, DATE '2026-10-07'
         RETURNING id",
    )
    .bind(i9)
    .bind(maria)
    .fetch_one(app.pool())
    .await
    .unwrap();
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &token).await;
    assert_shape("i9", &record, &i9_record());
    let employee = app
        .get_json(&format!("/v1/employees/{maria}"), &token)
        .await;
    assert_shape("employee", &employee, &employee_record());
    for rec in [&record, &employee] {
        assert_eq!(
            rec["everifyCase"],
            serde_json::json!({"id": case, "caseNumber": "SIM000000000001", "status": "Closed",
                "result": "Final Nonconfirmation", "nextStep": null, "nextStepDueDate": null})
        );
    }

    assert_list(
        "legal entity",
        &app.get_json("/v1/eins", &token).await,
        LEGAL_ENTITY,
    );
    let mut with_links = LEGAL_ENTITY.to_vec();
    with_links.push(("links", T::Links));
    let le = app.get_json("/v1/eins/2", &token).await;
    assert_shape("legal entity", &le, &with_links);
    assert_eq!(
        (
            le["ein"].as_str(),
            le["everifyId"].is_null(),
            le["everifyStatus"].as_str()
        ),
        (Some(""), true, Some("Not Ready"))
    );

    assert_list(
        "group summary",
        &app.get_json("/v1/groups", &token).await,
        &[("id", T::Int), ("name", T::Str), ("managed", T::Bool)],
    );
    let acme = app.group_id("Acme").await;
    let group = app.get_json(&format!("/v1/groups/{acme}"), &token).await;
    assert_shape(
        "group",
        &group,
        &[
            ("id", T::Int),
            ("name", T::Str),
            ("parentId", T::OptInt),
            ("numChild", T::Int),
            ("links", T::Links),
        ],
    );
    assert_eq!(group["numChild"], 2, "West and East are direct children");
    assert_eq!(group["parentId"], serde_json::Value::Null, "the top");
    let rels: Vec<&str> = group["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rel"].as_str().unwrap())
        .collect();
    assert_eq!(rels, ["self", "users", "children"]);
    // The tree walked down through `children`, and up through `parent`.
    let children = app
        .get_json(&format!("/v1/groups?parentId={acme}"), &token)
        .await;
    let mut names: Vec<&str> = children["searchResult"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["East Region", "West Region"]);
    assert_eq!(children["total"], 2);
    let west = app.group_id("West Region").await;
    let region = app.get_json(&format!("/v1/groups/{west}"), &token).await;
    assert_eq!(region["parentId"], acme);
    assert!(region["links"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["rel"] == "parent" && l["href"] == format!("/v1/groups/{acme}")));
    assert_list(
        "group user",
        &app.get_json(&format!("/v1/groups/{acme}/users"), &token)
            .await,
        &[
            ("id", T::Int),
            ("firstName", T::Str),
            ("lastName", T::Str),
            ("fullName", T::Str),
            ("title", T::OptStr),
            ("emailAddress", T::OptStr),
            ("retired", T::Bool),
            ("groups", T::NamedList),
        ],
    );

    assert_list(
        "user summary",
        &app.get_json("/v1/users", &token).await,
        USER_SUMMARY,
    );
    let mut user_fields = USER_SUMMARY.to_vec();
    for name in [
        "login",
        "middleName",
        "samlId",
        "oauthId",
        "workNumber",
        "workExtension",
        "homeNumber",
        "homeExtension",
        "cellNumber",
        "cellExtension",
    ] {
        user_fields.push((name, T::OptStr));
    }
    user_fields.push(("links", T::Links));
    let user = app.get_json("/v1/users/1", &token).await;
    assert_shape("user", &user, &user_fields);
    let admin_role = app
        .id_of("SELECT id FROM roles WHERE name = $1", "Administrator")
        .await;
    assert_eq!(
        user["role"],
        serde_json::json!({"id": admin_role, "name": "Administrator"})
    );
    assert_eq!(
        user["groups"],
        serde_json::json!([{"id": acme, "name": "Acme"}])
    );
    sqlx::query(
        "INSERT INTO users (login, first_name, last_name, role_id)
         SELECT 'no.groups', 'Lone', 'User', id FROM roles WHERE name = 'Viewer'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let lone = app.get_json("/v1/users?login=no.groups", &token).await;
    assert_eq!(
        lone["searchResult"][0]["groups"],
        serde_json::json!([]),
        "possibly empty"
    );

    assert_list(
        "role summary",
        &app.get_json("/v1/roles", &token).await,
        &[("id", T::Int), ("name", T::Str), ("description", T::Str)],
    );
    let viewer = app
        .id_of("SELECT id FROM roles WHERE name = $1", "Viewer")
        .await;
    let role = app.get_json(&format!("/v1/roles/{viewer}"), &token).await;
    assert_shape(
        "role",
        &role,
        &[
            ("id", T::Int),
            ("name", T::Str),
            ("description", T::Str),
            ("permissions", T::IntList),
            ("links", T::Links),
        ],
    );
    assert_eq!(role["permissions"], serde_json::json!([1, 3, 6, 7]));
}

#[tokio::test]
async fn missing_and_malformed_ids_are_404_problems() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    for path in [
        "/v1/employees/999999",
        "/v1/employees/abc",
        "/v1/employees/-1",
        "/v1/employees/99999999999999999999",
        "/v1/i9s/5",
        "/v1/eins/0",
        "/v1/groups/77",
        "/v1/users/77",
        "/v1/roles/77",
    ] {
        let r = app.get(path, &token).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["status"], 404);
        assert_eq!(body["type"], "/problems/not-found");
    }
}

#[tokio::test]
async fn an_employees_sign_in_is_shown_only_to_those_who_see_the_employee() {
    let app = spawn_app().await;
    let admin = app.token(ADMIN).await;
    // Sign-ins for Maria (West) and Aisha (Boston).
    let mut logins = Vec::new();
    for (profile, group) in [
        ("EMP-1001", "Portland Warehouse"),
        ("EMP-1003", "Boston Office"),
    ] {
        let id = app.employee_id(profile).await;
        let body = serde_json::json!({"firstName": "X", "lastName": "Y", "locationId": app.group_id(group).await,
                                      "createLogin": true});
        let r = app
            .patch_json(&format!("/v1/employees/{id}"), &admin, &body)
            .await;
        assert_eq!(r.status(), 200);
        logins.push(
            app.id_of("SELECT id FROM users WHERE employee_id = (SELECT id FROM employees WHERE profile_id = $1)", profile)
                .await,
        );
    }
    let (maria_login, aisha_login) = (logins[0], logins[1]);
    // Someone has put Aisha's sign-in into the root group.
    sqlx::query(
        "INSERT INTO user_groups (user_id, group_id) SELECT $1, id FROM groups WHERE name = 'Acme'",
    )
    .bind(aisha_login)
    .execute(app.pool())
    .await
    .unwrap();
    let acme = app.group_id("Acme").await;

    let west = app.token(WEST_HR).await; // permission 8, sees West Region
    let listed = ids(&app.get_json("/v1/users", &west).await);
    assert_eq!(
        listed.len(),
        4 + 1,
        "the organization's users and Maria's sign-in"
    );
    assert!(listed.contains(&maria_login) && !listed.contains(&aisha_login));
    let r = app
        .get_json("/v1/users?login=aisha.okafor@mail.example", &west)
        .await;
    assert!(ids(&r).is_empty());
    assert_eq!(
        app.get(&format!("/v1/users/{maria_login}"), &west)
            .await
            .status(),
        200
    );
    let r = app.get(&format!("/v1/users/{aisha_login}"), &west).await;
    assert_eq!(r.status(), 404, "as for a user that does not exist");
    let members = ids(&app
        .get_json(&format!("/v1/groups/{acme}/users"), &west)
        .await);
    assert_eq!(members.len(), 1, "the administrator only");
    assert!(!members.contains(&aisha_login));

    // Permission 11 sees every employee, and so every sign-in.
    let everyone = ids(&app.get_json("/v1/users", &admin).await);
    assert_eq!(everyone.len(), 4 + 2);
    let members = ids(&app
        .get_json(&format!("/v1/groups/{acme}/users"), &admin)
        .await);
    assert_eq!(members.len(), 2);
    assert_eq!(
        app.get(&format!("/v1/users/{aisha_login}"), &admin)
            .await
            .status(),
        200
    );
}
