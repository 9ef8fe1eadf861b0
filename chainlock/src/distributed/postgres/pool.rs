//! Sessions ready for an acquisition ([`Conn`]: prepared statements, known durable epoch), and
//! the pool of idle ones.
//!
//! A connection holds at most one advisory lock, and goes back to the pool only after the
//! server confirmed it holds none; anything else closes it, and the server releases whatever
//! it held with the session.

use super::super::Error;
use super::super::name::Advisory;
use super::options::PostgresOptions;
use super::session::Session;
use super::sql;
use parking_lot::Mutex;
use std::time::Instant;
use tokio::runtime::Handle;
use tokio_postgres::Statement;
use tokio_postgres::types::{ToSql, Type};

/// One server session, owned by the pool or by one held lock.
pub(super) struct Conn {
    pub(super) session: Session,
    pub(super) lock: Statement,
    pub(super) try_lock: Statement,
    pub(super) unlock: Statement,
    /// An epoch known to be durable on this session's server (a server restart or crash ends
    /// the session, so it stays true for the session's life).
    pub(super) durable_epoch: i64,
}

impl std::ops::Deref for Conn {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Conn {
    /// Opens a session of our own, ready for an acquisition. Not bounded here: callers bound
    /// it (dropping the future closes whatever was opened).
    pub(super) async fn open(options: &PostgresOptions, runtime: &Handle) -> Result<Self, Error> {
        let sent = Instant::now();
        let (client, connection) = options.connect().await?;
        // From here on, dropping `session` closes the connection.
        let session = Session::start(client, connection, options, runtime);
        session
            .client
            .batch_execute(&sql::session_settings(options.server_release_after()))
            .await?;
        let lock = session.client.prepare(sql::LOCK).await?;
        let try_lock = session.client.prepare(sql::TRY_LOCK).await?;
        let unlock = session.client.prepare(sql::UNLOCK).await?;
        let durable_epoch = session
            .client
            .query_one(sql::DURABLE_EPOCH, &[])
            .await?
            .get(0);
        session.liveness.contact(sent);
        Ok(Self {
            session,
            lock,
            try_lock,
            unlock,
            durable_epoch,
        })
    }

    pub(super) fn is_lost(&self) -> bool {
        self.liveness.is_lost()
    }

    /// `pg_try_advisory_lock`: a drawn token if the lock was free, `None` if held.
    pub(super) async fn try_lock(
        &self,
        key: Advisory,
    ) -> Result<Option<i64>, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => self.client.query_one(&self.try_lock, &[&key]).await?,
            Advisory::Pair(high, low) => self
                .client
                .query_typed(
                    sql::TRY_LOCK_PAIR,
                    &[(&high, Type::INT4), (&low, Type::INT4)],
                )
                .await?
                .pop()
                .expect("one row"),
        };
        Ok(row.get(0))
    }

    /// `pg_advisory_lock` under `lock_timeout = timeout_ms` (`"0"`: none): a drawn token.
    pub(super) async fn lock(
        &self,
        key: Advisory,
        timeout_ms: &str,
    ) -> Result<i64, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                let params: [&(dyn ToSql + Sync); 2] = [&key, &timeout_ms];
                self.client.query_one(&self.lock, &params).await?
            }
            Advisory::Pair(high, low) => self
                .client
                .query_typed(
                    sql::LOCK_PAIR,
                    &[
                        (&high, Type::INT4),
                        (&timeout_ms, Type::TEXT),
                        (&low, Type::INT4),
                    ],
                )
                .await?
                .pop()
                .expect("one row"),
        };
        Ok(row.get(0))
    }

    /// `pg_advisory_unlock`: whether this session held the lock.
    pub(super) async fn unlock(&self, key: Advisory) -> Result<bool, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => self.client.query_one(&self.unlock, &[&key]).await?,
            Advisory::Pair(high, low) => self
                .client
                .query_typed(sql::UNLOCK_PAIR, &[(&high, Type::INT4), (&low, Type::INT4)])
                .await?
                .pop()
                .expect("one row"),
        };
        Ok(row.get(0))
    }
}

/// Idle connections, none holding a lock.
pub(super) struct Pool {
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
}

impl Pool {
    pub(super) fn new(max_idle: usize) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            max_idle,
        }
    }

    /// An idle connection that is not lost, if any.
    pub(super) fn take(&self) -> Option<Conn> {
        loop {
            let conn = self.idle.lock().pop()?;
            if !conn.is_lost() {
                return Some(conn);
            }
        }
    }

    /// Keeps `conn` for later; it must hold no lock.
    pub(super) fn put(&self, conn: Conn) {
        if conn.is_lost() {
            return;
        }
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }
}
