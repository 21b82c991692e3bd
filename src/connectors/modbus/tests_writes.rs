//! The modbus kind's writes and failures against the pymodbus peer: writes of every writable
//! type, exceptions, refused writes, connect failures and the watchdog.

use super::*;

#[tokio::test]
async fn writes_every_writable_type_and_reads_it_back() {
    let peer = Peer::start(&["--set=hr:300=0x00F0"]).await;
    let writes = [
        (
            json!({"function": "coil", "address": 9, "poll_interval": "1h"}),
            json!(true),
        ),
        (hr(300, json!({"type": "bit", "bit": 0})), json!(true)),
        (hr(301, json!({"type": "int16"})), json!(-12)),
        (hr(302, json!({"type": "uint16"})), json!(12.0)),
        (
            hr(310, json!({"type": "int32", "word_order": "little"})),
            json!(-12),
        ),
        (
            hr(312, json!({"type": "uint32", "byte_order": "little"})),
            json!(0x0102_0304),
        ),
        (hr(320, json!({"type": "int64"})), json!(i64::MIN)),
        (
            hr(
                330,
                json!({"type": "uint64", "byte_order": "little", "word_order": "little"}),
            ),
            json!(u64::MAX - 1),
        ),
        (hr(340, json!({"type": "float32"})), json!(1.5)),
        (
            hr(350, json!({"type": "float64", "word_order": "little"})),
            json!(-0.1),
        ),
        (
            hr(360, json!({"type": "string", "length": 3})),
            json!("svc!"),
        ),
    ];
    let points: Vec<(Value, bool)> = writes
        .iter()
        .map(|(address, _)| (address.clone(), true))
        .collect();
    let running = Running::start(&target(peer.port, json!({}), &points)).await;
    for (index, (_, value)) in writes.iter().enumerate() {
        running
            .write(index, value.clone())
            .await
            .unwrap_or_else(|e| panic!("write {index}: {e}"));
        let read_back = if index == 3 { json!(12) } else { value.clone() };
        running
            .sink
            .wait_last(index, Event::Reading(index, read_back))
            .await;
    }
    // The device holds the registers the orders say (read with a client of its own).
    let mut client = tcp::connect_slave(([127, 0, 0, 1], peer.port).into(), Slave(1))
        .await
        .unwrap();
    assert_eq!(
        hold(&mut client, 300, 2).await,
        [0x00F1, 0xFFF4],
        "the masked write kept the other bits"
    );
    assert_eq!(
        hold(&mut client, 310, 4).await,
        [0xFFF4, 0xFFFF, 0x0201, 0x0403]
    );
    assert_eq!(hold(&mut client, 360, 3).await, [0x7376, 0x6321, 0]);
    assert!(client.read_coils(9, 1).await.unwrap().unwrap()[0]);
    // Values the type cannot hold are refused before anything is sent.
    assert!(
        matches!(running.write(2, json!(40000)).await, Err(WriteError::Invalid(e)) if e.contains("out of range"))
    );
    assert!(matches!(
        running.write(4, json!("x")).await,
        Err(WriteError::Invalid(_))
    ));
    assert!(matches!(
        running.write(0, json!(7)).await,
        Err(WriteError::Invalid(_))
    ));
    assert!(matches!(
        running.write(99, json!(1)).await,
        Err(WriteError::Invalid(_))
    ));
}

