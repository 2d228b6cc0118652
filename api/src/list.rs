//! Collections: the strict query string of docs/api.md, "Lists" (known
//! parameters only, typed filters, `page` and `page_size`), and the paging links.

use chrono::NaiveDate;
use i9_common::{
    crypto::DataCipher,
    domain::{parse_date, Ssn, SsnError},
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

/// Which rows of a collection the caller's [`Visibility`] keeps. The `&str`
/// is the alias of the `employees` table in `from` (and `count_from`).
#[derive(Clone, Copy)]
pub enum Restrict<'a> {
    /// Rows of an employee: those of employees the caller sees.
    Employee(&'a Visibility, &'a str),
    /// Rows that may belong to an employee (left-joined): those that belong
    /// to none, and those of employees the caller sees.
    EmployeeIfAny(&'a Visibility, &'a str),
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
        }
    }
}

/// For collections without computed filters.
pub fn no_computed(_: &str, _: bool, _: &mut QueryBuilder<'_, Postgres>) {}

pub const MAX_PAGE_SIZE: i64 = 50;

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
    pub links: Vec<Link>,
}

/// How a filter's value is typed and compared.
#[derive(Debug, Clone, Copy)]
pub enum FilterKind {
    /// Case-insensitive exact match on a text column expression.
    Text(&'static str),
    /// Exact match on an integer column.
    Int(&'static str),
    /// `1` or `2`.
    Language(&'static str),
    Date(&'static str),
    Bool(&'static str),
    /// Exact match through the keyed SSN hash.
    Ssn(&'static str),
    /// `true`/`false`, compared with an expression supplied at query time.
    Computed,
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
}

impl ListQuery {
    /// Parse `raw` against the collection's filters. Unknown or repeated
    /// parameters, bad values and bad paging, and names or values that are
    /// not text Postgres can store ([`text`]), are 400s naming every one.
    pub fn parse(raw: Option<&str>, specs: &[FilterSpec]) -> Result<Self, ApiError> {
        let pairs = text::form_pairs(raw.unwrap_or("").as_bytes()).map_err(|bad| {
            ApiError::bad_query(bad.iter().map(text::Unreadable::field_error).collect())
        })?;
        let mut errors = Vec::new();
        let mut page = 1;
        let mut page_size = MAX_PAGE_SIZE;
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
                            page_size = n.min(MAX_PAGE_SIZE);
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
        if !errors.is_empty() {
            return Err(ApiError::bad_query(errors));
        }
        Ok(Self {
            page,
            page_size,
            page_size_given,
            filters,
            raw_filters,
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
                (FilterKind::Date(col), FilterValue::Date(v)) => {
                    qb.push(format_args!(" AND {col} = "));
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
                (FilterKind::Computed, FilterValue::Bool(v)) => computed(f.spec.name, *v, qb),
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
        let total: i64 = count.build_query_scalar().fetch_one(pool).await?;
        let mut select = QueryBuilder::new(format!("SELECT {} {}", sql.columns, sql.from));
        self.push_filters(&mut select, &hash, computed);
        if let Some(restrict) = sql.restrict {
            restrict.push(&mut select);
        }
        select
            .push(format_args!(" {} LIMIT ", sql.order))
            .push_bind(self.page_size)
            .push(" OFFSET ")
            .push_bind(self.offset());
        let rows = select.build_query_as().fetch_all(pool).await?;
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
        FilterKind::Int(_) => value
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
        FilterKind::Date(_) => parse_date(value)
            .map(FilterValue::Date)
            .map_err(|e| FieldError::new(name, "invalid_date", format!("Must be a date: {e}."))),
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
                SsnError::Format => {
                    FieldError::new(name, "invalid_format", "Must be written ###-##-####.")
                }
                SsnError::Invalid => FieldError::new(
                    name,
                    "invalid_value",
                    "Is not a number the SSA issues (area 000, 666 or 9xx, group 00 or serial 0000).",
                ),
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
    ];

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
