//! Parked connections (issue 13, idle memory): a plain-TCP client quiet for two seconds both
//! ways parks (no task, no reactor slot; counted by `svc_mqtt_connections_parked`), and comes
//! back for every way in: a delivery queued for it, a packet it sends, a takeover, a dropped
//! socket (its will goes out), the keep-alive sweep. WebSocket clients do not park.

use crate::common::*;
use rmqtt_codec::types::QoS;
use rmqtt_codec::{v3, v5};
use std::time::Duration;

const PARKED: &str = "svc_mqtt_connections_parked";

const RESUMED: &str = "svc_mqtt_connections_resumed_total";

/// Waits until exactly `n` connections are parked, then checks that they stay parked while
/// nothing happens (the hub's sweeps must not bring them back).
fn wait_parked(server: &Server, n: usize) {
    server.poll(Duration::from_secs(10), &format!("{n} parked"), || {
        let parked = sample(&server.scrape(), PARKED);
        (parked == n as f64).then_some(())
    });
    let before = server.scrape();
    std::thread::sleep(Duration::from_millis(1200));
    let after = server.scrape();
    assert_eq!(sample(&after, PARKED), n as f64, "{after}");
    assert_eq!(
        sample(&after, RESUMED),
        sample(&before, RESUMED),
        "parked connections were brought back with nothing to do"
    );
}

#[test]
fn a_quiet_tcp_client_parks_and_every_way_in_brings_it_back() {
    let server = Server::start();
    let (mut v5_client, _) = Raw5::connect_ok(&server, Via::Tcp, connect5("park5"));
    v5_client.subscribe("park/#", 1);
    let will = v3::LastWill {
        qos: QoS::AtLeastOnce,
        retain: false,
        topic: "park/will".to_string().into(),
        message: "park3 is gone".into(),
    };
    let (mut v3_client, _) = Raw3::connect_ok(
        &server,
        Via::Tcp,
        v3::Connect {
            last_will: Some(will),
            ..connect3("park3")
        },
    );
    v3_client.subscribe("park/#", 1);
    // A WebSocket client stays as it is, however quiet.
    let (mut ws_client, _) = Raw5::connect_ok(&server, Via::Ws("/mqtt"), connect5("park-ws"));
    ws_client.subscribe("park/#", 1);
    wait_parked(&server, 2);

    // A delivery queued for a parked client brings it back, and it gets the message.
    server.publish_as_admin("park/a", "to the parked");
    for publish in [
        v5_client.expect_publish(),
        v3_client.expect_publish(),
        ws_client.expect_publish(),
    ] {
        assert_eq!(publish.topic, "park/a");
        assert_eq!(&publish.payload[..], b"to the parked");
    }
    wait_parked(&server, 2);

    // A packet from a parked client brings it back: its publish is acknowledged and routed.
    let ack = v5_client
        .publish(publish_packet("park/b", "from the parked", 1, false))
        .expect("PUBACK");
    assert_eq!(ack.reason_code, v5::PublishAckReason::Success);
    assert_eq!(v3_client.expect_publish().topic, "park/b");
    assert_eq!(
        v5_client.expect_publish().topic,
        "park/b",
        "no No Local asked"
    );
    assert_eq!(ws_client.expect_publish().topic, "park/b");
    v5_client.send(v5::Packet::PingRequest);
    v5_client.expect("PINGRESP", |p| matches!(p, v5::Packet::PingResponse));
    wait_parked(&server, 2);

    // A takeover of a parked client's session ends it with 0x8E.
    let (mut taker, _) = Raw5::connect_ok(&server, Via::Tcp, connect5("park5"));
    assert_eq!(
        v5_client.ending(Duration::from_secs(5)),
        Ending::Disconnect(v5::DisconnectReasonCode::SessionTakenOver)
    );
    taker.send(v5::Packet::PingRequest);
    taker.expect("PINGRESP", |p| matches!(p, v5::Packet::PingResponse));

    // A parked client whose socket is dropped ends as any other: its will goes out.
    taker.subscribe("park/will", 1);
    wait_parked(&server, 2);
    v3_client.drop_connection();
    let will = taker.expect_publish();
    assert_eq!(will.topic, "park/will");
    assert_eq!(&will.payload[..], b"park3 is gone");
    let will = ws_client.expect_publish();
    assert_eq!(will.topic, "park/will");
}

#[test]
fn a_parked_client_that_stays_silent_is_still_dropped_after_its_keep_alive() {
    let server = Server::start();
    let (mut silent, _) = Raw5::connect_ok(
        &server,
        Via::Tcp,
        v5::Connect {
            keep_alive: 4,
            ..connect5("silent")
        },
    );
    // Quiet for 2 s: parked, four seconds before its keep alive runs out (6 s).
    wait_parked(&server, 1);
    assert_eq!(
        silent.ending(Duration::from_secs(8)),
        Ending::Disconnect(v5::DisconnectReasonCode::KeepAliveTimeout)
    );
    wait_parked(&server, 0);
    assert_eq!(sample(&server.scrape(), "svc_mqtt_connections"), 0.0);
}
