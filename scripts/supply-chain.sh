#!/usr/bin/env bash
# Supply-chain checks of the dependency tree (issue 39), run by .ci/run; they fail CI as fmt
# and clippy do. Policy and every ignored advisory: deny.toml, .cargo/audit.toml and
# docs/decisions/supply-chain.md.
#   cargo deny check   advisories, licenses, bans (wildcards), sources (crates.io only)
#   cargo audit        the advisories once more, by the RustSec project's own tool
# Both tools come from crates.io (pinned) when missing. Both read one copy of the RustSec
# advisory database: fetched from GitHub when GitHub answers; otherwise the copy an earlier run
# fetched; otherwise the snapshot committed in .ci/ (its date is printed: a stale database
# knows no newer advisory, so the run says so loudly).
set -euo pipefail
cd "$(dirname "$0")/.."

DENY_VERSION=0.20.2
AUDIT_VERSION=0.22.2
installed() { "$1" --version 2>/dev/null | grep -q " $2\$"; }
installed cargo-deny "$DENY_VERSION" || cargo install --locked --quiet --version "$DENY_VERSION" cargo-deny
installed cargo-audit "$AUDIT_VERSION" || cargo install --locked --quiet --version "$AUDIT_VERSION" cargo-audit

# Where cargo-deny keeps https://github.com/RustSec/advisory-db (a name derived from the URL).
db="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs/advisory-db-3157b0e258782691"
if cargo deny fetch db 2>/dev/null; then
  echo "advisory database: fetched now, as of $(git -C "$db" show -s --format=%cs HEAD)"
else
  if [ ! -d "$db/.git" ]; then
    # cargo-deny reads a git checkout (it asks git for the database's date): the snapshot
    # becomes one commit dated as the snapshot.
    snapshot_date=2025-02-24T14:30:42Z # RustSec/advisory-db 2e25d9665f10de885c81a9fb9d51a289f625b05f
    rm -rf "$db" && mkdir -p "$db"
    tar -xzf .ci/advisory-db-snapshot.tar.gz -C "$db" --strip-components=1
    (cd "$db" && git init -q && git add -A &&
      GIT_AUTHOR_DATE="$snapshot_date" GIT_COMMITTER_DATE="$snapshot_date" \
        git -c user.name=svc-ci -c user.email=ci@svc.invalid commit -q -m "advisory-db snapshot")
  fi
  echo "WARNING: the advisory database could not be fetched (no network to GitHub): checking" \
    "against the copy of $(git -C "$db" show -s --format=%cs HEAD), which knows no later advisory"
fi

# cargo-deny reads the whole dependency graph, every target's crates included (wasm, Android),
# through `cargo metadata`, which offline needs them all on disk: a build fetches only this
# machine's. crates.io is reachable where GitHub is not.
cargo fetch --locked --quiet
cargo deny --offline check advisories licenses bans sources
cargo audit --no-fetch --db "$db"
