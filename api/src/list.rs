//! Collections: the strict query string of docs/api.md, "Lists" (known
//! parameters only, typed filters, `page` and `page_size`), and the paging links.

use chrono::NaiveDate;
use i9_common::{
    crypto::DataCipher,
    domain::{parse_date, Ssn, SsnError, DATE_RULE},
};
use serde::Serialize;
use sqlx::{postgres::PgRow, FromRow, PgPool, Postgres, QueryBuilder};
use utoipa::ToSchema;

use crate::{
    auth::Visibility,
    error::{ApiError, FieldError},
    text,
};

/// What one collection reads: `from` (`FROM ... WHERE TRUE`), the selected
/// columns, the order, and how the caller's visibility restricts the rows.
pub struct PageSql<'a> {
    pub from: &'a str,
    /// A cheaper `FROM` for the count, when `from` joins only to select columns.
    pub count_from: Option<&'a str>,
    pub columns: &'a str,
    pub order: &'a str,
    pub restrict: Option<Restrict<'a>>,
}

/// Which rows of a collection the caller's [`Visibility`] keeps. For the
/// employee kinds, the `&str` is the alias of the `employees` table in
/// `from` (and `count_from`).
#[derive(Clone, Copy)]
pub enum Restrict<'a> {
    /// Rows of an employee: those of employees the caller sees.
    Employee(&'a Visibility, &'a str),
    /// Rows that may belong to an employee (left-joined): those that belong
    /// to none, and those of employees the caller sees.
    EmployeeIfAny(&'a Visibility, &'a str),
    /// Groups (the `&str` is the group id column): those the caller may
    /// place employees in ([`Visibility::may_place_in`]).
    Group(&'a Visibility, &'a str),
}

impl Restrict<'_> {
    /// Append `AND ...`.
    pub fn push(self, qb: &mut QueryBuilder<'_, Postgres>) {
        match self {
            Restrict::Employee(visibility, alias) => {
                qb.push(" AND (");
                visibility.push_condition(qb, alias);
                qb.push(")");
            }
            Restrict::EmployeeIfAny(visibility, alias) => {
                qb.push(format_args!(" AND ({alias}.id IS NULL OR ("));
                visibility.push_condition(qb, alias);
                qb.push("))");
            }
            Restrict::Group(visibility, column) => {
                qb.push(" AND (");
                visibility.push_group_condition(qb, column);
                qb.push(")");
            }
        }
    }
}

/// For collections without computed filters.
pub fn no_computed(_: &str, _: bool, _: &mut QueryBuilder<'_, Postgres>) {}

pub const MAX_PAGE_SIZE: i64 = 50;

/// The page size of a CSV export: its default and its cap (docs/api.md, "CSV").
pub const MAX_CSV_PAGE_SIZE: i64 = 10_000;

/// How a list is answered, from the request's `Accept` (docs/api.md, "CSV").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
}

impl Format {
    /// The format `accept` prefers: the candidate with the highest `q`
    /// (from the most specific range that matches it), JSON on a tie unless
    /// CSV is named more specifically; JSON without an `Accept`. `None`
    /// when neither is acceptable.
    pub fn negotiate(accept: Option<&str>) -> Option<Self> {
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
            return Some(Self::Json);
        };
        let mut best: Option<((u16, u8), Self)> = None;
        for (format, kind, sub) in [
            (Self::Json, "application", "json"),
            (Self::Csv, "text", "csv"),
        ] {
            // (specificity, q in thousandths) of the most specific matching range.
            let mut chosen: Option<(u8, u16)> = None;
            for range in accept.split(',') {
                let mut parts = range.split(';');
                let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
                let Some((t, st)) = media.split_once('/') else {
                    continue;
                };
                let specificity = match (t, st) {
                    ("*", "*") => 0,
                    (t, "*") if t == kind => 1,
                    (t, st) if t == kind && st == sub => 2,
                    _ => continue,
                };
                let q = parts
                    .filter_map(|p| p.trim().split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                    .map_or(Some(1000), |(_, v)| {
                        v.trim()
                            .parse::<f32>()
                            .ok()
                            .filter(|q| (0.0..=1.0).contains(q))
                            .map(|q| (q * 1000.0).round() as u16)
                    })
                    .unwrap_or(0);
                if chosen.is_none_or(|(s, _)| specificity > s) {
                    chosen = Some((specificity, q));
                }
            }
            if let Some((specificity, q)) = chosen.filter(|c| c.1 > 0) {
                if best.is_none_or(|(b, _)| (q, specificity) > b) {
                    best = Some(((q, specificity), format));
                }
            }
        }
        best.map(|(_, f)| f)
    }

    fn max_page_size(self) -> i64 {
        match self {
            Self::Json => MAX_PAGE_SIZE,
            Self::Csv => MAX_CSV_PAGE_SIZE,
        }
    }
}

