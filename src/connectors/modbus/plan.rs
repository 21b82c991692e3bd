//! The coalescing planner: which read requests poll which points. Points of one table and one
//! poll interval form a group; sorted by address, neighbours are read by one request as long
//! as it stays within the protocol's (and the settings') size and skips few unused registers.
//! Pure functions.

use super::address::{Address, Function};
use std::collections::BTreeMap;
use std::time::Duration;

/// How far requests may stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Registers per read request.
    pub max_registers: u16,
    /// Coils or discrete inputs per read request.
    pub max_bits: u16,
    /// Unused registers (or bits) a request may span between two points.
    pub max_gap: u16,
}

/// One read request and the points it feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub function: Function,
    pub start: u16,
    /// Registers or bits read from `start`.
    pub count: u16,
    /// Each point it feeds (its index in the target's points) and where the point's registers
    /// (or its bit) start within the answer.
    pub points: Vec<(usize, u16)>,
}

/// The requests polled together every `interval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub function: Function,
    pub interval: Duration,
    pub requests: Vec<ReadRequest>,
}

/// The request that reads one point alone (a probe, or the read back after a write).
pub fn single(point: usize, address: &Address) -> ReadRequest {
    ReadRequest {
        function: address.function,
        start: address.start,
        count: address.width(),
        points: vec![(point, 0)],
    }
}

/// The groups and requests that poll `points` (each with its index in the target's points).
pub fn plan<'a>(
    points: impl IntoIterator<Item = (usize, &'a Address)>,
    limits: Limits,
) -> Vec<Group> {
    let mut groups: BTreeMap<(Function, Duration), Vec<(usize, &Address)>> = BTreeMap::new();
    for (index, address) in points {
        groups
            .entry((address.function, address.poll_interval))
            .or_default()
            .push((index, address));
    }
    groups
        .into_iter()
        .map(|((function, interval), mut points)| {
            points.sort_by_key(|(index, address)| (address.start, address.width(), *index));
            let max = if function.is_bits() {
                limits.max_bits
            } else {
                limits.max_registers
            };
            Group {
                function,
                interval,
                requests: coalesce(function, &points, max, limits.max_gap),
            }
        })
        .collect()
}

