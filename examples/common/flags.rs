//! `--flag value` command lines for the benchmark tools: a flag followed by another flag (or
//! nothing) is a switch. Bad input ends the process with the tool's usage text (exit 2).

#![allow(dead_code)] // each example uses what it needs

use std::collections::HashMap;

/// Prints `<tool>: <problem>` and the usage line, and exits 2.
pub fn usage(tool: &str, line: &str, problem: &str) -> ! {
    eprintln!("{tool}: {problem}\nusage: {line}");
    std::process::exit(2)
}

/// `--flag value` pairs, with the tool's usage to exit with.
pub struct Flags {
    map: HashMap<String, String>,
    tool: &'static str,
    line: &'static str,
}

impl Flags {
    pub fn parse(
        tool: &'static str,
        line: &'static str,
        raw: impl Iterator<Item = String>,
    ) -> Flags {
        let mut map = HashMap::new();
        let mut raw = raw.peekable();
        while let Some(flag) = raw.next() {
            let Some(name) = flag.strip_prefix("--") else {
                usage(tool, line, &format!("unexpected argument {flag}"))
            };
            let value = match raw.peek() {
                Some(v) if !v.starts_with("--") => raw.next().unwrap_or_default(),
                _ => "true".into(),
            };
            map.insert(name.to_string(), value);
        }
        Flags { map, tool, line }
    }

    /// Ends the process with the usage text.
    pub fn fail(&self, problem: &str) -> ! {
        usage(self.tool, self.line, problem)
    }

    pub fn text(&self, name: &str, default: &str) -> String {
        self.map
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.into())
    }

    pub fn required(&self, name: &str) -> String {
        self.map
            .get(name)
            .cloned()
            .unwrap_or_else(|| self.fail(&format!("--{name} is required")))
    }

    pub fn optional(&self, name: &str) -> Option<String> {
        self.map.get(name).cloned()
    }

    pub fn number<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        match self.map.get(name) {
            Some(v) => v
                .parse()
                .unwrap_or_else(|_| self.fail(&format!("--{name} wants a number"))),
            None => default,
        }
    }

    pub fn switch(&self, name: &str) -> bool {
        self.map.get(name).is_some_and(|v| v == "true")
    }
}
