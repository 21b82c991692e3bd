//! Decimal floats as integers (VictoriaMetrics's trick): a plant's floats are mostly decimals
//! as published (`21.37`), and when every float of a block is exactly `m / 10^k` for one `k`,
//! the block stores `k` and the integers `m` (a pco column with deltas, where a two-decimal walk's
//! steps are a handful of small integers) instead of the floats. Anything else (NaN, ±inf, −0.0,
//! a float no decimal of at most [`MAX_SCALE`] places gives back, a magnitude past 2^53) keeps
//! the plain float column for the whole block.
//!
//! Exactness rests on one rule, used both ways: a float is `m / 10^k` computed as one IEEE
//! division of two exact doubles (`m` within ±2^53, `10^k` for `k` ≤ 22), which is correctly
//! rounded; so decoding performs the very division encoding checked, bit for bit.

use super::BlockError;

/// The most decimal places a block's scale has: 10^k is exact in a double up to 10^22, and
/// beyond 15 places a 2^53 integer holds less than one significant digit before the point.
pub const MAX_SCALE: u8 = 15;

/// The largest integer magnitude that, with every smaller one, a double holds exactly.
const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53

/// 10^k for k in 0..=MAX_SCALE, each exact.
const POWERS: [f64; MAX_SCALE as usize + 1] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The integer `m` with `m / 10^k == x` bit for bit, if there is one within ±2^53.
fn mantissa(x: f64, k: u8) -> Option<i64> {
    let p = POWERS[usize::from(k)];
    let m = (x * p).round();
    // The check divides the integer as decoding
    // will, so it refuses −0.0 (the integer 0 gives +0.0) and any x the product does not give
    // back.
    if m.is_nan() || m.abs() >= EXACT {
        return None;
    }
    let m = m as i64;
    ((m as f64 / p).to_bits() == x.to_bits()).then_some(m)
}

/// `floats` as a scale and integers, if every one of them is a decimal at one scale.
pub fn to_decimal(floats: &[f64]) -> Option<(u8, Vec<i64>)> {
    // The smallest scale that fits every value: a value exact at k is exact at any larger k
    // (the same real number, so the same correctly rounded quotient) while m stays within 2^53,
    // and the final pass checks that for every value at the chosen scale.
    let mut k = 0u8;
    for &x in floats {
        while mantissa(x, k).is_none() {
            if k == MAX_SCALE {
                return None;
            }
            k += 1;
        }
    }
    let ints = floats
        .iter()
        .map(|&x| mantissa(x, k))
        .collect::<Option<Vec<i64>>>()?;
    Some((k, ints))
}

/// The floats `to_decimal` turned into `(k, ints)`, bit for bit.
pub fn from_decimal(k: u8, ints: &[i64]) -> Result<Vec<f64>, BlockError> {
    let Some(&p) = POWERS.get(usize::from(k)) else {
        return Err(BlockError::corrupt(format!(
            "it has a decimal scale of {k}"
        )));
    };
    // An integer past 2^53 was never written (its division would not be the checked one).
    if ints.iter().any(|&m| m.unsigned_abs() >= 1 << 53) {
        return Err(BlockError::corrupt("it has a decimal beyond 2^53"));
    }
    Ok(ints.iter().map(|&m| m as f64 / p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(floats: &[f64]) -> Option<u8> {
        let (k, ints) = to_decimal(floats)?;
        let back = from_decimal(k, &ints).unwrap();
        let same = floats
            .iter()
            .zip(&back)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && back.len() == floats.len(), "{floats:?} -> {back:?}");
        Some(k)
    }

    #[test]
    fn published_decimals_take_their_scale() {
        assert_eq!(round_trip(&[21.37, 21.4, 22.0]), Some(2));
        assert_eq!(round_trip(&[100.1234, 99.9999]), Some(4));
        assert_eq!(round_trip(&[40.0, 45.0, -3.0]), Some(0));
        assert_eq!(round_trip(&[0.1, 0.2, 0.30000000000000004]), None);
        assert_eq!(round_trip(&[1e-15]), Some(15));
    }

    #[test]
    fn special_floats_keep_the_float_column() {
        for bad in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            1e300,
            5e-324,
        ] {
            assert_eq!(to_decimal(&[1.5, bad]), None, "{bad}");
        }
        assert_eq!(round_trip(&[0.0, 2.5]), Some(1));
    }

    #[test]
    fn integers_near_two_to_the_53_stay_exact_or_refuse() {
        assert_eq!(round_trip(&[9_007_199_254_740_991.0]), Some(0));
        assert_eq!(to_decimal(&[9_007_199_254_740_992.0]), None);
        // Exact at k = 0 but not at k = 1 (m would pass 2^53): the block refuses as a whole.
        assert_eq!(to_decimal(&[9_007_199_254_740_991.0, 0.5]), None);
    }

    #[test]
    fn corrupt_scales_and_integers_are_refused() {
        assert!(from_decimal(MAX_SCALE + 1, &[1]).is_err());
        assert!(from_decimal(2, &[1 << 53]).is_err());
        assert!(from_decimal(2, &[i64::MIN]).is_err());
    }

    proptest! {
        /// Any floats either come back bit for bit or are refused.
        #[test]
        fn any_floats_round_trip_or_refuse(bits in prop::collection::vec(any::<u64>(), 1..50)) {
            let floats: Vec<f64> = bits.iter().map(|&b| f64::from_bits(b)).collect();
            round_trip(&floats);
        }

        /// Decimals as a JSON payload parses them are always taken, at their scale or less.
        #[test]
        fn parsed_decimals_are_taken(
            ms in prop::collection::vec(-10_000_000_000i64..10_000_000_000, 1..50),
            k in 0u8..=8,
        ) {
            let floats: Vec<f64> = ms
                .iter()
                .map(|m| format!("{m}e-{k}").parse::<f64>().unwrap())
                .collect();
            let scale = round_trip(&floats);
            prop_assert!(scale.is_some_and(|s| s <= k), "{floats:?}: {scale:?}");
        }
    }
}
