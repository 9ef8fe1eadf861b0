//! The shared mode of the PostgreSQL reader-writer lock: `pg_advisory_lock_shared` on the
//! name's key, the key the exclusive mode (the mutex, `pg_advisory_lock`) locks, so the two
//! modes of one name exclude each other on the server.
//!
//! The protocol is the mutex's (see the parent module): a shared hold owns its connection,
//! which goes back to the pool only once the server confirmed it holds nothing; waiting happens
//! on the server, bounded by `lock_timeout`; a timed-out wait runs `pg_advisory_unlock_all()`;
//! every network wait is bounded on the client. A shared holder draws a fencing token after it
//! holds the lock, like an exclusive one, so every token of a name is greater than the tokens
//! of the exclusive holders before it, and every exclusive holder's token is greater than the
//! tokens of the holders before it (shared or exclusive).
//!
//! The statements are prepared once per connection, on its first shared acquisition, and kept
//! in a side table keyed by the connection's client (a weak reference, so a recycled address
//! never finds another connection's statements): a pooled connection that never takes a
//! shared lock prepares nothing more.

use super::session::Busy;
use super::{Conn, Error, FencingToken, PgBackend, Stage, Wait, bounded, epoch, name, sql};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};
use std::time::Instant;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

/// Sets the wait bound, waits for the shared lock, draws a token: one round trip.
const LOCK_SHARED: &str = "WITH timeout AS MATERIALIZED \
        (SELECT pg_catalog.set_config('lock_timeout', $2, false)), \
    locked AS MATERIALIZED (SELECT pg_catalog.pg_advisory_lock_shared($1) FROM timeout) \
    SELECT pg_catalog.nextval('chainlock.token_counter') FROM locked";
const TRY_LOCK_SHARED: &str = "SELECT CASE WHEN pg_catalog.pg_try_advisory_lock_shared($1) \
    THEN pg_catalog.nextval('chainlock.token_counter') END";
const UNLOCK_SHARED: &str = "SELECT pg_catalog.pg_advisory_unlock_shared($1)";

/// The shared-mode statements, prepared on one connection.
#[derive(Clone)]
struct Statements {
    lock: Statement,
    try_lock: Statement,
    unlock: Statement,
}

/// The statements of every connection that took a shared lock, by the address of its client.
static PREPARED: LazyLock<Mutex<Prepared>> = LazyLock::new(Mutex::default);

#[derive(Default)]
struct Prepared {
    by_client: HashMap<usize, (Weak<Client>, Statements)>,
    /// Size after the last sweep of closed connections; the next runs at twice this size.
    swept_at: usize,
}

/// The shared-mode statements of `client`, prepared on first use.
async fn statements(client: &Arc<Client>) -> Result<Statements, Error> {
    let address = Arc::as_ptr(client) as usize;
    {
        let prepared = PREPARED.lock();
        if let Some((owner, statements)) = prepared.by_client.get(&address)
            && owner.as_ptr() == Arc::as_ptr(client)
            && owner.strong_count() > 0
        {
            return Ok(statements.clone());
        }
    }
    let statements = Statements {
        lock: client.prepare(LOCK_SHARED).await?,
        try_lock: client.prepare(TRY_LOCK_SHARED).await?,
        unlock: client.prepare(UNLOCK_SHARED).await?,
    };
    let mut prepared = PREPARED.lock();
    if prepared.by_client.len() >= 2 * prepared.swept_at.max(32) {
        prepared
            .by_client
            .retain(|_, (owner, _)| owner.strong_count() > 0);
        prepared.swept_at = prepared.by_client.len();
    }
    prepared
        .by_client
        .insert(address, (Arc::downgrade(client), statements.clone()));
    Ok(statements)
}

impl PgBackend {
    /// Acquires `name` in shared mode; bounded as [`PgBackend::acquire`].
    pub(in super::super) async fn acquire_shared(
        &self,
        name: &str,
        wait: Wait,
    ) -> Result<Option<PgSharedHeld>, Error> {
        let heartbeat_timeout = self.0.options.heartbeat_timeout;
        match wait {
            Wait::Never => {
                bounded(
                    Stage::Acquire,
                    heartbeat_timeout,
                    self.acquire_shared_now(name, wait),
                )
                .await
            }
            Wait::For(timeout) => {
                let limit = timeout.saturating_add(heartbeat_timeout);
                bounded(Stage::Acquire, limit, self.acquire_shared_now(name, wait)).await
            }
            Wait::Forever => self.acquire_shared_now(name, wait).await,
        }
    }

