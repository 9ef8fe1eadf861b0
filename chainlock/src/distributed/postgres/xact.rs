//! Transaction-scoped locks: `pg_advisory_xact_lock` inside the caller's own transaction,
//! released by the server when the transaction ends, or when the caller rolls back to a
//! savepoint taken before the lock.
//!
//! Nothing here opens a connection or leaves state on the session: the timeout is set with
//! `set_config(…, true)` (transaction-local) and restored in the same statement, a timed wait
//! runs under a savepoint so that its timeout does not abort the caller's transaction. That is
//! what makes the mode usable behind PgBouncer's transaction pooling.

use super::super::Error;
use super::super::name::{Advisory, LockKey};
use super::sql::{
    XACT_LOCK as LOCK, XACT_LOCK_PAIR as LOCK_PAIR, XACT_RELEASE as RELEASE,
    XACT_ROLL_BACK as ROLL_BACK, XACT_SAVEPOINT as SAVEPOINT, XACT_TRY_LOCK as TRY_LOCK,
    XACT_TRY_LOCK_PAIR as TRY_LOCK_PAIR,
};
use std::time::{Duration, Instant};
use tokio_postgres::Transaction;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};

/// Takes the lock `key` for the rest of `transaction`, waiting as long as it takes: the
/// server releases it when the transaction commits or rolls back, or when the caller rolls
/// back to a savepoint taken before the lock (`ROLLBACK TO SAVEPOINT` undoes the lock with
/// everything else after the savepoint). There is no guard and no other early release.
///
/// `key` is a name or an integer key ([`LockKey`]), the same lock as
/// [`LockClient::lock`](super::super::LockClient::lock) takes: a transaction-scoped holder
/// and a session-scoped holder of one name exclude each other.
///
/// **No fencing token, no lost signal**, and none needed for writes made in the same
/// transaction: they commit only if the transaction commits, which it does only while it
/// holds the lock (if the connection dies, the transaction and the lock end together). Use
/// the session-scoped [`LockClient`](super::super::LockClient) to protect anything outside
/// this database.
///
/// Unlike [`LockClient`](super::super::LockClient), this works behind **PgBouncer in
/// transaction pooling** mode: everything happens inside the one transaction. See the
/// README's "Poolers" section for which mode works with which pooler.
///
/// The wait overrides the transaction's `lock_timeout` (it waits forever) and restores it; the
/// caller's `statement_timeout`, if any, still applies and, as any error inside a
/// transaction, aborts it.
///
/// # Errors
///
/// [`Error::Postgres`] if the statement fails (the connection broke, the transaction was
/// already aborted, a `statement_timeout`).
///
/// # Cancel safety
///
/// Dropping the future while the server waits leaves the statement running on the caller's
/// connection: the transaction gets the lock once it is free. Roll back (or drop) the
/// transaction to give it up.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(client: &mut tokio_postgres::Client) -> Result<(), chainlock::distributed::Error> {
/// use chainlock::distributed::xact_lock;
///
/// let transaction = client.transaction().await?;
/// xact_lock(&transaction, "orders").await?; // or an integer key: 42, (7, 42)
/// transaction.execute("UPDATE orders SET state = 'billed' WHERE id = 1", &[]).await?;
/// transaction.commit().await?; // releases the lock
/// # Ok(()) }
/// ```
pub async fn xact_lock<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
) -> Result<(), Error> {
    lock(transaction, key.into().into(), "0").await?;
    Ok(())
}

/// Takes the lock `key` for the rest of `transaction` if it is free now: `true` if taken,
/// `false` if someone else holds it (the transaction goes on either way). See [`xact_lock`].
///
/// # Errors
///
/// [`Error::Postgres`] if the statement fails.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(client: &mut tokio_postgres::Client) -> Result<(), chainlock::distributed::Error> {
/// let transaction = client.transaction().await?;
/// if chainlock::distributed::try_xact_lock(&transaction, 42).await? {
///     // ... work that needs key 42 ...
/// }
/// transaction.commit().await?;
/// # Ok(()) }
/// ```
pub async fn try_xact_lock<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
) -> Result<bool, Error> {
    let row = match Advisory::from(key.into()) {
        Advisory::Int(key) => transaction.query_one(TRY_LOCK, &[&key]).await?,
        Advisory::Pair(high, low) => {
            let typed: [(&(dyn ToSql + Sync), Type); 2] = [(&high, Type::INT4), (&low, Type::INT4)];
            one_row(transaction.query_typed(TRY_LOCK_PAIR, &typed).await?)
        }
    };
    Ok(row.get(0))
}

/// Takes the lock `key` for the rest of `transaction`, waiting at most `timeout` (on the
/// server, with `lock_timeout`, in whole milliseconds): `true` if taken, `false` if still held
/// then. A zero timeout is [`try_xact_lock`]. See [`xact_lock`].
///
/// The wait runs under a savepoint: a timeout rolls back to it, so the transaction stays
/// usable (and a grant racing the timeout is undone with it); the transaction's
/// `lock_timeout` is restored either way.
///
/// # Errors
///
/// [`Error::Postgres`] if a statement fails.
///
/// # Cancel safety
///
/// As [`xact_lock`]; in addition, the savepoint may be left open: roll back the transaction.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(client: &mut tokio_postgres::Client) -> Result<(), chainlock::distributed::Error> {
/// use std::time::{Duration, Instant};
///
/// let transaction = client.transaction().await?;
/// let got = chainlock::distributed::try_xact_lock_for(&transaction, "orders", Duration::from_secs(1)).await?;
/// // The transaction is usable whether or not `got`.
/// transaction.commit().await?;
/// # Ok(()) }
/// ```
pub async fn try_xact_lock_for<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
    timeout: Duration,
) -> Result<bool, Error> {
    if timeout.is_zero() {
        return try_xact_lock(transaction, key).await;
    }
    let millis = timeout.as_millis().clamp(1, i32::MAX as u128).to_string();
    transaction.batch_execute(SAVEPOINT).await?;
    match lock(transaction, key.into().into(), &millis).await {
        Ok(()) => {
            transaction.batch_execute(RELEASE).await?;
            Ok(true)
        }
        Err(error) if error.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
            transaction.batch_execute(ROLL_BACK).await?;
            Ok(false)
        }
        Err(error) => Err(error.into()),
    }
}

