//! A bare axum hello-world server: the baseline `bench/run.sh` measures `svc serve` against.
//!
//! One route, `GET /` → `hello`, on a multi-threaded tokio runtime (the same runtime flavour
//! `svc serve` uses), bound to `127.0.0.1:0`. Once listening it prints
//! `ready {"http":"127.0.0.1:PORT"}` on stdout, like `svc serve`, so the benchmark reads the
//! port the same way for both servers.
//!
//! ```sh
//! cargo run --release --example hello
//! ```

use axum::routing::get;
use axum::Router;
use std::io::Write;

fn main() -> std::io::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve())
}

async fn serve() -> std::io::Result<()> {
    let app = Router::new().route("/", get(|| async { "hello" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready {{\"http\":\"{addr}\"}}")?;
        out.flush()?;
    }
    axum::serve(listener, app).await
}
