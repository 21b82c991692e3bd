//! Rendering tests: a stream of messages goes into an [`App`], the screen is drawn on ratatui's
//! `TestBackend`, and the assertions read the rendered buffer.

use super::app::App;
use super::history::{HistoryEvent, Trend};
use super::mqtt::{ConnState, MqttEvent};
use super::render;
use super::snapshot::LastValue;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;
use std::time::{Duration, Instant};

fn msg(topic: &str, payload: &[u8], retain: bool) -> MqttEvent {
    MqttEvent::Message {
        topic: topic.into(),
        payload: payload.to_vec(),
        retain,
        qos: 1,
    }
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

/// Renders `app` at `now` on a `width`×`height` test terminal; returns the screen lines.
fn screen(
    app: &mut App,
    now: Instant,
    width: u16,
    height: u16,
) -> (Vec<String>, Terminal<TestBackend>) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| render::draw(frame, app, now))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let lines = (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect();
    (lines, terminal)
}

fn find(lines: &[String], needle: &str) -> Option<usize> {
    lines.iter().position(|l| l.contains(needle))
}

fn stream(t0: Instant) -> App {
    let mut app = App::new("mqtt://127.0.0.1:1883".into(), "#".into(), t0);
    app.on_mqtt(MqttEvent::State(ConnState::Connected), t0);
    for i in 0..10u64 {
        let at = t0 + Duration::from_millis(i * 500);
        let temp = format!("{}", 20 + i);
        app.on_mqtt(msg("acme/line1/temp", temp.as_bytes(), false), at);
    }
    app.on_mqtt(
        msg(
            "acme/line1/state",
            br#"{"mode":"auto","speed":3,"note":"a rather long description that will not fit"}"#,
            true,
        ),
        t0,
    );
    app.on_mqtt(msg("acme/line2/raw", &[0xde, 0xad, 0xbe, 0xef], false), t0);
    app.on_mqtt(msg("acme/line2/text", b"hello world", false), t0);
    app
}