/// Holding registers `start..start + count`, read with `client`.
async fn hold(client: &mut tokio_modbus::client::Context, start: u16, count: u16) -> Vec<u16> {
    client
        .read_holding_registers(start, count)
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn an_exception_fails_its_points_only() {
    let peer = Peer::start(&["--set=hr:100=7", "--busy=hr:500-500"]).await;
    let points = [
        (hr(100, json!({})), false),
        (hr(20000, json!({})), false),
        (hr(500, json!({})), false),
        (
            json!({"function": "coil", "address": 5, "poll_interval": "50ms"}),
            false,
        ),
    ];
    let running = Running::start(&target(peer.port, json!({}), &points)).await;
    let sink = &running.sink;
    sink.wait_last(
        1,
        Event::Failed(1, "illegal data address (exception 2)".into()),
    )
    .await;
    sink.wait_last(
        2,
        Event::Failed(2, "server device busy (exception 6)".into()),
    )
    .await;
    // The others go on being read.
    // The others go on being read, while the failing points keep failing.
    sink.wait(
        "five readings of points 0 and 3 after the first failures",
        |events| {
            let first = events
                .iter()
                .position(|e| matches!(e, Event::Failed(..)))
                .unwrap_or(events.len());
            let count = |wanted: Event| events[first..].iter().filter(|e| **e == wanted).count();
            count(Event::Reading(0, json!(7))) >= 5
                && count(Event::Reading(3, json!(false))) >= 5
                && count(Event::Failed(
                    1,
                    "illegal data address (exception 2)".into(),
                )) >= 5
        },
    )
    .await;
    assert!(!running.task.is_finished());
}

#[tokio::test]
async fn a_refused_write_says_the_exception() {
    let peer = Peer::start(&["--busy=hr:500-500"]).await;
    let points = [
        (hr(100, json!({})), true),
        (hr(500, json!({"poll_interval": "1h"})), true),
        (hr(20000, json!({"poll_interval": "1h"})), true),
    ];
    let running = Running::start(&target(peer.port, json!({}), &points)).await;
    assert_eq!(
        running.write(1, json!(1)).await,
        Err(WriteError::Refused(
            "server device busy (exception 6)".into()
        ))
    );
    assert_eq!(
        running.write(2, json!(1)).await,
        Err(WriteError::Refused(
            "illegal data address (exception 2)".into()
        ))
    );
    // The link goes on.
    running.write(0, json!(5)).await.unwrap();
    running.sink.wait_last(0, Event::Reading(0, json!(5))).await;
}

#[tokio::test]
async fn connect_failures_say_their_cause() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let failure = Modbus
        .connect(&target(port, json!({}), &[]))
        .await
        .err()
        .expect("a closed port");
    assert_eq!(failure.kind, FailureKind::Tcp, "{failure}");
    let mut unknown = target(port, json!({"timeout": "3s"}), &[]);
    unknown
        .settings
        .insert("host".into(), json!("no-such-host.invalid"));
    let failure = Modbus
        .connect(&unknown)
        .await
        .err()
        .expect("an unknown host");
    assert_eq!(failure.kind, FailureKind::Dns, "{failure}");
}

#[tokio::test]
async fn the_watchdog_ends_a_link_whose_requests_time_out() {
    let peer = Peer::start(&["--hang=hr:600-600"]).await;
    // Point 0 answers (the probe) and is read once; then only the hanging point is polled.
    let points = [
        (hr(0, json!({"poll_interval": "1h"})), false),
        (hr(600, json!({})), false),
    ];
    let settings = json!({"timeout": "200ms", "timeouts_before_reconnect": 2});
    let target = target(peer.port, settings, &points);
    let link = Modbus.connect(&target).await.unwrap();
    assert_eq!(
        link.description(),
        json!({"protocol": "modbus", "framing": "tcp", "host": "127.0.0.1", "port": peer.port,
               "unit_id": 1, "answered": true})
    );
    let (_writes, mut receiver) = mpsc::channel(1);
    let failure = tokio::time::timeout(
        Duration::from_secs(10),
        link.run(Arc::new(Recorder::default()), &mut receiver),
    )
    .await
    .expect("the watchdog ended the link");
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure}");
    // A unit that never answers fails the connect's probe.
    let failure = Modbus
        .connect(&target_with_first(&target, 1))
        .await
        .err()
        .expect("no answer");
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure}");
}

/// `target` with point `first` moved first (the one connect probes).
fn target_with_first(target: &Target, first: usize) -> Target {
    let mut target = target.clone();
    target.points.swap(0, first);
    target
}