/// A 406 when the `Accept` allows neither JSON nor CSV.
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Format {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        let accept = parts.headers.get(axum::http::header::ACCEPT);
        // An Accept that is not text allows nothing this service writes.
        let accept = match accept.map(|a| a.to_str()) {
            None => None,
            Some(Ok(a)) => Some(a),
            Some(Err(_)) => return Err(ApiError::NotAcceptable),
        };
        Self::negotiate(accept).ok_or(ApiError::NotAcceptable)
    }
}

/// The JSON member names of a list item, in the order JSON writes them:
/// the columns of its CSV (docs/api.md, "CSV").
pub trait CsvColumns {
    const COLUMNS: &'static [&'static str];
}

/// A link of a record or a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Link {
    pub rel: String,
    pub href: String,
}

impl Link {
    pub fn new(rel: &str, href: impl Into<String>) -> Self {
        Self {
            rel: rel.to_owned(),
            href: href.into(),
        }
    }
}

/// Every list response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResponse<T> {
    pub search_result: Vec<T>,
    /// How many records match the query that the caller may see, on every
    /// page (docs/api.md, "Lists").
    #[schema(minimum = 0)]
    pub total: i64,
    pub links: Vec<Link>,
}

impl<T: Serialize + CsvColumns> ListResponse<T> {
    /// The answer in `format`: JSON, or CSV with the paging links in a
    /// `Link` header (docs/api.md, "CSV").
    pub fn answer(self, format: Format) -> axum::response::Response {
        use axum::response::IntoResponse;
        match format {
            Format::Json => axum::Json(self).into_response(),
            Format::Csv => {
                let link = self
                    .links
                    .iter()
                    .map(|l| format!("<{}>; rel=\"{}\"", l.href, l.rel))
                    .collect::<Vec<_>>()
                    .join(", ");
                let name = self
                    .links
                    .first()
                    .and_then(|l| l.href.split('?').next())
                    .and_then(|p| p.rsplit('/').next())
                    .unwrap_or("list")
                    .to_owned();
                (
                    [
                        (
                            axum::http::header::CONTENT_TYPE,
                            "text/csv; charset=utf-8; header=present".to_owned(),
                        ),
                        (
                            axum::http::header::CONTENT_DISPOSITION,
                            format!("attachment; filename=\"{name}.csv\""),
                        ),
                        (axum::http::header::LINK, link),
                    ],
                    csv(&self.search_result),
                )
                    .into_response()
            }
        }
    }
}

/// RFC 4180 text: a header row of [`CsvColumns::COLUMNS`], a row per item,
/// CRLF after each.
pub fn csv<T: Serialize + CsvColumns>(items: &[T]) -> String {
    let mut out = String::new();
    push_row(&mut out, T::COLUMNS.iter().map(|c| (*c).to_owned()));
    for item in items {
        let value = serde_json::to_value(item).unwrap_or_default();
        debug_assert!(
            value
                .as_object()
                .is_some_and(|o| o.len() == T::COLUMNS.len()
                    && o.keys().all(|k| T::COLUMNS.contains(&k.as_str()))),
            "CsvColumns::COLUMNS are the JSON member names: {value}"
        );
        push_row(&mut out, T::COLUMNS.iter().map(|c| csv_cell(&value[*c])));
    }
    out
}

/// A value as a cell: `null` empty, text as is (a leading `=`, `+`, `-`,
/// `@`, tab or carriage return neutralised by a `'`, so a spreadsheet never
/// reads it as a formula), anything else as JSON.
fn csv_cell(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => {
            if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                format!("'{s}")
            } else {
                s.clone()
            }
        }
        other => other.to_string(),
    }
}

fn push_row(out: &mut String, cells: impl Iterator<Item = String>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if cell.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&cell.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&cell);
        }
    }
    out.push_str("\r\n");
}

