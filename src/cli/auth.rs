//! `svc login` / `svc logout`: exchanges a username and password (prompted without echo, or
//! read from stdin with `--password-stdin`) for a JWT and keeps it in the profile.

use super::client::{normalize_url, Client};
use super::error::{CliError, CliResult};
use super::profile::{self, Profile};
use super::{GlobalArgs, LoginArgs, DEFAULT_URL};
use crate::model::{LoginRequest, LoginResponse};
use reqwest::Method;
use std::io::{BufRead, IsTerminal, Write};

pub fn login(global: &GlobalArgs, args: &LoginArgs) -> CliResult<()> {
    let stored = profile::load(&global.profile)?.unwrap_or_default();
    let url = normalize_url(
        global
            .url
            .as_deref()
            .or(stored.url.as_deref())
            .unwrap_or(DEFAULT_URL),
    );
    let username = match &args.username {
        Some(u) => u.clone(),
        None => prompt_username()?,
    };
    if username.is_empty() {
        return Err(CliError::usage("the username is empty"));
    }
    let password = if args.password_stdin {
        read_password_stdin()?
    } else {
        prompt_password()?
    };
    // Log in without any stored credential, against the chosen URL.
    let mut anonymous = global.clone();
    anonymous.url = Some(url.clone());
    anonymous.api_key = None;
    let client = Client::resolve(&anonymous, &Profile::default())?;
    let body = LoginRequest {
        username: username.clone(),
        password,
    };
    let resp: LoginResponse = match client.call(Method::POST, "/auth/login", &body) {
        Err(CliError::Http {
            status,
            reason,
            text,
            ..
        }) => {
            return Err(CliError::Http {
                status,
                reason,
                text,
                hint: None,
            })
        }
        other => other?,
    };
    if !resp.success || resp.tkn.is_empty() {
        return Err(CliError::failed("the server did not return a token"));
    }
    let domain = global.domain.clone().or(stored.domain);
    let path = profile::save(
        &global.profile,
        Profile {
            url: Some(url.clone()),
            domain,
            username: Some(username.clone()),
            token: Some(resp.tkn),
        },
    )?;
    eprintln!(
        "Logged in to {url} as {username} (profile `{}`, stored in {}).",
        global.profile,
        path.display()
    );
    Ok(())
}

pub fn logout(global: &GlobalArgs) -> CliResult<()> {
    if profile::remove(&global.profile)? {
        eprintln!("Logged out (profile `{}` removed).", global.profile);
    } else {
        eprintln!("Not logged in (no profile `{}`).", global.profile);
    }
    Ok(())
}

fn prompt_username() -> CliResult<String> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "no --username given and standard input is not a terminal to ask for one",
        ));
    }
    eprint!("Username: ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim().to_string())
}

fn prompt_password() -> CliResult<String> {
    rpassword::prompt_password("Password: ").map_err(|e| {
        CliError::usage(format!(
            "cannot prompt for the password ({e}); use --password-stdin"
        ))
    })
}

fn read_password_stdin() -> CliResult<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::failed(format!("cannot read the password from stdin: {e}")))?;
    let password = line.trim_end_matches(['\n', '\r']).to_string();
    if password.is_empty() {
        return Err(CliError::usage(
            "--password-stdin: standard input held no password",
        ));
    }
    Ok(password)
}
