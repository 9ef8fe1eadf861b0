//! Every SQL text of the backend, and the one-time creation of its two objects.
//!
//! The objects live in one fixed schema, `chainlock`, and every statement names them with it
//! (and runs with `search_path = pg_catalog`), so that every client of a database resolves the
//! same counter whatever its role's `search_path`: advisory locks are per database, so every
//! pair of clients that can exclude each other draws from the same counter.

use super::super::Error;
use super::super::backend::Mode;
use std::time::Duration;
use tokio_postgres::Client;

/// The statements of one mode ([`EXCLUSIVE`], [`SHARED`]): `pg_advisory_lock` and its
/// `_shared` twin take the same key, so the two modes of a key exclude each other on the server.
pub(super) struct Statements {
    /// Sets the wait bound (`$2`, `'0'`: none), waits for the lock (`$1`), draws a token: one
    /// round trip.
    pub(super) lock: &'static str,
    /// The lock (`$1`) if free now, and a token; `NULL` if held.
    pub(super) try_lock: &'static str,
    /// Unlocks (`$1`): whether the session held it.
    pub(super) unlock: &'static str,
    /// [`Self::lock`] for a two-`int4` key `($1, $3)` (run unprepared, with typed parameters:
    /// one round trip, nothing prepared on sessions that never lock a pair).
    pub(super) lock_pair: &'static str,
    /// [`Self::try_lock`] for a two-`int4` key `($1, $2)`.
    pub(super) try_lock_pair: &'static str,
    /// [`Self::unlock`] for a two-`int4` key `($1, $2)`.
    pub(super) unlock_pair: &'static str,
}

macro_rules! statements {
    ($lock:literal, $try_lock:literal, $unlock:literal) => {
        Statements {
            lock: concat!(
                "WITH timeout AS MATERIALIZED ",
                "(SELECT pg_catalog.set_config('lock_timeout', $2, false)), ",
                "locked AS MATERIALIZED (SELECT pg_catalog.",
                $lock,
                "($1) FROM timeout) ",
                "SELECT pg_catalog.nextval('chainlock.token_counter') FROM locked"
            ),
            try_lock: concat!(
                "SELECT CASE WHEN pg_catalog.",
                $try_lock,
                "($1) THEN pg_catalog.nextval('chainlock.token_counter') END"
            ),
            unlock: concat!("SELECT pg_catalog.", $unlock, "($1)"),
            lock_pair: concat!(
                "WITH timeout AS MATERIALIZED ",
                "(SELECT pg_catalog.set_config('lock_timeout', $2, false)), ",
                "locked AS MATERIALIZED (SELECT pg_catalog.",
                $lock,
                "($1, $3) FROM timeout) ",
                "SELECT pg_catalog.nextval('chainlock.token_counter') FROM locked"
            ),
            try_lock_pair: concat!(
                "SELECT CASE WHEN pg_catalog.",
                $try_lock,
                "($1, $2) THEN pg_catalog.nextval('chainlock.token_counter') END"
            ),
            unlock_pair: concat!("SELECT pg_catalog.", $unlock, "($1, $2)"),
        }
    };
}

/// The exclusive mode: `pg_advisory_lock`.
pub(super) const EXCLUSIVE: Statements = statements!(
    "pg_advisory_lock",
    "pg_try_advisory_lock",
    "pg_advisory_unlock"
);
/// The shared mode: `pg_advisory_lock_shared`.
pub(super) const SHARED: Statements = statements!(
    "pg_advisory_lock_shared",
    "pg_try_advisory_lock_shared",
    "pg_advisory_unlock_shared"
);

/// The statements of `mode`.
pub(super) fn statements(mode: Mode) -> &'static Statements {
    match mode {
        Mode::Exclusive => &EXCLUSIVE,
        Mode::Shared => &SHARED,
    }
}

/// Transaction-scoped locks (`xact`): waits under `lock_timeout = $2` (`'0'`: none), then
/// puts back the transaction's own value.
pub(super) const XACT_LOCK: &str = "WITH old AS MATERIALIZED \
        (SELECT pg_catalog.current_setting('lock_timeout') AS value), \
    timeout AS MATERIALIZED (SELECT pg_catalog.set_config('lock_timeout', $2, true) FROM old), \
    locked AS MATERIALIZED (SELECT pg_catalog.pg_advisory_xact_lock($1) FROM timeout) \
    SELECT pg_catalog.set_config('lock_timeout', old.value, true) FROM old, locked";
/// [`XACT_LOCK`] for a two-`int4` key `($1, $3)`.
pub(super) const XACT_LOCK_PAIR: &str = "WITH old AS MATERIALIZED \
        (SELECT pg_catalog.current_setting('lock_timeout') AS value), \
    timeout AS MATERIALIZED (SELECT pg_catalog.set_config('lock_timeout', $2, true) FROM old), \
    locked AS MATERIALIZED (SELECT pg_catalog.pg_advisory_xact_lock($1, $3) FROM timeout) \
    SELECT pg_catalog.set_config('lock_timeout', old.value, true) FROM old, locked";
