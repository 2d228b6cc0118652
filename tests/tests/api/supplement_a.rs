//! Supplement A on the Section 1 page (docs/supplement-a.md): preparers
//! and/or translators recorded in order with the signature, the I-9 record
//! showing them, every bad field named, the choice agreeing with the rows,
//! adding rows without JavaScript, and the phone-friendly inputs.

use serde_json::{json, Value};

use super::section1::{error_beside, good_form_owned, hr_hire, summary, with};

/// A filled row `n` of Supplement A, signed today.
fn row(n: usize, first: &str, last: &str, state: &str, zip: &str) -> Vec<(String, String)> {
    let today = chrono::Utc::now().date_naive().to_string();
    [
        ("LastName", last.to_owned()),
        ("FirstName", first.to_owned()),
        ("MiddleInitial", String::new()),
        ("Address", "400 Main St".to_owned()),
        ("City", "Salem".to_owned()),
        ("State", state.to_owned()),
        ("Zip", zip.to_owned()),
        ("Agree", "yes".to_owned()),
        ("Signature", format!("{first} {last}")),
        ("Date", today),
    ]
    .into_iter()
    .map(|(part, v)| (format!("preparer{n}{part}"), v))
    .collect()
}

/// Text of a page as typed (askama writes `'` as `&#39;`).
fn unescape(html: &str) -> String {
    html.replace("&#39;", "'")
}

/// The good Section 1 form with `extra` fields.
fn form(extra: Vec<(String, String)>) -> Vec<(String, String)> {
    good_form_owned()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(extra)
        .collect()
}

/// `rows` with the field `name` set to `value`.
fn set(mut rows: Vec<(String, String)>, name: &str, value: &str) -> Vec<(String, String)> {
    match rows.iter_mut().find(|(k, _)| k == name) {
        Some(f) => f.1 = value.to_owned(),
        None => rows.push((name.to_owned(), value.to_owned())),
    }
    rows
}

#[tokio::test]
async fn section_1_records_its_preparers_in_order_and_the_record_shows_them() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let today = chrono::Utc::now().date_naive().to_string();
    let mut extra = vec![("preparer".to_owned(), "assisted".to_owned())];
    extra.extend(set(
        row(1, "Rosa", "Mendez", "or", "972011234"),
        "preparer1MiddleInitial",
        "L",
    ));
    extra.extend(row(2, "Tom", "Ng", "PR", "00901"));
    let r = app
        .http
        .post(&link)
        .header("x-request-id", "supp-a-1")
        .form(&form(extra))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(
        record["preparersAndTranslators"],
        json!([
            {"lastName": "Mendez", "firstName": "Rosa", "middleInitial": "L", "address": "400 Main St",
             "city": "Salem", "state": "OR", "zip": "97201-1234", "signature": "Rosa Mendez",
             "signedDate": today},
            {"lastName": "Ng", "firstName": "Tom", "middleInitial": null, "address": "400 Main St",
             "city": "Salem", "state": "PR", "zip": "00901", "signature": "Tom Ng",
             "signedDate": today},
        ])
    );
    // The first is also in translator*.
    for (field, value) in [
        ("translatorLastName", "Mendez"),
        ("translatorFirstName", "Rosa"),
        ("translatorAddress", "400 Main St"),
        ("translatorCity", "Salem"),
        ("translatorState", "OR"),
        ("translatorZip", "97201-1234"),
        ("signedDateTranslator", &today),
    ] {
        assert_eq!(record[field], json!(value), "{field}");
    }
    assert_eq!(record["i9Status"], "Signed Sec 1");
    // The signing's one audit entry counts them (names are not copied there).
    let detail: Value = sqlx::query_scalar(
        "SELECT detail FROM audit_log WHERE action = 'i9.section1' AND request_id = 'supp-a-1'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(detail["preparers"], 2, "{detail}");
    assert!(!detail.to_string().contains("Mendez"));
}

#[tokio::test]
async fn without_a_preparer_the_record_has_none() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    // The page's blank row (its date filled in) is no preparer.
    let today = chrono::Utc::now().date_naive().to_string();
    let mut extra = vec![("preparer".to_owned(), "none".to_owned())];
    extra.extend(row(1, "", "", "", "").into_iter().map(|(k, _)| {
        let v = if k.ends_with("Date") {
            today.clone()
        } else {
            String::new()
        };
        (k, v)
    }));
    let extra: Vec<_> = extra
        .into_iter()
        .filter(|(k, _)| !k.ends_with("Agree"))
        .collect();
    let r = app
        .http
        .post(&link)
        .form(&form(extra))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["preparersAndTranslators"], json!([]));
    assert_eq!(record["translatorLastName"], Value::Null);
    assert_eq!(record["signedDateTranslator"], Value::Null);
    assert_eq!(
        app.count("SELECT count(*) FROM i9_preparers WHERE i9_id = $1", i9)
            .await,
        0
    );
}

