//! The HTTP API of the employment eligibility records service (`i9-api`).

pub mod audit;
pub mod auth;
pub mod body;
pub mod client_address;
pub mod error;
pub mod format;
pub mod hashing;
pub mod idempotency;
pub mod list;
pub mod middleware;
pub mod overload;
pub mod page_form;
pub mod page_security;
pub mod routes;
pub mod server;
pub mod sign_in;
pub mod ssn_writes;
pub mod state;
pub mod text;
pub mod throttle;

use std::{sync::Arc, time::Duration};

use axum::{
    extract::DefaultBodyLimit,
    http::{header, HeaderValue},
    routing::{get, post},
    Router,
};
use i9_common::{crypto::DataCipher, Config};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tower_http::{
    catch_panic::CatchPanicLayer,
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    set_header::SetResponseHeaderLayer,
    timeout::RequestBodyTimeoutLayer,
};

use crate::{error::ApiError, routes::*, state::AppState};

/// Request bodies above this size are refused with 413.
pub const BODY_LIMIT: usize = 256 * 1024;

/// A request body that stops arriving for this long (a client that sent
/// less than its `Content-Length`) is refused with 400, rather than holding
/// the request until the 30 s limit answers 503.
pub const BODY_IDLE_LIMIT: Duration = Duration::from_secs(10);

/// Every route of [`router`], as `MatchedPath` names it (the `route` label
/// of the metrics): `i9_request_timeouts_total` is listed at zero for each
/// from the start (docs/operations.md, "Metrics"). A test
/// (tests/tests/api/operations.rs) checks each is a route, and that every
/// route of the OpenAPI document is here.
pub const ROUTES: &[&str] = &[
    "/v1/employees",
    "/v1/employees/{id}",
    "/v1/employees/{id}/periods",
    "/v1/employees/{id}/history",
    "/v1/i9s/{id}/history",
    "/v1/i9s",
    "/v1/i9s/{id}",
    "/v1/i9s/{id}/pdf",
    "/v1/partners/i9s/section1",
    "/v1/partners/locations",
    "/v1/i9s/{id}/section2",
    "/v1/i9s/{id}/complete",
    "/v1/i9s/{id}/approve",
    "/v1/i9s/{id}/park",
    "/v1/i9s/{id}/section1-link",
    "/v1/i9s/{id}/reverify",
    "/v1/i9s/{id}/receipt-update",
    "/v1/i9s/{id}/supplement-b",
    "/v1/i9s/{id}/everify",
    "/v1/everify-cases",
    "/v1/everify-cases/{caseId}",
    "/v1/everify-cases/{caseId}/confirm-details",
    "/v1/everify-cases/{caseId}/continue-duplicate",
    "/v1/everify-cases/{caseId}/notify",
    "/v1/everify-cases/{caseId}/refer",
    "/v1/everify-cases/{caseId}/no-action",
    "/v1/everify-cases/{caseId}/resubmit",
    "/v1/everify-cases/{caseId}/close",
    "/v1/eins",
    "/v1/eins/{id}",
    "/v1/calendar",
    "/v1/calendar/section2-due",
    "/v1/calendar/closed-days",
    "/v1/calendar/closed-days/{date}",
    "/v1/groups",
    "/v1/groups/{id}",
    "/v1/groups/{id}/users",
    "/v1/users",
    "/v1/users/{id}",
    "/v1/roles",
    "/v1/roles/{id}",
    "/v1/openapi.json",
    "/v1/employees/{id}/legal-holds",
    "/v1/eins/{id}/legal-holds",
    "/v1/legal-holds",
    "/v1/legal-holds/{id}",
    "/v1/eins/{id}/everify/status-change-reports",
    "/account/set-password/{token}",
    "/account/sign-in",
    "/account/sign-out",
    "/account",
    "/account/i9s/{id}/section1",
    "/i9/section1/{token}",
    "/oauth2/access_token",
    "/oauth2/access_token/",
    "/healthz",
    "/readyz",
    "/metrics",
];

