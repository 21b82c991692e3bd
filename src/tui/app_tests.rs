//! Unit tests of the monitor state: keys, modes, pause, history requests, the server's last
//! values, scrolling.
use super::super::payload::Payload;
use super::*;
use std::time::Duration;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn msg(topic: &str, payload: &str) -> MqttEvent {
    MqttEvent::Message {
        topic: topic.into(),
        payload: payload.as_bytes().to_vec(),
        retain: false,
        qos: 0,
    }
}

fn app() -> App {
    let now = Instant::now();
    let mut app = App::new("mqtt://h:1".into(), "#".into(), now);
    for (t, v) in [("a/x", "1"), ("a/y", "2"), ("b/z", "3")] {
        app.on_mqtt(msg(t, v), now);
    }
    app.sync_selection();
    app
}

fn selected_path(app: &App) -> String {
    app.tree.node(app.selected.unwrap()).path.clone()
}

#[test]
fn moves_with_arrows_and_vim_keys() {
    let mut app = app();
    assert_eq!(selected_path(&app), "a");
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Char('j')));
    assert_eq!(selected_path(&app), "a/y");
    app.on_key(key(KeyCode::Char('k')));
    assert_eq!(selected_path(&app), "a/x");
    app.on_key(key(KeyCode::Char('h')));
    assert_eq!(selected_path(&app), "a");
    app.on_key(key(KeyCode::Char('h')));
    assert_eq!(app.tree.rows().len(), 3, "a collapsed");
    app.on_key(key(KeyCode::Char('l')));
    app.on_key(key(KeyCode::Right));
    assert_eq!(selected_path(&app), "a/x");
    app.on_key(key(KeyCode::End));
    assert_eq!(selected_path(&app), "b/z");
}

#[test]
fn enter_and_space_toggle() {
    let mut app = app();
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.tree.rows().len(), 3);
    app.on_key(key(KeyCode::Char(' ')));
    assert_eq!(app.tree.rows().len(), 5);
}

#[test]
fn filter_mode_edits_live_and_escape_clears() {
    let mut app = app();
    app.on_key(key(KeyCode::Char('/')));
    assert_eq!(app.mode, Mode::Filter);
    for c in "zq".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    assert!(app.tree.rows().is_empty());
    assert_eq!(app.selected, None);
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.tree.rows().len(), 2);
    assert_eq!(selected_path(&app), "b");
    // `q` typed in filter mode is text, not quit.
    app.on_key(key(KeyCode::Char('/')));
    app.on_key(key(KeyCode::Char('q')));
    assert!(!app.quit);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.tree.filter(), "");
    app.on_key(key(KeyCode::Char('q')));
    assert!(app.quit);
}

#[test]
fn pause_queues_and_resume_applies() {
    let mut app = app();
    let now = Instant::now();
    app.on_key(key(KeyCode::Char('p')));
    app.on_mqtt(msg("c/new", "9"), now);
    app.on_mqtt(MqttEvent::State(ConnState::Connected), now);
    assert_eq!(app.conn, ConnState::Connected);
    assert_eq!((app.queued(), app.tree.topic_count()), (1, 3));
    app.on_key(key(KeyCode::Char('p')));
    assert_eq!((app.queued(), app.tree.topic_count()), (0, 4));
}

#[test]
fn clear_help_and_ctrl_c() {
    let mut app = app();
    app.on_key(key(KeyCode::Char('c')));
    assert_eq!(app.tree.topic_count(), 0);
    assert_eq!(app.selected, None);
    app.on_key(key(KeyCode::Char('?')));
    assert!(app.help);
    app.on_key(key(KeyCode::Char('j')));
    assert!(!app.help && !app.quit);
    app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.quit);
}