    async fn acquire_shared_now(
        &self,
        name: &str,
        wait: Wait,
    ) -> Result<Option<PgSharedHeld>, Error> {
        let options = &self.0.options;
        let key = name::advisory_key(name);
        // Dropped on every error or cancellation: the server then drops the session's locks.
        let mut conn = self.check_out().await?;
        // Session set-up (prepared once per connection): bounded as opening a session is.
        let statements = bounded(
            Stage::Connect,
            options.connect_timeout(),
            statements(&conn.client),
        )
        .await?;
        let busy = Busy::set(&conn.busy);
        let sent = Instant::now();
        let drawn: Option<i64> = match wait {
            Wait::Never => conn
                .client
                .query_one(&statements.try_lock, &[&key])
                .await?
                .get(0),
            Wait::For(_) | Wait::Forever => {
                let timeout_ms = match wait {
                    Wait::For(timeout) => {
                        timeout.as_millis().clamp(1, i32::MAX as u128).to_string()
                    }
                    Wait::Never | Wait::Forever => "0".to_owned(),
                };
                let params: [&(dyn ToSql + Sync); 2] = [&key, &timeout_ms];
                match conn.client.query_one(&statements.lock, &params).await {
                    Ok(row) => Some(row.get(0)),
                    Err(err) if err.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                        // Granted in the same instant as the timeout? Make the session clean.
                        let unlocked = Instant::now();
                        bounded(Stage::Acquire, options.heartbeat_timeout, async {
                            Ok(conn.client.batch_execute(sql::UNLOCK_ALL).await?)
                        })
                        .await?;
                        conn.liveness.contact(unlocked);
                        None
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        };
        conn.liveness.contact(sent);
        let Some(drawn) = drawn else {
            drop(busy);
            self.0.pool.put(conn);
            return Ok(None);
        };
        let token = if epoch::covers(conn.durable_epoch, drawn) {
            drawn
        } else {
            let recorded = Instant::now();
            let (token, durable) = bounded(
                Stage::Acquire,
                options.heartbeat_timeout,
                epoch::record(&conn.client, drawn),
            )
            .await?;
            conn.durable_epoch = conn.durable_epoch.max(durable);
            conn.liveness.contact(recorded);
            token
        };
        if sent.elapsed() > options.heartbeat_interval
            && conn.ping(options.heartbeat_timeout).await.is_err()
        {
            return Err(Error::Unresponsive {
                stage: Stage::Acquire,
                after: options.heartbeat_timeout,
            });
        }
        drop(busy);
        let token = u64::try_from(token).map_err(|_| Error::TokensExhausted)?;
        Ok(Some(PgSharedHeld {
            conn: Some(conn),
            key,
            token: FencingToken::new(token),
            backend: self.clone(),
        }))
    }

    /// Unlocks the shared `key` within `heartbeat_timeout` and recycles the connection; on any
    /// failure the connection is closed, which releases the lock on the server.
    async fn release_shared(&self, conn: Conn, key: i64) -> Result<(), Error> {
        if conn.is_lost() {
            return Err(Error::Lost);
        }
        let released: bool = bounded(Stage::Release, self.0.options.heartbeat_timeout, async {
            let statements = statements(&conn.client).await?;
            Ok(conn
                .client
                .query_one(&statements.unlock, &[&key])
                .await?
                .get(0))
        })
        .await?;
        if released {
            self.0.pool.put(conn);
            Ok(())
        } else {
            Err(Error::Lost)
        }
    }
}

/// A held shared advisory lock; `conn` is `None` only after release took it.
pub(in super::super) struct PgSharedHeld {
    conn: Option<Conn>,
    key: i64,
    token: FencingToken,
    backend: PgBackend,
}

impl PgSharedHeld {
    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("a held lock has its connection")
    }

    pub(in super::super) fn token(&self) -> FencingToken {
        self.token
    }

    pub(in super::super) fn is_lost(&self) -> bool {
        self.conn().is_lost()
    }

    pub(in super::super) async fn lost(&self) {
        self.conn().liveness.lost().await;
    }

    pub(in super::super) async fn release(mut self) -> Result<(), Error> {
        let conn = self.conn.take().expect("a held lock has its connection");
        self.backend.release_shared(conn, self.key).await
    }
}

impl Drop for PgSharedHeld {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let (backend, key) = (self.backend.clone(), self.key);
            drop(
                self.backend
                    .0
                    .runtime
                    .spawn(async move { backend.release_shared(conn, key).await }),
            );
        }
    }
}
