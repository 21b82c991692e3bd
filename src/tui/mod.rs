//! `svc tui`: a full-screen live monitor of the Unified Namespace. It discovers the broker's
//! listeners from `GET /svc/`, subscribes over MQTT (TCP, or WebSocket with `--ws`), and shows
//! the tag tree with last values, ages, rates and sparklines, plus the historian trend of the
//! selected tag. The tree starts from the server's last values (read again after every
//! reconnection), then follows MQTT. This module owns the arguments, the terminal (restored by a
//! guard on every exit, by a panic hook, and on SIGTERM/SIGHUP/SIGINT/SIGQUIT) and the event
//! loop: at most 10 frames a second, draining the MQTT and history channels before each. A
//! terminal that goes away (reads or writes fail on it) ends the monitor as a hang-up does.

mod app;
mod history;
mod input;
mod keys;
mod mqtt;
mod payload;
mod render;
#[cfg(test)]
mod render_tests;
mod snapshot;
mod tree;

use crate::client::Client;
use crate::client::GlobalArgs;
use anyhow::{anyhow, bail, Context};
use app::App;
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use history::Rest;
use input::{Gone, Keyboard};
use mqtt::MqttTarget;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{IsTerminal, Stdout, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Time between frames (10 fps).
const FRAME: Duration = Duration::from_millis(100);

/// `svc tui` options; `--url`, `--domain`, `--api-key` and `--profile` are the global client
/// options (see [`GlobalArgs`]).
#[derive(Debug, Clone, clap::Args)]
pub struct TuiArgs {
    /// MQTT topic filter to subscribe to.
    #[arg(long, default_value = "#")]
    pub topic: String,
    /// Connect over the broker's WebSocket listener instead of TCP.
    #[arg(long)]
    pub ws: bool,
}

/// Runs the monitor until the user quits.
pub fn run(global: &GlobalArgs, args: TuiArgs) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!("svc tui needs a terminal (stdout is not a TTY)");
    }
    let client = Client::from_args(global).map_err(|e| anyhow!("{e}"))?;
    let rest = Rest::new(client);
    let info = rest.device_info().context("discovering the broker")?;
    let password = rest.mqtt_password();
    let target = mqtt_target(rest.base(), &args, &info, password.as_deref())?;

    let (mqtt_tx, mqtt_rx) = mpsc::sync_channel(100_000);
    mqtt::spawn(target.clone(), mqtt_tx).context("start the MQTT thread")?;
    let (req_tx, req_rx) = mpsc::channel();
    let (hist_tx, hist_rx) = mpsc::channel();
    history::spawn(rest, req_rx, hist_tx).context("start the history thread")?;

    let mut app = App::new(target.url(), args.topic.clone(), Instant::now());
    let signalled = watch_signals()?;
    let mut keyboard = Keyboard::open().context("open the terminal for reading")?;
    let mut terminal = TerminalGuard::enter()?;
    loop {
        if let Some(signal) = received(&signalled) {
            // A terminal closed (SIGHUP) or a supervisor stopping us (SIGTERM) must still leave
            // the terminal usable: restore it, then exit the way a killed process reports it.
            drop(terminal);
            std::process::exit(128 + signal);
        }
        let now = Instant::now();
        for event in mqtt_rx.try_iter() {
            app.on_mqtt(event, now);
        }
        for event in hist_rx.try_iter() {
            app.on_history(event, now);
        }
        app.sync_selection();
        for request in app.history_due(now) {
            let _ = req_tx.send(request);
        }
        let drawn = terminal
            .terminal
            .draw(|frame| render::draw(frame, &mut app, now));
        if let Err(error) = drawn {
            terminal_gone(
                terminal,
                &signalled,
                Gone(format!("writing to it failed: {error}")),
            );
        }
        // Wait for input until the next frame is due; handle every key that arrived.
        let deadline = now + FRAME;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let keys = match keyboard.read(left) {
                Ok(keys) => keys,
                Err(gone) => terminal_gone(terminal, &signalled, gone),
            };
            if keys.is_empty() && received(&signalled).is_some() {
                break;
            }
            for key in keys {
                app.on_key(key);
                if app.quit {
                    return Ok(());
                }
            }
        }
    }
}

