//! The organization's calendar (docs/calendar.md): `GET /v1/calendar` (the
//! days of a range, each a business day or not, a federal working day or
//! not), `GET /v1/calendar/section2-due` (the Section 2 deadline of a start
//! date), and its closed days: `GET /v1/calendar/closed-days`,
//! `GET`/`PUT`/`DELETE /v1/calendar/closed-days/{date}`. Reading takes scope
//! `read` and no permission (any signed-in HR user; a partner's token does
//! not reach it); writing takes scope `write` and permission 5 (approve
//! I-9s, the compliance role). Each write is audited in
//! `i9_common::models::calendar`.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::OnceLock,
};

use axum::{
    extract::{Path, RawQuery, State},
    http::{header, HeaderName, StatusCode},
    Json,
};
use chrono::{Datelike, NaiveDate, Weekday};
use i9_common::{
    domain::{
        calendar::{federal_holiday_on, Calendar, SECTION2_BUSINESS_DAYS},
        fields::Text,
        parse_date, Permission, Required, Scope, DATE_RULE,
    },
    models::calendar::{self as model, ClosedDay, Set},
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::{
    auth::Caller,
    body::{properties, JsonBody, Problems, RequestBody},
    error::{ApiError, ApiResult, FieldError, Problem},
    state::AppState,
    text,
};

/// The longest range `GET /v1/calendar` answers, in days.
pub const MAX_RANGE_DAYS: i64 = 366;

/// A closed day: a weekday that is not a business day of the organization.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"date": "2026-12-24", "name": "Christmas Eve"}))]
pub struct ClosedDayView {
    pub date: NaiveDate,
    pub name: String,
}

impl From<ClosedDay> for ClosedDayView {
    fn from(d: ClosedDay) -> Self {
        Self {
            date: d.day,
            name: d.name,
        }
    }
}

/// The closed days asked for, in order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClosedDays {
    pub closed_days: Vec<ClosedDayView>,
}

/// One day of the calendar.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Day {
    pub date: NaiveDate,
    /// `Monday` … `Sunday`.
    pub weekday: String,
    /// A weekday the organization has not closed: counted by Section 2's
    /// three business days.
    pub business_day: bool,
    /// A weekday on which no federal holiday is observed: counted by
    /// E-Verify's windows.
    pub federal_working_day: bool,
    /// The federal holiday observed on this day, if any.
    pub federal_holiday: Option<String>,
    /// The organization's name of this closed day, if it is one.
    pub closed_day: Option<String>,
}

/// The days from `from` to `to`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Days {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub days: Vec<Day>,
}

/// The Section 2 deadline of a start date, on today's calendar.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"startDate": "2026-11-25", "businessDays": 3, "section2Due": "2026-11-30"}))]
pub struct Section2Due {
    pub start_date: NaiveDate,
    pub business_days: u32,
    /// The day an I-9 created now for that start date would have as `dateDue`.
    pub section2_due: NaiveDate,
}

pub type ClosedDayName = Text<100>;

/// The body of `PUT /v1/calendar/closed-days/{date}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"name": "Christmas Eve"}))]
pub struct ClosedDayBody {
    /// What the day is (e.g. `Christmas Eve`, `Company offsite`). Required.
    #[schema(inline)]
    pub name: Required<ClosedDayName>,
}

impl RequestBody for ClosedDayBody {
    fn fields() -> &'static BTreeSet<String> {
        static FIELDS: OnceLock<BTreeSet<String>> = OnceLock::new();
        FIELDS.get_or_init(|| properties(&Self::schema()))
    }

    fn unknown(name: &str) -> FieldError {
        FieldError::new(name, "unknown_field", "A closed day takes only name.")
    }
}

/// Query of `GET /v1/calendar/closed-days`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct YearParam {
    /// The closed days of this year (1900 to 2099); absent, all of them.
    year: Option<i32>,
}

/// Query of `GET /v1/calendar`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RangeParams {
    /// The first day (`YYYY-MM-DD` or `MM/DD/YYYY`). Required.
    from: String,
    /// The last day, at most 366 days after `from`. Required.
    to: String,
}

/// Query of `GET /v1/calendar/section2-due`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, non_snake_case)]
pub struct StartParam {
    /// The employee's first day of employment. Required.
    startDate: String,
}

/// The query string read strictly (docs/api.md, "Strict query strings"):
/// each of `accepted` at most once, none empty, no other; a 400 names every
/// problem.
fn strict_query(
    raw: Option<&str>,
    accepted: &[&str],
) -> Result<BTreeMap<String, String>, ApiError> {
    let pairs = text::form_pairs(raw.unwrap_or("").as_bytes()).map_err(|bad| {
        ApiError::bad_query(bad.iter().map(text::Unreadable::field_error).collect())
    })?;
    let mut errors = Vec::new();
    let mut values = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (name, value) in pairs {
        if !accepted.contains(&name.as_str()) {
            errors.push(FieldError::new(
                &name,
                "unknown_parameter",
                format!("Unknown parameter. Accepted: {}.", accepted.join(", ")),
            ));
        } else if !seen.insert(name.clone()) {
            errors.push(FieldError::new(
                &name,
                "repeated",
                "Give this parameter at most once.",
            ));
        } else if value.is_empty() {
            errors.push(FieldError::new(&name, "empty", "Give a value."));
        } else {
            values.insert(name, value);
        }
    }
    if errors.is_empty() {
        Ok(values)
    } else {
        Err(ApiError::bad_query(errors))
    }
}