/// [`try_xact_lock_for`] with a deadline: waits until `deadline` at most (a deadline already
/// passed is [`try_xact_lock`]).
///
/// # Errors
///
/// [`Error::Postgres`] if a statement fails.
///
/// # Cancel safety
///
/// As [`try_xact_lock_for`].
///
/// # Examples
///
/// ```no_run
/// # async fn demo(client: &mut tokio_postgres::Client) -> Result<(), chainlock::distributed::Error> {
/// use std::time::{Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_secs(1);
/// let transaction = client.transaction().await?;
/// let got = chainlock::distributed::try_xact_lock_until(&transaction, (7, 42), deadline).await?;
/// transaction.commit().await?;
/// # let _ = got; Ok(()) }
/// ```
pub async fn try_xact_lock_until<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
    deadline: Instant,
) -> Result<bool, Error> {
    try_xact_lock_for(
        transaction,
        key,
        deadline.saturating_duration_since(Instant::now()),
    )
    .await
}

/// Blocking [`xact_lock`], for callers without a runtime: the transaction's connection must
/// be driven by a runtime on another thread (or chainlock's background runtime).
///
/// # Errors
///
/// As [`xact_lock`].
///
/// # Panics
///
/// Panics when called from an asynchronous context.
///
/// # Examples
///
/// ```no_run
/// # fn demo(transaction: &tokio_postgres::Transaction<'_>) -> Result<(), chainlock::distributed::Error> {
/// chainlock::distributed::blocking_xact_lock(transaction, "orders")?;
/// # Ok(()) }
/// ```
#[track_caller]
pub fn blocking_xact_lock<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
) -> Result<(), Error> {
    super::super::runtime::block_on(xact_lock(transaction, key))
}

/// Blocking [`try_xact_lock`]; see [`blocking_xact_lock`].
///
/// # Errors
///
/// As [`try_xact_lock`].
///
/// # Panics
///
/// Panics when called from an asynchronous context.
///
/// # Examples
///
/// ```no_run
/// # fn demo(transaction: &tokio_postgres::Transaction<'_>) -> Result<(), chainlock::distributed::Error> {
/// let got = chainlock::distributed::blocking_try_xact_lock(transaction, 42)?;
/// # let _ = got; Ok(()) }
/// ```
#[track_caller]
pub fn blocking_try_xact_lock<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
) -> Result<bool, Error> {
    super::super::runtime::block_on(try_xact_lock(transaction, key))
}

/// Blocking [`try_xact_lock_for`]; see [`blocking_xact_lock`].
///
/// # Errors
///
/// As [`try_xact_lock_for`].
///
/// # Panics
///
/// Panics when called from an asynchronous context.
///
/// # Examples
///
/// ```no_run
/// # fn demo(transaction: &tokio_postgres::Transaction<'_>) -> Result<(), chainlock::distributed::Error> {
/// use std::time::{Duration, Instant};
/// let got = chainlock::distributed::blocking_try_xact_lock_for(transaction, 42, Duration::from_secs(1))?;
/// # let _ = got; Ok(()) }
/// ```
#[track_caller]
pub fn blocking_try_xact_lock_for<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
    timeout: Duration,
) -> Result<bool, Error> {
    super::super::runtime::block_on(try_xact_lock_for(transaction, key, timeout))
}

/// Blocking [`try_xact_lock_until`]; see [`blocking_xact_lock`].
///
/// # Errors
///
/// As [`try_xact_lock_until`].
///
/// # Panics
///
/// Panics when called from an asynchronous context.
///
/// # Examples
///
/// ```no_run
/// # fn demo(transaction: &tokio_postgres::Transaction<'_>) -> Result<(), chainlock::distributed::Error> {
/// use std::time::{Duration, Instant};
/// let deadline = Instant::now() + Duration::from_secs(1);
/// let got = chainlock::distributed::blocking_try_xact_lock_until(transaction, 42, deadline)?;
/// # let _ = got; Ok(()) }
/// ```
#[track_caller]
pub fn blocking_try_xact_lock_until<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
    deadline: Instant,
) -> Result<bool, Error> {
    super::super::runtime::block_on(try_xact_lock_until(transaction, key, deadline))
}

/// The wait of [`LOCK`] or [`LOCK_PAIR`] under `lock_timeout = timeout_ms`.
async fn lock(
    transaction: &Transaction<'_>,
    key: Advisory,
    timeout_ms: &str,
) -> Result<(), tokio_postgres::Error> {
    match key {
        Advisory::Int(key) => {
            let params: [&(dyn ToSql + Sync); 2] = [&key, &timeout_ms];
            transaction.query_one(LOCK, &params).await?;
        }
        Advisory::Pair(high, low) => {
            let typed: [(&(dyn ToSql + Sync), Type); 3] = [
                (&high, Type::INT4),
                (&timeout_ms, Type::TEXT),
                (&low, Type::INT4),
            ];
            one_row(transaction.query_typed(LOCK_PAIR, &typed).await?);
        }
    }
    Ok(())
}

fn one_row(mut rows: Vec<tokio_postgres::Row>) -> tokio_postgres::Row {
    rows.pop().expect("the statement returns one row")
}
