//! The OpenAPI 3.1 document, generated from the handlers and types above so
//! it cannot drift from them. Served at `/v1/openapi.json`; a copy is kept in
//! `docs/openapi.json` (a test checks that it is current).

use axum::Json;
use i9_common::events::{
    DocumentDueEvent, DocumentDueEventType, EmploymentEvent, EmploymentEventType, EverifyEvent,
    EverifyEventType, I9Event, I9EventType,
};
use utoipa::{
    openapi::{
        security::{Flow, OAuth2, Password, Scopes, SecurityScheme},
        RefOr, Schema,
    },
    Modify, OpenApi,
};

use super::{
    calendar, eins, employees, everify, groups, health, history, i9_steps, i9s, inspection,
    legal_holds, oauth, partners, roles, section1_link, status_change_reports, supplement_b, users,
};
use crate::{auth::Caller, error};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Employment eligibility records service",
        version = "1",
        description = "Employees, electronic Form I-9 records, legal entities, groups, users and roles. \
            Every /v1 route needs an OAuth 2.0 bearer token. Errors are RFC 9457 problem details. \
            See docs/api.md for the conventions (paging, filters, dates, permissions)."
    ),
    paths(
        oauth::token,
        employees::list, employees::get_one, employees::write::create, employees::write::update,
        employees::periods::list, history::employee, history::i9, section1_link::reissue,
        i9s::list, i9s::get_one, inspection::pdf, partners::section1, partners::locations, i9_steps::section2, i9_steps::complete, i9_steps::approve, i9_steps::park,
        supplement_b::reverify, supplement_b::receipt_update, supplement_b::list,
        everify::open, everify::of_i9, everify::get_one, everify::list, everify::confirm_details,
        everify::continue_duplicate, everify::notify, everify::refer, everify::no_action,
        everify::resubmit, everify::close,
        eins::list, eins::get_one,
        calendar::days, calendar::section2_due, calendar::list_closed_days, calendar::get_closed_day, calendar::set_closed_day, calendar::remove_closed_day,
        groups::list, groups::get_one, groups::users,
        users::list, users::get_one,
        roles::list, roles::get_one,
        health::healthz, health::readyz, health::metrics,
        openapi_json,
        legal_holds::hold_employee, legal_holds::hold_legal_entity, legal_holds::list, legal_holds::get_one, legal_holds::lift,
        status_change_reports::import,
    ),
    components(schemas(
        error::Problem,
        error::FieldError,
        I9Event,
        EmploymentEvent,
        DocumentDueEvent,
        EverifyEvent
    )),
    modifiers(&Security, &ClosedBodies, &BodyRefusals, &ResponseHeaders, &Webhooks)
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "oauth2",
            SecurityScheme::OAuth2(OAuth2::new([Flow::Password(Password::new(
                "/oauth2/access_token",
                Scopes::from_iter([
                    ("read", "GET requests"),
                    ("write", "POST, PUT, PATCH and DELETE requests"),
                ]),
            ))])),
        );
    }
}

/// Every JSON request body is closed: a member its schema does not list is
/// a 422 (`api/src/body.rs`, and the I-9 steps' own checks), so each body
/// schema says `additionalProperties: false`. A body made of `allOf` parts
/// (`EmployeeUpdate`) is merged into one object first, since each part
/// closed on its own would refuse the others' members.
struct ClosedBodies;

