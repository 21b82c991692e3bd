//! End-to-end test of `svc tui` (SPEC 11): starts `svc serve` on fixed free ports, runs the
//! monitor inside a detached `tmux` session (its own server socket), publishes tags over MQTT,
//! and reads the screen with `tmux capture-pane`: the tree starts from the server's last values
//! and follows MQTT, the historian trend of a historized tag shows, `/` filters and Enter
//! collapses through `send-keys`, a broker restart is survived, the status bar shows the
//! domain's upstreams and their states, and `q`, signals and a closed window end it with the
//! terminal restored where it still exists (alternate screen left, canonical mode and echo back
//! on). No `svc tui` outlives its test (see `tui_support`). tmux is required: CI installs it
//! (`.ci/run`).

use crate::tui_support::*;
use reqwest::blocking::Client;
use serde_json::json;
use std::process::Command;
use std::time::Duration;

#[test]
fn tui_shows_the_tree_filters_collapses_survives_restarts_and_quits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(dir.path());
    let key = setup(&serve);
    publish(
        serve.mqtt,
        &key,
        &[
            ("plant/line1/temp", b"21.5", false),
            ("plant/line1/state", br#"{"mode":"auto","speed":3}"#, true),
            ("plant/line2/raw", &[0xde, 0xad, 0xbe, 0xef], true),
            ("plant/line2/text", b"hello operator", true),
        ],
    );
    let tmux = Tmux::start(
        dir.path(),
        &format!("--url {} --api-key {key}", serve.url()),
    );

    // Retained values arrive on subscribe; the tree shows levels, values and the connection.
    let screen = tmux.wait_for("the retained tags", |s| {
        s.contains("hello operator") && s.contains("● connected")
    });
    assert!(screen.contains("▾ plant"), "{screen}");
    assert!(screen.contains(r#"{"mode":"auto","speed":3}"#), "{screen}");
    assert!(screen.contains("<binary 4 B> de ad be ef"), "{screen}");
    assert!(
        screen.contains(&format!("mqtt://127.0.0.1:{} sub #", serve.mqtt)),
        "{screen}"
    );

    // Live values: the last one shows, with a sparkline.
    for v in ["22.5", "23.5", "24.5"] {
        publish(
            serve.mqtt,
            &key,
            &[("plant/line1/temp", v.as_bytes(), false)],
        );
    }
    tmux.wait_for("the latest temperature", |s| {
        s.lines().any(|l| l.contains("temp") && l.contains("24.5"))
    });

    // Select temp (plant, line1, state, temp): the detail pane and the historian trend.
    tmux.keys(&["j", "j", "j"]);
    let screen = tmux.wait_for("the historian trend", |s| {
        s.contains("last hour · historian") && s.contains("historized yes")
    });
    assert!(screen.contains("plant/line1/temp"), "{screen}");

    // `/` filters by substring.
    tmux.keys(&["/", "line2", "Enter"]);
    let screen = tmux.wait_for("the filter", |s| s.contains("filter: line2"));
    let tree = tree_pane(&screen);
    assert!(tree.contains("raw") && tree.contains("text"), "{screen}");
    assert!(
        !tree.contains("temp") && !tree.contains("state"),
        "{screen}"
    );

    // Enter collapses the selected branch.
    tmux.keys(&["g", "j", "Enter"]);
    let screen = tmux.wait_for("line2 collapsed", |s| tree_pane(s).contains("▸ line2"));
    let tree = tree_pane(&screen);
    assert!(tree.contains("(2 topics)"), "{screen}");
    assert!(!tree.contains("raw"), "{screen}");
    tmux.keys(&["Escape", "Enter"]);
    tmux.wait_for("filter cleared, line2 expanded", |s| {
        let tree = tree_pane(s);
        tree.contains("temp") && tree.contains("raw") && !s.contains("filter:")
    });

    // The broker restarts: the monitor shows it and reconnects on its own.
    serve.stop();
    tmux.wait_for("the disconnected state", |s| s.contains("disconnected"));
    serve.spawn();
    tmux.wait_for("the reconnection", |s| s.contains("● connected"));
    publish(serve.mqtt, &key, &[("plant/line3/after", b"42", false)]);
    tmux.wait_for("a tag published after the restart", |s| {
        s.lines().any(|l| l.contains("after") && l.contains("42"))
    });

    // `q` quits and the terminal is restored.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("TTY "));
    assert!(screen.contains("TUI-EXITED-0"), "{screen}");
    assert!(!screen.contains("UNS ·"), "alternate screen left: {screen}");
    let tty = screen.lines().find(|l| l.starts_with("TTY ")).unwrap_or("");
    assert!(
        tty.contains(" icanon") && tty.contains(" echo"),
        "raw mode off: {screen}"
    );
    assert_eq!(tmux.alternate_screen(), "0");
}

#[test]
fn tui_over_websocket_with_a_topic_filter_and_a_bad_key() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    // An upstream nobody answers: the status bar shows it waiting to try again.
    let http = Client::builder().no_proxy().build().unwrap();
    let upstream = http
        .post(format!("{}/svc/upstreams", serve.url()))
        .header("X-Svc-Api-Key", &key)
        .json(
            &json!({"name": "corp", "host": "127.0.0.1", "port": free_port(),
            "reconnect": {"initial": "5s", "max": "5s"}}),
        )
        .send()
        .unwrap();
    assert_eq!(upstream.status(), 201, "create upstream");
    publish(
        serve.mqtt,
        &key,
        &[
            ("site/a/flow", b"7", true),
            ("site/a/level", b"0.75", false),
            ("elsewhere/b", b"\"hidden\"", true),
            ("elsewhere/c", b"\"unseen\"", false),
        ],
    );
    let tmux = Tmux::start(
        dir.path(),
        &format!(
            "--url {} --api-key {key} --ws --topic 'site/#'",
            serve.url()
        ),
    );
    // The server's last values are read with the same filter as the subscription.
    let screen = tmux.wait_for("the WebSocket subscription", |s| {
        s.contains("● connected")
            && s.lines().any(|l| l.contains("flow") && l.contains('7'))
            && s.lines().any(|l| l.contains("level") && l.contains("0.75"))
    });
    assert!(
        screen.contains(&format!("ws://127.0.0.1:{}/mqtt sub site/#", serve.ws)),
        "{screen}"
    );
    assert!(
        !screen.contains("hidden") && !screen.contains("unseen"),
        "{screen}"
    );
    tmux.wait_for("the upstream in the status bar", |s| {
        s.contains("⇅ corp backoff") || s.contains("⇅ corp connecting")
    });
    tmux.keys(&["C-c"]);
    tmux.wait_for("Ctrl-C to quit", |s| s.contains("TUI-EXITED-0"));
    drop(tmux);

    // A credential the server refuses: a plain error, exit 1, terminal untouched.
    let tmux = Tmux::start(
        dir.path(),
        &format!(
            "--url {} --api-key svcx_not_a_valid_key_at_all_0000000000",
            serve.url()
        ),
    );
    let screen = tmux.wait_for("the refusal", |s| s.contains("TTY "));
    assert!(screen.contains("TUI-EXITED-1"), "{screen}");
    assert!(
        screen.contains("svc: error:") && screen.contains("401"),
        "{screen}"
    );
}

#[test]
fn tui_restores_the_terminal_when_terminated_hung_up_or_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let tmux = Tmux::start(
            dir.path(),
            &format!("--url {} --api-key {key}", serve.url()),
        );
        tmux.wait_for("the monitor", |s| s.contains("● connected"));
        assert_eq!(tmux.alternate_screen(), "1");
        let tui = tmux.tui_pid();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &tui.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {tui}");
        if let Err(late) = wait_gone(tui, Duration::from_secs(1)) {
            panic!("after SIG{signal}: {late}");
        }
        let screen = tmux.wait_for("the exit", |s| s.contains("TTY "));
        assert!(screen.contains(&format!("TUI-EXITED-{code}")), "{screen}");
        assert!(!screen.contains("UNS ·"), "alternate screen left: {screen}");
        let tty = screen.lines().find(|l| l.starts_with("TTY ")).unwrap_or("");
        assert!(
            tty.contains(" icanon") && tty.contains(" echo"),
            "raw mode off after SIG{signal}: {screen}"
        );
        assert_eq!(tmux.alternate_screen(), "0");
    }
}

