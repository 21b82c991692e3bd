//! The load generator's command line: one flag set shared by every mode, parsed by hand (the
//! example has no other use for a parser), with the defaults `bench/broker.sh` relies on.

use rumqttc::QoS;

/// What the run measures.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// N publishers → one `<prefix>/#` subscriber, as fast as they can (the original mode).
    FanIn,
    /// [`Mode::FanIn`] with pre-encoded packets and no client event loop (`fan_in_raw.rs`).
    FanInRaw,
    /// One publisher → N subscribers of `<prefix>/fanout`, as fast as it can.
    FanOut,
    /// One paced publisher → one subscriber of `<prefix>/latency`: publish→deliver percentiles.
    Latency,
    /// [`Mode::Latency`] with pre-encoded batches, one write each, and the subscriber on a
    /// thread of its own (`latency_raw.rs`).
    LatencyRaw,
    /// N connections that only hold their session open (keep alive), for the broker's memory.
    Idle,
    /// One `<subscriber prefix>/#` subscriber that waits for `--messages` (sent by others, e.g.
    /// a bridge catching up) and says when the first and the last arrived.
    Drain,
    /// A paced publisher crossing alarm setpoints on `<prefix>/p<i>/t<k>` and one subscriber
    /// of `--alarm-filter` (svc's alarm events): value → alarm event percentiles.
    AlarmLatency,
    /// `--messages` M kept for a persistent subscriber that is away, then taken by it: the
    /// broker's memory per queued message (`queued.rs`).
    Queued,
}

pub struct Args {
    pub mode: Mode,
    pub host: String,
    pub port: u16,
    pub username: String,
    pub password: String,
    pub publishers: usize,
    pub subscribers: usize,
    pub messages: usize,
    pub qos: QoS,
    pub subscriber_qos: Option<QoS>,
    pub size: usize,
    pub prefix: String,
    /// Latency mode: messages per second.
    pub rate: u64,
    /// Latency mode: paced sending before the measured window, not counted in the percentiles.
    pub warmup_ms: u64,
    /// Latency mode: length of the measured window.
    pub duration_ms: u64,
    /// Idle mode: connections to hold.
    pub connections: usize,
    /// Idle mode: connection handshakes in flight at once.
    pub connect_concurrency: usize,
    /// Idle and queued modes: the broker's pid, whose VmRSS is read before and with what is
    /// held (the connections, the queued messages).
    pub broker_pid: Option<u32>,
    /// Idle mode: wait after the last CONNACK before reading VmRSS.
    pub settle_ms: u64,
    /// Idle mode: keep alive of the held connections, in seconds.
    pub keep_alive_s: u64,
    /// Where the subscribers connect, when not to the publishers' broker (a bridge's far
    /// side): host, port, credentials and the prefix they subscribe under.
    pub sub_host: Option<String>,
    pub sub_port: Option<u16>,
    pub sub_username: Option<String>,
    pub sub_password: Option<String>,
    pub sub_prefix: Option<String>,
    /// Fan-in and alarm-latency: topics per publisher; 0 publishes on `<prefix>/p<i>` itself,
    /// N cycles each publisher's messages over `<prefix>/p<i>/t0` … `t<N-1>`.
    pub topics: usize,
    /// Alarm-latency: the filter the alarm events arrive on, and the value added to each
    /// crossing's sequence number (above every alarm's setpoint).
    pub alarm_filter: String,
    pub crossing_base: u64,
    /// Alarm-latency: how long after a crossing its topic is put back below the setpoint.
    pub reset_ms: u64,
}

impl Args {
    /// The subscribers' QoS: `--subscriber-qos`, else the publishers'.
    pub fn sub_qos(&self) -> QoS {
        self.subscriber_qos.unwrap_or(self.qos)
    }

    /// The prefix the subscribers subscribe under: `--sub-prefix`, else `--topic-prefix`.
    pub fn sub_prefix(&self) -> &str {
        self.sub_prefix.as_deref().unwrap_or(&self.prefix)
    }

    /// A paced load's messages in all (`--rate` over warm-up and measured window) and those
    /// of the warm-up, which the percentiles leave out.
    pub fn paced_messages(&self) -> (u64, u64) {
        let total = self.rate * (self.warmup_ms + self.duration_ms) / 1_000;
        (total, self.rate * self.warmup_ms / 1_000)
    }

    /// How many of a paced load's `total` messages are due `elapsed_ns` after its start, on
    /// the fixed schedule of `--rate` (a late tick sends a bigger batch).
    pub fn due_by(&self, elapsed_ns: u64, total: u64) -> u64 {
        ((u128::from(self.rate) * u128::from(elapsed_ns) / 1_000_000_000) as u64).min(total)
    }
}

fn qos_of(text: &str) -> QoS {
    match text {
        "0" => QoS::AtMostOnce,
        "1" => QoS::AtLeastOnce,
        "2" => QoS::ExactlyOnce,
        other => usage(&format!("QoS must be 0, 1 or 2, not {other}")),
    }
}

