//! Parser for the list query string of `GET /svc/:table/all` and `/count`, independent of HTTP
//! and SQL: turns the decoded query pairs (`filter[...]`, `filter_or[...]`, `sort`, `limit`,
//! `offset`, `fields`, `expand`) into a typed [`ListQuery`]. Every field name it yields has been
//! validated as an identifier path; anything it does not recognise is an error.

mod filter;
mod key;
mod op;
mod path;
mod sort;
mod value;

#[cfg(test)]
mod props;
#[cfg(test)]
mod test_util;

pub use path::FieldPath;

pub const DEFAULT_LIMIT: u64 = 1000;
pub const MAX_LIMIT: u64 = 10_000;
/// Largest offset accepted, so it still fits a signed 64-bit SQL integer.
const MAX_OFFSET: u64 = i64::MAX as u64;

/// A parsed list query.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    /// ANDed.
    pub filters: Vec<Filter>,
    /// One OR group, ANDed with `filters`; empty = no group.
    pub or_filters: Vec<Filter>,
    /// Empty = server default (created_dt, then id, asc).
    pub sort: Vec<SortKey>,
    /// DEFAULT_LIMIT when absent.
    pub limit: u64,
    /// 0 when absent.
    pub offset: u64,
    /// Projection; top-level field names, validated as identifiers.
    pub fields: Option<Vec<String>>,
    /// Top-level field names, validated as identifiers.
    pub expand: Vec<String>,
}

/// One condition: `field op value`, or with `element`, "some element of the array `field` has
/// `element op value`" (`ARRAY_WHERE_<op>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub field: FieldPath,
    pub op: Op,
    pub value: FilterValue,
    pub element: Option<String>,
}

/// A filter operator (the SDK's symbol or word in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    /// `~`: case-insensitive substring of a string, or of any element of an array of strings.
    Like,
    /// `!~`
    NotLike,
    /// `?~`: some element of the array matches `~`.
    AnyLike,
    /// `*~`: every element of the array matches `~`.
    AllLike,
    /// `?=`: some element of the array equals the value.
    AnyEq,
    /// `*=`: every element of the array equals the value.
    AllEq,
    /// The array has an element equal to the value; on a string, a substring.
    Contains,
    ContainsNot,
    ContainsAll,
    ContainsAny,
    ContainsNone,
    /// `IN` / `INSIDE`
    In,
    /// `NOT IN` / `NOTINSIDE`
    Nin,
    AllInside,
    AnyInside,
    NoneInside,
    /// `@@` / `@<n>@`: every word of the value is a word of the field, case-insensitive.
    Match,
}

/// A filter's typed value.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterValue {
    String(String),
    Number(f64),
    Bool(bool),
    Date(chrono::DateTime<chrono::Utc>),
    Null,
    /// Any JSON value given with type `object`.
    Object(serde_json::Value),
    /// Only for operators that take a list; elements are scalars of the declared type.
    List(Vec<FilterValue>),
}

/// One sort key.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub field: FieldPath,
    pub descending: bool,
}

/// Why a query parameter was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid query parameter `{param}`: {reason}")]
pub struct QueryError {
    pub param: String,
    pub reason: String,
}

impl QueryError {
    fn new(param: &str, reason: impl Into<String>) -> QueryError {
        QueryError {
            param: param.to_string(),
            reason: reason.into(),
        }
    }
}

/// `pairs` are the already percent-decoded (key, value) pairs in order.
pub fn parse(pairs: &[(String, String)]) -> Result<ListQuery, QueryError> {
    let mut builder = Builder::default();
    for (key, value) in pairs {
        builder.add(key, value)?;
    }
    Ok(builder.finish())
}

/// The query collected so far.
#[derive(Default)]
struct Builder {
    filters: Vec<Filter>,
    or_filters: Vec<Filter>,
    sort: Vec<SortKey>,
    limit: Option<u64>,
    offset: Option<u64>,
    fields: Option<Vec<String>>,
    expand: Option<Vec<String>>,
}

impl Builder {
    fn add(&mut self, key: &str, value: &str) -> Result<(), QueryError> {
        let (name, rest) = key::split_name(key);
        match name {
            "filter" => self
                .filters
                .push(filter::parse_filter(key, &brackets(key, rest)?, value)?),
            "filter_or" => {
                let filter = filter::parse_or_filter(key, &brackets(key, rest)?, value)?;
                self.or_filters.push(filter);
            }
            "sort" => self
                .sort
                .push(sort::parse_sort(key, &brackets(key, rest)?, value)?),
            "limit" => set_once(&mut self.limit, key, rest, parse_limit(value))?,
            "offset" => set_once(&mut self.offset, key, rest, parse_offset(value))?,
            "fields" => set_once(&mut self.fields, key, rest, path::parse_identifiers(value))?,
            "expand" => set_once(&mut self.expand, key, rest, path::parse_identifiers(value))?,
            _ => return Err(QueryError::new(key, "unknown parameter")),
        }
        Ok(())
    }

