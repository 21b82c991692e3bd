//! How the pool opens a connection: always on the engine's own runtime, whoever asks. The pool
//! is awaited from two places, the engine's runtime (the synchronous interface blocks on it)
//! and the server's workers (the async reads); deadpool-postgres' own connector would register
//! the socket with, and spawn the connection's task on, whichever runtime happened to ask. A
//! connection opened for a request would then live on the server's runtime: the synchronous
//! callers (the historian writer, the sealer, shutdown's last writes) would depend on the
//! server's workers to move their bytes, and stop when its runtime does. Opened here, every
//! connection is driven by the engine's runtime, which the store alone ends (its `Drop`), and a
//! request only sends to it and awaits the answer.

use deadpool_postgres::Connect;
use futures::future::BoxFuture;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Config, Error};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Opens connections on the engine's runtime (see the module's documentation).
pub(super) struct OnEngineRuntime {
    tls: MakeRustlsConnect,
    runtime: Handle,
}

impl OnEngineRuntime {
    pub(super) fn new(tls: MakeRustlsConnect, runtime: Handle) -> OnEngineRuntime {
        OnEngineRuntime { tls, runtime }
    }
}

impl Connect for OnEngineRuntime {
    fn connect(&self, config: &Config) -> BoxFuture<'_, Result<(Client, JoinHandle<()>), Error>> {
        let (config, tls) = (config.clone(), self.tls.clone());
        let opened = self.runtime.spawn(async move {
            let (client, connection) = config.connect(tls).await?;
            // Spawned from a task of the engine's runtime, so it runs there.
            let task = tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "a database connection ended");
                }
            });
            Ok((client, task))
        });
        Box::pin(async move {
            match opened.await {
                Ok(opened) => opened,
                Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
                // Cancelled: the engine's runtime is shutting down, which happens only when the
                // store is dropped, so only that runtime's own tasks (being dropped too) can be
                // waiting here. No connection will come; the pool's create timeout answers.
                Err(_) => std::future::pending().await,
            }
        })
    }
}
