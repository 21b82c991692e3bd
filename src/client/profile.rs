//! Login profiles: `<config dir>/svc/credentials.toml` (mode 0600, directory 0700) holds, per
//! profile name, the server URL, the domain and the JWT that `svc login` obtained.

use super::error::{CliError, CliResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One stored login.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ProfileFile {
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// The credentials file: `$XDG_CONFIG_HOME/svc/credentials.toml` (or the platform's config dir).
pub fn credentials_path() -> CliResult<PathBuf> {
    let dir = dirs::config_dir().ok_or_else(|| {
        CliError::failed("cannot find the user's config directory: set HOME or XDG_CONFIG_HOME")
    })?;
    Ok(dir.join("svc").join("credentials.toml"))
}

fn read_file(path: &Path) -> CliResult<ProfileFile> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).map_err(|e| {
            CliError::failed(format!(
                "{} is not a valid credentials file ({}); delete it and log in again",
                path.display(),
                e.message()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ProfileFile::default()),
        Err(e) => Err(CliError::failed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The stored profile `name`, if any.
pub fn load(name: &str) -> CliResult<Option<Profile>> {
    let file = read_file(&credentials_path()?)?;
    Ok(file.profiles.get(name).cloned())
}

/// Stores (replaces) profile `name`.
pub fn save(name: &str, profile: Profile) -> CliResult<PathBuf> {
    let path = credentials_path()?;
    let mut file = read_file(&path)?;
    file.profiles.insert(name.to_string(), profile);
    write_file(&path, &file)?;
    Ok(path)
}

/// Removes profile `name`; false when there was none.
pub fn remove(name: &str) -> CliResult<bool> {
    let path = credentials_path()?;
    let mut file = read_file(&path)?;
    if file.profiles.remove(name).is_none() {
        return Ok(false);
    }
    write_file(&path, &file)?;
    Ok(true)
}

/// Writes the file through a 0600 temporary file renamed into place, so the token is never
/// readable by others, not even for a moment.
fn write_file(path: &Path, file: &ProfileFile) -> CliResult<()> {
    let fail = |what: &str, e: std::io::Error| {
        CliError::failed(format!("cannot {what} {}: {e}", path.display()))
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(|e| fail("create the directory of", e))?;
    let text = toml::to_string(file)
        .map_err(|e| CliError::failed(format!("cannot encode the profiles: {e}")))?;
    let tmp = path.with_extension(format!("toml.{}.tmp", std::process::id()));
    let written = open_private(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail("write", e));
    }
    Ok(())
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_file_round_trips_through_toml() {
        let mut file = ProfileFile::default();
        let p = Profile {
            url: Some("http://h:1".into()),
            domain: None,
            username: Some("admin".into()),
            token: Some("t.o.k".into()),
        };
        file.profiles.insert("default".into(), p.clone());
        let text = toml::to_string(&file).unwrap();
        let back: ProfileFile = toml::from_str(&text).unwrap();
        assert_eq!(back.profiles["default"], p);
        assert!(!text.contains("domain"));
    }

    #[test]
    fn write_file_is_private() {
        let dir = std::env::temp_dir().join(format!("svc-profile-test-{}", std::process::id()));
        let path = dir.join("svc").join("credentials.toml");
        write_file(&path, &ProfileFile::default()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(read_file(&path).unwrap().profiles.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
