//! Where the store keeps its data, from the `database` setting: the SQLite file in a data
//! directory (the default) or a PostgreSQL database named by a `postgres://` URL. The URL's
//! password never leaves this type: `Debug` and [`Location::describe`] leave it out.

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
        let config = tokio_postgres::Config::from_str(text)
            .map_err(|e| format!("the PostgreSQL URL is not valid: {e}"))?;
        if config.get_dbname().is_none() {
            return Err("the PostgreSQL URL must name a database (postgres://…/<db>)".into());
        }
        if config.get_hosts().is_empty() {
            return Err("the PostgreSQL URL must name a host".into());
        }
        Ok(Location::Postgres(Box::new(PostgresTarget { config })))
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