/// A required date parameter, its problem noted in `errors`.
fn date_param(
    q: &BTreeMap<String, String>,
    name: &str,
    errors: &mut Vec<FieldError>,
) -> Option<NaiveDate> {
    match q.get(name) {
        None => {
            errors.push(FieldError::new(name, "required", "Give this parameter."));
            None
        }
        Some(v) => parse_date(v)
            .map_err(|_| errors.push(FieldError::new(name, "invalid_date", DATE_RULE)))
            .ok(),
    }
}

/// What a `{date}` of the path that is not a day is told (`invalid_date`).
pub const PATH_DATE_RULE: &str = "Must be a date written YYYY-MM-DD, in the years 1900 to 2099.";

/// The date of the path, `YYYY-MM-DD` of the years [`parse_date`] takes;
/// anything else (`2026-02-30`, `12-31-2026`) is a 400 `invalid_date` naming
/// `date`, as a bad date of a query is (docs/calendar.md, "Closed days").
fn path_date(raw: &str) -> Result<NaiveDate, ApiError> {
    let shaped = raw.len() == 10 && raw.as_bytes()[4] == b'-' && raw.as_bytes()[7] == b'-';
    parse_date(raw)
        .ok()
        .filter(|_| shaped)
        .ok_or_else(|| ApiError::BadRequest {
            detail: "The path is not valid; see errors.".into(),
            errors: vec![FieldError::new("date", "invalid_date", PATH_DATE_RULE)],
        })
}

