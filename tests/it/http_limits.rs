//! Every error is svc's (SPEC 3), including requests the HTTP library parses badly or not at
//! all: oversize URIs (414) and headers (431), malformed request lines, bytes and
//! `Content-Length` (400), and a repeated `Domain` header (400). Each answer has a plain-text
//! sentence and an `App-CorrelationID`. Requests go over raw TCP, as a broken client would
//! send them.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

struct RawResponse {
    status: u16,
    head: String,
    body: String,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// Sends `request` as is and reads one response (until its body is complete or the server
/// closes the connection).
fn raw(server: &Server, request: &[u8]) -> RawResponse {
    let mut stream = TcpStream::connect(server.listener("http")).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // The server may answer and close before reading everything of a huge request.
    let _ = stream.write_all(request);
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|len| body.len() >= len) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response, got {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    RawResponse {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// The answer is `status`, plain text, one sentence containing `needle`, with a correlation id.
fn assert_svc_error(resp: &RawResponse, status: u16, needle: &str, what: &str) {
    assert_eq!(resp.status, status, "{what}: {}\n{}", resp.head, resp.body);
    assert_eq!(
        resp.header("content-type").as_deref(),
        Some(TEXT_PLAIN),
        "{what}: content type in\n{}",
        resp.head
    );
    let id = resp.header(CORRELATION).unwrap_or_default();
    assert!(
        !id.is_empty(),
        "{what}: no correlation id in\n{}",
        resp.head
    );
    assert!(
        resp.body.contains(needle) && !resp.body.contains('\n') && resp.body.len() < 300,
        "{what}: body {:?} should be one sentence naming {needle:?}",
        resp.body
    );
}

fn get(path: &str, extra_headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: svc\r\n{extra_headers}Connection: close\r\n\r\n")
        .into_bytes()
}

#[test]
fn oversize_uris_are_answered_414_by_svc() {
    let server = Server::start();
    for (len, what) in [(40 * 1024, "40 KiB URI"), (70 * 1024, "70 KiB URI")] {
        let path = format!("/svc/info?pad={}", "a".repeat(len));
        let resp = raw(&server, &get(&path, ""));
        assert_svc_error(&resp, 414, "URI", what);
    }
    // Under the limit the request goes through.
    let path = format!("/svc/info?pad={}", "a".repeat(8 * 1024));
    assert_eq!(
        raw(&server, &get(&path, "")).status,
        401,
        "reached the route"
    );
}

#[test]
fn oversize_and_too_many_headers_are_answered_431_by_svc() {
    let server = Server::start();
    let one_mib = format!("X-Pad: {}\r\n", "b".repeat(1024 * 1024));
    assert_svc_error(
        &raw(&server, &get("/svc/info", &one_mib)),
        431,
        "bytes",
        "1 MiB header",
    );
    let many: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    assert_svc_error(
        &raw(&server, &get("/svc/info", &many)),
        431,
        "152 headers",
        "150 headers",
    );
    // Beyond what the HTTP library buffers at all: still svc's sentence and correlation id.
    let three_mib = format!("X-Pad: {}\r\n", "c".repeat(3 * 1024 * 1024));
    assert_svc_error(
        &raw(&server, &get("/svc/info", &three_mib)),
        431,
        "headers",
        "3 MiB header",
    );
    let resp = raw(&server, &get("/svc/info", "X-Fine: yes\r\n"));
    assert_eq!(resp.status, 401, "{}", resp.body);
}

#[test]
fn malformed_requests_get_a_sentence_and_a_correlation_id() {
    let server = Server::start();
    let cases: [(&[u8], &str); 5] = [
        (
            b"GET /svc/info HTTP/9.9\r\nHost: svc\r\n\r\n",
            "bad version",
        ),
        (
            b"G\x01T /svc/info HTTP/1.1\r\nHost: svc\r\n\r\n",
            "control byte in the method",
        ),
        (b"\x00\x01\x02\x03garbage\r\n\r\n", "binary garbage"),
        (
            b"POST /svc/things HTTP/1.1\r\nHost: svc\r\nContent-Length: abc\r\n\r\n{}",
            "non-numeric Content-Length",
        ),
        (
            b"GET /svc/info HTTP/1.1\r\nHost: svc\r\nBad Header Name: x\r\n\r\n",
            "space in a header name",
        ),
    ];
    for (request, what) in cases {
        assert_svc_error(&raw(&server, request), 400, "HTTP", what);
    }
    // The server is still fine.
    assert_eq!(
        raw(&server, &get("/svc/info", "")).status,
        401,
        "reached the route"
    );
}

#[test]
fn a_repeated_domain_header_is_refused() {
    let server = Server::start();
    server.create_domain("acme");
    let token = server.admin_token();
    let auth = format!("Authorization: Bearer {token}\r\n");
    let twice = format!("{auth}Domain: domains:acme\r\nDomain: domains:svc_admin\r\n");
    let resp = raw(&server, &get("/svc/tag/list", &twice));
    assert_svc_error(&resp, 400, "Domain", "two Domain headers");
    let once = format!("{auth}Domain: domains:acme\r\n");
    let resp = raw(&server, &get("/svc/tag/list", &once));
    assert_eq!(resp.status, 200, "{}", resp.body);
}

#[test]
fn a_request_refused_before_its_body_is_read_still_gets_its_answer() {
    // An upload refused by authentication: the client is still sending when svc answers; the
    // answer must arrive (and the connection stay usable), not a reset connection.
    let server = Server::start();
    let client = reqwest::blocking::Client::new();
    for round in 0..5 {
        let resp = client
            .post(server.url("/svc/products"))
            .header("Authorization", "Bearer not-a-token")
            .header("Domain", "domains:demo")
            .header("Content-Type", "application/json")
            .body(vec![b' '; 6 * 1024 * 1024])
            .send()
            .unwrap_or_else(|e| panic!("round {round}: no answer: {e}"));
        assert_eq!(resp.status(), 401, "round {round}");
        let text = resp.text().unwrap_or_default();
        assert!(!text.is_empty(), "round {round}: svc's sentence");
    }
}