pub(super) const XACT_TRY_LOCK: &str = "SELECT pg_catalog.pg_try_advisory_xact_lock($1)";
pub(super) const XACT_TRY_LOCK_PAIR: &str = "SELECT pg_catalog.pg_try_advisory_xact_lock($1, $2)";
pub(super) const XACT_SAVEPOINT: &str = "SAVEPOINT chainlock_xact_lock";
pub(super) const XACT_RELEASE: &str = "RELEASE SAVEPOINT chainlock_xact_lock";
/// Undoes the timed-out wait (and a grant racing the timeout), keeps the transaction usable.
pub(super) const XACT_ROLL_BACK: &str =
    "ROLLBACK TO SAVEPOINT chainlock_xact_lock; RELEASE SAVEPOINT chainlock_xact_lock";
/// After a lock wait timed out: the server may have granted the lock in the same instant.
pub(super) const UNLOCK_ALL: &str = "SELECT pg_catalog.pg_advisory_unlock_all()";
pub(super) const DURABLE_EPOCH: &str =
    "SELECT coalesce(max(epoch), 0)::bigint FROM chainlock.epochs";
pub(super) const BEGIN_EPOCH: &str = "BEGIN ISOLATION LEVEL READ COMMITTED; \
    SET LOCAL synchronous_commit = on; SET LOCAL lock_timeout = 0; \
    LOCK TABLE chainlock.epochs IN EXCLUSIVE MODE";
pub(super) const DRAW: &str = "SELECT pg_catalog.nextval('chainlock.token_counter')";
pub(super) const MOVE_COUNTER: &str = "SELECT pg_catalog.setval('chainlock.token_counter', $1)";
pub(super) const RECORD_EPOCH: &str = "INSERT INTO chainlock.epochs (epoch) VALUES ($1)";
pub(super) const SERVER_VERSION: &str = "SELECT pg_catalog.current_setting('server_version_num')";

/// Whether both objects exist already (then no privilege to create anything is needed).
const EXISTS: &str = "SELECT pg_catalog.to_regclass('chainlock.token_counter') IS NOT NULL \
    AND pg_catalog.to_regclass('chainlock.epochs') IS NOT NULL";
/// Creates the objects once, however many clients start at once; the two-`int4` key space of
/// this lock is disjoint from the `bigint` keys of named locks.
///
/// Tokens must keep increasing across the upgrade from chainlock's first release, whose
/// objects were `public.chainlock_epochs` and `public.chainlock_token_counter`: every token it
/// handed out had an epoch it had recorded first, so recording that release's highest epoch
/// here makes the first new token start above all of them.
const CREATE: &str = "BEGIN; SELECT pg_catalog.pg_advisory_xact_lock(1128811596, 1); \
    CREATE SCHEMA IF NOT EXISTS chainlock; \
    CREATE UNLOGGED SEQUENCE IF NOT EXISTS chainlock.token_counter CACHE 1; \
    CREATE TABLE IF NOT EXISTS chainlock.epochs \
    (epoch bigint PRIMARY KEY, recorded timestamptz NOT NULL DEFAULT now()); \
    DO $$ BEGIN \
      IF pg_catalog.to_regclass('public.chainlock_epochs') IS NOT NULL THEN \
        INSERT INTO chainlock.epochs (epoch) \
          SELECT max(epoch) FROM public.chainlock_epochs HAVING max(epoch) IS NOT NULL \
          ON CONFLICT DO NOTHING; \
      END IF; \
    END $$; \
    COMMIT";

/// The leader records of the elections, created when an election first needs them (so that a
/// role that could use chainlock's locks before needs no new privilege until it elects). The
/// name is `bytea`, its UTF-8 bytes: a `text` column refuses NUL, which a name may hold.
pub(super) const CREATE_LEADERS: &str = "CREATE UNLOGGED TABLE IF NOT EXISTS chainlock.leaders \
    (name bytea PRIMARY KEY, token bigint NOT NULL, value bytea NOT NULL, \
    pid integer NOT NULL, backend_start timestamptz NOT NULL)";
