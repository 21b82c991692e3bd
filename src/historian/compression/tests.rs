//! The filter's guarantees on worked examples and, as properties, on generated signals (random
//! walks, ramps, noisy sines, steps, flat lines, flags that flip; regular and irregular
//! timestamps; mixed with strings, changes of kind and quality, and out-of-order points).

use super::*;
use proptest::prelude::*;
use std::sync::Arc;

fn settings(
    deadband: Option<f64>,
    deviation: Option<f64>,
    min_ms: i64,
    max_ms: i64,
) -> Compression {
    Compression {
        deadband,
        deviation,
        min_ms,
        max_ms,
    }
}

/// One generated input point: a number, a flag or something else, with a quality.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Input {
    ts: i64,
    reading: Reading,
    quality: u32,
}

impl Input {
    fn sample(&self) -> Sample {
        Sample {
            ts_ms: self.ts,
            reading: self.reading,
            quality: self.quality,
        }
    }
}

fn number(ts: i64, v: f64) -> Input {
    Input {
        ts,
        reading: Reading::Number(v),
        quality: 0,
    }
}

/// Runs `inputs` through a filter (then a clean shutdown) and returns the stored indices.
fn stored(settings: &Compression, inputs: &[Input]) -> Vec<usize> {
    let mut filter = SeriesFilter::new(settings.clone());
    let mut out = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let before = out.len();
        filter.push(input.sample(), i, &mut out);
        // Whatever is stored now is this point or one held before it, oldest first.
        assert!(out[before..].windows(2).all(|w| w[0] < w[1]), "{out:?}");
        assert!(out[before..].iter().all(|&j| j <= i), "{out:?}");
    }
    filter.finish(&mut out);
    assert!(!filter.holds());
    out
}

fn numbers(ts: &[i64], values: &[f64]) -> Vec<Input> {
    ts.iter()
        .zip(values)
        .map(|(&ts, &v)| number(ts, v))
        .collect()
}

fn times_of(inputs: &[Input], kept: &[usize]) -> Vec<i64> {
    kept.iter().map(|&i| inputs[i].ts).collect()
}

#[test]
fn a_flat_tag_stores_a_heartbeat_every_max_time() {
    let ts: Vec<i64> = (0..=60).map(|s| s * 1_000).collect();
    let flat = numbers(&ts, &[5.0; 61]);
    let every_10s: Vec<i64> = (0..=6).map(|i| i * 10_000).collect();
    for s in [
        settings(None, Some(0.1), 0, 10_000),
        settings(Some(0.5), None, 0, 10_000),
        settings(Some(0.5), Some(0.1), 2_000, 10_000),
    ] {
        assert_eq!(times_of(&flat, &stored(&s, &flat)), every_10s, "{s:?}");
        // Each heartbeat is stored when its point arrives, not when the next one does.
        let mut filter = SeriesFilter::new(s.clone());
        let mut out = Vec::new();
        for (i, input) in flat.iter().enumerate() {
            filter.push(input.sample(), i, &mut out);
        }
        assert_eq!(out.last(), Some(&60), "{s:?}");
        assert!(!filter.holds(), "{s:?}");
    }
}

#[test]
fn the_deadband_keeps_the_last_value_before_a_change() {
    let values = [0.0, 0.2, 0.4, 1.0, 1.1, 3.0, 3.2];
    let inputs = numbers(&[0, 1, 2, 3, 4, 5, 6], &values);
    let kept = stored(&settings(Some(0.5), None, 0, 3_600_000), &inputs);
    // 0.4 is stored with the change to 1.0, 1.1 with the change to 3.0; 3.2 at shutdown.
    assert_eq!(kept, [0, 2, 3, 4, 5, 6]);
}

