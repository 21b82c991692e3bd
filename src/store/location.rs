//! Where the store keeps its data, from the `database` setting: the SQLite file in a data
//! directory (the default) or a PostgreSQL database named by a `postgres://` URL. The URL's
//! password never leaves this type: `Debug` and [`Location::describe`] leave it out.
//!
//! TLS to PostgreSQL follows libpq's `sslmode`: `disable`; `prefer` (the default) and `require`
//! encrypt without checking the certificate, unless `sslrootcert=<file>` names the CA to check
//! it against, which makes them `verify-ca`; `verify-ca` checks the chain; `verify-full` the
//! chain and the host name (against the Mozilla roots without `sslrootcert`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The SQLite file's name inside a data directory.
pub const SQLITE_FILE: &str = "svc.db";

#[derive(Clone)]
pub enum Location {
    /// The database file.
    Sqlite(PathBuf),
    Postgres(Box<PostgresTarget>),
}

/// A PostgreSQL database as a connection configuration (password included, never shown).
#[derive(Clone)]
pub struct PostgresTarget {
    pub config: tokio_postgres::Config,
    /// How much of the server's certificate to check, when TLS is used.
    pub verify: crate::tls_client::Verify,
    /// The CA certificates (PEM file) to check it against, from `sslrootcert`.
    pub root_cert: Option<PathBuf>,
}

impl Location {
    /// `None`, `sqlite` or `sqlite://` is the SQLite file in `data_dir`, `sqlite://<dir>` the
    /// one in `<dir>`; a `postgres://` or `postgresql://` URL is a PostgreSQL database.
    pub fn parse(database: Option<&str>, data_dir: &Path) -> Result<Location, String> {
        let Some(text) = database.map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(Location::Sqlite(data_dir.join(SQLITE_FILE)));
        };
        if text == "sqlite" || text == "sqlite://" {
            return Ok(Location::Sqlite(data_dir.join(SQLITE_FILE)));
        }
        if let Some(dir) = text.strip_prefix("sqlite://") {
            return Ok(Location::Sqlite(Path::new(dir).join(SQLITE_FILE)));
        }
        if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
            return Err(
                "it must be a postgres:// URL, or be left out for the SQLite file in \
                        the data directory"
                    .into(),
            );
        }
        let (text, tls) = take_tls_options(text)?;
        let mut config = tokio_postgres::Config::from_str(&text)
            .map_err(|e| format!("the PostgreSQL URL is not valid: {e}"))?;
        if tls.verify_required {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
        }
        if config.get_dbname().is_none() {
            return Err("the PostgreSQL URL must name a database (postgres://…/<db>)".into());
        }
        if config.get_hosts().is_empty() {
            return Err("the PostgreSQL URL must name a host".into());
        }
        Ok(Location::Postgres(Box::new(PostgresTarget {
            config,
            verify: tls.verify,
            root_cert: tls.root_cert,
        })))
    }

    /// For logs and messages: the file, or `postgres://user@host:port/db` without password.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(target) => format!(
                "postgres://{}@{}:{}/{}",
                target.config.get_user().unwrap_or_default(),
                target.host(),
                target.port(),
                target.database()
            ),
        }
    }
}

/// The TLS options of a PostgreSQL URL that tokio-postgres does not take itself.
struct TlsOptions {
    verify: crate::tls_client::Verify,
    /// `sslmode=verify-ca` or `verify-full`: TLS is required.
    verify_required: bool,
    root_cert: Option<PathBuf>,
}

/// The URL without `sslrootcert` and the `verify-*` values of `sslmode` (which tokio-postgres
/// refuses), and what they asked for.
fn take_tls_options(url: &str) -> Result<(String, TlsOptions), String> {
    use crate::tls_client::Verify;
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut mode = None;
    let mut root_cert = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decoded = percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .map_err(|_| format!("the PostgreSQL URL's `{key}` is not UTF-8"))?;
        match key {
            "sslrootcert" => root_cert = Some(PathBuf::from(decoded.as_ref())),
            "sslmode" if matches!(&*decoded, "verify-ca" | "verify-full") => {
                mode = Some(decoded.into_owned())
            }
            _ => kept.push(pair),
        }
    }
    let verify = match (mode.as_deref(), &root_cert) {
        (Some("verify-full"), _) => Verify::Full,
        (Some(_), _) | (None, Some(_)) => Verify::ChainOnly,
        (None, None) => Verify::Nothing,
    };
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((
        url,
        TlsOptions {
            verify,
            verify_required: mode.is_some(),
            root_cert,
        },
    ))
}

impl PostgresTarget {
    pub fn host(&self) -> String {
        match self.config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => String::new(),
        }
    }

    pub fn port(&self) -> u16 {
        self.config.get_ports().first().copied().unwrap_or(5432)
    }

    pub fn database(&self) -> &str {
        self.config.get_dbname().unwrap_or_default()
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_is_the_sqlite_file_in_the_data_dir() {
        let at = Location::parse(None, Path::new("/d")).unwrap();
        assert!(matches!(at, Location::Sqlite(p) if p == Path::new("/d/svc.db")));
        let at = Location::parse(Some("sqlite:///x"), Path::new("/d")).unwrap();
        assert!(matches!(at, Location::Sqlite(p) if p == Path::new("/x/svc.db")));
        let at = Location::parse(Some("sqlite"), Path::new("/d")).unwrap();
        assert!(matches!(at, Location::Sqlite(p) if p == Path::new("/d/svc.db")));
    }

    #[test]
    fn a_postgres_url_keeps_its_password_out_of_every_description() {
        let at = Location::parse(
            Some("postgres://svc:s3cret@db.plant:5433/svc?sslmode=disable"),
            Path::new("/d"),
        )
        .unwrap();
        assert_eq!(at.describe(), "postgres://svc@db.plant:5433/svc");
        assert!(!format!("{at:?}").contains("s3cret"));
    }

    #[test]
    fn sslmode_and_sslrootcert_say_what_tls_checks() {
        use crate::tls_client::Verify;
        use tokio_postgres::config::SslMode;
        let target = |url: &str| match Location::parse(Some(url), Path::new("/d")).unwrap() {
            Location::Postgres(target) => target,
            Location::Sqlite(_) => panic!("not postgres"),
        };
        let plain = target("postgres://u@h/db?sslmode=disable");
        assert_eq!(plain.config.get_ssl_mode(), SslMode::Disable);
        let require = target("postgres://u@h/db?sslmode=require");
        assert_eq!(require.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(require.verify, Verify::Nothing);
        let ca = target("postgres://u@h/db?sslmode=require&sslrootcert=%2Fetc%2Fca.pem");
        assert_eq!(ca.verify, Verify::ChainOnly);
        assert_eq!(ca.root_cert.as_deref(), Some(Path::new("/etc/ca.pem")));
        let full = target(
            "postgres://u@h/db?sslrootcert=/etc/ca.pem&sslmode=verify-full&connect_timeout=3",
        );
        assert_eq!(full.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(full.verify, Verify::Full);
        assert_eq!(
            full.config.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(3))
        );
        let chain = target("postgres://u@h/db?sslmode=verify-ca");
        assert_eq!(chain.verify, Verify::ChainOnly);
        assert!(
            Location::parse(Some("postgres://u@h/db?sslmode=sometimes"), Path::new("/d")).is_err()
        );
    }

    #[test]
    fn anything_else_is_refused_with_a_sentence() {
        for bad in [
            "mysql://x/y",
            "postgres://",
            "postgres://h:notaport/db",
            "sqlite3",
        ] {
            let err = Location::parse(Some(bad), Path::new("/d")).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
    }
}