/// Closing the window hangs up the monitor's terminal: it must end within a second, not spin.
/// With `setsid` the monitor is in a session of its own, so no SIGHUP reaches it (as when a
/// shell does not pass the hang-up on): only its reads failing on the dead terminal tell it.
#[test]
fn tui_ends_when_its_terminal_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    for wrapper in ["", "setsid -w"] {
        let tmux = Tmux::start_with(
            dir.path(),
            &format!("--url {} --api-key {key}", serve.url()),
            wrapper,
        );
        tmux.wait_for("the monitor", |s| s.contains("● connected"));
        let tui = tmux.tui_pid();
        tmux.kill_session();
        if let Err(late) = wait_gone(tui, Duration::from_secs(1)) {
            panic!("window closed (svc tui started with `{wrapper}`): {late}");
        }
    }
}

/// The tree starts from the last value the server holds of every tag, not only from what is
/// published after the monitor starts (these values are not retained, so MQTT cannot replay
/// them), then follows MQTT.
#[test]
fn tui_starts_from_the_servers_last_values() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    publish(
        serve.mqtt,
        &key,
        &[
            ("plant/line1/temp", b"19.25", false),
            ("plant/line4/pressure", b"3.5", false),
            ("plant/line4/mode", br#"{"auto":true}"#, false),
            ("plant/line4/note", b"shift two", false),
        ],
    );
    let tmux = Tmux::start(
        dir.path(),
        &format!("--url {} --api-key {key}", serve.url()),
    );
    let row = |s: &str, name: &str, value: &str| {
        tree_pane(s)
            .lines()
            .any(|l| l.contains(name) && l.contains(value))
    };
    let screen = tmux.wait_for("the server's last values", |s| {
        s.contains("● connected")
            && row(s, "temp", "19.25")
            && row(s, "pressure", "3.5")
            && row(s, "mode", r#"{"auto":true}"#)
            && row(s, "note", "shift two")
    });
    assert!(screen.contains("▾ line4"), "{screen}");
    assert!(screen.contains(" 4 topics"), "{screen}");

    // Then it follows MQTT.
    publish(
        serve.mqtt,
        &key,
        &[("plant/line4/pressure", b"3.75", false)],
    );
    tmux.wait_for("a value published afterwards", |s| {
        row(s, "pressure", "3.75")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the exit", |s| s.contains("TUI-EXITED-0"));
}