#[test]
fn the_door_stores_the_point_before_a_bend() {
    // A ramp, then flat: the last point of the ramp is where the line bends.
    let inputs = numbers(
        &[0, 1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000],
        &[0.0, 1.0, 2.0, 3.0, 4.0, 4.0, 4.0, 4.0],
    );
    let s = settings(None, Some(0.1), 0, 3_600_000);
    let mut filter = SeriesFilter::new(s);
    let mut out = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        filter.push(input.sample(), i, &mut out);
    }
    assert_eq!(out, [0, 4], "the flat part is still held");
    assert!(filter.holds());
    filter.finish(&mut out);
    assert_eq!(out, [0, 4, 7]);
}

#[test]
fn the_door_pivots_on_the_stored_point_not_beside_it() {
    // Bristol's doors (pivots at ±deviation) accept (2, 1.0) here, and its line from (0, 0)
    // passes 1.4 from (1, 1.9); pivoting on the point itself stores (1, 1.9) instead.
    let inputs = numbers(&[0, 1, 2], &[0.0, 1.9, 1.0]);
    assert_eq!(
        stored(&settings(None, Some(1.0), 0, 3_600_000), &inputs),
        [0, 1, 2]
    );
}

#[test]
fn points_sooner_than_min_time_are_not_tested() {
    // A noisy signal at 100 ms: the door breaks on almost every point, but a point is stored
    // at most once a second.
    let ts: Vec<i64> = (0..50).map(|i| i * 100).collect();
    let values: Vec<f64> = (0..50)
        .map(|i| if i % 2 == 0 { 0.0 } else { 10.0 })
        .collect();
    let inputs = numbers(&ts, &values);
    let kept = stored(&settings(None, Some(0.1), 1_000, 60_000), &inputs);
    let times = times_of(&inputs, &kept);
    // The last one is the point held at shutdown.
    assert_eq!(times, [0, 1_000, 2_000, 3_000, 4_000, 4_900]);
}

#[test]
fn a_rare_flip_of_a_flag_keeps_the_points_around_it() {
    let ts: Vec<i64> = (0..100).map(|s| s * 1_000).collect();
    let inputs: Vec<Input> = ts
        .iter()
        .map(|&ts| Input {
            ts,
            reading: Reading::Flag((40..70).contains(&(ts / 1_000))),
            quality: 0,
        })
        .collect();
    for s in [
        settings(Some(0.0), None, 0, 3_600_000),
        settings(None, Some(0.0), 0, 3_600_000),
    ] {
        // The first, the last false and the first true, the last true and the first false,
        // and the last point at shutdown.
        assert_eq!(stored(&s, &inputs), [0, 39, 40, 69, 70, 99], "{s:?}");
    }
}