/// Ends the monitor whose terminal went away, as a hang-up would (status 129, or that of the
/// signal that came with it): restores what can still be restored, and says why on stderr in
/// case that goes somewhere else (a log).
fn terminal_gone(terminal: TerminalGuard, signalled: &AtomicUsize, gone: Gone) -> ! {
    drop(terminal);
    let signal = received(signalled).unwrap_or(signal_hook::consts::SIGHUP);
    // Not eprintln!: it panics when stderr is the terminal that is gone.
    let _ = writeln!(
        std::io::stderr(),
        "svc tui: the terminal is gone: {}",
        gone.0
    );
    std::process::exit(128 + signal);
}

/// The termination signal received, if any.
fn received(signalled: &AtomicUsize) -> Option<i32> {
    match signalled.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal as i32),
    }
}

/// Records the number of the last termination signal received, for the event loop to act on
/// within one frame; the default handlers would kill the process with the terminal still raw.
fn watch_signals() -> anyhow::Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let signalled = Arc::new(AtomicUsize::new(0));
    for signal in [SIGTERM, SIGHUP, SIGINT, SIGQUIT] {
        signal_hook::flag::register_usize(signal, Arc::clone(&signalled), signal as usize)
            .with_context(|| format!("install a handler for signal {signal}"))?;
    }
    Ok(signalled)
}

/// Chooses the listener from the device info; an unspecified bind address (`0.0.0.0`, `::`)
/// means "the host of `--url`".
fn mqtt_target(
    url: &str,
    args: &TuiArgs,
    info: &crate::model::DeviceInfo,
    password: Option<&str>,
) -> anyhow::Result<MqttTarget> {
    let (bind, name) = if args.ws {
        (&info.uns.bind.ws, "ws")
    } else {
        (&info.uns.bind.mqtt, "mqtt")
    };
    if !bind.enabled {
        bail!("the server reports its {name} listener as disabled");
    }
    let url_host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .ok_or_else(|| anyhow!("--url `{url}` has no host"))?;
    let host = match bind.host.as_str() {
        "" | "0.0.0.0" | "::" | "[::]" => url_host,
        host => host.to_string(),
    };
    Ok(MqttTarget {
        host,
        port: bind.port,
        websocket: args.ws,
        password: password.map(str::to_string),
        filter: args.topic.clone(),
    })
}

/// Raw mode + alternate screen for as long as it lives; restored on drop and on panic.
struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    fn enter() -> anyhow::Result<TerminalGuard> {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            default_hook(info);
        }));
        terminal::enable_raw_mode().context("enable raw mode")?;
        let entered = execute!(std::io::stdout(), EnterAlternateScreen, cursor::Hide)
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(Terminal::new(CrosstermBackend::new(std::io::stdout()))?));
        match entered {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(error) => {
                restore();
                Err(error)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the alternate screen, shows the cursor and turns raw mode off; safe to call twice.
fn restore() {
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bind, Binds, DeviceInfo, StorageInfo, Uns};

    fn info(host: &str) -> DeviceInfo {
        let bind = |port| Bind {
            host: host.into(),
            port,
            enabled: true,
        };
        DeviceInfo {
            device_name: "d".into(),
            uns: Uns {
                base_path: String::new(),
                bind: Binds {
                    mqtt: bind(1883),
                    mqtts: Bind {
                        enabled: false,
                        ..bind(8883)
                    },
                    ws: bind(8083),
                    wss: bind(443),
                },
            },
            storage: StorageInfo {
                engine: "sqlite".into(),
                path: None,
                size_bytes: 0,
                host: None,
                database: None,
                server_version: None,
            },
            version: "0".into(),
            python: None,
            last_backup: None,
        }
    }

    const URL: &str = "http://plant.local:6188";

    fn args(ws: bool) -> TuiArgs {
        TuiArgs {
            topic: "acme/#".into(),
            ws,
        }
    }

    #[test]
    fn listener_discovery() {
        let t = mqtt_target(URL, &args(false), &info("0.0.0.0"), Some("k")).unwrap();
        assert_eq!(t.url(), "mqtt://plant.local:1883");
        assert_eq!(
            (t.filter.as_str(), t.password.as_deref()),
            ("acme/#", Some("k"))
        );
        let t = mqtt_target(URL, &args(true), &info("10.0.0.5"), None).unwrap();
        assert_eq!(t.url(), "ws://10.0.0.5:8083/mqtt");
        let mut off = info("h");
        off.uns.bind.mqtt.enabled = false;
        assert!(mqtt_target(URL, &args(false), &off, None).is_err());
    }
}