/// How a filter's value is typed and compared.
#[derive(Debug, Clone, Copy)]
pub enum FilterKind {
    /// Case-insensitive exact match on a text column expression.
    Text(&'static str),
    /// Exact match on an integer column.
    Int(&'static str),
    /// A group id: the group column is that group or a group below it (a
    /// region; docs/api.md, "Filters").
    GroupWithin(&'static str),
    /// `1` or `2`.
    Language(&'static str),
    Date(&'static str),
    /// Inclusive lower bound of a date column (`dateDueFrom`); a lower bound
    /// after the upper bound of the same column is a 400 naming both.
    DateFrom(&'static str),
    /// Inclusive upper bound of a date column (`dateDueTo`).
    DateTo(&'static str),
    Bool(&'static str),
    /// Exact match through the keyed SSN hash.
    Ssn(&'static str),
    /// One of the spellings (case-insensitive), or several separated by
    /// commas (any of them): a status.
    OneOf(&'static str, &'static [&'static str]),
    /// `true`/`false`, compared with an expression supplied at query time.
    Computed,
    /// A named work queue (`queue=overdue`), its name in any case: the
    /// queue's condition, and its order in place of the collection's.
    Queue(&'static [Queue]),
    /// The parameter of a queue (`withinDays`): an integer from 0 to the
    /// maximum, given with a queue that reads it and only then.
    QueueParam {
        max: i32,
    },
}

/// A named work queue of a collection (docs/api.md, "Work queues").
#[derive(Debug)]
pub struct Queue {
    pub name: &'static str,
    /// SQL appended as ` AND (...)`: `{today}` is bound to today's date
    /// (UTC), `{param}` to the value of [`Queue::param`] (an integer).
    pub condition: &'static str,
    /// `ORDER BY ...`, in place of the collection's order.
    pub order: &'static str,
    /// The [`FilterKind::QueueParam`] the queue needs, if any.
    pub param: Option<&'static str>,
}

#[derive(Debug, Clone, Copy)]
pub struct FilterSpec {
    pub name: &'static str,
    pub kind: FilterKind,
}

pub const fn filter(name: &'static str, kind: FilterKind) -> FilterSpec {
    FilterSpec { name, kind }
}

#[derive(Debug, Clone)]
pub enum FilterValue {
    Text(String),
    Int(i64),
    Date(NaiveDate),
    Bool(bool),
    Ssn(Ssn),
    /// The spellings of a [`FilterKind::OneOf`], as declared.
    Texts(Vec<&'static str>),
    Queue(&'static Queue),
}

#[derive(Debug, Clone)]
pub struct Filter {
    pub spec: FilterSpec,
    pub value: FilterValue,
}

/// A parsed list query.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub page: i64,
    pub page_size: i64,
    page_size_given: bool,
    pub filters: Vec<Filter>,
    /// The filters as the client wrote them, for the links.
    raw_filters: Vec<(String, String)>,
    /// Today (UTC) for the queues, fixed once so the count and the page agree.
    today: NaiveDate,
}

impl ListQuery {
    /// Parse `raw` against the collection's filters. Unknown or repeated
    /// parameters, bad values and bad paging, and names or values that are
    /// not text Postgres can store ([`text`]), are 400s naming every one.
    pub fn parse(raw: Option<&str>, specs: &[FilterSpec]) -> Result<Self, ApiError> {
        Self::parse_as(raw, specs, Format::Json)
    }

    /// [`Self::parse`] for a list answered as `format`, whose page size it
    /// sets (a CSV export's pages are larger).
    pub fn parse_as(
        raw: Option<&str>,
        specs: &[FilterSpec],
        format: Format,
    ) -> Result<Self, ApiError> {
        let max_page_size = format.max_page_size();
        let pairs = text::form_pairs(raw.unwrap_or("").as_bytes()).map_err(|bad| {
            ApiError::bad_query(bad.iter().map(text::Unreadable::field_error).collect())
        })?;
        let mut errors = Vec::new();
        let mut page = 1;
        let mut page_size = max_page_size;
        let mut page_size_given = false;
        let mut filters = Vec::new();
        let mut raw_filters = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (name, value) in pairs {
            if !seen.insert(name.clone()) {
                errors.push(FieldError::new(
                    &name,
                    "repeated",
                    "Give this parameter at most once.",
                ));
                continue;
            }
            match name.as_str() {
                "page" | "page_size" => match parse_positive(&value) {
                    Some(n) => {
                        if name == "page" {
                            page = n;
                        } else {
                            page_size = n.min(max_page_size);
                            page_size_given = true;
                        }
                    }
                    _ => errors.push(FieldError::new(
                        &name,
                        "invalid_integer",
                        "Must be a positive integer.",
                    )),
                },
                _ => {
                    let Some(spec) = specs.iter().find(|s| s.name == name) else {
                        let accepted: Vec<&str> = specs
                            .iter()
                            .map(|s| s.name)
                            .chain(["page", "page_size"])
                            .collect();
                        errors.push(FieldError::new(
                            &name,
                            "unknown_parameter",
                            format!("Unknown parameter. Accepted: {}.", accepted.join(", ")),
                        ));
                        continue;
                    };
                    match parse_value(spec, &value) {
                        Ok(v) => {
                            filters.push(Filter {
                                spec: *spec,
                                value: v,
                            });
                            raw_filters.push((name, value));
                        }
                        Err(e) => errors.push(e),
                    }
                }
            }
        }
        errors.extend(crossed_ranges(&filters));
        errors.extend(queue_params(specs, &filters, &seen));
        if !errors.is_empty() {
            return Err(ApiError::bad_query(errors));
        }
        Ok(Self {
            page,
            page_size,
            page_size_given,
            filters,
            raw_filters,
            today: chrono::Utc::now().date_naive(),
        })
    }

    /// The queues' today set to `today` ([`i9_common::Config::today`]:
    /// moved by `CLOCK_OFFSET_DAYS` in development, as the date-driven jobs).
    pub fn on(mut self, today: NaiveDate) -> Self {
        self.today = today;
        self
    }

    /// The order of the queue asked for, if any.
    fn queue_order(&self) -> Option<&'static str> {
        self.filters.iter().find_map(|f| match f.value {
            FilterValue::Queue(q) => Some(q.order),
            _ => None,
        })
    }

    /// The value of the integer filter `name`, if given.
    fn int(&self, name: &str) -> Option<i64> {
        self.filters.iter().find_map(|f| match f.value {
            FilterValue::Int(v) if f.spec.name == name => Some(v),
            _ => None,
        })
    }

    /// Whether the query filters by a social security number (which needs
    /// permission 12 and is audited; docs/api.md, "Permissions and visibility").
    pub fn searches_ssn(&self) -> bool {
        self.filters
            .iter()
            .any(|f| matches!(f.spec.kind, FilterKind::Ssn(_)))
    }

    pub fn offset(&self) -> i64 {
        (self.page - 1).saturating_mul(self.page_size)
    }

    /// Append `AND ...` for every filter; `ssn_hash` gives every stored form
    /// of an SSN's hash (one per key of the ring); `computed` renders the
    /// [`FilterKind::Computed`] ones.
    pub fn push_filters<'a>(
        &'a self,
        qb: &mut QueryBuilder<'a, Postgres>,
        ssn_hash: &dyn Fn(&Ssn) -> Vec<Vec<u8>>,
        computed: &dyn Fn(&str, bool, &mut QueryBuilder<'a, Postgres>),
    ) {
        for f in &self.filters {
            match (f.spec.kind, &f.value) {
                (FilterKind::Text(col), FilterValue::Text(v)) => {
                    qb.push(format_args!(" AND lower({col}) = lower("));
                    qb.push_bind(v.as_str());
                    qb.push(")");
                }
                (FilterKind::Int(col) | FilterKind::Language(col), FilterValue::Int(v)) => {
                    qb.push(format_args!(" AND {col} = "));
                    qb.push_bind(*v);
                }
                (FilterKind::GroupWithin(col), FilterValue::Int(v)) => {
                    qb.push(format_args!(
                        " AND {col} IN (WITH RECURSIVE below AS (SELECT id FROM groups WHERE id = "
                    ));
                    qb.push_bind(*v);
                    qb.push(
                        " UNION SELECT g.id FROM groups g JOIN below b ON g.parent_id = b.id) \
                         SELECT id FROM below)",
                    );
                }
                (FilterKind::Date(col), FilterValue::Date(v)) => {
                    qb.push(format_args!(" AND {col} = "));
                    qb.push_bind(*v);
                }
                (FilterKind::DateFrom(col), FilterValue::Date(v)) => {
                    qb.push(format_args!(" AND {col} >= "));
                    qb.push_bind(*v);
                }
                (FilterKind::DateTo(col), FilterValue::Date(v)) => {
                    qb.push(format_args!(" AND {col} <= "));
                    qb.push_bind(*v);
                }
                (FilterKind::Bool(col), FilterValue::Bool(v)) => {
                    qb.push(format_args!(" AND {col} = "));
                    qb.push_bind(*v);
                }
                (FilterKind::Ssn(col), FilterValue::Ssn(v)) => {
                    qb.push(format_args!(" AND {col} = ANY("));
                    qb.push_bind(ssn_hash(v)).push(")");
                }
                (FilterKind::OneOf(col, _), FilterValue::Texts(v)) => {
                    qb.push(format_args!(" AND {col} = ANY("));
                    qb.push_bind(v.clone()).push(")");
                }
                (FilterKind::Computed, FilterValue::Bool(v)) => computed(f.spec.name, *v, qb),
                (FilterKind::Queue(_), FilterValue::Queue(queue)) => {
                    let param = queue.param.and_then(|p| self.int(p)).unwrap_or(0);
                    qb.push(" AND (");
                    push_template(qb, queue.condition, self.today, param);
                    qb.push(")");
                }
                _ => {}
            }
        }
    }

    /// One page of rows and the total count, the filters (and the caller's
    /// group restriction) applied to both.
    pub async fn fetch_page<T>(
        &self,
        pool: &PgPool,
        cipher: &DataCipher,
        sql: PageSql<'_>,
        computed: &(dyn Fn(&str, bool, &mut QueryBuilder<'_, Postgres>) + Sync),
    ) -> Result<(Vec<T>, i64), sqlx::Error>
    where
        T: for<'r> FromRow<'r, PgRow> + Send + Unpin,
    {
        // Under every key of the ring, so records hashed under an older key are found.
        let hash = |s: &Ssn| cipher.ssn_search_hashes(s);
        let mut count = QueryBuilder::new(format!(
            "SELECT count(*) {}",
            sql.count_from.unwrap_or(sql.from)
        ));
        self.push_filters(&mut count, &hash, computed);
        if let Some(restrict) = sql.restrict {
            restrict.push(&mut count);
        }
        // Both statements are sent unnamed (not kept prepared): Postgres
        // then plans each with its values. A kept statement goes over to a
        // generic plan after five runs, and for a page in id order that plan
        // walks the whole table in id order rather than the filter's index
        // (2.5 ms at 10,000 employees, linear in the table; docs/operations.md,
        // "Performance"). A list's planning costs tenths of a millisecond.
        let total: i64 = count
            .build_query_scalar()
            .persistent(false)
            .fetch_one(pool)
            .await?;
        let mut select = QueryBuilder::new(format!("SELECT {} {}", sql.columns, sql.from));
        self.push_filters(&mut select, &hash, computed);
        if let Some(restrict) = sql.restrict {
            restrict.push(&mut select);
        }
        select
            .push(format_args!(
                " {} LIMIT ",
                self.queue_order().unwrap_or(sql.order)
            ))
            .push_bind(self.page_size)
            .push(" OFFSET ")
            .push_bind(self.offset());
        let rows = select
            .build_query_as()
            .persistent(false)
            .fetch_all(pool)
            .await?;
        Ok((rows, total))
    }

    /// `self`, `first`, `last`, and `next` / `previous` where they exist.
    pub fn links(&self, path: &str, total: i64) -> Vec<Link> {
        let last = ((total + self.page_size - 1) / self.page_size).max(1);
        let href = |page: i64| {
            let mut pairs = self.raw_filters.clone();
            pairs.push(("page".into(), page.to_string()));
            if self.page_size_given {
                pairs.push(("page_size".into(), self.page_size.to_string()));
            }
            let qs = serde_urlencoded::to_string(&pairs).unwrap_or_default();
            format!("{path}?{qs}")
        };
        let mut links = vec![
            Link::new("self", href(self.page)),
            Link::new("first", href(1)),
            Link::new("last", href(last)),
        ];
        if self.page < last {
            links.push(Link::new("next", href(self.page + 1)));
        }
        if self.page > 1 {
            links.push(Link::new("previous", href((self.page - 1).min(last))));
        }
        links
    }
}

/// Push `template`, binding `{today}` and `{param}` ([`Queue::condition`]).
fn push_template(
    qb: &mut QueryBuilder<'_, Postgres>,
    template: &str,
    today: NaiveDate,
    param: i64,
) {
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        qb.push(&rest[..i]);
        let tail = &rest[i..];
        if let Some(r) = tail.strip_prefix("{today}") {
            qb.push_bind(today);
            rest = r;
        } else if let Some(r) = tail.strip_prefix("{param}") {
            // A QueueParam is at most an i32.
            qb.push_bind(i32::try_from(param).unwrap_or(i32::MAX));
            rest = r;
        } else {
            qb.push("{");
            rest = &tail[1..];
        }
    }
    qb.push(rest);
}

/// A queue without the parameter it reads, and a queue parameter without
/// a queue that reads it. `sent` holds every name sent: a parameter sent
/// with a bad value is already named, and not named again here.
fn queue_params(
    specs: &[FilterSpec],
    filters: &[Filter],
    sent: &std::collections::HashSet<String>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let given = |name: &str| sent.contains(name);
    let parsed = |name: &str| filters.iter().any(|f| f.spec.name == name);
    // A queue sent with a bad value: whether its parameter applies is unknown.
    let bad_queue = specs
        .iter()
        .any(|s| matches!(s.kind, FilterKind::Queue(_)) && given(s.name) && !parsed(s.name));
    for f in filters {
        match (f.spec.kind, &f.value) {
            (FilterKind::Queue(_), FilterValue::Queue(q)) => {
                if let Some(p) = q.param.filter(|p| !given(p)) {
                    errors.push(FieldError::new(
                        p,
                        "required",
                        format!("Required with {}={}.", f.spec.name, q.name),
                    ));
                }
            }
            (FilterKind::QueueParam { .. }, _) if !bad_queue => {
                let chosen = filters.iter().find_map(|g| match g.value {
                    FilterValue::Queue(q) => Some(q),
                    _ => None,
                });
                if chosen.and_then(|q| q.param) != Some(f.spec.name) {
                    let readers: Vec<String> = specs
                        .iter()
                        .filter_map(|s| match s.kind {
                            FilterKind::Queue(queues) => Some((s.name, queues)),
                            _ => None,
                        })
                        .flat_map(|(name, queues)| {
                            queues
                                .iter()
                                .filter(|q| q.param == Some(f.spec.name))
                                .map(move |q| format!("{name}={}", q.name))
                        })
                        .collect();
                    errors.push(FieldError::new(
                        f.spec.name,
                        "not_applicable",
                        format!("Only with {}.", readers.join(" or ")),
                    ));
                }
            }
            _ => {}
        }
    }
    errors
}

/// A date range whose lower bound is after its upper bound: both named.
fn crossed_ranges(filters: &[Filter]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for from in filters {
        let (FilterKind::DateFrom(col), FilterValue::Date(low)) = (from.spec.kind, &from.value)
        else {
            continue;
        };
        for to in filters {
            if let (FilterKind::DateTo(c), FilterValue::Date(high)) = (to.spec.kind, &to.value) {
                if c == col && low > high {
                    errors.push(FieldError::new(
                        from.spec.name,
                        "invalid_range",
                        format!("Is after {}: the range holds no date.", to.spec.name),
                    ));
                    errors.push(FieldError::new(
                        to.spec.name,
                        "invalid_range",
                        format!("Is before {}: the range holds no date.", from.spec.name),
                    ));
                }
            }
        }
    }
    errors
}

/// A positive integer; one too large for i64 saturates (a huge `page_size`
/// is simply capped, a huge `page` is past the end).
fn parse_positive(value: &str) -> Option<i64> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) || v.bytes().all(|c| c == b'0') {
        return None;
    }
    Some(v.parse::<i64>().unwrap_or(i64::MAX))
}

fn parse_value(spec: &FilterSpec, value: &str) -> Result<FilterValue, FieldError> {
    let name = spec.name;
    if value.is_empty() {
        return Err(FieldError::new(name, "empty", "Must not be empty."));
    }
    match spec.kind {
        FilterKind::Text(_) => {
            if value.chars().count() > 255 {
                Err(FieldError::new(name, "too_long", "At most 255 characters."))
            } else {
                Ok(FilterValue::Text(value.to_owned()))
            }
        }
        FilterKind::Int(_) | FilterKind::GroupWithin(_) => value
            .trim()
            .parse::<i64>()
            .map(FilterValue::Int)
            .map_err(|_| FieldError::new(name, "invalid_integer", "Must be an integer.")),
        FilterKind::Language(_) => value
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(i9_common::domain::Language::from_id)
            .map(|l| FilterValue::Int(l.id().into()))
            .ok_or_else(|| {
                FieldError::new(name, "invalid_value", i9_common::domain::Language::RULE)
            }),
        FilterKind::OneOf(_, names) => {
            let mut chosen = Vec::new();
            for item in value.split(',') {
                match names.iter().find(|n| n.eq_ignore_ascii_case(item)) {
                    Some(n) if !chosen.contains(n) => chosen.push(*n),
                    Some(_) => {}
                    None => {
                        return Err(FieldError::new(
                            name,
                            "invalid_value",
                            format!(
                                "Not one of: {} (case-insensitive; several separated by commas).",
                                names.join(", ")
                            ),
                        ))
                    }
                }
            }
            Ok(FilterValue::Texts(chosen))
        }
        FilterKind::Queue(queues) => queues
            .iter()
            .find(|q| q.name.eq_ignore_ascii_case(value))
            .map(FilterValue::Queue)
            .ok_or_else(|| {
                let names: Vec<&str> = queues.iter().map(|q| q.name).collect();
                FieldError::new(
                    name,
                    "invalid_value",
                    format!("Not a queue. Accepted: {}.", names.join(", ")),
                )
            }),
        FilterKind::QueueParam { max } => value
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|v| (0..=i64::from(max)).contains(v))
            .map(FilterValue::Int)
            .ok_or_else(|| {
                FieldError::new(
                    name,
                    "invalid_integer",
                    format!("Must be an integer from 0 to {max}."),
                )
            }),
        FilterKind::Date(_) | FilterKind::DateFrom(_) | FilterKind::DateTo(_) => parse_date(value)
            .map(FilterValue::Date)
            .map_err(|_| FieldError::new(name, "invalid_date", DATE_RULE)),
        FilterKind::Bool(_) | FilterKind::Computed => match value.to_ascii_lowercase().as_str() {
            "true" => Ok(FilterValue::Bool(true)),
            "false" => Ok(FilterValue::Bool(false)),
            _ => Err(FieldError::new(
                name,
                "invalid_boolean",
                "Must be true or false.",
            )),
        },
        // The value itself never appears in an error.
        FilterKind::Ssn(_) => Ssn::parse(value.trim())
            .map(FilterValue::Ssn)
            .map_err(|e| match e {
                SsnError::Format => FieldError::new(name, "invalid_format", Ssn::FORMAT_RULE),
                SsnError::Invalid => FieldError::new(name, "invalid_value", Ssn::NEVER_ISSUED),
            }),
    }
}

/// The schemas of the query parameters, as [`ListQuery::parse`] reads them,
/// for the collections' `IntoParams` structs (`#[param(inline)]`): the
/// document states each rule the parser enforces.
pub mod params {
    use i9_common::domain::fields::{date_pattern, ssn_pattern};
    use utoipa::{
        openapi::{KnownFormat, ObjectBuilder, RefOr, Schema, SchemaFormat, Type},
        PartialSchema, ToSchema,
    };

    /// A text filter: 1 to 255 characters, no NUL.
    pub struct Text;
    /// A date filter: `YYYY-MM-DD` or `MM/DD/YYYY`, as the body dates
    /// ([`date_pattern`]). Not named `Date`: utoipa's derive takes a type of
    /// that name for chrono's and writes `format: date` in its place, which
    /// refuses `MM/DD/YYYY` and states no years.
    pub struct DateFilter;
    /// An SSN filter: `###-##-####`, a number the SSA issues.
    pub struct Ssn;
    /// An integer filter (an id).
    pub struct Int;
    /// `1` or `2`.
    pub struct Language;
    /// A [`super::FilterKind::OneOf`] filter: one of `names` in any case, or
    /// several separated by commas.
    pub fn one_of(names: &[&str]) -> RefOr<Schema> {
        let item = any_case(names);
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^{item}(?:,{item})*$")))
            .into()
    }

    /// One of `names`, in any case (a [`super::FilterKind::Queue`]).
    pub fn one_of_single(names: &[&str]) -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^{}$", any_case(names))))
            .into()
    }

    /// A regular expression group matching any of `names` in any case.
    fn any_case(names: &[&str]) -> String {
        let any_case = |name: &str| -> String {
            name.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
                    } else if c.is_ascii_alphanumeric() || c == ' ' || c == '-' {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        };
        format!(
            "(?:{})",
            names
                .iter()
                .map(|n| any_case(n))
                .collect::<Vec<_>>()
                .join("|")
        )
    }

    /// `page` and `page_size`: a positive integer (any size: a huge
    /// `page_size` is taken as 50, a huge `page` is past the end).
    pub struct Positive;

    impl PartialSchema for Text {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some(r"^[^\u0000]*$"))
                .into()
        }
    }

    impl PartialSchema for DateFilter {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(date_pattern()))
                .into()
        }
    }

    impl PartialSchema for Ssn {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(ssn_pattern()))
                .into()
        }
    }

    impl PartialSchema for Int {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .minimum(Some(i64::MIN))
                .maximum(Some(i64::MAX))
                .into()
        }
    }

    impl PartialSchema for Language {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .enum_values(Some([1, 2]))
                .into()
        }
    }

    impl PartialSchema for Positive {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .into()
        }
    }