#[test]
fn history_is_requested_for_historized_selection_only() {
    let mut app = app();
    let now = Instant::now();
    assert_eq!(
        app.history_due(now),
        [
            HistoryRequest::Historized,
            HistoryRequest::Upstreams,
            HistoryRequest::Alarms
        ]
    );
    // The alarms are counted every second, more often than the rest.
    assert_eq!(
        app.history_due(now + Duration::from_secs(1)),
        [HistoryRequest::Alarms]
    );
    app.on_history(HistoryEvent::Historized(Ok(vec!["a/x".into()])), now);
    assert!(app.history_due(now).is_empty(), "`a` has no value");
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.history_due(now), [HistoryRequest::Trend("a/x".into())]);
    assert!(app.history_due(now).is_empty(), "pending");
    app.on_history(
        HistoryEvent::Trend {
            topic: "a/x".into(),
            result: Err("boom".into()),
            at: now,
        },
        now,
    );
    assert!(matches!(
        app.trend.as_ref().map(|t| &t.state),
        Some(TrendState::Failed(_))
    ));
    let later = now + TREND_REFRESH;
    assert!(app
        .history_due(later)
        .contains(&HistoryRequest::Trend("a/x".into())));
    app.on_key(key(KeyCode::Down));
    app.history_due(later);
    assert!(app.trend.is_none());
}

#[test]
fn scroll_keeps_selection_visible() {
    let now = Instant::now();
    let mut app = App::new(String::new(), "#".into(), now);
    for i in 0..100 {
        app.on_mqtt(msg(&format!("t{i:03}"), "1"), now);
    }
    app.sync_selection();
    app.scroll_to_selection(10);
    app.on_key(key(KeyCode::PageDown));
    app.on_key(key(KeyCode::PageDown));
    app.scroll_to_selection(10);
    assert_eq!((app.row, app.offset), (20, 11));
    app.on_key(key(KeyCode::Home));
    app.scroll_to_selection(10);
    assert_eq!((app.row, app.offset), (0, 0));
}

fn last_value(topic: &str, payload: &str) -> LastValue {
    LastValue {
        topic: topic.into(),
        payload: payload.as_bytes().to_vec(),
        age: Duration::from_secs(3),
    }
}

#[test]
fn each_subscription_reads_the_servers_last_values_and_keeps_newer_live_ones() {
    let now = Instant::now();
    let mut app = App::new("mqtt://h:1".into(), "plant/#".into(), now);
    app.history_due(now);
    app.on_mqtt(MqttEvent::Subscribed, now);
    assert_eq!(
        app.history_due(now),
        [HistoryRequest::LastValues("plant/#".into())]
    );
    assert!(
        app.history_due(now).is_empty(),
        "asked once per subscription"
    );
    // A live value arrives before the snapshot: the snapshot's older one does not replace it.
    app.on_mqtt(msg("plant/a", "live"), now);
    let snapshot = vec![last_value("plant/a", "old"), last_value("plant/b", "7")];
    app.on_history(HistoryEvent::LastValues(Ok(snapshot)), now);
    let value = |app: &App, topic: &str| {
        let id = app.tree.find(topic).expect(topic);
        app.tree.node(id).tag.as_ref().unwrap().payload.clone()
    };
    assert_eq!(value(&app, "plant/a"), Payload::Text("live".into()));
    assert_eq!(value(&app, "plant/b"), Payload::Json(serde_json::json!(7)));

    // Paused across a reconnection: applied in arrival order when the pause ends.
    app.on_key(key(KeyCode::Char('p')));
    app.on_mqtt(MqttEvent::Subscribed, now);
    assert_eq!(
        app.history_due(now)[0],
        HistoryRequest::LastValues("plant/#".into())
    );
    app.on_mqtt(msg("plant/b", "8"), now);
    let snapshot = vec![last_value("plant/a", "newer"), last_value("plant/b", "7")];
    app.on_history(HistoryEvent::LastValues(Ok(snapshot)), now);
    assert_eq!(
        (app.queued(), value(&app, "plant/b")),
        (3, Payload::Json(serde_json::json!(7)))
    );
    app.on_key(key(KeyCode::Char('p')));
    assert_eq!(value(&app, "plant/a"), Payload::Text("newer".into()));
    assert_eq!(value(&app, "plant/b"), Payload::Json(serde_json::json!(8)));

    // A server that cannot give them: said, and the tree still follows MQTT.
    app.on_history(HistoryEvent::LastValues(Err("403 Forbidden".into())), now);
    assert_eq!(app.last_values_error.as_deref(), Some("403 Forbidden"));
}