impl Modify for ClosedBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{
            schema::{AdditionalProperties, Object},
            Required,
        };
        let mut names = std::collections::BTreeSet::new();
        for item in openapi.paths.paths.values_mut() {
            for op in operations(item) {
                let Some(body) = &mut op.request_body else {
                    continue;
                };
                // An optional body (`Option<T>`) is absent or `T`; utoipa
                // also makes its schema nullable, but a JSON `null` body is
                // not an object, and the server refuses it (400).
                if !matches!(body.required, Some(Required::True)) {
                    for content in body.content.values_mut() {
                        if let Some(RefOr::T(Schema::OneOf(one))) = &content.schema {
                            let not_null: Vec<_> =
                                one.items.iter().filter(|s| !is_null(s)).cloned().collect();
                            if let [only] = not_null.as_slice() {
                                content.schema = Some(only.clone());
                            }
                        }
                    }
                }
                for (media, content) in &body.content {
                    if let (true, Some(RefOr::Ref(r))) = (media.contains("json"), &content.schema) {
                        if let Some(name) = r.ref_location.strip_prefix("#/components/schemas/") {
                            names.insert(name.to_owned());
                        }
                    }
                }
            }
        }
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for name in names {
            let Some(RefOr::T(schema)) = components.schemas.get_mut(&name) else {
                continue;
            };
            if let Schema::AllOf(all) = schema {
                let mut merged = Object::new();
                merged.schema_type = utoipa::openapi::schema::Type::Object.into();
                merged.description = all.description.clone();
                for part in &all.items {
                    if let RefOr::T(Schema::Object(o)) = part {
                        merged.properties.extend(o.properties.clone());
                        merged.required.extend(o.required.iter().cloned());
                        if merged.example.is_none() {
                            merged.example = o.example.clone();
                        }
                    }
                }
                *schema = Schema::Object(merged);
            }
            if let Schema::Object(o) = schema {
                o.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
                // utoipa's `Object` has no `not`; its extensions are written
                // into the object as they are.
                if o.properties.contains_key("createRemotehireI9") {
                    o.extensions
                        .get_or_insert_with(Default::default)
                        .insert("not".to_owned(), employees::input::i9_flags_rule());
                }
            }
        }
    }
}

/// The refusals of a body, listed here for every operation that reads one,
/// so that no route can leave them out: 413 (problem details) for a body
/// over [`crate::BODY_LIMIT`], which `DefaultBodyLimit` refuses before any
/// handler (`api/src/lib.rs`, its answer made problem details by
/// `middleware::problem_details`), and, for a JSON body, 415 for another
/// media type (`crate::body::json_object`). A route may list its own.
struct BodyRefusals;

impl Modify for BodyRefusals {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for op in operations(item) {
                let Some(body) = &op.request_body else {
                    continue;
                };
                let json = body.content.keys().any(|media| media.contains("json"));
                let responses = &mut op.responses.responses;
                responses.entry("413".to_owned()).or_insert_with(|| {
                    problem_response(&format!(
                        "The body is larger than {} KiB",
                        crate::BODY_LIMIT / 1024
                    ))
                });
                if json {
                    responses.entry("415".to_owned()).or_insert_with(|| {
                        problem_response(
                            "The body is not sent as JSON (`application/json` or another `application/*+json`)",
                        )
                    });
                }
            }
        }
    }
}

/// The headers the server sends with a response, declared here by status for
/// every operation (the server sets them by status too: `error.rs`,
/// `oauth.rs`, `middleware.rs`, `server.rs`, `idempotency.rs`), `required`
/// where every such answer carries one:
///
/// - 201: `Location`, the created record's path (`idempotency::created`,
///   and a replay's `Replay::respond`); on an operation that takes an
///   `Idempotency-Key`, `idempotent-replayed: true` on a replay (optional).
/// - 401: `WWW-Authenticate` (`ApiError::Unauthorized`; the token
///   endpoint's `invalid_client`).
/// - 403 of an operation that needs a token: `WWW-Authenticate` when the
///   token lacks the scope (optional: other refusals carry none).
/// - 429 and 503: `Retry-After`, in seconds. Every operation that needs a
///   token reads the database and is held to the 30 s limit, so it may
///   answer 503 (the database unavailable, the limit reached, too many
///   connections from one address): listed here on each. Not `/readyz`,
///   whose 503 is its report, without `Retry-After`.
///
/// utoipa's `Header` has no `required`, so the headers are written as the
/// response's `headers` member through its extensions (which are written
/// into the object as they are); headers a route declares itself
/// (`headers(...)`) are moved there too, optional.
struct ResponseHeaders;