/// The channel every change of a leader record is notified on, with the election's key as
/// the payload (`election::payload`): one channel for every name, so that one `LISTEN` per
/// session serves every observer of the client on it, whatever the names (a name is any
/// string, a channel an identifier of at most 63 bytes), and no `UNLISTEN` of a name can
/// undo another observer's `LISTEN` on a shared session. A session therefore hears the
/// changes of every election of the database: few (a change of leader or value), and read by
/// its driver.
macro_rules! election_channel {
    () => {
        "chainlock_election"
    };
}
/// [`election_channel!`], for the listener to check.
pub(super) const ELECTION_CHANNEL: &str = election_channel!();
/// Listens to [`ELECTION_CHANNEL`] (on a session that already does: nothing changes).
pub(super) const LISTEN: &str = concat!("LISTEN ", election_channel!());
/// Notifies the change of the record in `$1`'s CTE, with payload `$n`, in the statement's
/// transaction: listeners are told on its commit, so a listener that reads the record after
/// the notification reads the change (or a later one).
macro_rules! notified {
    ($cte:literal, $payload:literal) => {
        concat!(
            " SELECT token, pg_catalog.pg_notify('",
            election_channel!(),
            "', ",
            $payload,
            "::text)::text FROM ",
            $cte
        )
    };
}
/// The record of a new leader of `$1` (token `$2`, value `$3`): the session that holds the
/// election's lock, named by its process id and start time (a process id alone may be
/// reused); notified with payload `$4`.
pub(super) const ELECTED: &str = concat!(
    "WITH elected AS (INSERT INTO chainlock.leaders \
    (name, token, value, pid, backend_start) \
    SELECT $1::bytea, $2::bigint, $3::bytea, a.pid, a.backend_start \
    FROM pg_catalog.pg_stat_activity a \
    WHERE a.pid = pg_catalog.pg_backend_pid() \
    ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token, value = EXCLUDED.value, \
    pid = EXCLUDED.pid, backend_start = EXCLUDED.backend_start RETURNING token)",
    notified!("elected", "$4")
);
/// A new value `$3` of the leader of `$1` with token `$2` (no row: it is not the leader),
/// notified with payload `$4`.
pub(super) const PROCLAIM: &str = concat!(
    "WITH proclaimed AS (UPDATE chainlock.leaders SET value = $3 \
    WHERE name = $1 AND token = $2 RETURNING token)",
    notified!("proclaimed", "$4")
);
/// The leader of `$1` with token `$2` resigns (before it unlocks), notified with payload `$3`.
pub(super) const RESIGN: &str = concat!(
    "WITH resigned AS (DELETE FROM chainlock.leaders \
    WHERE name = $1 AND token = $2 RETURNING token)",
    notified!("resigned", "$3")
);
/// The leader of `$1` now: its record, only if the session it names (process id and start
/// time) holds the election's lock, the `bigint` key whose halves are `$2` (high) and `$3`
/// (low), as `pg_locks` shows them.
pub(super) const LEADER: &str = "SELECT r.value, r.token FROM chainlock.leaders r \
    JOIN pg_catalog.pg_stat_activity a ON a.pid = r.pid AND a.backend_start = r.backend_start \
    WHERE r.name = $1 AND EXISTS (SELECT FROM pg_catalog.pg_locks l \
      WHERE l.pid = r.pid AND l.locktype = 'advisory' AND l.granted \
      AND l.mode = 'ExclusiveLock' AND l.objsubid = 1 \
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d \
        WHERE d.datname = pg_catalog.current_database()) \
      AND l.classid::pg_catalog.int8 = $2 AND l.objid::pg_catalog.int8 = $3)";

/// Unlogged sequences exist since PostgreSQL 15.
const MIN_SERVER_VERSION: i32 = 15_00_00;

/// Checks the server's version and creates the counter and the epoch table if missing.
pub(super) async fn ensure_objects(client: &Client) -> Result<(), Error> {
    let version: String = client.query_one(SERVER_VERSION, &[]).await?.get(0);
    if version.parse::<i32>().is_ok_and(|v| v < MIN_SERVER_VERSION) {
        return Err(Error::UnsupportedServer(version));
    }
    let exists: bool = client.query_one(EXISTS, &[]).await?.get(0);
    if !exists {
        client.batch_execute(CREATE).await?;
    }
    Ok(())
}

/// The session settings every connection starts with: they override whatever the server,
/// database or role set, so that no default can break a bound of ours.
///
/// - `statement_timeout = 0`: only `lock_timeout` (set per wait) ends a lock wait.
/// - `idle_session_timeout`, `idle_in_transaction_session_timeout`: the server releases the
///   locks of a silent client `release_after` after its last request.
/// - `tcp_keepalives_idle` at least that long and `tcp_user_timeout = 0` (the system's), so the
///   server's own keepalive settings cannot end a silent session earlier.
/// - `search_path = pg_catalog`: nothing of ours resolves through the role's path.
pub(super) fn session_settings(release_after: Duration) -> String {
    let millis = release_after.as_millis().clamp(1, i32::MAX as u128);
    let keepalive_secs = release_after.as_secs().clamp(1, i32::MAX as u64) + 1;
    format!(
        "SET application_name = 'chainlock'; SET search_path = pg_catalog; \
         SET statement_timeout = 0; SET idle_session_timeout = {millis}; \
         SET idle_in_transaction_session_timeout = {millis}; \
         SET tcp_keepalives_idle = {keepalive_secs}; SET tcp_user_timeout = 0; \
         SET client_connection_check_interval = 250"
    )
}