#[test]
fn other_values_kind_and_quality_changes_and_late_points_are_always_stored() {
    let other = |ts, reading| Input {
        ts,
        reading,
        quality: 0,
    };
    let inputs = [
        number(0, 1.0),
        number(1, 1.0),
        number(2, 1.0),
        other(3, Reading::Other), // "running"
        number(4, 1.0),
        number(5, 1.0),
        Input {
            ts: 6,
            reading: Reading::Number(1.0),
            quality: 0x4000_0000, // uncertain
        },
        number(7, 1.0),
        number(8, 1.0),
        number(5, 1.0),      // late
        number(8, 1.0),      // the same millisecond as the newest
        number(9, f64::NAN), // not a finite number
        number(10, 1.0),
        number(11, 1.0),
        other(12, Reading::Flag(true)), // a change of kind, 1 all the same
        number(13, 1.0),
    ];
    let kept = stored(&settings(Some(0.5), Some(0.5), 0, 3_600_000), &inputs);
    // The held 1.0 at 2 is stored before the string; 4 starts a new run after it; 5 is held
    // until the quality changes at 6; 7 (quality back to good) and 8 are held back until the
    // late point; 11 before the flag; every point that is always stored is.
    assert_eq!(kept, [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
}

#[test]
fn the_compressor_keeps_a_filter_per_topic_until_its_settings_change() {
    let compressor: Compressor<usize> = Compressor::default();
    let plant: Arc<str> = Arc::from("plant");
    let door = settings(None, Some(1.0), 0, 3_600_000);
    let sample = |ts| Sample {
        ts_ms: ts,
        reading: Reading::Number(1.0),
        quality: 0,
    };
    let mut out = Vec::new();
    for (i, ts) in [0, 1, 2].into_iter().enumerate() {
        compressor.push(&plant, "a", &door, sample(ts), i, &mut out);
        compressor.push(&plant, "b", &door, sample(ts), 10 + i, &mut out);
    }
    assert_eq!((out.clone(), compressor.len()), (vec![0, 10], 2));
    // New settings for `a`: what it held is stored, and its next point starts afresh.
    let other = settings(None, Some(2.0), 0, 3_600_000);
    out.clear();
    compressor.push(&plant, "a", &other, sample(3), 3, &mut out);
    assert_eq!(out, [2, 3]);
    // `b` is deleted: its held point is stored and its state dropped.
    out.clear();
    compressor.retain(|topic, _, _| topic != "b", &mut out);
    assert_eq!((out.clone(), compressor.len()), (vec![12], 1));
    // Shutdown stores what is held; later points pass unfiltered.
    compressor.push(&plant, "a", &other, sample(4), 4, &mut out);
    out.clear();
    compressor.close(&mut out);
    assert_eq!((out.clone(), compressor.len()), (vec![4], 0));
    compressor.push(&plant, "a", &other, sample(5), 5, &mut out);
    assert_eq!(out, [4, 5]);
}

// ---- Properties ----

/// The level the filter compresses (a finite number, a flag as 0 or 1) and its kind.
fn level(input: &Input) -> Option<(f64, bool)> {
    match input.reading {
        Reading::Number(x) if x.is_finite() => Some((x, false)),
        Reading::Flag(b) => Some((if b { 1.0 } else { 0.0 }, true)),
        _ => None,
    }
}

fn finite(input: &Input) -> Option<f64> {
    level(input).map(|(x, _)| x)
}

/// Checks every guarantee on what `settings` stored of `inputs` (no out-of-order points).
fn check(settings: &Compression, inputs: &[Input], kept: &[usize]) -> Result<(), TestCaseError> {
    let is_kept = |i: usize| kept.binary_search(&i).is_ok();
    prop_assert_eq!(kept.first(), Some(&0), "the first point is stored");
    prop_assert_eq!(
        kept.last(),
        Some(&(inputs.len() - 1)),
        "shutdown stores what is held"
    );
    // Always stored: not a finite number or a flag, a change of kind or quality.
    let forced: Vec<bool> = (0..inputs.len())
        .map(|i| {
            i == 0
                || level(&inputs[i]).is_none()
                || level(&inputs[i - 1]).map(|(_, k)| k) != level(&inputs[i]).map(|(_, k)| k)
                || inputs[i - 1].quality != inputs[i].quality
        })
        .collect();
    for (i, input) in inputs.iter().enumerate() {
        prop_assert!(
            !forced[i] || is_kept(i),
            "point {} ({:?}) must be stored",
            i,
            input
        );
    }
    let scale = inputs
        .iter()
        .filter_map(finite)
        .fold(1.0_f64, |m, v| m.max(v.abs()));
    let tolerance = 1e-9 * scale;
    let deadband = settings.deadband.unwrap_or(0.0);
    for (i, input) in inputs.iter().enumerate() {
        let Some(v) = finite(input) else { continue };
        let before = kept[kept.partition_point(|&k| k <= i) - 1];
        let after = kept[kept.partition_point(|&k| k < i)];
        let (s, e) = (&inputs[before], &inputs[after]);
        let kind = level(input).map(|(_, k)| k);
        prop_assert!(
            level(s).map(|(_, k)| k) == kind && level(e).map(|(_, k)| k) == kind,
            "point {} is not between stored levels of its kind",
            i
        );
        prop_assert_eq!(s.quality, input.quality);
        prop_assert_eq!(e.quality, input.quality);
        if input.ts - s.ts < settings.min_ms {
            continue; // not tested: sooner than min_time after a stored point
        }
        let (sv, ev) = (finite(s).unwrap_or(0.0), finite(e).unwrap_or(0.0));
        match settings.deviation {
            Some(deviation) => {
                let line = if after == before {
                    sv
                } else {
                    sv + (ev - sv) * (input.ts - s.ts) as f64 / (e.ts - s.ts) as f64
                };
                let bound = deviation + 2.0 * deadband + tolerance;
                prop_assert!(
                    (v - line).abs() <= bound,
                    "point {} ({}) is {} from the line between {} and {} (bound {})",
                    i,
                    v,
                    (v - line).abs(),
                    before,
                    after,
                    bound
                );
            }
            None => prop_assert!(
                (v - sv).abs() <= deadband + tolerance,
                "point {} ({}) is {} from the stored {} at {}",
                i,
                v,
                (v - sv).abs(),
                sv,
                before
            ),
        }
    }
    for pair in kept.windows(2) {
        let (s, e) = (pair[0], pair[1]);
        let gap = inputs[e].ts - inputs[s].ts;
        // Never further apart than max_time while points arrive between.
        prop_assert!(
            e == s + 1 || gap <= settings.max_ms,
            "stored {} and {} are {} ms apart with points between (max {})",
            s,
            e,
            gap,
            settings.max_ms
        );
        // Sooner than min_time only when what the filter held is stored before a point that is
        // always stored, or by the heartbeat: the next point came more than max_time after the
        // stored point before.
        let flushed = forced[e] || forced.get(e + 1).copied().unwrap_or(true);
        if gap < settings.min_ms && !flushed {
            let from = kept[kept.partition_point(|&k| k < s).saturating_sub(1)];
            prop_assert!(
                inputs[e + 1].ts - inputs[from].ts > settings.max_ms,
                "stored {} and {} are {} ms apart (min {})",
                s,
                e,
                gap,
                settings.min_ms
            );
        }
    }
    Ok(())
}

/// Values of one generated signal of `n` points.
fn signal(n: usize) -> impl Strategy<Value = Vec<f64>> {
    let walk = prop::collection::vec(-1.0..1.0_f64, n).prop_map(|steps| {
        steps
            .iter()
            .scan(20.0, |level, step| {
                *level += step;
                Some((*level * 100.0).round() / 100.0)
            })
            .collect()
    });
    let ramp = (-100.0..100.0_f64, -1.0..1.0_f64)
        .prop_map(move |(start, slope)| (0..n).map(|i| start + slope * i as f64).collect());
    let sine = (
        0.1..50.0_f64,
        3.0..200.0_f64,
        prop::collection::vec(-0.2..0.2_f64, n),
    )
        .prop_map(|(amplitude, period, noise)| {
            let omega = std::f64::consts::TAU / period;
            (noise.iter().enumerate())
                .map(|(i, e)| amplitude * (omega * i as f64).sin() + e)
                .collect()
        });
    let steps = prop::collection::vec((1..40_usize, -50.0..50.0_f64), 1..20).prop_map(move |s| {
        let mut values: Vec<f64> = s
            .iter()
            .flat_map(|&(len, level)| std::iter::repeat_n(level, len))
            .collect();
        values.resize(n, values.last().copied().unwrap_or(0.0));
        values
    });
    let flat = (-1e6..1e6_f64).prop_map(move |level| vec![level; n]);
    prop_oneof![walk, ramp, sine, steps, flat]
}

/// Timestamps: regular at 1 s or 100 ms, or irregular gaps up to 30 s.
fn times(n: usize) -> impl Strategy<Value = Vec<i64>> {
    let regular = prop_oneof![Just(1_000_i64), Just(100_i64)].prop_map(move |every| {
        (0..n as i64)
            .map(|i| 1_767_225_600_000 + i * every)
            .collect()
    });
    let irregular = prop::collection::vec(1..30_000_i64, n).prop_map(|gaps| {
        gaps.iter()
            .scan(1_767_225_600_000_i64, |ts, gap| {
                *ts += gap;
                Some(*ts)
            })
            .collect()
    });
    prop_oneof![regular, irregular]
}

fn any_settings() -> impl Strategy<Value = Compression> {
    (
        prop::option::of(0.0..2.0_f64),
        prop::option::of(0.0..2.0_f64),
        prop_oneof![Just(0_i64), 0..5_000_i64],
        1..120_000_i64,
    )
        .prop_map(|(deadband, deviation, min_ms, extra)| Compression {
            deadband,
            deviation: deviation.or(deadband.is_none().then_some(0.5)),
            min_ms,
            max_ms: min_ms + extra,
        })
}

/// Numbers, or flags that flip now and then.
fn numeric_series() -> impl Strategy<Value = Vec<Input>> {
    (2..300_usize).prop_flat_map(|n| {
        let flips = prop::collection::vec((1..60_usize, any::<bool>()), 1..20).prop_map(move |s| {
            let mut flags: Vec<bool> = s
                .iter()
                .flat_map(|&(len, b)| std::iter::repeat_n(b, len))
                .collect();
            flags.resize(n, flags.last().copied().unwrap_or(false));
            flags
        });
        let flags = (times(n), flips).prop_map(|(ts, flags)| {
            ts.iter()
                .zip(flags)
                .map(|(&ts, b)| Input {
                    ts,
                    reading: Reading::Flag(b),
                    quality: 0,
                })
                .collect()
        });
        let levels = (times(n), signal(n)).prop_map(|(ts, values)| numbers(&ts, &values));
        prop_oneof![4 => levels, 1 => flags]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn generated_signals_keep_every_guarantee(
        settings in any_settings(),
        inputs in numeric_series(),
    ) {
        let kept = stored(&settings, &inputs);
        check(&settings, &inputs, &kept)?;
    }

    #[test]
    fn other_values_and_changes_of_kind_or_quality_are_stored_and_guarantees_hold_around_them(
        settings in any_settings(),
        inputs in numeric_series(),
        marks in prop::collection::vec((0..300_usize, 0..4_u8), 0..12),
    ) {
        let mut inputs = inputs;
        let mut quality = 0;
        let mut changes: Vec<(usize, u8)> = marks.into_iter().filter(|(i, _)| *i < inputs.len()).collect();
        changes.sort_unstable();
        for (i, input) in inputs.iter_mut().enumerate() {
            for &(_, what) in changes.iter().filter(|(at, _)| *at == i) {
                match what {
                    0 => input.reading = Reading::Other,
                    1 => quality ^= 0x8000_0000,
                    2 => input.reading = Reading::Number(f64::INFINITY),
                    _ => input.reading = Reading::Flag(i % 2 == 0),
                }
            }
            input.quality = quality;
        }
        let kept = stored(&settings, &inputs);
        check(&settings, &inputs, &kept)?;
    }

    #[test]
    fn late_points_are_stored(
        settings in any_settings(),
        inputs in numeric_series(),
        late in prop::collection::vec((1..300_usize, 1..5_000_i64), 1..8),
    ) {
        let mut inputs = inputs;
        for (at, back) in late {
            if at < inputs.len() {
                let newest = inputs[..at].iter().map(|p| p.ts).max().unwrap_or(0);
                inputs.insert(at, number(newest - back + 1, 1.0));
            }
        }
        let kept = stored(&settings, &inputs);
        let mut newest = i64::MIN;
        for (i, input) in inputs.iter().enumerate() {
            if input.ts <= newest {
                prop_assert!(kept.contains(&i), "late point {} not stored", i);
            }
            newest = newest.max(input.ts);
        }
        prop_assert_eq!(kept[0], 0);
    }
}