impl Modify for ResponseHeaders {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use serde_json::json;
        let seconds = json!({"type": "integer", "minimum": 1});
        for item in openapi.paths.paths.values_mut() {
            for op in operations(item) {
                let bearer = op.security.as_ref().is_some_and(|s| !s.is_empty());
                let idempotent = op.parameters.iter().flatten().any(|p| {
                    p.parameter_in == utoipa::openapi::path::ParameterIn::Header
                        && p.name.eq_ignore_ascii_case(crate::idempotency::HEADER)
                });
                let readiness = op.operation_id.as_deref() == Some("readyz");
                if bearer {
                    op.responses
                        .responses
                        .entry("503".to_owned())
                        .or_insert_with(|| {
                            problem_response(
                                "Unavailable for now (the database, the 30 s limit of a \
                                 request, or too many connections from one address); retry \
                                 after Retry-After",
                            )
                        });
                }
                for (status, response) in op.responses.responses.iter_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    let mut headers = serde_json::Map::new();
                    for (name, header) in std::mem::take(&mut response.headers) {
                        headers.insert(name, serde_json::to_value(header).unwrap_or_default());
                    }
                    let mut declare = |name: &str,
                                       required: bool,
                                       schema: &serde_json::Value,
                                       description: &str| {
                        headers.insert(
                            name.to_owned(),
                            json!({"description": description, "required": required, "schema": schema}),
                        );
                    };
                    match status.as_str() {
                        "201" => {
                            declare(
                                "Location",
                                true,
                                &json!({"type": "string", "format": "uri-reference"}),
                                "The created record's path (a replay's too)",
                            );
                            if idempotent {
                                declare(
                                    "idempotent-replayed",
                                    false,
                                    &json!({"type": "string", "enum": ["true"]}),
                                    "`true` on the replay of an earlier request with the same \
                                     Idempotency-Key; absent otherwise",
                                );
                            }
                        }
                        "401" => declare(
                            "WWW-Authenticate",
                            true,
                            &json!({"type": "string"}),
                            if bearer {
                                r#"`Bearer realm="i9", error="invalid_token"` (RFC 6750)"#
                            } else {
                                r#"`Basic realm="i9"`: the client's authentication failed"#
                            },
                        ),
                        "403" if bearer => declare(
                            "WWW-Authenticate",
                            false,
                            &json!({"type": "string"}),
                            r#"When the access token lacks the operation's scope: `Bearer realm="i9", error="insufficient_scope"`"#,
                        ),
                        "429" => declare(
                            "Retry-After",
                            true,
                            &seconds,
                            "Seconds to wait before trying again",
                        ),
                        "503" if !readiness => declare(
                            "Retry-After",
                            true,
                            &seconds,
                            "Seconds to wait before trying again",
                        ),
                        _ => {}
                    }
                    if !headers.is_empty() {
                        response
                            .extensions
                            .get_or_insert_with(Default::default)
                            .insert("headers".to_owned(), serde_json::Value::Object(headers));
                    }
                }
            }
        }
    }
}

/// The partner callbacks (docs/partners.md, "Status callbacks") as the
/// OpenAPI 3.1 `webhooks` of the document: one per event type, a `post`
/// whose body is the event's schema (`I9Event`, `EmploymentEvent`: the types
/// `i9_common::events` records and the callback sends), with its `type`,
/// the Standard Webhooks headers and the answers the service expects.
///
/// utoipa 5's `OpenApi` has no `webhooks` member: they are written into the
/// document through its extensions (written into the object as they are),
/// here and nowhere else. The event schemas are made strict here too: every
/// member required (a nullable one is its type or `null`) and no other
/// member, so a partner can validate a body as it is.
struct Webhooks;

/// The component schemas of the event payloads.
pub const EVENT_SCHEMAS: [&str; 4] = [
    "I9Event",
    "EmploymentEvent",
    "DocumentDueEvent",
    "EverifyEvent",
];

impl Modify for Webhooks {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::AdditionalProperties;
        if let Some(components) = openapi.components.as_mut() {
            for name in EVENT_SCHEMAS {
                if let Some(RefOr::T(Schema::Object(o))) = components.schemas.get_mut(name) {
                    o.required = o.properties.keys().cloned().collect();
                    o.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
                }
            }
        }
        let i9 = I9EventType::ALL.map(|t| {
            let summary = match t {
                I9EventType::Created => "An I-9 of a partner's employee was created",
                I9EventType::StatusChanged => {
                    "The status of an I-9 of a partner's employee changed"
                }
            };
            (t.as_str(), "I9Event", summary)
        });
        let employment = EmploymentEventType::ALL.map(|t| {
            let summary = match t {
                EmploymentEventType::Terminated => {
                    "A partner's employee was terminated (or its termination date changed)"
                }
                EmploymentEventType::TerminationCancelled => {
                    "The termination of a partner's employee was cancelled"
                }
                EmploymentEventType::Rehired => "A partner's employee was re-hired",
            };
            (t.as_str(), "EmploymentEvent", summary)
        });
        // Expiring-document reminders (docs/reminders.md).
        let document_due = DocumentDueEventType::ALL.map(|t| {
            let summary = match t {
                DocumentDueEventType::DocumentDue => {
                    "A reverification or receipt date of an I-9 of a partner's employee reached a \
                     reminder threshold, or passed"
                }
            };
            (t.as_str(), "DocumentDueEvent", summary)
        });
        // E-Verify cases (docs/everify.md, "Partner events").
        let everify = EverifyEventType::ALL.map(|t| {
            let summary = match t {
                EverifyEventType::CaseOpened => {
                    "An E-Verify case was opened for an I-9 of a partner's employee"
                }
                EverifyEventType::StatusChanged => {
                    "The status of an E-Verify case of a partner's employee changed"
                }
            };
            (t.as_str(), "EverifyEvent", summary)
        });
        let hooks: serde_json::Map<String, serde_json::Value> = i9
            .into_iter()
            .chain(employment)
            .chain(document_due)
            .chain(everify)
            .map(|(event_type, schema, summary)| {
                (event_type.to_owned(), webhook(event_type, schema, summary))
            })
            .collect();
        openapi
            .extensions
            .get_or_insert_with(Default::default)
            .insert("webhooks".to_owned(), serde_json::Value::Object(hooks));
    }
}