pub fn router(state: AppState) -> Router {
    let v1 = Router::new()
        .route(
            "/employees",
            get(employees::list).post(employees::write::create),
        )
        .route(
            "/employees/{id}",
            get(employees::get_one).patch(employees::write::update),
        )
        .route("/employees/{id}/periods", get(employees::periods::list))
        .route("/employees/{id}/history", get(history::employee))
        .route("/i9s/{id}/history", get(history::i9))
        .route("/i9s", get(i9s::list))
        .route("/i9s/{id}", get(i9s::get_one))
        .route("/i9s/{id}/pdf", get(inspection::pdf))
        .route("/partners/i9s/section1", post(partners::section1))
        .route("/partners/locations", get(partners::locations))
        .route("/i9s/{id}/section2", post(i9_steps::section2))
        .route("/i9s/{id}/complete", post(i9_steps::complete))
        .route("/i9s/{id}/approve", post(i9_steps::approve))
        .route("/i9s/{id}/park", post(i9_steps::park))
        .route("/i9s/{id}/section1-link", post(section1_link::reissue))
        // Supplement B (docs/reverification.md).
        .route("/i9s/{id}/reverify", post(supplement_b::reverify))
        .route(
            "/i9s/{id}/receipt-update",
            post(supplement_b::receipt_update),
        )
        .route("/i9s/{id}/supplement-b", get(supplement_b::list))
        // E-Verify cases (docs/everify.md).
        .route("/i9s/{id}/everify", get(everify::of_i9).post(everify::open))
        .route("/everify-cases", get(everify::list))
        .route("/everify-cases/{caseId}", get(everify::get_one))
        .route(
            "/everify-cases/{caseId}/confirm-details",
            post(everify::confirm_details),
        )
        .route(
            "/everify-cases/{caseId}/continue-duplicate",
            post(everify::continue_duplicate),
        )
        .route("/everify-cases/{caseId}/notify", post(everify::notify))
        .route("/everify-cases/{caseId}/refer", post(everify::refer))
        .route(
            "/everify-cases/{caseId}/no-action",
            post(everify::no_action),
        )
        .route("/everify-cases/{caseId}/resubmit", post(everify::resubmit))
        .route("/everify-cases/{caseId}/close", post(everify::close))
        .route("/eins", get(eins::list))
        .route("/eins/{id}", get(eins::get_one))
        .route("/calendar", get(calendar::days))
        .route("/calendar/section2-due", get(calendar::section2_due))
        .route("/calendar/closed-days", get(calendar::list_closed_days))
        .route(
            "/calendar/closed-days/{date}",
            get(calendar::get_closed_day)
                .put(calendar::set_closed_day)
                .delete(calendar::remove_closed_day),
        )
        .route("/groups", get(groups::list))
        .route("/groups/{id}", get(groups::get_one))
        .route("/groups/{id}/users", get(groups::users))
        .route("/users", get(users::list))
        .route("/users/{id}", get(users::get_one))
        .route("/roles", get(roles::list))
        .route("/roles/{id}", get(roles::get_one))
        .route("/openapi.json", get(openapi::openapi_json))
        // Legal holds (docs/retention.md).
        .route(
            "/employees/{id}/legal-holds",
            post(legal_holds::hold_employee),
        )
        .route(
            "/eins/{id}/legal-holds",
            post(legal_holds::hold_legal_entity),
        )
        .route("/legal-holds", get(legal_holds::list))
        .route(
            "/legal-holds/{id}",
            get(legal_holds::get_one).delete(legal_holds::lift),
        )
        // E-Verify's Status Change Report (docs/everify.md): a file of up to
        // 5 MB, this route's own limit.
        .route(
            "/eins/{id}/everify/status-change-reports",
            post(status_change_reports::import)
                .layer(DefaultBodyLimit::max(status_change_reports::BODY_LIMIT)),
        );

    // The employee pages: link tokens in the path, personal data in the body.
    let pages = Router::new()
        .route(
            "/account/set-password/{token}",
            get(pages::set_password_form).post(pages::set_password),
        )
        .route(
            "/i9/section1/{token}",
            get(section1::show).post(section1::sign),
        )
        .route(
            "/account/sign-in",
            get(account::sign_in_form).post(account::sign_in),
        )
        .route("/account/sign-out", post(account::sign_out))
        .route("/account", get(account::home))
        .route(
            "/account/i9s/{id}/section1",
            get(account::section1_form).post(account::section1_sign),
        )
        .route_layer(axum::middleware::from_fn(page_security::headers));

    Router::new()
        .nest("/v1", v1)
        .merge(pages)
        .route("/oauth2/access_token", post(oauth::token))
        .route("/oauth2/access_token/", post(oauth::token))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::wake_relays,
        ))
        .route_layer(axum::middleware::from_fn(middleware::track_metrics))
        .fallback(|| async { ApiError::NotFound })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(RequestBodyTimeoutLayer::new(BODY_IDLE_LIMIT))
        .layer(axum::middleware::from_fn(middleware::request_time_limit))
        .layer(CatchPanicLayer::custom(middleware::panic_response))
        .layer(axum::middleware::from_fn(middleware::problem_details))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(middleware::trace_layer())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(axum::middleware::from_fn(middleware::sanitize_request_id))
        // No answer is to be read as another type than it says.
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .with_state(state)
}

/// The API bound to its address, ready to serve.
pub struct Application {
    listener: TcpListener,
    router: Router,
    limits: server::Limits,
    hashing: hashing::Hashing,
}

impl Application {
    pub async fn build(config: Config, pool: PgPool) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(config.bind_addr).await?;
        Ok(Self::with_listener(listener, config, pool))
    }

    /// Serve on a listener bound by the caller (tests bind port 0 first, so
    /// `PUBLIC_BASE_URL` can name the real port).
    pub fn with_listener(listener: TcpListener, config: Config, pool: PgPool) -> Self {
        let auth_cache = auth::cache::AuthCache::new(config.auth_cache_ttl);
        auth_cache.spawn_invalidation(pool.clone());
        let limits = server::Limits::from_config(&config);
        let hashing =
            hashing::Hashing::new(config.password_hash_concurrency, config.password_hash_wait);
        let state = AppState {
            auth_cache,
            hashing: hashing.clone(),
            throttle: throttle::Throttle::new(&config, pool.clone()),
            broker: Arc::new(routes::health::BrokerCheck::new(config.amqp_url.clone())),
            cipher: DataCipher::from_config(&config),
            pool,
            config: Arc::new(config),
            metrics: middleware::metrics_handle(),
        };
        Self {
            listener,
            router: router(state),
            limits,
            hashing,
        }
    }

    /// The bound on password hashing this application's requests share
    /// (tests hold its turns to see what a saturated service answers).
    pub fn hashing(&self) -> hashing::Hashing {
        self.hashing.clone()
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        server::serve(self.listener, self.router, self.limits, shutdown).await
    }
}
