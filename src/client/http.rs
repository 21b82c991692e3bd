//! The REST client of the subcommands and the TUI: resolves URL, domain and credential from flags,
//! environment and the profile, adds the headers, and turns non-2xx answers into
//! [`CliError::Http`] with the server's text (and a hint to log in again on 401).

use super::error::{CliError, CliResult};
use super::profile::{self, Profile};
use super::{GlobalArgs, DEFAULT_URL};
use reqwest::blocking::{RequestBuilder, Response};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// How the client authenticates.
#[derive(Debug, Clone, PartialEq)]
pub enum Credential {
    None,
    /// A JWT from the profile.
    Token(String),
    /// An API key from `--api-key` / `SVC_API_KEY`.
    ApiKey(String),
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    pub base: String,
    domain: Option<String>,
    pub credential: Credential,
    profile: String,
}

/// The base URL without trailing slashes.
pub fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// `acme` or `domains:acme` → the `Domain` header value `domains:acme`.
pub fn domain_header(domain: &str) -> String {
    let domain = domain.trim();
    if domain.starts_with("domains:") {
        domain.to_string()
    } else {
        format!("domains:{domain}")
    }
}

impl Client {
    /// Flags and environment win over the profile; the profile's token is used only against
    /// the URL it was obtained from, so it never leaks to another server.
    pub fn from_args(global: &GlobalArgs) -> CliResult<Client> {
        let stored = profile::load(&global.profile)?.unwrap_or_default();
        Client::resolve(global, &stored)
    }

    pub fn resolve(global: &GlobalArgs, stored: &Profile) -> CliResult<Client> {
        let base = normalize_url(
            global
                .url
                .as_deref()
                .or(stored.url.as_deref())
                .unwrap_or(DEFAULT_URL),
        );
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(CliError::usage(format!(
                "invalid --url `{base}`: expected http://host:port or https://host:port"
            )));
        }
        let domain = global
            .domain
            .as_deref()
            .or(stored.domain.as_deref())
            .filter(|d| !d.trim().is_empty())
            .map(domain_header);
        for (flag, value) in [
            ("--domain", domain.as_deref()),
            ("--api-key", global.api_key.as_deref()),
        ] {
            if value.is_some_and(|v| !v.bytes().all(|b| b.is_ascii_graphic())) {
                return Err(CliError::usage(format!(
                    "invalid {flag}: only visible ASCII characters are allowed"
                )));
            }
        }
        let same_server = stored.url.as_deref().map(normalize_url) == Some(base.clone());
        let credential = match (&global.api_key, &stored.token) {
            (Some(key), _) if !key.is_empty() => Credential::ApiKey(key.clone()),
            (_, Some(token)) if same_server => Credential::Token(token.clone()),
            _ => Credential::None,
        };
        let http = reqwest::blocking::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .user_agent(concat!("svc-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::failed(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            base,
            domain,
            credential,
            profile: global.profile.clone(),
        })
    }

    /// A request to `path` (starting with `/`) with the credential and domain headers.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let mut req = self.http.request(method, format!("{}{}", self.base, path));
        match &self.credential {
            Credential::None => {}
            Credential::Token(t) => req = req.bearer_auth(t),
            Credential::ApiKey(k) => req = req.header("X-Svc-Api-Key", k),
        }
        if let Some(domain) = &self.domain {
            req = req.header("Domain", domain);
        }
        req
    }

    /// Sends the request; non-2xx answers become errors carrying the server's text.
    pub fn send(&self, req: RequestBuilder) -> CliResult<Response> {
        let resp = req.send().map_err(|e| self.transport_error(e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let text = resp.text().unwrap_or_default();
        Err(CliError::Http {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_string(),
            text: short_text(&text),
            hint: (status.as_u16() == 401).then(|| self.login_hint()),
        })
    }

    fn transport_error(&self, e: reqwest::Error) -> CliError {
        if e.is_builder() {
            return CliError::usage(format!("invalid request: {}", root_cause(&e)));
        }
        let what = if e.is_timeout() {
            "timed out".to_string()
        } else if e.is_connect() {
            "connection failed (is `svc serve` running there?)".to_string()
        } else {
            root_cause(&e)
        };
        CliError::failed(format!("cannot reach {}: {what}", self.base))
    }

    fn login_hint(&self) -> String {
        let p = &self.profile;
        match &self.credential {
            Credential::Token(_) => format!(
                "the stored login of profile `{p}` was rejected or has expired: log in again with `svc login --profile {p}`"
            ),
            Credential::ApiKey(_) => "the API key (--api-key / SVC_API_KEY) was rejected".into(),
            Credential::None => format!(
                "not logged in to {}: run `svc login --url {}` or set SVC_API_KEY",
                self.base, self.base
            ),
        }
    }

    /// Sends and decodes a JSON answer.
    pub fn json<T: DeserializeOwned>(&self, req: RequestBuilder) -> CliResult<T> {
        let resp = self.send(req)?;
        let bytes = resp
            .bytes()
            .map_err(|e| CliError::failed(format!("cannot read the answer: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            CliError::failed(format!(
                "unexpected answer from {} (not the expected JSON: {e}): {}",
                self.base,
                short_text(&String::from_utf8_lossy(&bytes))
            ))
        })
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> CliResult<T> {
        self.json(self.request(Method::GET, path))
    }

    pub fn get_query<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(String, String)],
    ) -> CliResult<T> {
        self.json(self.request(Method::GET, path).query(query))
    }

    /// Sends `body` as JSON with `method`.
    pub fn call<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &B,
    ) -> CliResult<T> {
        self.json(self.request(method, path).json(body))
    }
}

