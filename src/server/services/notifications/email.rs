//! E-mail delivery: one plain-text mail to one address through the pipeline's SMTP server
//! (lettre on tokio, TLS by rustls with the ring provider, checked against the Mozilla roots),
//! a connection per mail: notifications are rare, and a fresh connection never carries a
//! failure over. With `tls: "starttls"` nothing is sent unless the upgrade succeeds.

use crate::alarms::notify::config::{Email, Tls};
use crate::alarms::notify::render::Mail;
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// How long the SMTP conversation may stay silent.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `mail` to `to` through `server`, logging in as its `username` with `password` when it
/// names one. `hello` is the name svc gives itself in EHLO. The error says why the mail was not
/// accepted; it never holds the password.
pub async fn send(
    server: &Email,
    password: Option<String>,
    hello: &str,
    to: &str,
    mail: &Mail,
) -> Result<(), String> {
    let from: Mailbox = server
        .from
        .parse()
        .map_err(|e| format!("the sender `{}` is not an address: {e}", server.from))?;
    let to: Mailbox = to
        .parse()
        .map_err(|e| format!("the recipient `{to}` is not an address: {e}"))?;
    let message = Message::builder()
        .from(from)
        .to(to)
        .subject(mail.subject.clone())
        .header(ContentType::TEXT_PLAIN)
        .body(mail.text.clone())
        .map_err(|e| format!("cannot build the mail: {e}"))?;
    let builder = match server.tls {
        Tls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&server.host),
        Tls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&server.host)
            .map_err(|e| format!("cannot set up TLS to {}: {e}", server.host))?,
        Tls::Implicit => AsyncSmtpTransport::<Tokio1Executor>::relay(&server.host)
            .map_err(|e| format!("cannot set up TLS to {}: {e}", server.host))?,
    };
    let mut builder = builder
        .port(server.port)
        .timeout(Some(TIMEOUT))
        .hello_name(ClientId::Domain(hello.to_string()));
    if let Some(username) = &server.username {
        builder = builder.credentials(Credentials::new(
            username.clone(),
            password.unwrap_or_default(),
        ));
    }
    let transport = builder.build();
    transport.send(message).await.map(|_| ()).map_err(|e| {
        format!(
            "the SMTP server {}:{} did not take the mail: {e}",
            server.host, server.port
        )
    })
}
