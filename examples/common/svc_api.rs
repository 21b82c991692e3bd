//! The parts of svc's REST API the historian benchmarks call (blocking reqwest): historian
//! queries timed until their body is received, the number of stored points of a tag through a
//! `count` aggregate (correct whatever the historian's storage layout), and tag declarations.

#![allow(dead_code)] // each example uses what it needs

use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// svc's administrative domain, where tags declared without a `Domain` header live.
pub const DEFAULT_DOMAIN: &str = "svc_admin";

/// Epoch milliseconds as RFC 3339 (UTC, milliseconds), as the historian reads times.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("timestamp in range")
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An RFC 3339 time of a historian answer as epoch milliseconds.
pub fn parse_ms(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// A logged-in client of one svc, acting in one domain.
pub struct Svc {
    client: reqwest::blocking::Client,
    url: String,
    token: String,
    domain: String,
}

impl Svc {
    pub fn new(url: &str, token: &str, domain: &str) -> Svc {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .expect("http client");
        Svc {
            client,
            url: url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            domain: domain.to_string(),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::blocking::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .header("Domain", format!("domains:{}", self.domain))
    }

    /// `PATCH /svc/historian` with `body`: the response body and the seconds from sending the
    /// request until the body was fully received (parsing it is the caller's, untimed).
    pub fn historian(&self, body: &Value) -> Result<(bytes::Bytes, f64), String> {
        let started = Instant::now();
        let response = self
            .request(reqwest::Method::PATCH, "/svc/historian")
            .json(body)
            .send()
            .map_err(|e| format!("PATCH /svc/historian: {e}"))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .map_err(|e| format!("PATCH /svc/historian body: {e}"))?;
        let took = started.elapsed().as_secs_f64();
        if !status.is_success() {
            return Err(format!(
                "PATCH /svc/historian → {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        Ok((bytes, took))
    }

    /// How many points of `topic` the historian holds in `start_ms..end_ms`: one `count`
    /// bucket over the whole window.
    pub fn count(&self, topic: &str, start_ms: i64, end_ms: i64) -> Result<u64, String> {
        let body = json!({
            "topic": topic,
            "start_time": rfc3339(start_ms),
            "end_time": rfc3339(end_ms),
            "bucket": format!("{}ms", end_ms - start_ms),
            "aggregation": "count",
        });
        let (bytes, _) = self.historian(&body)?;
        let answer: Vec<Value> = serde_json::from_slice(&bytes)
            .map_err(|e| format!("count of {topic}: not a JSON array: {e}"))?;
        Ok(answer.iter().filter_map(|p| p["value"].as_u64()).sum())
    }

    /// `POST <path>` with a JSON body: the answer, or the status and body as an error.
    pub fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        self.send(
            self.request(reqwest::Method::POST, path).json(body),
            "POST",
            path,
        )
    }

    /// `GET <path>` (a RecordID in a path is URL-encoded by the caller).
    pub fn get(&self, path: &str) -> Result<Value, String> {
        self.send(self.request(reqwest::Method::GET, path), "GET", path)
    }

    fn send(
        &self,
        request: reqwest::blocking::RequestBuilder,
        method: &str,
        path: &str,
    ) -> Result<Value, String> {
        let response = request
            .send()
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let status = response.status();
        let text = response.text().unwrap_or_default();
        if !status.is_success() {
            return Err(format!("{method} {path} → {status}: {}", text.trim()));
        }
        serde_json::from_str(&text).map_err(|e| format!("{method} {path}: not JSON: {e}"))
    }
}