fn mode_of(text: &str) -> Mode {
    match text {
        "fan-in" => Mode::FanIn,
        "fan-in-raw" => Mode::FanInRaw,
        "fan-out" => Mode::FanOut,
        "latency" => Mode::Latency,
        "latency-raw" => Mode::LatencyRaw,
        "idle" => Mode::Idle,
        "drain" => Mode::Drain,
        "alarm-latency" => Mode::AlarmLatency,
        "queued" => Mode::Queued,
        other => usage(&format!(
            "--mode must be fan-in, fan-in-raw, fan-out, latency, latency-raw, idle, drain, \
             alarm-latency or queued, not {other}"
        )),
    }
}

pub fn usage(problem: &str) -> ! {
    eprintln!(
        "mqtt_load: {problem}\nusage: mqtt_load [--mode fan-in|fan-in-raw|fan-out|latency|latency-raw|idle|drain|alarm-latency|queued] [--host H] \
         [--port P] [--username U] [--password P] [--publishers N] [--subscribers N] \
         [--messages M] [--qos 0|1|2] [--subscriber-qos 0|1|2] [--size BYTES] \
         [--topic-prefix PREFIX] [--rate MSGS_PER_S] [--warmup-ms MS] [--duration-ms MS] \
         [--connections N] [--connect-concurrency N] [--broker-pid PID] [--settle-ms MS] \
         [--keep-alive S] [--sub-host H] [--sub-port P] [--sub-username U] \
         [--sub-password P] [--sub-prefix PREFIX] [--topics N] [--alarm-filter F] \
         [--crossing-base N] [--reset-ms MS]"
    );
    std::process::exit(2)
}

pub fn parse_args() -> Args {
    let mut args = Args {
        mode: Mode::FanIn,
        host: "127.0.0.1".into(),
        port: 1883,
        username: String::new(),
        password: String::new(),
        publishers: 20,
        subscribers: 200,
        messages: 20_000,
        qos: QoS::AtMostOnce,
        subscriber_qos: None,
        size: 64,
        prefix: "bench".into(),
        rate: 20_000,
        warmup_ms: 1_000,
        duration_ms: 5_000,
        connections: 10_000,
        connect_concurrency: 100,
        broker_pid: None,
        settle_ms: 2_000,
        keep_alive_s: 60,
        sub_host: None,
        sub_port: None,
        sub_username: None,
        sub_password: None,
        sub_prefix: None,
        topics: 0,
        alarm_filter: "$SYS/svc/alarms/#".into(),
        crossing_base: 1_000_000_000,
        reset_ms: 50,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(flag) = raw.next() {
        let value = raw
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let number = |v: &str| -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{flag} wants a number, not {v}")))
        };
        match flag.as_str() {
            "--mode" => args.mode = mode_of(&value),
            "--host" => args.host = value,
            "--port" => {
                args.port = u16::try_from(number(&value))
                    .unwrap_or_else(|_| usage("--port is at most 65535"))
            }
            "--username" => args.username = value,
            "--password" => args.password = value,
            "--publishers" => args.publishers = number(&value) as usize,
            "--subscribers" => args.subscribers = number(&value) as usize,
            "--messages" => args.messages = number(&value) as usize,
            "--qos" => args.qos = qos_of(&value),
            "--subscriber-qos" => args.subscriber_qos = Some(qos_of(&value)),
            "--size" => args.size = number(&value) as usize,
            "--topic-prefix" => args.prefix = value,
            "--rate" => args.rate = number(&value).max(1),
            "--warmup-ms" => args.warmup_ms = number(&value),
            "--duration-ms" => args.duration_ms = number(&value).max(1),
            "--connections" => args.connections = number(&value) as usize,
            "--connect-concurrency" => args.connect_concurrency = number(&value).max(1) as usize,
            "--broker-pid" => {
                args.broker_pid =
                    Some(u32::try_from(number(&value)).unwrap_or_else(|_| usage("--broker-pid")))
            }
            "--settle-ms" => args.settle_ms = number(&value),
            "--keep-alive" => args.keep_alive_s = number(&value).max(5),
            "--sub-host" => args.sub_host = Some(value),
            "--sub-port" => {
                args.sub_port = Some(
                    u16::try_from(number(&value))
                        .unwrap_or_else(|_| usage("--sub-port is at most 65535")),
                )
            }
            "--sub-username" => args.sub_username = Some(value),
            "--sub-password" => args.sub_password = Some(value),
            "--sub-prefix" => args.sub_prefix = Some(value),
            "--topics" => args.topics = number(&value) as usize,
            "--alarm-filter" => args.alarm_filter = value,
            "--crossing-base" => args.crossing_base = number(&value),
            "--reset-ms" => args.reset_ms = number(&value),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    args
}
