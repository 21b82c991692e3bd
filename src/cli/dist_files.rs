//! `svc dist-files --out DIR` (for scripts/deb, no user's command): writes the files the
//! Debian package and the release tarball install beside the binary, all generated from the
//! clap definitions so they cannot drift from the command line: man pages (`man/*.1.gz`),
//! shell completions (`completions/`) and `svc.toml`, the config file with every `svc serve`
//! setting commented out.
//!
//! It is parsed apart from [`super::Cli`]: clap's completion generators list hidden
//! subcommands too, and this one belongs in no completion, help or man page.

use anyhow::{Context, Result};
use std::any::TypeId;
use std::io::Write;
use std::net::IpAddr;
use std::path::Path;

/// `svc dist-files`'s own command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "svc dist-files",
    about = "Write the man pages, completions and config file"
)]
struct Args {
    /// Directory to write into (created if missing)
    #[arg(long)]
    out: std::path::PathBuf,
}

/// Runs `svc dist-files` when the command line starts with it; `None` for any other.
pub fn run_if_asked() -> Option<std::process::ExitCode> {
    let mut args = std::env::args_os();
    let program = args.next()?;
    if args.next()?.to_str() != Some("dist-files") {
        return None;
    }
    let args = <Args as clap::Parser>::parse_from(std::iter::once(program).chain(args));
    Some(match write(&args.out) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("svc dist-files: {e:#}");
            std::process::ExitCode::FAILURE
        }
    })
}

/// Writes every file beneath `out` (created if missing).
pub fn write(out: &Path) -> Result<()> {
    man_pages(&out.join("man"))?;
    completions(&out.join("completions"))?;
    let config = config_file(&super::parse::command());
    std::fs::write(out.join("svc.toml"), config)
        .with_context(|| format!("cannot write {}", out.join("svc.toml").display()))?;
    Ok(())
}

/// `svc.1` and one page per subcommand (`svc-records-list.1`, …), gzipped as Debian policy
/// wants them, without a timestamp in the gzip header (reproducible packages).
fn man_pages(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // The completion shape: client options on the client subcommands, none on `serve`.
    let mut command = super::parse::completion_command();
    command.build();
    for (name, page) in pages(&command, "svc") {
        let mut roff = Vec::new();
        clap_mangen::Man::new(page)
            .title(name.as_str())
            .render(&mut roff)?;
        let path = dir.join(format!("{name}.1.gz"));
        let file = std::fs::File::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let mut gz = flate2::GzBuilder::new().write(file, flate2::Compression::best());
        gz.write_all(&roff)?;
        gz.finish()?;
    }
    Ok(())
}

/// Every visible command with the name of its page (`svc`, `svc-records`, `svc-records-list`);
/// each page's title is that name, so `man svc-records-list` finds it.
fn pages(command: &clap::Command, name: &str) -> Vec<(String, clap::Command)> {
    let mut all = vec![(name.to_string(), command.clone())];
    // clap's own `help` subcommands repeat what `--help` and the parent page say.
    let visible = |s: &&clap::Command| !s.is_hide_set() && s.get_name() != "help";
    for sub in command.get_subcommands().filter(visible) {
        all.extend(pages(sub, &format!("{name}-{}", sub.get_name())));
    }
    all
}

/// bash, zsh and fish completions, named as each shell's completion directory expects.
fn completions(dir: &Path) -> Result<()> {
    use clap_complete::Shell;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (shell, file) in [
        (Shell::Bash, "svc"),
        (Shell::Zsh, "_svc"),
        (Shell::Fish, "svc.fish"),
    ] {
        let path = dir.join(file);
        let mut out = std::fs::File::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        clap_complete::generate(
            shell,
            &mut super::parse::completion_command(),
            "svc",
            &mut out,
        );
    }
    Ok(())
}

/// The config file: a header, then each `svc serve` setting (but `--config` itself) as its
/// help text and a commented `key = value` line with its default or an example, in TOML
/// that `svc serve --config` reads once the `#` is removed.
fn config_file(command: &clap::Command) -> String {
    let serve = command
        .find_subcommand("serve")
        .expect("the command line has a `serve` subcommand");
    let mut text = String::from(
        "# svc serve's settings (svc serve --config /etc/svc/svc.toml). Every setting is commented\n\
         # out: svc uses its default, shown here, until the line is uncommented. A setting is also\n\
         # a flag and an SVC_<NAME> environment variable, which win over this file.\n\
         #\n\
         # Under systemd (svc.service), data_dir is /var/lib/svc, given by the unit's\n\
         # SVC_DATA_DIR: change it with `systemctl edit svc`, not here.\n",
    );
    for arg in serve.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if arg.is_hide_set() || matches!(long, "config" | "help") {
            continue;
        }
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let key = long.replace('-', "_");
        text.push('\n');
        for line in wrap(&help, 94) {
            text.push_str(&format!("# {line}\n"));
        }
        text.push_str(&format!("#{key} = {}\n", sample(arg, &help)));
    }
    text
}

