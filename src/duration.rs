//! Duration grammar shared by settings (`token_ttl`), historian ranges and buckets:
//! one or more `<int><unit>` with units `ms s m h d w` (`15m`, `1h30m`), or `<int>_<word>`
//! with words `millisecond second minute hour day week`, singular or plural (`5_second`).

use std::time::Duration;

/// Parses a duration; the error is a short phrase naming what was wrong.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    if let Some((count, word)) = text.split_once('_') {
        let count = parse_count(count, text)?;
        let unit = word_unit(word).ok_or_else(|| format!("unknown unit `{word}` in `{text}`"))?;
        return scale(count, unit, text);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(format!("`{text}` is not a duration like 15m or 1h30m"));
        }
        let count = parse_count(&rest[..digits], text)?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let unit = symbol_unit(&rest[..unit_len]).ok_or_else(|| {
            format!("`{text}` needs a unit (ms, s, m, h, d, w) after each number")
        })?;
        rest = &rest[unit_len..];
        total = total
            .checked_add(scale(count, unit, text)?)
            .ok_or_else(|| format!("`{text}` is too long"))?;
    }
    Ok(total)
}

fn parse_count(digits: &str, text: &str) -> Result<u64, String> {
    digits
        .parse::<u64>()
        .map_err(|_| format!("`{text}` is not a duration like 15m or 1h30m"))
}

fn scale(count: u64, unit_ms: u64, text: &str) -> Result<Duration, String> {
    count
        .checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("`{text}` is too long"))
}

const SECOND: u64 = 1000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;

fn symbol_unit(unit: &str) -> Option<u64> {
    Some(match unit {
        "ms" => 1,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        "d" => DAY,
        "w" => WEEK,
        _ => return None,
    })
}

fn word_unit(word: &str) -> Option<u64> {
    let singular = word.strip_suffix('s').unwrap_or(word);
    Some(match singular {
        "millisecond" => 1,
        "second" => SECOND,
        "minute" => MINUTE,
        "hour" => HOUR,
        "day" => DAY,
        "week" => WEEK,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> u128 {
        parse_duration(text).unwrap().as_millis()
    }

    #[test]
    fn symbol_units() {
        assert_eq!(ms("250ms"), 250);
        assert_eq!(ms("15m"), 15 * 60_000);
        assert_eq!(ms("24h"), 24 * 3_600_000);
        assert_eq!(ms("2d"), 2 * 86_400_000);
        assert_eq!(ms("1w"), 7 * 86_400_000);
    }

    #[test]
    fn compound() {
        assert_eq!(ms("1h30m"), 90 * 60_000);
        assert_eq!(ms("1m30s500ms"), 90_500);
    }

    #[test]
    fn word_units() {
        assert_eq!(ms("5_second"), 5_000);
        assert_eq!(ms("5_seconds"), 5_000);
        assert_eq!(ms("1_hour"), 3_600_000);
        assert_eq!(ms("10_milliseconds"), 10);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "h",
            "10",
            "10x",
            "1h30",
            "-5m",
            "5_parsec",
            "m5",
            "1.5h",
            "99999999999999999999w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    const UNITS: [(&str, &str, u64); 6] = [
        ("ms", "millisecond", 1),
        ("s", "second", 1_000),
        ("m", "minute", 60_000),
        ("h", "hour", 3_600_000),
        ("d", "day", 86_400_000),
        ("w", "week", 604_800_000),
    ];

    proptest! {
        /// `<int><unit>…` is the sum of its parts.
        #[test]
        fn compound_durations_are_the_sum_of_their_parts(
            parts in prop::collection::vec((0u64..100_000, 0usize..6), 1..5)
        ) {
            let text: String = parts.iter().map(|(n, u)| format!("{n}{}", UNITS[*u].0)).collect();
            let ms: u64 = parts.iter().map(|(n, u)| n * UNITS[*u].2).sum();
            prop_assert_eq!(parse_duration(&text), Ok(Duration::from_millis(ms)));
        }

        /// `<int>_<word>`, singular or plural, is the same as `<int><unit>`.
        #[test]
        fn word_units_equal_symbol_units(n in 0u64..1_000_000, u in 0usize..6, plural: bool) {
            let (symbol, word, _) = UNITS[u];
            let words = format!("{n}_{word}{}", if plural { "s" } else { "" });
            prop_assert_eq!(parse_duration(&words), parse_duration(&format!("{n}{symbol}")));
        }

        #[test]
        fn any_text_never_panics(text in ".{0,40}") {
            let _ = parse_duration(&text);
        }
    }
}
