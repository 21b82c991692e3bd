//! A connected OPC UA connector: one subscription for the `subscribe` points, one Read per
//! poll interval for the `poll` points, the writes, and the watchdog (no publish response nor
//! keep-alive for longer than the subscription's keep-alive time and a half ends the link).

use crate::connectors::kind::{Failure, FailureKind, Link, Reading, Sink, Write, WriteError};
use crate::connectors::opcua::address::Mode;
use crate::connectors::opcua::convert::{status_name, to_json, to_variant, WriteType};
use crate::connectors::opcua::failure::{from_status, kind_of};
use crate::connectors::opcua::nodes::{read_all, read_id, PER_CALL};
use crate::connectors::opcua::session::Connection;
use crate::connectors::opcua::settings::Settings;
use crate::store::Quality;
use async_trait::async_trait;
use opcua::client::DataChangeCallback;
use opcua::types::{
    AttributeId, DataChangeFilter, DataChangeTrigger, DataValue, DeadbandType, ExtensionObject,
    MonitoredItemCreateRequest, MonitoringMode, MonitoringParameters, NodeId, StatusCode,
    TimestampsToReturn, WriteValue,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// One point as the link reads and writes it.
pub struct Point {
    /// Its node, or why it has none (a browse path that matched nothing).
    pub node: Result<NodeId, String>,
    pub mode: Mode,
    /// For writable points: the type a write takes, or why it is unknown.
    pub write: Option<Result<WriteType, String>>,
}

pub struct OpcUaLink {
    pub connection: Connection,
    pub settings: Settings,
    pub points: Vec<Point>,
    pub description: Value,
}

/// Status codes that say the node itself cannot be read (the point fails) rather than that
/// its value is bad for now (a reading of bad quality).
fn node_unusable(code: StatusCode) -> bool {
    matches!(
        status_name(code).as_str(),
        "BadNodeIdUnknown"
            | "BadNodeIdInvalid"
            | "BadAttributeIdInvalid"
            | "BadNotReadable"
            | "BadUserAccessDenied"
            | "BadNoMatch"
            | "BadIndexRangeInvalid"
            | "BadMonitoredItemFilterUnsupported"
            | "BadFilterNotAllowed"
            | "BadDeadbandFilterInvalid"
            | "BadTypeMismatch"
    )
}

/// The reading of a data value (source time, else server time).
pub fn reading(value: &DataValue, ctx: &opcua::types::Context<'_>) -> Reading {
    let time = value
        .source_timestamp
        .as_ref()
        .or(value.server_timestamp.as_ref());
    Reading {
        value: value
            .value
            .as_ref()
            .map_or(Value::Null, |v| to_json(v, ctx)),
        source_ms: time
            .filter(|t| !t.is_null())
            .map(|t| t.as_chrono().timestamp_millis()),
        quality: Quality(value.status().bits()),
    }
}

impl OpcUaLink {
    /// The watchdog's bound: publishing interval × keep-alive count × 1.5, at least 3 s.
    fn publish_bound(&self) -> Duration {
        (self.settings.publishing_interval * self.settings.keep_alive_count)
            .mul_f64(1.5)
            .max(Duration::from_secs(3))
    }

    fn deliver(&self, sink: &dyn Sink, failed: &mut [bool], point: usize, value: &DataValue) {
        let status = value.status();
        if status.is_bad() && node_unusable(status) {
            if !std::mem::replace(&mut failed[point], true) {
                sink.point_failed(point, status_name(status));
            }
            return;
        }
        failed[point] = false;
        let ctx = self.connection.session.context();
        let guard = ctx.read();
        sink.reading(point, reading(value, &guard.context()));
    }

    /// Creates the subscription and its monitored items; values arrive on the returned channel.
    async fn subscribe(
        &self,
        sink: &dyn Sink,
        failed: &mut [bool],
    ) -> Result<Option<mpsc::UnboundedReceiver<(u32, DataValue)>>, Failure> {
        let mut items = Vec::new();
        for (i, point) in self.points.iter().enumerate() {
            let Mode::Subscribe {
                sampling_interval,
                queue_size,
                deadband,
            } = point.mode
            else {
                continue;
            };
            let node = match &point.node {
                Ok(node) => node.clone(),
                Err(status) => {
                    failed[i] = true;
                    sink.point_failed(i, status.clone());
                    continue;
                }
            };
            let filter = if deadband > 0.0 {
                ExtensionObject::from_message(DataChangeFilter {
                    trigger: DataChangeTrigger::StatusValue,
                    deadband_type: DeadbandType::Absolute as u32,
                    deadband_value: deadband,
                })
            } else {
                ExtensionObject::null()
            };
            items.push(MonitoredItemCreateRequest {
                item_to_monitor: read_id(&node, AttributeId::Value),
                monitoring_mode: MonitoringMode::Reporting,
                requested_parameters: MonitoringParameters {
                    client_handle: i as u32 + 1,
                    // 0 s asks the fastest the server can (on change where it can): every
                    // change is sampled, whatever the publishing interval.
                    sampling_interval: sampling_interval.as_secs_f64() * 1000.0,
                    filter,
                    queue_size,
                    discard_oldest: true,
                },
            });
        }
        if items.is_empty() {
            return Ok(None);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let session = &self.connection.session;
        let callback = DataChangeCallback::new(move |value, item| {
            let _ = tx.send((item.client_handle(), value));
        });
        let settings = &self.settings;
        let id = tokio::time::timeout(
            settings.timeout,
            session.create_subscription(
                settings.publishing_interval,
                settings.lifetime_count,
                settings.keep_alive_count,
                PER_CALL as u32,
                0,
                true,
                callback,
            ),
        )
        .await
        .map_err(|_| {
            Failure::new(
                FailureKind::Timeout,
                "the server did not create the subscription in time",
            )
        })?
        .map_err(|e| from_status(e.status(), "creating the subscription"))?;
        let handles: Vec<u32> = items
            .iter()
            .map(|i| i.requested_parameters.client_handle)
            .collect();
        let mut created = Vec::with_capacity(items.len());
        for batch in items.chunks(PER_CALL) {
            let batch = tokio::time::timeout(
                settings.timeout,
                session.create_monitored_items(id, TimestampsToReturn::Both, batch.to_vec()),
            )
            .await
            .map_err(|_| {
                Failure::new(
                    FailureKind::Timeout,
                    "the server did not create the monitored items in time",
                )
            })?
            .map_err(|e| from_status(e.status(), "creating the monitored items"))?;
            created.extend(batch);
        }
        for (handle, result) in handles.into_iter().zip(created) {
            if result.result.status_code.is_bad() {
                let point = handle as usize - 1;
                failed[point] = true;
                sink.point_failed(point, status_name(result.result.status_code));
            }
        }
        if let Ok(mut last) = self.connection.last_publish.lock() {
            *last = Instant::now();
        }
        Ok(Some(rx))
    }

    /// One Read of a poll group's points.
    async fn poll(
        &self,
        sink: &dyn Sink,
        failed: &mut [bool],
        group: &[usize],
    ) -> Result<(), Failure> {
        let mut reads = Vec::new();
        let mut which = Vec::new();
        for &i in group {
            match &self.points[i].node {
                Ok(node) => {
                    reads.push(read_id(node, AttributeId::Value));
                    which.push(i);
                }
                Err(status) => {
                    if !std::mem::replace(&mut failed[i], true) {
                        sink.point_failed(i, status.clone());
                    }
                }
            }
        }
        if reads.is_empty() {
            return Ok(());
        }
        let session = &self.connection.session;
        let values = tokio::time::timeout(
            self.settings.timeout,
            read_all(session, &reads, TimestampsToReturn::Both),
        )
        .await
        .map_err(|_| {
            Failure::new(
                FailureKind::Timeout,
                "the server did not answer a poll's Read in time",
            )
        })?
        .map_err(|e| from_status(e.status(), "polling"))?;
        for (i, value) in which.into_iter().zip(values) {
            self.deliver(sink, failed, i, &value);
        }
        Ok(())
    }

    async fn write(&self, write: &Write) -> Result<(), WriteError> {
        let point = self
            .points
            .get(write.point)
            .ok_or_else(|| WriteError::Invalid(format!("there is no point {}", write.point)))?;
        let ty = match &point.write {
            None => return Err(WriteError::Invalid("the point is not writable".into())),
            Some(Err(status)) => return Err(WriteError::Refused(status.clone())),
            Some(Ok(ty)) => *ty,
        };
        let node = point
            .node
            .as_ref()
            .map_err(|status| WriteError::Refused(status.clone()))?;
        let variant = to_variant(&write.value, ty).map_err(WriteError::Invalid)?;
        let request = WriteValue {
            node_id: node.clone(),
            attribute_id: AttributeId::Value as u32,
            index_range: Default::default(),
            value: DataValue {
                value: Some(variant),
                ..Default::default()
            },
        };
        let session = &self.connection.session;
        let results = tokio::time::timeout(self.settings.timeout, session.write(&[request]))
            .await
            .map_err(|_| {
                WriteError::Unreachable("the server did not answer the write in time".into())
            })?
            .map_err(|e| {
                let code = e.status();
                match kind_of(code) {
                    FailureKind::Timeout | FailureKind::Tcp => {
                        WriteError::Unreachable(status_name(code))
                    }
                    _ => WriteError::Refused(status_name(code)),
                }
            })?;
        match results.first() {
            Some(code) if code.is_good() => Ok(()),
            Some(code) => Err(WriteError::Refused(status_name(*code))),
            None => Err(WriteError::Refused("BadUnexpectedError".into())),
        }
    }
}

#[async_trait]
impl Link for OpcUaLink {
    fn description(&self) -> Value {
        self.description.clone()
    }

    async fn run(
        mut self: Box<Self>,
        sink: Arc<dyn Sink>,
        writes: &mut mpsc::Receiver<Write>,
    ) -> Failure {
        let mut failed = vec![false; self.points.len()];
        let mut values = match self.subscribe(sink.as_ref(), &mut failed).await {
            Ok(values) => values,
            Err(failure) => return failure,
        };
        let subscribed = values.is_some();
        let bound = self.publish_bound();

        let mut groups: BTreeMap<Duration, Vec<usize>> = BTreeMap::new();
        for (i, point) in self.points.iter().enumerate() {
            if let Mode::Poll { interval } = point.mode {
                groups.entry(interval).or_default().push(i);
            }
        }
        let mut schedule: Vec<(Duration, Vec<usize>, Instant)> = groups
            .into_iter()
            .map(|(interval, points)| (interval, points, Instant::now()))
            .collect();
        let mut writes_open = true;
        let mut watchdog = tokio::time::interval(Duration::from_millis(250));
        watchdog.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        loop {
            let next_poll = schedule.iter().map(|g| g.2).min();
            let poll_due = async {
                match next_poll {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            let value = async {
                match values.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                failure = self.connection.wait_failed() => return failure,
                Some(first) = value => {
                    // A publish response brings up to 500 values at once: they are taken
                    // together, not one turn of this loop each.
                    let mut next = Some(first);
                    let mut taken = 0;
                    while let Some((handle, value)) = next.take() {
                        let point = (handle as usize).wrapping_sub(1);
                        if point < self.points.len() {
                            self.deliver(sink.as_ref(), &mut failed, point, &value);
                        }
                        taken += 1;
                        if taken < PER_CALL {
                            next = values.as_mut().and_then(|rx| rx.try_recv().ok());
                        }
                    }
                }
                _ = poll_due => {
                    let now = Instant::now();
                    for (interval, group, due) in schedule.iter_mut() {
                        if *due > now {
                            continue;
                        }
                        if let Err(failure) = self.poll(sink.as_ref(), &mut failed, group).await {
                            return failure;
                        }
                        *due += *interval;
                        if *due < Instant::now() {
                            *due = Instant::now() + *interval;
                        }
                    }
                }
                write = writes.recv(), if writes_open => match write {
                    Some(write) => {
                        let result = self.write(&write).await;
                        let _ = write.reply.send(result);
                    }
                    None => writes_open = false,
                },
                _ = watchdog.tick(), if subscribed => {
                    let since = self.connection.last_publish.lock().map(|l| l.elapsed()).unwrap_or_default();
                    if since > bound {
                        return Failure::new(
                            FailureKind::Timeout,
                            format!(
                                "the server sent no publish response or keep-alive for {} ms (the bound is {} ms)",
                                since.as_millis(),
                                bound.as_millis()
                            ),
                        );
                    }
                }
            }
        }
    }
}