/// A TOML value for the commented line: the help's `[default: …]` or `e.g. …` when it is a
/// value of the setting's type, else an empty one of that type.
fn sample(arg: &clap::Arg, help: &str) -> String {
    let hint = help
        .rsplit_once("[default: ")
        .and_then(|(_, d)| d.split_once(']'))
        .map(|(d, _)| d.trim())
        .filter(|d| !d.contains(' '))
        .or_else(|| {
            help.split_once("e.g. ")
                .map(|(_, e)| e.split([',', ' ', ')']).next().unwrap_or(""))
        })
        .unwrap_or("");
    let id = arg.get_value_parser().type_id();
    let is = |t: TypeId| id == t;
    if is(TypeId::of::<bool>()) {
        return if hint == "true" { "true" } else { "false" }.into();
    }
    let numeric = [
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
    ];
    if numeric.into_iter().any(is) {
        return if hint.parse::<u64>().is_ok() {
            hint
        } else {
            "0"
        }
        .into();
    }
    if is(TypeId::of::<IpAddr>()) && hint.parse::<IpAddr>().is_err() {
        return "\"127.0.0.1\"".into();
    }
    // Strings and paths: TOML's basic string, quoted as JSON quotes (a subset TOML reads).
    serde_json::Value::String(hint.to_string()).to_string()
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::settings::ServeArgs;

    #[test]
    fn the_config_file_names_every_setting_commented_and_reads_back_uncommented() {
        let text = config_file(&super::super::parse::command());
        assert!(
            text.lines().all(|l| l.is_empty() || l.starts_with('#')),
            "a setting is not commented out:\n{text}"
        );
        let settings: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .filter(|l| !l.starts_with(' ') && l.contains(" = "))
            .collect();
        // Every flag of `svc serve` (but --config and --help) is there.
        let serve = super::super::parse::command();
        let serve = serve.find_subcommand("serve").unwrap();
        for arg in serve.get_arguments().filter_map(|a| a.get_long()) {
            let key = arg.replace('-', "_");
            if matches!(arg, "config" | "help") || serve_hidden(serve, arg) {
                continue;
            }
            assert!(
                settings.iter().any(|s| s.starts_with(&format!("{key} = "))),
                "`{key}` is missing from the config file:\n{text}"
            );
        }
        // Uncommented, the lines are a config file `svc serve` reads: known keys, right types.
        let uncommented = settings.join("\n");
        let args: ServeArgs = toml::from_str(&uncommented).unwrap_or_else(|e| {
            panic!("the uncommented settings do not read back: {e}\n{uncommented}")
        });
        assert_eq!(args.http_port, Some(6188));
        assert_eq!(args.token_ttl.as_deref(), Some("12h"));
        assert_eq!(args.mqtt_allow_anonymous, Some(false));
    }

    fn serve_hidden(serve: &clap::Command, long: &str) -> bool {
        serve
            .get_arguments()
            .any(|a| a.get_long() == Some(long) && a.is_hide_set())
    }

    #[test]
    fn writes_man_pages_completions_and_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path()).unwrap();
        for file in [
            "man/svc.1.gz",
            "man/svc-serve.1.gz",
            "man/svc-records-list.1.gz",
        ] {
            assert!(dir.path().join(file).is_file(), "{file} was not written");
        }
        assert!(
            !dir.path().join("man/svc-help.1.gz").exists(),
            "clap's help subcommand got a man page"
        );
        let mut page = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(dir.path().join("man/svc-serve.1.gz")).unwrap(),
            ),
            &mut page,
        )
        .unwrap();
        assert!(page.contains(".TH svc-serve"), "{page}");
        assert!(page.contains("data\\-dir"), "{page}");
        for file in [
            "completions/svc",
            "completions/_svc",
            "completions/svc.fish",
            "svc.toml",
        ] {
            let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
            assert!(text.contains("serve"), "{file}: {text}");
        }
    }
}
