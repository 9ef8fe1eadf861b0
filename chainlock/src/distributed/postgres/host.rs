//! One server session ready for the backend's statements ([`Host`]): its prepared statements,
//! the epoch known durable on it, and what it holds or asks for on behalf of this client's
//! guards (its reservations, one per key).
//!
//! A host owns its [`Session`] (the connection and its driver); the pool owns its hosts. The
//! driver keeps the connection's place in the client's bound, which this module sees only as
//! a value to hand over ([`Host::open`]): nothing here refers back to the pool.

use super::super::Error;
use super::super::backend::Mode;
use super::super::name::Advisory;
use super::options::PostgresOptions;
use super::session::Session;
use super::sql;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;
use tokio::runtime::Handle;
use tokio_postgres::Statement;
use tokio_postgres::types::{ToSql, Type};

/// What a session holds of one key, for guards of this client, or asks the server for.
#[derive(Clone, Copy, Debug)]
struct Reserved {
    mode: Mode,
    /// Holds and asks (more than one only for [`Mode::Shared`]).
    count: usize,
}

/// The statements of one mode, prepared on one session (the `bigint` key form).
struct Prepared {
    lock: Statement,
    try_lock: Statement,
    unlock: Statement,
}

/// One server session with its prepared statements; shared by the locks it holds.
pub(super) struct Host {
    pub(super) session: Session,
    /// By mode: exclusive, shared.
    prepared: [Prepared; 2],
    /// An epoch known to be durable on this session's server (a server restart or crash ends
    /// the session, so it stays true for the session's life).
    durable: AtomicI64,
    /// Keys this session holds for guards of this client, or is asking the server for.
    keys: Mutex<HashMap<Advisory, Reserved>>,
    /// Held while an epoch is recorded on this session (one transaction at a time).
    pub(super) recording: tokio::sync::Mutex<()>,
}

impl std::ops::Deref for Host {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Host {
    /// Opens a session ready for an acquisition: connects, applies the session settings,
    /// prepares the statements and reads the durable epoch (pipelined). `place` is the
    /// connection's place in its client's bound: the session's driver keeps it until the
    /// connection is closed. Not bounded here: callers bound it (dropping the future closes
    /// whatever was opened, and drops `place`).
    pub(super) async fn open<P: Send + 'static>(
        options: &PostgresOptions,
        runtime: &Handle,
        place: P,
    ) -> Result<Self, Error> {
        let sent = Instant::now();
        let (client, connection) = options.connect().await?;
        // From here on, dropping `session` closes the connection.
        let session = Session::start(client, connection, options, runtime, place);
        session
            .client
            .batch_execute(&sql::session_settings(options.server_release_after()))
            .await?;
        // Pipelined: one round trip's wait for all of them.
        let client = &session.client;
        let prepare = |mode: Mode| async move {
            let texts = sql::statements(mode);
            let (lock, try_lock, unlock) = tokio::try_join!(
                client.prepare(texts.lock),
                client.prepare(texts.try_lock),
                client.prepare(texts.unlock),
            )?;
            Ok::<_, tokio_postgres::Error>(Prepared {
                lock,
                try_lock,
                unlock,
            })
        };
        let (exclusive, shared, durable) = tokio::try_join!(
            prepare(Mode::Exclusive),
            prepare(Mode::Shared),
            client.query_one(sql::DURABLE_EPOCH, &[]),
        )?;
        let durable_epoch: i64 = durable.get(0);
        session.liveness.contact(sent);
        Ok(Self {
            session,
            prepared: [exclusive, shared],
            durable: AtomicI64::new(durable_epoch),
            keys: Mutex::new(HashMap::new()),
            recording: tokio::sync::Mutex::new(()),
        })
    }

    pub(super) fn is_lost(&self) -> bool {
        self.liveness.is_lost()
    }

    pub(super) fn durable_epoch(&self) -> i64 {
        self.durable.load(Ordering::Acquire)
    }

    pub(super) fn record_durable(&self, epoch: i64) {
        self.durable.fetch_max(epoch, Ordering::AcqRel);
    }

    /// How many keys this session holds or asks for.
    pub(super) fn load(&self) -> usize {
        self.keys.lock().len()
    }

    /// The mode in which this session holds or asks for `key` (if it does), and how many keys
    /// it holds or asks for in all.
    pub(super) fn reserved(&self, key: Advisory) -> (Option<Mode>, usize) {
        let keys = self.keys.lock();
        (keys.get(&key).map(|reserved| reserved.mode), keys.len())
    }

    /// Reserves `key` in `mode` (one more hold or ask).
    pub(super) fn reserve(&self, key: Advisory, mode: Mode) {
        self.keys
            .lock()
            .entry(key)
            .and_modify(|reserved| reserved.count += 1)
            .or_insert(Reserved { mode, count: 1 });
    }

    /// One hold or ask of `key` less.
    pub(super) fn unreserve(&self, key: Advisory) {
        let mut keys = self.keys.lock();
        if let Some(reserved) = keys.get_mut(&key) {
            reserved.count -= 1;
            if reserved.count == 0 {
                keys.remove(&key);
            }
        }
    }

    fn prepared(&self, mode: Mode) -> &Prepared {
        match mode {
            Mode::Exclusive => &self.prepared[0],
            Mode::Shared => &self.prepared[1],
        }
    }

    /// `pg_try_advisory_lock` (or `_shared`): a drawn token if the lock was free, `None` if
    /// held in a conflicting mode.
    pub(super) async fn try_lock(
        &self,
        key: Advisory,
        mode: Mode,
    ) -> Result<Option<i64>, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                self.client
                    .query_one(&self.prepared(mode).try_lock, &[&key])
                    .await?
            }
            Advisory::Pair(high, low) => one_row(
                self.client
                    .query_typed(
                        sql::statements(mode).try_lock_pair,
                        &[(&high, Type::INT4), (&low, Type::INT4)],
                    )
                    .await?,
            ),
        };
        Ok(row.get(0))
    }

    /// `pg_advisory_lock` (or `_shared`) under `lock_timeout = timeout_ms` (`"0"`: none): a
    /// drawn token.
    pub(super) async fn lock(
        &self,
        key: Advisory,
        mode: Mode,
        timeout_ms: &str,
    ) -> Result<i64, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                let params: [&(dyn ToSql + Sync); 2] = [&key, &timeout_ms];
                self.client
                    .query_one(&self.prepared(mode).lock, &params)
                    .await?
            }
            Advisory::Pair(high, low) => one_row(
                self.client
                    .query_typed(
                        sql::statements(mode).lock_pair,
                        &[
                            (&high, Type::INT4),
                            (&timeout_ms, Type::TEXT),
                            (&low, Type::INT4),
                        ],
                    )
                    .await?,
            ),
        };
        Ok(row.get(0))
    }

    /// `pg_advisory_unlock` (or `_shared`): whether this session held the lock.
    pub(super) async fn unlock(
        &self,
        key: Advisory,
        mode: Mode,
    ) -> Result<bool, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                self.client
                    .query_one(&self.prepared(mode).unlock, &[&key])
                    .await?
            }
            Advisory::Pair(high, low) => one_row(
                self.client
                    .query_typed(
                        sql::statements(mode).unlock_pair,
                        &[(&high, Type::INT4), (&low, Type::INT4)],
                    )
                    .await?,
            ),
        };
        Ok(row.get(0))
    }
}

fn one_row(mut rows: Vec<tokio_postgres::Row>) -> tokio_postgres::Row {
    rows.pop().expect("the statement returns one row")
}
