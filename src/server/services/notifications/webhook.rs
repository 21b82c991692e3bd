//! Webhook delivery: one HTTP POST of the notification's JSON to the pipeline's URL with its
//! headers; any 2xx answer is delivered, anything else (another status, no connection, no
//! answer within the timeout) is a failure to retry.

use serde_json::Value;
use std::time::Duration;

/// How long one attempt may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(15);

/// The client every webhook call shares (its connection pool).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!(
            "svc/",
            env!("CARGO_PKG_VERSION"),
            " alarm-notifications"
        ))
        .build()
        .unwrap_or_default()
}

/// POSTs `body` to `url`; the error says why it was not delivered (without the headers, which
/// may hold a credential).
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Result<(), String> {
    let mut request = client.post(url).json(body);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("cannot reach the webhook: {}", without_url(e)))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the webhook answered {status}"))
    }
}

/// reqwest's error, without the URL it appends (a URL may carry a token in its query).
fn without_url(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
