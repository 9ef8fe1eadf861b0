//! Transaction-scoped locks: `pg_advisory_xact_lock` inside the caller's own transaction,
//! released by the server at its commit or rollback.
//!
//! Nothing here opens a connection or leaves state on the session: the timeout is set with
//! `set_config(…, true)` (transaction-local) and restored in the same statement, a timed wait
//! runs under a savepoint so that its timeout does not abort the caller's transaction. That is
//! what makes the mode usable behind PgBouncer's transaction pooling.

use super::super::Error;
use super::super::name::{Advisory, LockKey};
use std::time::Duration;
use tokio_postgres::Transaction;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};

/// Waits under `lock_timeout = $2` (`'0'`: none), then puts back the transaction's own value.
const LOCK: &str = "WITH old AS MATERIALIZED \
        (SELECT pg_catalog.current_setting('lock_timeout') AS value), \
    timeout AS MATERIALIZED (SELECT pg_catalog.set_config('lock_timeout', $2, true) FROM old), \
    locked AS MATERIALIZED (SELECT pg_catalog.pg_advisory_xact_lock($1) FROM timeout) \
    SELECT pg_catalog.set_config('lock_timeout', old.value, true) FROM old, locked";
/// [`LOCK`] for a two-`int4` key `($1, $3)`.
const LOCK_PAIR: &str = "WITH old AS MATERIALIZED \
        (SELECT pg_catalog.current_setting('lock_timeout') AS value), \
    timeout AS MATERIALIZED (SELECT pg_catalog.set_config('lock_timeout', $2, true) FROM old), \
    locked AS MATERIALIZED (SELECT pg_catalog.pg_advisory_xact_lock($1, $3) FROM timeout) \
    SELECT pg_catalog.set_config('lock_timeout', old.value, true) FROM old, locked";
const TRY_LOCK: &str = "SELECT pg_catalog.pg_try_advisory_xact_lock($1)";
const TRY_LOCK_PAIR: &str = "SELECT pg_catalog.pg_try_advisory_xact_lock($1, $2)";
const SAVEPOINT: &str = "SAVEPOINT chainlock_xact_lock";
const RELEASE: &str = "RELEASE SAVEPOINT chainlock_xact_lock";
/// Undoes the timed-out wait (and a grant racing the timeout), keeps the transaction usable.
const ROLL_BACK: &str =
    "ROLLBACK TO SAVEPOINT chainlock_xact_lock; RELEASE SAVEPOINT chainlock_xact_lock";

/// Takes the lock `key` for the rest of `transaction`, waiting as long as it takes: the
/// server releases it when the transaction commits or rolls back, and not before (there is
/// no guard and no early release).
///
/// `key` is a name or an integer key ([`LockKey`]), the same lock as
/// [`LockClient::acquire`](super::super::LockClient::acquire) takes: a transaction-scoped holder
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
/// if chainlock::distributed::xact_try_lock(&transaction, 42).await? {
///     // ... work that needs key 42 ...
/// }
/// transaction.commit().await?;
/// # Ok(()) }
/// ```
pub async fn xact_try_lock<'k>(
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
/// server, with `lock_timeout`): `true` if taken, `false` if still held then. A zero timeout
/// is [`xact_try_lock`]. See [`xact_lock`].
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
/// use std::time::Duration;
///
/// let transaction = client.transaction().await?;
/// let got = chainlock::distributed::xact_lock_timeout(&transaction, "orders", Duration::from_secs(1)).await?;
/// // The transaction is usable whether or not `got`.
/// transaction.commit().await?;
/// # Ok(()) }
/// ```
pub async fn xact_lock_timeout<'k>(
    transaction: &Transaction<'_>,
    key: impl Into<LockKey<'k>>,
    timeout: Duration,
) -> Result<bool, Error> {
    if timeout.is_zero() {
        return xact_try_lock(transaction, key).await;
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