#[test]
fn tree_values_ages_rates_and_sparklines() {
    let t0 = Instant::now();
    let mut app = stream(t0);
    let now = t0 + Duration::from_millis(5000);
    let (lines, _) = screen(&mut app, now, 140, 24);
    let text = lines.join("\n");
    assert!(lines[0].contains("UNS · 4 topics · 13 msgs"), "{text}");
    let row = &lines[find(&lines, "temp").expect("temp row")];
    assert!(row.contains("      temp"), "indented two levels: {row}");
    assert!(row.contains("29"), "last value: {row}");
    assert!(row.contains("0.5s"), "age: {row}");
    assert!(row.contains("1.7/s"), "rate over the 6 s seen: {row}");
    assert!(row.contains("▁▂▃▃▄▅▆▆▇█"), "sparkline: {row}");
    let state = &lines[find(&lines, "state").unwrap()];
    assert!(
        state.contains(r#"{"mode":"auto","note":"a rather"#),
        "{state}"
    );
    assert!(state.contains('…'), "long JSON is cut: {state}");
    assert!(text.contains("<binary 4 B> de ad be ef"), "{text}");
    assert!(text.contains("hello world"), "{text}");
    assert!(text.contains("▾ acme"), "{text}");
    assert!(text.contains("● connected"), "{text}");
    assert!(text.contains("mqtt://127.0.0.1:1883 sub #"), "{text}");
}

#[test]
fn fresh_values_are_highlighted_and_fade() {
    let t0 = Instant::now();
    let mut app = stream(t0);
    let now = t0 + Duration::from_millis(4600);
    let (lines, terminal) = screen(&mut app, now, 140, 24);
    let y = find(&lines, "temp").unwrap() as u16;
    let buffer = terminal.backend().buffer();
    let col = (0..140u16)
        .find(|&cx| buffer[(cx, y)].symbol() == "2" && buffer[(cx + 1, y)].symbol() == "9")
        .unwrap();
    assert_eq!(buffer[(col, y)].fg, Color::Yellow);
    assert!(buffer[(col, y)].modifier.contains(Modifier::BOLD));
    let later = t0 + Duration::from_secs(30);
    let (lines, terminal) = screen(&mut app, later, 140, 24);
    let y = find(&lines, "temp").unwrap() as u16;
    let buffer = terminal.backend().buffer();
    let col = (0..140u16)
        .find(|&cx| buffer[(cx, y)].symbol() == "2" && buffer[(cx + 1, y)].symbol() == "9")
        .unwrap();
    assert_ne!(buffer[(col, y)].fg, Color::Yellow);
    assert!(lines[y as usize].contains("25s"), "{}", lines[y as usize]);
}

#[test]
fn detail_pane_shows_payload_flags_and_live_spark() {
    let t0 = Instant::now();
    let mut app = stream(t0);
    let now = t0 + Duration::from_secs(5);
    for _ in 0..2 {
        key(&mut app, KeyCode::Down); // acme/line1, then acme/line1/state
    }
    let (lines, _) = screen(&mut app, now, 140, 30);
    let text = lines.join("\n");
    assert!(text.contains(" acme/line1/state "), "pane title: {text}");
    assert!(text.contains("retained yes  QoS 1  updates 1"), "{text}");
    assert!(text.contains("json object"), "{text}");
    assert!(text.contains(r#""mode": "auto","#), "pretty JSON: {text}");
    assert!(text.contains("no numeric values"), "{text}");
    key(&mut app, KeyCode::Down); // temp
    let (lines, _) = screen(&mut app, now, 140, 30);
    let text = lines.join("\n");
    assert!(
        text.contains("live values · 20 … 29 · not historized"),
        "{text}"
    );
}

#[test]
fn historized_tag_shows_the_historian_chart() {
    let t0 = Instant::now();
    let mut app = stream(t0);
    app.on_history(
        HistoryEvent::Historized(Ok(vec!["acme/line1/temp".into()])),
        t0,
    );
    for _ in 0..3 {
        key(&mut app, KeyCode::Down);
    }
    let requests = app.history_due(t0);
    assert!(requests.contains(&super::history::HistoryRequest::Trend(
        "acme/line1/temp".into()
    )));
    let (lines, _) = screen(&mut app, t0, 140, 30);
    assert!(lines.join("\n").contains("loading history…"));
    let points: Vec<(f64, f64)> = (0..60)
        .map(|i| (f64::from(i) - 60.0, f64::from(i % 7)))
        .collect();
    app.on_history(
        HistoryEvent::Trend {
            topic: "acme/line1/temp".into(),
            result: Ok(Trend {
                points,
                total: 60,
                bucketed: false,
            }),
            at: t0,
        },
        t0,
    );
    let (lines, _) = screen(&mut app, t0, 140, 30);
    let text = lines.join("\n");
    assert!(text.contains("last hour · historian · 60 values"), "{text}");
    assert!(text.contains("-60m") && text.contains("now"), "{text}");
    assert!(text.contains("historized yes"), "{text}");
    let braille = text
        .chars()
        .filter(|c| ('\u{2800}'..='\u{28ff}').contains(c))
        .count();
    assert!(braille > 20, "a plotted line: {text}");
}

#[test]
fn filter_collapse_status_and_help() {
    let t0 = Instant::now();
    let mut app = stream(t0);
    key(&mut app, KeyCode::Char('/'));
    for c in "line2".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    let (lines, _) = screen(&mut app, t0, 140, 20);
    let text = lines.join("\n");
    assert!(text.contains("/line2▏"), "{text}");
    assert!(find(&lines, "temp").is_none(), "{text}");
    assert!(find(&lines, "raw").is_some(), "{text}");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Down); // acme/line2
    key(&mut app, KeyCode::Enter); // collapse it
    let (lines, _) = screen(&mut app, t0, 140, 20);
    let text = lines.join("\n");
    assert!(text.contains("filter: line2"), "{text}");
    assert!(
        text.contains("▸ line2") && text.contains("(2 topics)"),
        "{text}"
    );
    assert!(find(&lines, "raw").is_none(), "{text}");
    key(&mut app, KeyCode::Char('p'));
    app.on_mqtt(
        MqttEvent::State(ConnState::Disconnected {
            error: "connection refused".into(),
            retry_in: Duration::from_secs(2),
        }),
        t0,
    );
    key(&mut app, KeyCode::Char('?'));
    let (lines, _) = screen(&mut app, t0, 140, 20);
    let text = lines.join("\n");
    assert!(
        text.contains("✕ disconnected: connection refused · retry in 2.0s"),
        "{text}"
    );
    assert!(text.contains("PAUSED · 0 queued"), "{text}");
    assert!(
        text.contains("svc tui · keys") && text.contains("filter topics by substring"),
        "{text}"
    );
}

#[test]
fn narrow_terminals_stack_the_panes() {
    let t0 = Instant::now();
    let mut app = stream(t0);
    let (lines, _) = screen(&mut app, t0, 60, 30);
    let text = lines.join("\n");
    assert!(text.contains("UNS"), "{text}");
    assert!(find(&lines, "temp").is_some(), "{text}");
    // Detail pane below the tree, titled with the selection.
    assert!(
        find(&lines, " acme ").unwrap() > find(&lines, "UNS").unwrap(),
        "{text}"
    );
    // Tiny terminals do not panic.
    screen(&mut app, t0, 10, 4);
    screen(&mut app, t0, 1, 1);
}

#[test]
fn empty_tree_says_what_it_waits_for() {
    let t0 = Instant::now();
    let mut app = App::new("ws://h:1/mqtt".into(), "plant/#".into(), t0);
    let (lines, _) = screen(&mut app, t0, 120, 10);
    let text = lines.join("\n");
    assert!(text.contains("waiting for messages on `plant/#`"), "{text}");
    assert!(text.contains("connecting…"), "{text}");
}

#[test]
fn the_status_bar_shows_each_upstreams_and_connectors_state() {
    use crate::model::{LinkBrief, LinkState};
    let t0 = Instant::now();
    let mut app = stream(t0);
    let brief = |name: &str, state| LinkBrief {
        name: name.into(),
        state,
    };
    app.on_history(
        HistoryEvent::Upstreams(Some(vec![
            brief("plant", LinkState::Connected),
            brief("cloud", LinkState::Error),
        ])),
        t0,
    );
    let (lines, terminal) = screen(&mut app, t0, 160, 20);
    let bar = lines.last().expect("a status line");
    assert!(bar.contains("⇅ plant connected"), "{bar}");
    assert!(bar.contains("⇅ cloud error"), "{bar}");
    let x = bar
        .find("⇅ cloud")
        .map(|i| bar[..i].chars().count())
        .expect("cloud");
    let cell = &terminal.backend().buffer()[(x as u16, 19)];
    assert_eq!(cell.bg, Color::Red, "an upstream in error is red");
    // Without rights (or upstreams) the bar says nothing about them.
    app.on_history(HistoryEvent::Upstreams(None), t0);
    let (lines, _) = screen(&mut app, t0, 160, 20);
    assert!(!lines.last().expect("status").contains('⇅'));

    // Connectors beside them, by their own sign.
    app.on_history(
        HistoryEvent::Connectors(Some(vec![
            brief("press", LinkState::Backoff),
            brief("line1", LinkState::Standby),
        ])),
        t0,
    );
    let (lines, terminal) = screen(&mut app, t0, 160, 20);
    let bar = lines.last().expect("a status line");
    assert!(bar.contains("⚙ press backoff"), "{bar}");
    assert!(bar.contains("⚙ line1 standby"), "{bar}");
    let x = bar
        .find("⚙ press")
        .map(|i| bar[..i].chars().count())
        .expect("press");
    let cell = &terminal.backend().buffer()[(x as u16, 19)];
    assert_eq!(
        cell.bg,
        Color::Yellow,
        "a connector waiting to retry is yellow"
    );
}

#[test]
fn the_status_bar_counts_the_alarms_waiting_for_acknowledgement() {
    use super::history::AlarmCount;
    let t0 = Instant::now();
    let mut app = stream(t0);
    // Not readable (no rights): nothing about alarms.
    let (lines, _) = screen(&mut app, t0, 160, 20);
    assert!(!lines.last().expect("status").contains("alarm"));
    app.on_history(HistoryEvent::Alarms(Some(AlarmCount::default())), t0);
    let (lines, _) = screen(&mut app, t0, 160, 20);
    assert!(
        lines[19].contains("no alarms unacknowledged"),
        "{}",
        lines[19]
    );
    let counted = AlarmCount {
        unacknowledged: 2,
        top: Some("critical"),
    };
    app.on_history(HistoryEvent::Alarms(Some(counted)), t0);
    let (lines, terminal) = screen(&mut app, t0, 160, 20);
    let bar = &lines[19];
    let at = bar.find("▲ 2 alarms unacknowledged").expect(bar);
    // Beside the connection, before the endpoint, so a narrow bar keeps it.
    assert!(at < bar.find("mqtt://").expect(bar), "{bar}");
    let x = bar[..at].chars().count() as u16;
    assert_eq!(terminal.backend().buffer()[(x, 19)].bg, Color::Red);
    let one_low = AlarmCount {
        unacknowledged: 1,
        top: Some("low"),
    };
    app.on_history(HistoryEvent::Alarms(Some(one_low)), t0);
    let (lines, terminal) = screen(&mut app, t0, 160, 20);
    let at = lines[19]
        .find("▲ 1 alarm unacknowledged")
        .expect(&lines[19]);
    let x = lines[19][..at].chars().count() as u16;
    assert_eq!(terminal.backend().buffer()[(x, 19)].bg, Color::Cyan);
}

#[test]
fn a_value_from_the_servers_last_values_shows_its_age_and_origin() {
    let t0 = Instant::now();
    let mut app = App::new("mqtt://127.0.0.1:1883".into(), "#".into(), t0);
    let old = LastValue {
        topic: "acme/pump".into(),
        payload: b"12.5".to_vec(),
        age: Duration::from_secs(90),
    };
    app.on_history(HistoryEvent::LastValues(Ok(vec![old])), t0);
    app.on_history(
        HistoryEvent::LastValues(Err("GET /svc/tag/stream: 403 Forbidden".into())),
        t0,
    );
    key(&mut app, KeyCode::Down); // acme/pump
    let (lines, _) = screen(&mut app, t0, 140, 24);
    let row = lines
        .iter()
        .find(|l| l.contains("pump") && l.contains("12.5"));
    assert!(row.is_some_and(|r| r.contains("1m")), "its age: {lines:#?}");
    let text = lines.join("\n");
    assert!(text.contains("server's last value  updates 1"), "{text}");
    assert!(text.contains("UNS · 1 topics · 0 msgs"), "{text}");
    let bar = lines.last().expect("a status line");
    assert!(
        bar.contains("last values: GET /svc/tag/stream: 403"),
        "{bar}"
    );
}