    fn finish(self) -> ListQuery {
        ListQuery {
            filters: self.filters,
            or_filters: self.or_filters,
            sort: self.sort,
            limit: self.limit.unwrap_or(DEFAULT_LIMIT),
            offset: self.offset.unwrap_or(0),
            fields: self.fields,
            expand: self.expand.unwrap_or_default(),
        }
    }
}

fn brackets<'k>(key: &str, rest: &'k str) -> Result<Vec<&'k str>, QueryError> {
    key::brackets(rest).map_err(|reason| QueryError::new(key, reason))
}

/// Stores the value of a plain (bracket-free) parameter that may be given only once.
fn set_once<T>(
    slot: &mut Option<T>,
    key: &str,
    rest: &str,
    parsed: Result<T, String>,
) -> Result<(), QueryError> {
    let name = &key[..key.len() - rest.len()];
    if !rest.is_empty() {
        return Err(QueryError::new(
            key,
            format!("unexpected `{rest}` after `{name}`"),
        ));
    }
    if slot.is_some() {
        return Err(QueryError::new(
            key,
            format!("`{name}` given more than once"),
        ));
    }
    *slot = Some(parsed.map_err(|reason| QueryError::new(key, reason))?);
    Ok(())
}

fn parse_limit(raw: &str) -> Result<u64, String> {
    let limit = parse_count(raw)?;
    if limit > MAX_LIMIT {
        return Err(format!("limit must be at most {MAX_LIMIT}, got `{raw}`"));
    }
    Ok(limit)
}

fn parse_offset(raw: &str) -> Result<u64, String> {
    let offset = parse_count(raw)?;
    if offset > MAX_OFFSET {
        return Err(format!("offset must be at most {MAX_OFFSET}, got `{raw}`"));
    }
    Ok(offset)
}