fn weekday_name(w: Weekday) -> &'static str {
    match w {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

/// Reading: scope `read`, any role.
fn require_read(caller: &Caller) -> Result<(), ApiError> {
    if caller.scopes.contains(Scope::Read) {
        Ok(())
    } else {
        Err(ApiError::InsufficientScope(Scope::Read.as_str()))
    }
}

#[utoipa::path(
    get, path = "/v1/calendar/closed-days", operation_id = "listClosedDays", tag = "calendar",
    params(YearParam),
    responses(
        (status = 200, body = ClosedDays),
        (status = 400, description = "Unknown parameter, or a year not from 1900 to 2099", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn list_closed_days(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ClosedDays>> {
    require_read(&caller)?;
    let q = strict_query(raw.as_deref(), &["year"])?;
    let (from, to) = match q.get("year") {
        // Postgres dates span years 4713 BC to 5874897: chrono's MIN and
        // MAX do not bind (a 500); these bound every date the API takes.
        None => (
            NaiveDate::from_ymd_opt(1, 1, 1).unwrap_or_default(),
            NaiveDate::from_ymd_opt(9999, 12, 31).unwrap_or_default(),
        ),
        Some(y) => {
            let year = y
                .parse::<i32>()
                .ok()
                .filter(|y| (1900..=2099).contains(y))
                .ok_or_else(|| {
                    ApiError::bad_query(vec![FieldError::new(
                        "year",
                        "invalid_integer",
                        "Must be a year from 1900 to 2099.",
                    )])
                })?;
            (
                NaiveDate::from_ymd_opt(year, 1, 1).unwrap_or(NaiveDate::MIN),
                NaiveDate::from_ymd_opt(year, 12, 31).unwrap_or(NaiveDate::MAX),
            )
        }
    };
    let days = model::list(&state.pool, from, to).await?;
    Ok(Json(ClosedDays {
        closed_days: days.into_iter().map(ClosedDayView::from).collect(),
    }))
}

#[utoipa::path(
    get, path = "/v1/calendar/closed-days/{date}", operation_id = "getClosedDay", tag = "calendar",
    params(("date" = String, Path, description = "The day, `YYYY-MM-DD`")),
    responses(
        (status = 200, description = "The day is closed (the `Location` of a new closed day)", body = ClosedDayView),
        (status = 400, description = "The path's `date` is not a day `YYYY-MM-DD` from 1900 to 2099 (`invalid_date`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The day is not closed", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn get_closed_day(
    State(state): State<AppState>,
    caller: Caller,
    Path(date): Path<String>,
) -> ApiResult<Json<ClosedDayView>> {
    // As the list: scope read, any HR user.
    require_read(&caller)?;
    let day = path_date(&date)?;
    let found = model::list(&state.pool, day, day).await?;
    let closed = found.into_iter().next().ok_or(ApiError::NotFound)?;
    Ok(Json(closed.into()))
}

#[utoipa::path(
    put, path = "/v1/calendar/closed-days/{date}", operation_id = "setClosedDay", tag = "calendar",
    params(("date" = String, Path, description = "The day, `YYYY-MM-DD`")),
    request_body(content = ClosedDayBody, content_type = "application/json"),
    responses(
        (status = 201, description = "The day is closed", body = ClosedDayView, headers(("Location" = String, description = "The closed day's path"))),
        (status = 200, description = "The day was closed already; its name is the one given", body = ClosedDayView),
        (status = 400, description = "The path's `date` is not a day `YYYY-MM-DD` from 1900 to 2099 (`invalid_date`), or the body is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Every invalid field, named", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn set_closed_day(
    State(state): State<AppState>,
    caller: Caller,
    Path(date): Path<String>,
    body: JsonBody<ClosedDayBody>,
) -> ApiResult<(StatusCode, [(HeaderName, String); 1], Json<ClosedDayView>)> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    let name = body.check(|b: ClosedDayBody| {
        let mut p = Problems::default();
        let name = p.required("name", b.name);
        p.finish(name)
    })?;
    let Some(name) = name else {
        return Err(ApiError::Validation(vec![FieldError::new(
            "name",
            "required",
            "Name the day.",
        )]));
    };
    // The body first (413, 415, 422), then the day the path names (400).
    let day = path_date(&date)?;
    let mut tx = state.pool.begin().await?;
    let (row, what) = model::set(&mut tx, &caller.actor(), day, name.as_str()).await?;
    tx.commit().await?;
    let status = match what {
        Set::Created => StatusCode::CREATED,
        Set::Renamed | Set::Unchanged => StatusCode::OK,
    };
    let location = format!("/v1/calendar/closed-days/{}", row.day);
    Ok((status, [(header::LOCATION, location)], Json(row.into())))
}

#[utoipa::path(
    delete, path = "/v1/calendar/closed-days/{date}", operation_id = "removeClosedDay", tag = "calendar",
    params(("date" = String, Path, description = "The day, `YYYY-MM-DD`")),
    responses(
        (status = 204, description = "The day is a business day again (if a weekday)"),
        (status = 400, description = "The path's `date` is not a day `YYYY-MM-DD` from 1900 to 2099 (`invalid_date`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The day is not closed", body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["write"]))
)]
pub async fn remove_closed_day(
    State(state): State<AppState>,
    caller: Caller,
    Path(date): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require(Scope::Write, Permission::ApproveI9s)?;
    let day = path_date(&date)?;
    let mut tx = state.pool.begin().await?;
    if !model::remove(&mut tx, &caller.actor(), day).await? {
        return Err(ApiError::NotFound);
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get, path = "/v1/calendar", operation_id = "getCalendar", tag = "calendar",
    params(RangeParams),
    responses(
        (status = 200, body = Days),
        (status = 400, description = "A missing, bad or unknown parameter, or a range over 366 days", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn days(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Days>> {
    require_read(&caller)?;
    let q = strict_query(raw.as_deref(), &["from", "to"])?;
    let mut errors = Vec::new();
    let from = date_param(&q, "from", &mut errors);
    let to = date_param(&q, "to", &mut errors);
    if let (Some(from), Some(to)) = (from, to) {
        if from > to {
            for name in ["from", "to"] {
                errors.push(FieldError::new(
                    name,
                    "invalid_range",
                    "from must not be after to.",
                ));
            }
        } else if (to - from).num_days() > MAX_RANGE_DAYS {
            errors.push(FieldError::new(
                "to",
                "invalid_range",
                format!("At most {MAX_RANGE_DAYS} days after from."),
            ));
        }
    }
    let (Some(from), Some(to), true) = (from, to, errors.is_empty()) else {
        return Err(ApiError::bad_query(errors));
    };
    let closed: BTreeMap<NaiveDate, String> = model::list(&state.pool, from, to)
        .await?
        .into_iter()
        .map(|d| (d.day, d.name))
        .collect();
    let calendar = Calendar::with_closed_days(closed.keys().copied());
    let days = from
        .iter_days()
        .take_while(|d| *d <= to)
        .map(|d| Day {
            date: d,
            weekday: weekday_name(d.weekday()).to_owned(),
            business_day: calendar.is_business_day(d),
            federal_working_day: calendar.is_federal_working_day(d),
            federal_holiday: federal_holiday_on(d).map(|h| h.name.to_owned()),
            closed_day: closed.get(&d).cloned(),
        })
        .collect();
    Ok(Json(Days { from, to, days }))
}

#[utoipa::path(
    get, path = "/v1/calendar/section2-due", operation_id = "getSection2Due", tag = "calendar",
    params(StartParam),
    responses(
        (status = 200, body = Section2Due),
        (status = 400, description = "A missing, bad or unknown parameter", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
    ),
    security(("oauth2" = ["read"]))
)]
pub async fn section2_due(
    State(state): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Section2Due>> {
    require_read(&caller)?;
    let q = strict_query(raw.as_deref(), &["startDate"])?;
    let mut errors = Vec::new();
    let Some(start) = date_param(&q, "startDate", &mut errors) else {
        return Err(ApiError::bad_query(errors));
    };
    let calendar = Calendar::load(&state.pool, start).await?;
    Ok(Json(Section2Due {
        start_date: start,
        business_days: SECTION2_BUSINESS_DAYS,
        section2_due: calendar.section2_due(start),
    }))
}
