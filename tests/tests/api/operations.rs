//! Health, readiness, metrics, request ids, and problem details for the
//! framework's own errors.

use i9_tests::{spawn_app, spawn_app_with, ADMIN};
use serde_json::Value;

#[tokio::test]
async fn health_and_readiness_need_no_token() {
    let app = spawn_app().await;
    let r = app.http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(
        r.status(),
        200,
        "Postgres and RabbitMQ are up in the test environment"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({"status": "ok", "postgres": "ok", "rabbitmq": "ok"})
    );
}

#[tokio::test]
async fn readiness_fails_when_rabbitmq_is_unreachable() {
    // Port 1 on loopback: nothing listens there.
    let app = spawn_app_with(|c| c.amqp_url = "amqp://guest:guest@127.0.0.1:1/%2f".into()).await;
    let r = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        (body["postgres"].as_str(), body["rabbitmq"].as_str()),
        (Some("ok"), Some("unavailable"))
    );
}

#[tokio::test]
async fn metrics_count_requests_by_route() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    app.get_json("/v1/roles", &token).await;
    let text = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(text.contains(r#"path="/v1/roles""#));
}

/// `i9_api::ROUTES` (each route's template, under which
/// `i9_request_timeouts_total` is listed from the start) names routes as
/// the router matches them, and misses none of the OpenAPI document's.
#[tokio::test]
async fn the_list_of_routes_is_the_routers() {
    let app = spawn_app().await;
    let filled = |template: &str| {
        template
            .split('/')
            .map(|seg| if seg.starts_with('{') { "1" } else { seg })
            .collect::<Vec<_>>()
            .join("/")
    };
    for route in i9_api::ROUTES {
        // No route answers OPTIONS: a 405 shows the path matched a route.
        let r = app
            .http
            .request(reqwest::Method::OPTIONS, app.url(&filled(route)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 405, "{route}");
    }
    let text = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for route in i9_api::ROUTES {
        // Matched under this very template.
        assert!(
            text.contains(&format!(
                r#"http_requests_total{{method="OPTIONS",path="{route}",status="405"}}"#
            )),
            "{route}: {text}"
        );
    }
    let shape = |template: &str| {
        template
            .split('/')
            .map(|seg| if seg.starts_with('{') { "{}" } else { seg })
            .collect::<Vec<_>>()
            .join("/")
    };
    let listed: Vec<String> = i9_api::ROUTES.iter().map(|r| shape(r)).collect();
    let doc = serde_json::to_value(i9_api::routes::openapi::document()).unwrap();
    for path in doc["paths"].as_object().unwrap().keys() {
        assert!(listed.contains(&shape(path)), "{path} is not in ROUTES");
    }
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_errors_are_problems() {
    let app = spawn_app().await;
    let token = app.token(ADMIN).await;
    let r = app.get("/v1/nothing-here", &token).await;
    assert_eq!(r.status(), 404);
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(r.headers()["content-type"], "application/problem+json");

    let r = app
        .http
        .delete(app.url("/v1/employees"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], 405);

    // A caller's own request id is kept.
    let r = app
        .http
        .get(app.url("/healthz"))
        .header("x-request-id", "trace-me-123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "trace-me-123");
    // ...but not one that could forge log lines.
    let r = app
        .http
        .get(app.url("/healthz"))
        .header("x-request-id", "evil id with spaces and \"quotes\"")
        .send()
        .await
        .unwrap();
    let id = r.headers()["x-request-id"].to_str().unwrap();
    assert!(
        !id.contains(' ') && id.len() == 36,
        "replaced by a fresh uuid: {id}"
    );

    // An oversized body is refused before it is read.
    let big = "x".repeat(300 * 1024);
    let r = app
        .http
        .post(app.url("/oauth2/access_token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("grant_type=password&username={big}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
}