/// A non-negative integer written with digits only.
fn parse_count(raw: &str) -> Result<u64, String> {
    if raw.is_empty() {
        return Err("empty value is not a non-negative integer".into());
    }
    if !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{raw}` is not a non-negative integer"));
    }
    raw.parse().map_err(|_| format!("`{raw}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::test_util::{assert_fails, pairs, query};
    use super::*;

    #[test]
    fn empty_query_has_defaults() {
        let q = parse(&[]).unwrap();
        let expected = ListQuery {
            filters: vec![],
            or_filters: vec![],
            sort: vec![],
            limit: DEFAULT_LIMIT,
            offset: 0,
            fields: None,
            expand: vec![],
        };
        assert_eq!(q, expected);
        assert_eq!(DEFAULT_LIMIT, 1000);
        assert_eq!(MAX_LIMIT, 10_000);
    }

    #[test]
    fn full_query() {
        let q = query(&[
            ("filter[price][gt][number]", "10"),
            ("filter[name][eq]", "pump"),
            ("filter_or[0][status][eq][string]", "on"),
            ("filter_or[1][status][eq][string]", "idle"),
            ("sort", "-price"),
            ("limit", "50"),
            ("offset", "100"),
            ("fields", "name,price"),
            ("expand", "site"),
        ]);
        let fields: Vec<String> = q.filters.iter().map(|f| f.field.as_dotted()).collect();
        assert_eq!(fields, ["price", "name"]);
        assert_eq!(q.filters[0].op, Op::Gt);
        assert_eq!(q.filters[0].value, FilterValue::Number(10.0));
        assert_eq!(q.filters[1].value, FilterValue::String("pump".into()));
        assert_eq!(q.or_filters.len(), 2);
        assert_eq!(q.or_filters[1].value, FilterValue::String("idle".into()));
        assert_eq!(
            q.sort,
            vec![SortKey {
                field: FieldPath::parse("price").unwrap(),
                descending: true
            }]
        );
        assert_eq!((q.limit, q.offset), (50, 100));
        assert_eq!(
            q.fields,
            Some(vec!["name".to_string(), "price".to_string()])
        );
        assert_eq!(q.expand, ["site"]);
    }

    #[test]
    fn filter_or_entries_form_one_group_in_order() {
        let q = query(&[
            ("filter_or[5][a][eq]", "1"),
            ("filter[x][eq]", "0"),
            ("filter_or[0][b][eq]", "2"),
            ("filter_or[5][c][eq]", "3"),
            ("filter_or[99999999999999999999999][d][eq]", "4"),
        ]);
        let names: Vec<String> = q.or_filters.iter().map(|f| f.field.as_dotted()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(q.filters.len(), 1);
    }

    #[test]
    fn repeated_filters_are_all_kept() {
        let q = query(&[("filter[a][gt]", "1"), ("filter[a][lt]", "5")]);
        assert_eq!(q.filters.len(), 2);
        assert_eq!((q.filters[0].op, q.filters[1].op), (Op::Gt, Op::Lt));
    }

    #[test]
    fn limit_and_offset() {
        assert_eq!(query(&[("limit", "0")]).limit, 0);
        assert_eq!(query(&[("limit", "10000")]).limit, MAX_LIMIT);
        assert_eq!(query(&[("offset", "0")]).offset, 0);
        assert_eq!(query(&[("offset", "123456789")]).offset, 123_456_789);
        assert_eq!(
            query(&[("offset", "9223372036854775807")]).offset,
            MAX_OFFSET
        );
    }

    #[test]
    fn limit_and_offset_errors() {
        assert_fails("limit", "10001", "limit must be at most 10000, got `10001`");
        for key in ["limit", "offset"] {
            assert_fails(key, "-1", "`-1` is not a non-negative integer");
            assert_fails(key, "+1", "`+1` is not a non-negative integer");
            assert_fails(key, "1.0", "`1.0` is not a non-negative integer");
            assert_fails(key, " 1", "` 1` is not a non-negative integer");
            assert_fails(key, "abc", "`abc` is not a non-negative integer");
            assert_fails(key, "", "empty value is not a non-negative integer");
            assert_fails(
                key,
                "99999999999999999999",
                "`99999999999999999999` is too large",
            );
        }
        assert_fails("offset", "9223372036854775808", "got `9223372036854775808`");
    }

    #[test]
    fn fields_and_expand() {
        let q = query(&[("fields", " id , name "), ("expand", "site,owner")]);
        assert_eq!(q.fields, Some(vec!["id".to_string(), "name".to_string()]));
        assert_eq!(q.expand, ["site", "owner"]);
        assert_eq!(query(&[("limit", "5")]).fields, None);
    }

    #[test]
    fn fields_and_expand_errors() {
        for key in ["fields", "expand"] {
            assert_fails(key, "a,,b", "empty item in `a,,b`");
            assert_fails(key, "a,", "empty item in `a,`");
            assert_fails(key, "", "empty list");
            assert_fails(key, "a.b", "`a.b` is not a valid field name");
            assert_fails(
                key,
                "a;drop table x",
                "`a;drop table x` is not a valid field name",
            );
            assert_fails(key, "a'--", "`a'--` is not a valid field name");
            assert_fails(key, "a b", "`a b` is not a valid field name");
        }
    }

    #[test]
    fn single_valued_parameters_given_twice() {
        for (key, value) in [
            ("limit", "1"),
            ("offset", "1"),
            ("fields", "a"),
            ("expand", "a"),
        ] {
            let err = parse(&pairs(&[(key, value), (key, value)])).unwrap_err();
            assert_eq!(err.param, key);
            assert_eq!(err.reason, format!("`{key}` given more than once"));
        }
    }

    #[test]
    fn single_valued_parameters_take_no_brackets() {
        assert_fails("limit[x]", "1", "unexpected `[x]` after `limit`");
        assert_fails("offset[]", "1", "unexpected `[]` after `offset`");
        assert_fails("fields[a", "a", "unexpected `[a` after `fields`");
        assert_fails("expand[0]", "a", "unexpected `[0]` after `expand`");
    }

    #[test]
    fn unknown_parameters() {
        for key in [
            "page",
            "Limit",
            "filters[a][eq]",
            "",
            "[a][eq]",
            "sort_by",
            "filter_or_x",
            "q",
        ] {
            assert_fails(key, "1", "unknown parameter");
        }
    }

    #[test]
    fn first_error_wins() {
        let err = parse(&pairs(&[("limit", "x"), ("bogus", "1")])).unwrap_err();
        assert_eq!(err.param, "limit");
    }

    #[test]
    fn error_display() {
        let err = QueryError::new("limit", "`x` is not a non-negative integer");
        let text = err.to_string();
        assert_eq!(
            text,
            "invalid query parameter `limit`: `x` is not a non-negative integer"
        );
    }
}