/// The webhook of event type `event_type`, whose body is component `schema`.
fn webhook(event_type: &str, schema: &str, summary: &str) -> serde_json::Value {
    use serde_json::json;
    // `i9.status_changed` → `i9StatusChangedCallback`.
    let mut operation_id = String::new();
    let mut upper = false;
    for c in event_type.chars() {
        if c == '.' || c == '_' {
            upper = true;
        } else if upper {
            operation_id.extend(c.to_uppercase());
            upper = false;
        } else {
            operation_id.push(c);
        }
    }
    operation_id.push_str("Callback");
    let header = |name: &str, description: &str, schema: serde_json::Value| json!({"name": name, "in": "header", "required": true, "description": description, "schema": schema});
    json!({"post": {
        "operationId": operation_id,
        "tags": ["partners"],
        "summary": summary,
        "description": format!(
            "Posted to the partner's `integrationHrUrl` with `type` `{event_type}`, signed as Standard \
             Webhooks describes. Any 2xx answer is delivery; anything else, or no answer within 15 s, \
             is retried with exponential backoff and jitter (30 attempts over about 20 hours), then \
             dead-lettered; `410 Gone` stops the retries. At least once, possibly out of order: order \
             an employee's events by `sequence`, and process a `webhook-id` once. See \
             docs/partners.md, \"Status callbacks\"."
        ),
        "parameters": [
            header("webhook-id", "The event's `eventId`: the same on every retry of the event", json!({"type": "string", "format": "uuid"})),
            header("webhook-timestamp", "Seconds since the Unix epoch, at sending", json!({"type": "string", "pattern": "^[0-9]+$"})),
            header(
                "webhook-signature",
                "`v1,<base64 HMAC-SHA256>` over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with \
                 the base64-decoded part of the partner's `whsec_` secret; during a secret rotation's overlap, \
                 two of them, space-separated (docs/partners.md, \"Verifying a callback\")",
                json!({"type": "string", "pattern": "^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})?$"}),
            ),
        ],
        "requestBody": {
            "required": true,
            "content": {"application/json": {"schema": {"allOf": [
                {"$ref": format!("#/components/schemas/{schema}")},
                {"properties": {"type": {"const": event_type}}},
            ]}}},
        },
        "responses": {
            "2XX": {"description": "Delivered: the event is not posted again"},
            "410": {"description": "Gone: the service stops retrying this event (an operator can send it again)"},
            "default": {"description": "Not delivered: retried later (docs/partners.md, \"The retry schedule\")"},
        },
    }})
}

/// A response of problem details (`error::Problem`).
fn problem_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

/// The operations of a path.
fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.patch,
        &mut item.delete,
        &mut item.head,
        &mut item.options,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

fn is_null(schema: &RefOr<Schema>) -> bool {
    matches!(schema, RefOr::T(Schema::Object(o))
        if o.schema_type == utoipa::openapi::schema::SchemaType::Type(utoipa::openapi::Type::Null))
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

#[utoipa::path(
    get, path = "/v1/openapi.json", operation_id = "openapi", tag = "operations",
    responses((status = 200, description = "This document"), (status = 401, body = error::Problem, content_type = "application/problem+json")),
    security(("oauth2" = []))
)]
pub async fn openapi_json(_caller: Caller) -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}
