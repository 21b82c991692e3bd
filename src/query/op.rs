//! Filter operators: the SDK's symbols and words, and which declared types each applies to.

use super::value::ValueType;
use super::Op;

/// Parses an operator, case-insensitively for the word forms. `ARRAY_WHERE_<op>` is handled
/// by the caller; `@<n>@` (the SDK's full-text match reference) reads as `@@`.
pub(super) fn parse(text: &str) -> Result<Op, String> {
    let op = match text.to_ascii_lowercase().as_str() {
        "eq" | "=" | "==" => Op::Eq,
        "ne" | "!=" => Op::Ne,
        "gt" | ">" => Op::Gt,
        "gte" | ">=" => Op::Gte,
        "lt" | "<" => Op::Lt,
        "lte" | "<=" => Op::Lte,
        "~" => Op::Like,
        "!~" => Op::NotLike,
        "?~" => Op::AnyLike,
        "*~" => Op::AllLike,
        "?=" => Op::AnyEq,
        "*=" => Op::AllEq,
        "contains" => Op::Contains,
        "containsnot" => Op::ContainsNot,
        "containsall" => Op::ContainsAll,
        "containsany" => Op::ContainsAny,
        "containsnone" => Op::ContainsNone,
        "in" | "inside" => Op::In,
        "nin" | "not in" | "notinside" => Op::Nin,
        "allinside" => Op::AllInside,
        "anyinside" => Op::AnyInside,
        "noneinside" => Op::NoneInside,
        "@@" => Op::Match,
        m if is_match_reference(m) => Op::Match,
        "" => return Err("empty operator".into()),
        _ => return Err(format!("unknown operator `{text}`")),
    };
    Ok(op)
}

/// `@<n>@`.
fn is_match_reference(text: &str) -> bool {
    text.strip_prefix('@')
        .and_then(|t| t.strip_suffix('@'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The operators `ARRAY_WHERE_<op>` accepts for an element's member.
pub(super) fn parse_element(text: &str) -> Result<Op, String> {
    match parse(text)? {
        op @ (Op::Eq | Op::Ne | Op::Gt | Op::Gte | Op::Lt | Op::Lte | Op::Contains | Op::In) => {
            Ok(op)
        }
        _ => Err(format!(
            "operator `{text}` cannot follow `ARRAY_WHERE_` (use = != < <= > >= CONTAINS IN)"
        )),
    }
}

/// Which declared types an operator applies to (`object` carries lists and `null`).
pub(super) fn allows(op: Op, ty: ValueType) -> bool {
    use ValueType as T;
    match op {
        Op::Eq | Op::Ne => true,
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => matches!(ty, T::String | T::Number | T::Date),
        Op::Like | Op::NotLike | Op::AnyLike | Op::AllLike | Op::Match => ty == T::String,
        Op::AnyEq | Op::AllEq => ty != T::Object,
        Op::Contains | Op::ContainsNot => matches!(ty, T::String | T::Number | T::Boolean),
        _ if op.takes_list() => ty != T::Null,
        _ => false,
    }
}

impl Op {
    /// Operators whose value is a list (comma-separated, or a JSON array).
    pub fn takes_list(self) -> bool {
        matches!(
            self,
            Op::In
                | Op::Nin
                | Op::ContainsAll
                | Op::ContainsAny
                | Op::ContainsNone
                | Op::AllInside
                | Op::AnyInside
                | Op::NoneInside
        )
    }

    /// Operators that order values (a boolean cannot be ordered).
    pub fn orders(self) -> bool {
        matches!(self, Op::Gt | Op::Gte | Op::Lt | Op::Lte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_and_word_of_the_sdk() {
        let table = [
            ("~", Op::Like),
            ("!~", Op::NotLike),
            ("?~", Op::AnyLike),
            ("*~", Op::AllLike),
            ("?=", Op::AnyEq),
            ("*=", Op::AllEq),
            ("CONTAINS", Op::Contains),
            ("CONTAINSNOT", Op::ContainsNot),
            ("CONTAINSALL", Op::ContainsAll),
            ("CONTAINSANY", Op::ContainsAny),
            ("CONTAINSNONE", Op::ContainsNone),
            ("INSIDE", Op::In),
            ("NOTINSIDE", Op::Nin),
            ("ALLINSIDE", Op::AllInside),
            ("ANYINSIDE", Op::AnyInside),
            ("NONEINSIDE", Op::NoneInside),
            ("IN", Op::In),
            ("NOT IN", Op::Nin),
            ("@@", Op::Match),
            ("@3@", Op::Match),
            ("==", Op::Eq),
            ("gte", Op::Gte),
        ];
        for (text, op) in table {
            assert_eq!(parse(text), Ok(op), "{text}");
        }
        for bad in ["@@@", "@x@", "@", "=~", "containsalll", "NOT  IN"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn array_where_takes_only_comparisons_contains_and_in() {
        assert_eq!(parse_element("CONTAINS"), Ok(Op::Contains));
        assert_eq!(parse_element("<="), Ok(Op::Lte));
        assert!(parse_element("~").unwrap_err().contains("ARRAY_WHERE_"));
    }
}