/// Each rule of a preparer's row, refused beside its field and named in the
/// summary with the preparer's number, in English and Spanish; nothing is
/// signed or written.
#[tokio::test]
async fn every_bad_field_of_a_preparer_is_named() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let yesterday = (chrono::Utc::now().date_naive() - chrono::Days::new(1)).to_string();
    let good = || {
        let mut rows = vec![("preparer".to_owned(), "assisted".to_owned())];
        rows.extend(row(1, "Rosa", "Mendez", "OR", "97201"));
        rows.extend(row(2, "Tom", "Ng", "OR", "97201"));
        rows
    };
    // The field changed, its value, the English and the Spanish message.
    let cases = [
        ("preparer2Address", "", "Preparer or translator 2: Address (street number and name): This field is required.",
         "Preparador o traductor 2: Dirección (número y nombre de la calle): Este campo es obligatorio."),
        ("preparer2City", "", "Preparer or translator 2: City or town: This field is required.",
         "Preparador o traductor 2: Ciudad o pueblo: Este campo es obligatorio."),
        ("preparer2State", "XX", "Preparer or translator 2: State: Choose the state, territory or military post office from the list.",
         "Preparador o traductor 2: Estado: Elija el estado, territorio u oficina postal militar de la lista."),
        ("preparer2Zip", "9720", "Preparer or translator 2: ZIP code: Enter the ZIP code as 5 digits, or as ZIP+4: 12345-6789.",
         "Preparador o traductor 2: Código postal: Escriba el código postal con 5 dígitos, o como ZIP+4: 12345-6789."),
        ("preparer2Signature", "Tom Nguyen", "Preparer or translator 2: Signature: Type the preparer's or translator's first and last name exactly as entered in this part.",
         "Preparador o traductor 2: Firma: Escriba el nombre y apellido del preparador o traductor tal como en esta parte."),
        ("preparer2Date", &yesterday, "Preparer or translator 2: Today's date: Enter today's date, the day Section 1 is signed.",
         "Preparador o traductor 2: Fecha de hoy: Escriba la fecha de hoy, el día en que se firma la Sección 1."),
        ("preparer2Date", "13/45/2026", "Preparer or translator 2: Today's date: Enter a real date, YYYY-MM-DD or MM/DD/YYYY.",
         "Preparador o traductor 2: Fecha de hoy: Escriba una fecha válida, AAAA-MM-DD o MM/DD/AAAA."),
        ("preparer2Agree", "no", "Preparer or translator 2: Attestation: Check the box to confirm you are aware of it.",
         "Preparador o traductor 2: Declaración: Marque la casilla para confirmar que lo entiende."),
        ("preparer2MiddleInitial", "LM", "Preparer or translator 2: Middle initial: This is too long.",
         "Preparador o traductor 2: Inicial del segundo nombre: Es demasiado largo."),
    ];
    for (field, value, en, es) in cases {
        for (lang, message) in [("en", en), ("es", es)] {
            let r = app
                .http
                .post(format!("{link}?lang={lang}"))
                .form(&form(set(good(), field, value)))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 422, "{field}={value}");
            let html = r.text().await.unwrap();
            let entries: Vec<_> = summary(&html)
                .into_iter()
                .map(|(f, text)| (f, unescape(&text)))
                .collect();
            assert_eq!(
                entries,
                vec![(field.to_owned(), message.to_owned())],
                "{lang} {field}={value}"
            );
            let beside = unescape(&error_beside(&html, field).unwrap());
            assert!(
                message.ends_with(&format!(": {beside}")),
                "{lang} {field}: {beside}"
            );
            assert!(html.contains(&format!(r##"<a href="#{field}">"##)));
            // What was typed is kept.
            assert!(html.contains(r#"value="Rosa""#), "{field}");
        }
    }
    // All at once: every bad field is named.
    let mut all = good();
    for (field, value) in [
        ("preparer1State", "XX"),
        ("preparer1Zip", "1"),
        ("preparer2Signature", "Someone"),
    ] {
        all = set(all, field, value);
    }
    let r = app.http.post(&link).form(&form(all)).send().await.unwrap();
    assert_eq!(r.status(), 422);
    let fields: Vec<String> = summary(&r.text().await.unwrap())
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    assert_eq!(
        fields,
        ["preparer1State", "preparer1Zip", "preparer2Signature"]
    );
    assert_eq!(
        app.count("SELECT count(*) FROM i9_preparers WHERE i9_id = $1", i9)
            .await,
        0
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9s WHERE id = $1 AND status = 'Section 1 Incomplete'",
            i9
        )
        .await,
        1,
        "nothing signed"
    );
}

/// "I did not use a preparer or translator" with a filled row, or "A
/// preparer(s) and/or translator(s) assisted" with none, is refused on the
/// choice; a form without the choice and without a row signs (a form of the
/// page before Supplement A).
#[tokio::test]
async fn the_choice_agrees_with_supplement_a() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let filled = row(1, "Rosa", "Mendez", "OR", "97201");
    for (extra, message) in [
        (
            vec![("preparer".to_owned(), "assisted".to_owned())],
            "You checked that a preparer or translator assisted: each one fills in their part of Supplement A.",
        ),
        (
            [vec![("preparer".to_owned(), "none".to_owned())], filled.clone()].concat(),
            "Supplement A is filled in: check that a preparer or translator assisted, or clear their part.",
        ),
        (
            filled.clone(),
            "Supplement A is filled in: check that a preparer or translator assisted, or clear their part.",
        ),
        (
            vec![("preparer".to_owned(), "maybe".to_owned())],
            "Check one of the two boxes.",
        ),
    ] {
        let r = app.http.post(&link).form(&form(extra.clone())).send().await.unwrap();
        assert_eq!(r.status(), 422, "{extra:?}");
        let html = r.text().await.unwrap();
        assert_eq!(error_beside(&html, "preparer").as_deref(), Some(message));
        assert_eq!(summary(&html)[0].0, "preparer");
        assert!(html.contains(r#"id="preparer" type="radio""#), "the summary's link");
    }
    let r = app
        .http
        .post(&link)
        .form(&form(vec![]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "no choice, no row: no preparer");
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["preparersAndTranslators"], json!([]));
}

/// Without JavaScript: "Add another preparer or translator" shows the same
/// form with one row more, keeping what was typed and signing nothing, up to
/// five rows; a sixth row or a field sent twice makes the form unreadable.
#[tokio::test]
async fn rows_are_added_by_a_button_up_to_five() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let page = app
        .http
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"id="preparer1LastName""#));
    assert!(!page.contains(r#"id="preparer2LastName""#));
    // The signing button comes first: Enter in a field signs.
    let sign = page.find(r#"value="sign""#).unwrap();
    let add = page.find(r#"value="addPreparer""#).unwrap();
    assert!(sign < add);

    let mut rows: Vec<(String, String)> = vec![("action".into(), "addPreparer".into())];
    rows.extend(row(1, "Rosa", "Mendez", "OR", "97201"));
    let r = app
        .http
        .post(&link)
        .form(&form(rows.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    assert!(html.contains(r#"id="preparer2LastName""#), "{html}");
    assert!(!html.contains(r#"id="preparer3LastName""#));
    assert!(html.contains(r#"value="Rosa""#), "typed values kept");
    assert!(!html.contains("class=\"summary\""), "nothing checked");
    for n in 2..=5 {
        rows.extend(row(n, "Tom", "Ng", "OR", "97201"));
    }
    let r = app
        .http
        .post(&link)
        .form(&form(rows.clone()))
        .send()
        .await
        .unwrap();
    let html = r.text().await.unwrap();
    assert!(html.contains(r#"id="preparer5LastName""#));
    assert!(!html.contains(r#"id="preparer6LastName""#));
    assert!(!html.contains(r#"value="addPreparer""#), "no sixth row");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM i9s WHERE id = $1 AND status = 'Section 1 Incomplete'",
            i9
        )
        .await,
        1
    );

    for bad in [
        [
            row(1, "Rosa", "Mendez", "OR", "97201"),
            row(6, "Tom", "Ng", "OR", "97201"),
        ]
        .concat(),
        [
            row(1, "Rosa", "Mendez", "OR", "97201"),
            row(1, "Tom", "Ng", "OR", "97201"),
        ]
        .concat(),
    ] {
        let r = app.http.post(&link).form(&form(bad)).send().await.unwrap();
        assert_eq!(r.status(), 400);
    }
}

/// On a phone: the state a list, dates date inputs (typed MM/DD/YYYY still
/// accepted), number pads for the SSN, the ZIP codes and the phone, and
/// every field saying what a browser may fill in (a preparer's: nothing).
#[tokio::test]
async fn the_page_suits_a_phone() {
    let app = i9_tests::spawn_stack().await;
    let admin = app.token(i9_tests::ADMIN).await;
    let (_, i9, link) = hr_hire(&app, &admin, json!({})).await;
    let fields = regex::Regex::new(r#"<(input|select) [^>]*>"#).unwrap();
    for lang in ["en", "es"] {
        let page = app
            .http
            .get(format!("{link}?lang={lang}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let tag = |id: &str| -> String {
            let start = page
                .find(&format!(r#"id="{id}""#))
                .unwrap_or_else(|| panic!("{id}"));
            let start = page[..start].rfind('<').unwrap();
            page[start..start + page[start..].find('>').unwrap()].to_owned()
        };
        assert!(tag("addressState").starts_with("<select"));
        assert!(tag("preparer1State").starts_with("<select"));
        let select = &page[page.find(r#"<select id="addressState""#).unwrap()..];
        let select = &select[..select.find("</select>").unwrap()];
        assert_eq!(
            select.matches("<option").count(),
            63,
            "a blank and 62 codes"
        );
        for code in [
            "DC", "AS", "GU", "MP", "PR", "VI", "AA", "AE", "AP", "FM", "MH", "PW",
        ] {
            assert!(
                select.contains(&format!(r#"<option value="{code}">"#)),
                "{code}"
            );
        }
        for (id, attrs) in [
            (
                "dateOfBirth",
                vec![r#"type="date""#, r#"autocomplete="bday""#],
            ),
            (
                "preparer1Date",
                vec![r#"type="date""#, r#"autocomplete="off""#],
            ),
            (
                "socialSecurityNumber",
                vec![
                    r#"inputmode="numeric""#,
                    r#"pattern="#,
                    r#"autocomplete="off""#,
                ],
            ),
            (
                "addressZip",
                vec![
                    r#"inputmode="numeric""#,
                    r#"pattern="#,
                    r#"autocomplete="postal-code""#,
                ],
            ),
            (
                "preparer1Zip",
                vec![
                    r#"inputmode="numeric""#,
                    r#"pattern="#,
                    r#"autocomplete="off""#,
                ],
            ),
            (
                "phoneNumber",
                vec![
                    r#"type="tel""#,
                    r#"inputmode="tel""#,
                    r#"autocomplete="tel""#,
                ],
            ),
            (
                "emailAddress",
                vec![r#"type="email""#, r#"autocomplete="email""#],
            ),
            ("firstName", vec![r#"autocomplete="given-name""#]),
            ("lastName", vec![r#"autocomplete="family-name""#]),
            ("middleInitial", vec![r#"autocomplete="additional-name""#]),
            ("addressStreet", vec![r#"autocomplete="address-line1""#]),
            ("addressCity", vec![r#"autocomplete="address-level2""#]),
            ("addressState", vec![r#"autocomplete="address-level1""#]),
            ("preparer1LastName", vec![r#"autocomplete="off""#]),
            ("preparer1FirstName", vec![r#"autocomplete="off""#]),
            ("preparer1Address", vec![r#"autocomplete="off""#]),
            ("preparer1State", vec![r#"autocomplete="off""#]),
        ] {
            let tag = tag(id);
            for attr in attrs {
                assert!(tag.contains(attr), "{lang} {id}: {tag}");
            }
        }
        // Every text field and list says what may be filled in.
        for m in fields.find_iter(&page) {
            let t = m.as_str();
            if ["hidden", "radio", "checkbox"]
                .iter()
                .any(|k| t.contains(&format!(r#"type="{k}""#)))
            {
                continue;
            }
            assert!(t.contains("autocomplete=\""), "{lang}: {t}");
        }
    }

    // What a browser without date inputs or number pads sends is accepted:
    // dates typed MM/DD/YYYY, an SSN and a ZIP+4 without dashes.
    let today = chrono::Utc::now().date_naive();
    let mut extra = vec![("preparer".to_owned(), "assisted".to_owned())];
    extra.extend(set(
        row(1, "Rosa", "Mendez", "OR", "97201"),
        "preparer1Date",
        &today.format("%m/%d/%Y").to_string(),
    ));
    let form = with(
        good_form_owned(),
        &[
            ("dateOfBirth", "03/14/1990"),
            ("socialSecurityNumber", "456789012"),
            ("addressZip", "972011234"),
        ],
    )
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .chain(extra)
    .collect::<Vec<_>>();
    let r = app.http.post(&link).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let record = app.get_json(&format!("/v1/i9s/{i9}"), &admin).await;
    assert_eq!(record["dateOfBirth"], "1990-03-14");
    assert_eq!(record["addressZip"], "97201-1234");
    assert_eq!(
        record["preparersAndTranslators"][0]["signedDate"],
        json!(today.to_string())
    );
}
