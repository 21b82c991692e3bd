//! TLS between svc and PostgreSQL (issue 18), with libpq's `sslmode` meanings: `require`
//! encrypts without checking the certificate; `verify-ca` with `sslrootcert` checks its chain;
//! `verify-full` also checks that it names the host. A certificate that fails the check stops
//! `svc serve` at start with a sentence, before anything is stored.

use crate::common::*;
use std::path::Path;

/// A private PostgreSQL serving TLS with a self-signed certificate for `localhost` only (the
/// tests connect to 127.0.0.1, so only `verify-full` sees the difference), and that certificate
/// written to `ca.pem` in `dir`.
fn tls_postgres(dir: &Path) -> Postgres {
    let pg = Postgres::start();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    pg.enable_tls(&cert.cert.pem(), &cert.key_pair.serialize_pem());
    std::fs::write(dir.join("ca.pem"), cert.cert.pem()).expect("write ca.pem");
    let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    std::fs::write(dir.join("other.pem"), other.cert.pem()).expect("write other.pem");
    pg
}

/// The sessions of the database `svc` has open, and how many of them are encrypted.
fn sessions(pg: &Postgres, database: &str) -> (u32, u32) {
    let counts = pg
        .psql(
            "postgres",
            &format!(
                "SELECT count(*) || ' ' || count(*) FILTER (WHERE s.ssl) \
                 FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
                 WHERE a.datname = '{database}' AND a.application_name = 'svc'"
            ),
        )
        .expect("read pg_stat_ssl");
    let (all, tls) = counts.split_once(' ').expect("two counts");
    (all.parse().expect("a count"), tls.parse().expect("a count"))
}

#[test]
fn sslmode_require_encrypts_every_connection_svc_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pg = tls_postgres(dir.path());
    let url = pg
        .fresh_database()
        .replace("sslmode=disable", "sslmode=require");
    let database = &database_name(&url);
    let server = Server::start_with(&["--database", &url]);
    server.create_domain("plant");
    let (all, tls) = sessions(&pg, database);
    assert!(
        all >= 3,
        "the pool, the listener and the campaign: {all} sessions"
    );
    assert_eq!(tls, all, "{tls} of {all} sessions are encrypted");
}

#[test]
fn verify_ca_and_verify_full_check_the_certificate_against_sslrootcert() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pg = tls_postgres(dir.path());
    let base = pg.fresh_database().replace("?sslmode=disable", "");
    let ca = dir.path().join("ca.pem");
    let other = dir.path().join("other.pem");
    let with =
        |mode: &str, root: &Path| format!("{base}?sslmode={mode}&sslrootcert={}", root.display());

    let (ready, out) = serve_once(&with("verify-ca", &ca));
    assert!(ready, "verify-ca with the server's CA: {out}");
    let (ready, out) = serve_once(&with("require", &ca));
    assert!(
        ready,
        "require with sslrootcert checks the chain, which holds: {out}"
    );

    for (url, why) in [
        (with("verify-ca", &other), "a chain to another CA"),
        (
            with("require", &other),
            "require with sslrootcert, another CA",
        ),
        (
            with("verify-full", &ca),
            "a certificate for localhost, not 127.0.0.1",
        ),
    ] {
        let (ready, out) = serve_once(&url);
        assert!(!ready, "{why}: svc started");
        assert!(out.contains("certificate"), "{why}: {out}");
        assert!(!out.contains("panicked"), "{why}: {out}");
    }
    let (ready, out) = serve_once(&format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        dir.path().join("missing.pem").display()
    ));
    assert!(!ready && out.contains("sslrootcert"), "{out}");
}
