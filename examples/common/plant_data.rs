//! The plant data set the historian benchmarks share (issue 33): deterministic signals at 1 Hz as
//! a plant's historian sees them, so every system measured in one run stores exactly the same
//! points. Each signal is a pure function of its kind, its index and the point number (a
//! splitmix64 stream seeded per signal), so a point can be generated alone, in any order, and the
//! next run generates the same.
//!
//! The signals: two-decimal random walks drifting around 20–30 (the bulk of a plant: temperatures,
//! pressures, levels), a slowly increasing integer counter, a boolean that flips rarely, a step
//! setpoint, a noisy four-decimal analog, and a string state.

#![allow(dead_code)] // each example uses what it needs

use serde_json::Value;

/// One kind of plant signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Two decimals, steps of at most ±0.05, kept within 20–30.
    Walk,
    /// An integer that goes up by one about every ten seconds.
    Counter,
    /// A boolean that flips about once an hour.
    Flag,
    /// A setpoint in steps of 5 between 40 and 80 that changes about every 15 minutes.
    Setpoint,
    /// 100 ± 10 (a slow sine) plus noise, four decimals.
    Analog,
    /// `running`, `idle` or `fault`, changing about every ten minutes.
    State,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Walk => "walk",
            Kind::Counter => "counter",
            Kind::Flag => "flag",
            Kind::Setpoint => "setpoint",
            Kind::Analog => "analog",
            Kind::State => "state",
        }
    }

    /// Whether its values are numbers (or booleans read as 0/1), so numeric-only systems
    /// (VictoriaMetrics, Prometheus) can store it.
    pub fn numeric(self) -> bool {
        self != Kind::State
    }
}

/// One signal of the set: a kind and its index among signals of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal {
    pub kind: Kind,
    pub index: u32,
}

impl Signal {
    /// The tag path below a prefix: `<prefix>/walk-3`.
    pub fn path(&self, prefix: &str) -> String {
        format!("{prefix}/{}-{}", self.kind.name(), self.index)
    }

    /// A name without `/` or `-` for systems whose series names are identifiers (metric and
    /// measurement names): `walk_3`.
    pub fn ident(&self) -> String {
        format!("{}_{}", self.kind.name(), self.index)
    }

    /// The signal's values for points `0..count`, one second apart.
    pub fn values(&self, count: usize) -> Vec<Value> {
        self.stream().take(count).collect()
    }

    /// The same values from point 0 on, generated as they are taken (a year of points need
    /// not be held at once).
    pub fn stream(&self) -> impl Iterator<Item = Value> {
        let mut state = Generator::new(*self);
        std::iter::from_fn(move || Some(state.next_value()))
    }
}

/// The data set: `walks` random walks plus one signal of every other kind (ten signals with
/// `walks = 5`, the plant of ten tags).
pub fn signals(walks: u32) -> Vec<Signal> {
    let mut all: Vec<Signal> = (0..walks)
        .map(|index| Signal {
            kind: Kind::Walk,
            index,
        })
        .collect();
    for kind in [
        Kind::Counter,
        Kind::Flag,
        Kind::Setpoint,
        Kind::Analog,
        Kind::State,
    ] {
        all.push(Signal { kind, index: 0 });
    }
    all
}

/// splitmix64: a tiny, well-known generator whose output depends only on the seed, so the data
/// set does not change with a dependency's version.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The running state of one signal.
struct Generator {
    signal: Signal,
    rng: SplitMix,
    step: u64,
    /// Walks, setpoints and the counter in hundredths (walks) or units; the flag as 0/1; the
    /// state as an index.
    level: i64,
}

impl Generator {
    fn new(signal: Signal) -> Generator {
        let seed = (signal.kind as u64) << 32 | u64::from(signal.index);
        let mut rng = SplitMix(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let level = match signal.kind {
            Kind::Walk => 2000 + (rng.next() % 1001) as i64,
            Kind::Counter => (rng.next() % 100_000) as i64,
            Kind::Setpoint => 60,
            _ => 0,
        };
        Generator {
            signal,
            rng,
            step: 0,
            level,
        }
    }

    fn next_value(&mut self) -> Value {
        let t = self.step;
        self.step += 1;
        match self.signal.kind {
            Kind::Walk => {
                let delta = (self.rng.next() % 11) as i64 - 5;
                let next = self.level + delta;
                self.level = if (2000..=3000).contains(&next) {
                    next
                } else {
                    self.level - delta
                };
                // The decimal text parsed as a double, as a JSON payload `21.37` arrives.
                Value::from(
                    format!("{}.{:02}", self.level / 100, self.level % 100)
                        .parse::<f64>()
                        .unwrap(),
                )
            }
            Kind::Counter => {
                if self.rng.unit() < 0.1 {
                    self.level += 1;
                }
                Value::from(self.level)
            }
            Kind::Flag => {
                if self.rng.unit() < 1.0 / 3600.0 {
                    self.level ^= 1;
                }
                Value::from(self.level == 1)
            }
            Kind::Setpoint => {
                if self.rng.unit() < 1.0 / 900.0 {
                    self.level = 40 + 5 * (self.rng.next() % 9) as i64;
                }
                Value::from(self.level as f64)
            }
            Kind::Analog => {
                // The sum of four uniforms: a cheap bell-shaped noise of about ±0.05.
                let noise: f64 = (0..4).map(|_| self.rng.unit() - 0.5).sum::<f64>() * 0.05;
                let x = 100.0 + 10.0 * (t as f64 / 600.0).sin() + noise;
                Value::from(format!("{x:.4}").parse::<f64>().unwrap())
            }
            Kind::State => {
                if self.rng.unit() < 1.0 / 600.0 {
                    self.level = (self.level + 1 + (self.rng.next() % 2) as i64) % 3;
                }
                Value::from(["running", "idle", "fault"][self.level as usize])
            }
        }
    }
}