    impl ToSchema for Text {}
    impl ToSchema for DateFilter {}
    impl ToSchema for Ssn {}
    impl ToSchema for Int {}
    impl ToSchema for Language {}
    impl ToSchema for Positive {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[FilterSpec] = &[
        filter("lastName", FilterKind::Text("last_name")),
        filter(
            "languagePreference",
            FilterKind::Language("language_preference"),
        ),
        filter("socialSecurityNumber", FilterKind::Ssn("ssn_hash")),
        filter(
            "status",
            FilterKind::OneOf("status", &["Signed Sec 1", "Parked"]),
        ),
        filter("dueFrom", FilterKind::DateFrom("due")),
        filter("dueTo", FilterKind::DateTo("due")),
    ];

    #[test]
    fn one_of_takes_any_case_and_comma_separated_values() {
        let q = ListQuery::parse(Some("status=signed+SEC+1,parked,Parked"), SPECS).unwrap();
        assert!(matches!(&q.filters[0].value,
            FilterValue::Texts(v) if v == &["Signed Sec 1", "Parked"]));
        for bad in ["status=Signed", "status=Parked,", "status=,Parked"] {
            assert_eq!(
                field_names(ListQuery::parse(Some(bad), SPECS).unwrap_err()),
                ["status"]
            );
        }
    }