/// The percent-encoded form of a path segment (record ids contain `:` and `.`).
pub fn segment(text: &str) -> String {
    urlencoding::encode(text).into_owned()
}

/// The server's text on one line, cut at 2000 characters.
fn short_text(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(2000) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(url: Option<&str>, key: Option<&str>) -> GlobalArgs {
        GlobalArgs {
            url: url.map(str::to_string),
            domain: None,
            api_key: key.map(str::to_string),
            profile: "default".into(),
            output: None,
        }
    }

    fn stored(url: &str) -> Profile {
        Profile {
            url: Some(url.into()),
            domain: Some("acme".into()),
            username: Some("admin".into()),
            token: Some("jwt".into()),
        }
    }

    #[test]
    fn profile_supplies_url_domain_and_token() {
        let c = Client::resolve(&global(None, None), &stored("http://h:1/")).unwrap();
        assert_eq!(c.base, "http://h:1");
        assert_eq!(c.domain.as_deref(), Some("domains:acme"));
        assert_eq!(c.credential, Credential::Token("jwt".into()));
    }

    #[test]
    fn flags_override_the_profile_and_the_token_stays_with_its_server() {
        let c =
            Client::resolve(&global(Some("http://other:2"), None), &stored("http://h:1")).unwrap();
        assert_eq!(c.base, "http://other:2");
        assert_eq!(c.credential, Credential::None);
        let c = Client::resolve(&global(None, Some("svcx_k")), &stored("http://h:1")).unwrap();
        assert_eq!(c.credential, Credential::ApiKey("svcx_k".into()));
    }

    #[test]
    fn defaults_without_profile() {
        let c = Client::resolve(&global(None, None), &Profile::default()).unwrap();
        assert_eq!(c.base, DEFAULT_URL);
        assert_eq!(c.domain, None);
        assert!(Client::resolve(&global(Some("ftp://x"), None), &Profile::default()).is_err());
    }

    #[test]
    fn domain_headers_and_segments() {
        assert_eq!(domain_header("acme"), "domains:acme");
        assert_eq!(domain_header("domains:acme"), "domains:acme");
        assert_eq!(segment("acme.items:k1"), "acme.items%3Ak1");
        assert_eq!(short_text("  a \n"), "a");
    }
}