/// Merges `points` (sorted by address) into requests of at most `max` items each spanning at
/// most `max_gap` unused items between points. A point wider than `max` is read alone.
fn coalesce(
    function: Function,
    points: &[(usize, &Address)],
    max: u16,
    max_gap: u16,
) -> Vec<ReadRequest> {
    let mut requests: Vec<ReadRequest> = Vec::new();
    // The end (exclusive, as u32: a point may end at 65536) of the last request.
    let mut end = 0u32;
    for &(index, address) in points {
        let start = u32::from(address.start);
        let point_end = start + u32::from(address.width());
        if let Some(last) = requests.last_mut() {
            let first = u32::from(last.start);
            let new_end = end.max(point_end);
            let gap = start.saturating_sub(end);
            if gap <= u32::from(max_gap) && new_end - first <= u32::from(max) {
                last.points.push((index, address.start - last.start));
                end = new_end;
                last.count = (end - first) as u16;
                continue;
            }
        }
        requests.push(ReadRequest {
            function,
            start: address.start,
            count: address.width(),
            points: vec![(index, 0)],
        });
        end = point_end;
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::modbus::address::{DataType, Order};

    const LIMITS: Limits = Limits {
        max_registers: 125,
        max_bits: 2000,
        max_gap: 8,
    };

    fn point(function: Function, start: u16, data_type: DataType, interval_ms: u64) -> Address {
        Address {
            function,
            start,
            data_type,
            byte_order: Order::Big,
            word_order: Order::Big,
            poll_interval: Duration::from_millis(interval_ms),
        }
    }

    fn hr(start: u16, data_type: DataType) -> Address {
        point(Function::HoldingRegister, start, data_type, 1000)
    }

    fn planned(points: &[Address], limits: Limits) -> Vec<Group> {
        plan(points.iter().enumerate(), limits)
    }

    #[test]
    fn a_hundred_consecutive_registers_are_one_request() {
        let points: Vec<Address> = (0..100).map(|i| hr(100 + i, DataType::Uint16)).collect();
        let groups = planned(&points, LIMITS);
        assert_eq!(groups.len(), 1);
        let requests = &groups[0].requests;
        assert_eq!(requests.len(), 1);
        assert_eq!((requests[0].start, requests[0].count), (100, 100));
        let expected: Vec<(usize, u16)> = (0..100).map(|i| (i, i as u16)).collect();
        assert_eq!(requests[0].points, expected);
    }

    #[test]
    fn requests_stay_within_max_registers() {
        // 100 float32 points: 200 registers, so two requests of at most 125.
        let points: Vec<Address> = (0..100).map(|i| hr(i * 2, DataType::Float32)).collect();
        let requests = &planned(&points, LIMITS)[0].requests;
        assert_eq!(requests.len(), 2);
        assert_eq!((requests[0].start, requests[0].count), (0, 124));
        assert_eq!((requests[1].start, requests[1].count), (124, 76));
        assert_eq!(requests[1].points[0], (62, 0));
        let limits = Limits {
            max_registers: 10,
            ..LIMITS
        };
        let requests = &planned(&points, limits)[0].requests;
        assert_eq!(requests.len(), 20);
        assert!(requests
            .iter()
            .all(|r| r.count == 10 && r.points.len() == 5));
    }

    #[test]
    fn gaps_split_requests() {
        let points = [
            hr(0, DataType::Uint16),
            hr(9, DataType::Uint16),
            hr(19, DataType::Uint16),
        ];
        // 0..1 then 8 unused registers to 9 (allowed), then 9 unused to 19 (not).
        let requests = &planned(&points, LIMITS)[0].requests;
        assert_eq!(requests.len(), 2);
        assert_eq!((requests[0].start, requests[0].count), (0, 10));
        assert_eq!(requests[0].points, [(0, 0), (1, 9)]);
        assert_eq!((requests[1].start, requests[1].count), (19, 1));
        let limits = Limits {
            max_gap: 0,
            ..LIMITS
        };
        assert_eq!(planned(&points, limits)[0].requests.len(), 3);
    }

    #[test]
    fn overlapping_points_share_registers() {
        let points = [
            hr(10, DataType::Uint32),
            hr(10, DataType::Bit(3)),
            hr(11, DataType::Int16),
            hr(10, DataType::String(4)),
        ];
        let requests = &planned(&points, LIMITS)[0].requests;
        assert_eq!(requests.len(), 1);
        assert_eq!((requests[0].start, requests[0].count), (10, 4));
        assert_eq!(requests[0].points, [(1, 0), (0, 0), (3, 0), (2, 1)]);
    }

    #[test]
    fn groups_by_table_and_interval() {
        let points = [
            point(Function::Coil, 0, DataType::Bool, 1000),
            point(Function::Coil, 1, DataType::Bool, 500),
            point(Function::DiscreteInput, 0, DataType::Bool, 1000),
            point(Function::InputRegister, 0, DataType::Uint16, 1000),
            hr(0, DataType::Uint16),
            point(Function::Coil, 2, DataType::Bool, 1000),
        ];
        let groups = planned(&points, LIMITS);
        let summary: Vec<(Function, u64, Vec<Vec<usize>>)> = groups
            .iter()
            .map(|g| {
                let points = g
                    .requests
                    .iter()
                    .map(|r| r.points.iter().map(|p| p.0).collect())
                    .collect();
                (g.function, g.interval.as_millis() as u64, points)
            })
            .collect();
        assert_eq!(
            summary,
            [
                (Function::Coil, 500, vec![vec![1]]),
                (Function::Coil, 1000, vec![vec![0, 5]]),
                (Function::DiscreteInput, 1000, vec![vec![2]]),
                (Function::HoldingRegister, 1000, vec![vec![4]]),
                (Function::InputRegister, 1000, vec![vec![3]]),
            ]
        );
    }

    #[test]
    fn bits_use_max_bits() {
        let points: Vec<Address> = (0..5000)
            .map(|i| point(Function::Coil, i, DataType::Bool, 1000))
            .collect();
        let requests = &planned(&points, LIMITS)[0].requests;
        let counts: Vec<u16> = requests.iter().map(|r| r.count).collect();
        assert_eq!(counts, [2000, 2000, 1000]);
    }

    #[test]
    fn wide_points_and_the_end_of_the_table() {
        let limits = Limits {
            max_registers: 2,
            ..LIMITS
        };
        let points = [
            hr(0, DataType::Float64),
            hr(4, DataType::Uint16),
            hr(65535, DataType::Uint16),
        ];
        let requests = &planned(&points, limits)[0].requests;
        let spans: Vec<(u16, u16)> = requests.iter().map(|r| (r.start, r.count)).collect();
        assert_eq!(spans, [(0, 4), (4, 1), (65535, 1)]);
        let points = [hr(65532, DataType::Uint64), hr(65530, DataType::Uint16)];
        let requests = &planned(&points, LIMITS)[0].requests;
        assert_eq!((requests[0].start, requests[0].count), (65530, 6));
        assert_eq!(
            single(7, &points[0]),
            ReadRequest {
                function: Function::HoldingRegister,
                start: 65532,
                count: 4,
                points: vec![(7, 0)],
            }
        );
        assert!(planned(&[], LIMITS).is_empty());
    }
}