    #[test]
    fn accept_picks_the_highest_q_and_json_on_a_tie() {
        use Format::*;
        let cases: &[(Option<&str>, Option<Format>)] = &[
            (None, Some(Json)),
            (Some(""), Some(Json)),
            (Some("*/*"), Some(Json)),
            (Some("text/csv"), Some(Csv)),
            (Some("application/json, text/csv"), Some(Json)),
            (Some("text/csv, */*"), Some(Csv)),
            (Some("text/csv;q=0.9, application/json;q=0.8"), Some(Csv)),
            (Some("text/csv;q=0, */*"), Some(Json)),
            (Some("*/*;q=0, text/csv"), Some(Csv)),
            (Some("application/json;q=x"), None),
            (Some("application/xml"), None),
            (Some("text/csv;q=0"), None),
        ];
        for (accept, want) in cases {
            assert_eq!(Format::negotiate(*accept), *want, "{accept:?}");
        }
    }

    #[test]
    fn csv_quotes_per_rfc_4180_and_neutralises_formulas() {
        let cell = |v: serde_json::Value| csv_cell(&v);
        assert_eq!(cell(serde_json::json!(null)), "");
        assert_eq!(cell(serde_json::json!(-5)), "-5", "numbers are not text");
        assert_eq!(cell(serde_json::json!(true)), "true");
        for (text, want) in [
            ("=1+2", "'=1+2"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@A1", "'@A1"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("a=b", "a=b"),
            ("'quoted", "'quoted"),
        ] {
            assert_eq!(cell(serde_json::json!(text)), want, "{text:?}");
        }
        let mut out = String::new();
        push_row(
            &mut out,
            ["plain", "a,b", "say \"hi\"", "two\nlines", ""]
                .into_iter()
                .map(String::from),
        );
        assert_eq!(out, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n");
    }

    #[test]
    fn a_crossed_date_range_names_both_ends() {
        assert!(ListQuery::parse(Some("dueFrom=2026-01-02&dueTo=2026-01-02"), SPECS).is_ok());
        let e = ListQuery::parse(Some("dueTo=2026-01-01&dueFrom=2026-01-02"), SPECS).unwrap_err();
        assert_eq!(field_names(e), ["dueFrom", "dueTo"]);
    }

    fn field_names(e: ApiError) -> Vec<String> {
        match e {
            ApiError::BadRequest { errors, .. } => errors.into_iter().map(|e| e.field).collect(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn defaults_and_cap() {
        let q = ListQuery::parse(None, SPECS).unwrap();
        assert_eq!((q.page, q.page_size), (1, 50));
        let q = ListQuery::parse(Some("page_size=500&page=3"), SPECS).unwrap();
        assert_eq!((q.page, q.page_size, q.offset()), (3, 50, 100));
    }

    #[test]
    fn a_never_issued_ssn_is_told_apart_from_a_malformed_one() {
        let codes = |query: &str| match ListQuery::parse(Some(query), SPECS).unwrap_err() {
            ApiError::BadRequest { errors, .. } => {
                errors.into_iter().map(|e| e.code).collect::<Vec<_>>()
            }
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(codes("socialSecurityNumber=666-45-6789"), ["invalid_value"]);
        assert_eq!(codes("socialSecurityNumber=123456789"), ["invalid_format"]);
    }

    #[test]
    fn every_bad_parameter_is_named() {
        let e = ListQuery::parse(Some("page=0&page_size=x&lastname=Smith&languagePreference=3&socialSecurityNumber=123456789"), SPECS).unwrap_err();
        assert_eq!(
            field_names(e),
            [
                "page",
                "page_size",
                "lastname",
                "languagePreference",
                "socialSecurityNumber"
            ]
        );
    }

    #[test]
    fn text_postgres_cannot_store_is_a_400_naming_the_parameter() {
        let e = ListQuery::parse(Some("lastName=%00&page=%FF&ok%00=1"), SPECS).unwrap_err();
        let ApiError::BadRequest { errors, .. } = e else {
            panic!("400 expected");
        };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            got,
            [
                ("lastName", "invalid_character"),
                ("page", "invalid_encoding"),
                ("ok\u{FFFD}", "invalid_character")
            ]
        );
    }

    #[test]
    fn links_keep_filters_and_page_size() {
        let q =
            ListQuery::parse(Some("lastName=O%27Neil+Smith&page=2&page_size=10"), SPECS).unwrap();
        let links = q.links("/v1/employees", 35);
        let get = |rel: &str| links.iter().find(|l| l.rel == rel).map(|l| l.href.clone());
        assert_eq!(
            get("self").unwrap(),
            "/v1/employees?lastName=O%27Neil+Smith&page=2&page_size=10"
        );
        assert_eq!(
            get("last").unwrap(),
            "/v1/employees?lastName=O%27Neil+Smith&page=4&page_size=10"
        );
        assert_eq!(
            get("next").unwrap(),
            "/v1/employees?lastName=O%27Neil+Smith&page=3&page_size=10"
        );
        assert_eq!(
            get("previous").unwrap(),
            "/v1/employees?lastName=O%27Neil+Smith&page=1&page_size=10"
        );
        let q = ListQuery::parse(None, SPECS).unwrap();
        let links = q.links("/v1/employees", 0);
        assert_eq!(links.len(), 3, "no next or previous on a single page");
    }
}
