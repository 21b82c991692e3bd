//! Headless Chromium for the console tests: Debian's `chromium` driven through `chromedriver`
//! (both installed by `scripts/test.sh`), each test with its own driver, port and profile.
//! A missing browser fails the test.

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Map, Value};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A browser session; the driver is killed when it is dropped.
pub struct Browser {
    pub client: Client,
    driver: Child,
    /// Where the browser saves downloads.
    pub downloads: PathBuf,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start() -> Browser {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{CHROMEDRIVER} (Debian's chromium-driver): {e}"));
        let profile = tempfile::tempdir().expect("profile dir");
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let downloads = profile.path().join("downloads");
        std::fs::create_dir_all(&downloads).expect("downloads dir");
        let prefs = json!({
            "download.default_directory": downloads,
            "download.prompt_for_download": false,
        });
        let mut caps = Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": CHROMIUM, "args": args, "prefs": prefs}),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() > deadline => panic!("chromedriver on {url}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        Browser {
            client,
            driver,
            downloads,
            _profile: profile,
        }
    }

    /// The element `css`, waited for up to 5 s.
    pub async fn element(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(5))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}`: {e}"))
    }

    /// Runs `act` on the element `css`, finding it again while the page replaces it (a view
    /// that renders again when a fetch answers makes an element found a moment earlier stale).
    async fn on_element<T, F, Fut>(&self, css: &str, act: F) -> T
    where
        F: Fn(fantoccini::elements::Element) -> Fut,
        Fut: std::future::Future<Output = Result<T, fantoccini::error::CmdError>>,
    {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match act(self.element(css).await).await {
                Ok(done) => return done,
                Err(e) if e.is_stale_element_reference() && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("`{css}`: {e}"),
            }
        }
    }

    /// The text of the element `css`.
    pub async fn text(&self, css: &str) -> String {
        self.on_element(css, |element| async move { element.text().await })
            .await
    }

    /// Types `text` into the input `css`.
    pub async fn fill(&self, css: &str, text: &str) {
        self.on_element(css, |element| async move { element.send_keys(text).await })
            .await
    }

    pub async fn click(&self, css: &str) {
        self.on_element(css, |element| async move { element.click().await })
            .await
    }

    /// Polls `script` (a JS expression) until it is truthy; returns its value.
    pub async fn until(&self, what: &str, within: Duration, script: &str) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let value = self
                .client
                .execute(&format!("return {script};"), vec![])
                .await
                .expect("execute script");
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!("")
                && value != json!(0);
            if truthy {
                return value;
            }
            if Instant::now() > deadline {
                let shot = self
                    .screenshot(&format!("failed-{}", what.replace(' ', "-")))
                    .await;
                panic!("{what} within {within:?} (screenshot {})", shot.display());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The bytes of the download `name`, waited for until it is complete.
    pub async fn downloaded(&self, name: &str, within: Duration) -> Vec<u8> {
        let path = self.downloads.join(name);
        let deadline = Instant::now() + within;
        loop {
            let partial = std::fs::read_dir(&self.downloads)
                .map(|dir| {
                    dir.flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".crdownload"))
                })
                .unwrap_or(false);
            if let (Ok(bytes), false) = (std::fs::read(&path), partial) {
                return bytes;
            }
            assert!(
                Instant::now() < deadline,
                "no download {name} within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Hands the file at `path` to the file input `css`, as a user picking it would.
    pub async fn choose_file(&self, css: &str, path: &std::path::Path) {
        self.element(css)
            .await
            .send_keys(&path.display().to_string())
            .await
            .expect("choose a file");
    }

    /// Saves a screenshot as `target/console-screenshots/<name>.png`.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots");
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        let path = dir.join(format!("{name}.png"));
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    /// Opens the console of the server at `base` at `hash` (`#/<domain>/<view>`).
    pub async fn open(&self, base: &str, hash: &str) {
        let url = format!("{base}/console/{hash}");
        self.client
            .goto(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        // A new address within the loaded console re-renders after its hashchange (and,
        // for another domain, after loading its rights): until then the old view's
        // elements are still there, and acting on them would race with their removal.
        self.until(
            "the view of the opened address",
            Duration::from_secs(10),
            "document.getElementById('view')?.dataset.route === location.hash",
        )
        .await;
    }

    /// Logs in through the console's login form at `base`.
    pub async fn log_in(&self, base: &str, username: &str, password: &str) {
        self.open(base, "").await;
        self.fill("input[name=username]", username).await;
        self.fill("input[name=password]", password).await;
        self.click("button[type=submit]").await;
        self.until(
            "the navigation after login",
            Duration::from_secs(5),
            "!document.getElementById('bar').hidden",
        )
        .await;
    }

    pub async fn close(mut self) {
        let client = self.client.clone();
        let _ = client.close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}

/// Stops the server off the async threads (its blocking HTTP client may not be dropped there).
pub async fn stop<T: Send + 'static>(server: T) {
    blocking(move || drop(server)).await;
}

/// A fresh server with the domain `acme`, readied by `prepare`, started off the async threads.
pub async fn acme_server(
    prepare: impl FnOnce(&crate::common::Server) + Send + 'static,
) -> crate::common::Server {
    blocking(move || {
        let server = crate::common::Server::start();
        server.create_domain("acme");
        prepare(&server);
        server
    })
    .await
}

/// Runs blocking test work (the server, its blocking HTTP client, mosquitto_pub) off the async
/// threads.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work)
        .await
        .expect("blocking test work")
}
