//! How PostgreSQL waits end, against the real server and other processes: a waiter in line at
//! its client's bound sees a release by another process within the heartbeat interval (an
//! advisory unlock notifies nobody: the line re-checks), a timed wait asks once more at its
//! deadline, a waiting writer is not overtaken by new readers of its own client, and a role
//! whose `CONNECTION LIMIT` is below `max_connections` makes waiters wait in line instead of
//! failing mid-wait.

mod distributed_common;

use chainlock::distributed::{LockClient, PostgresOptions};
use distributed_common::{Releaser, pg_url, runtime, unique};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The tests observe a client's line and the server's waits: one at a time.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long a test waits for a condition before it fails (a loaded 2-core machine).
const PATIENCE: Duration = Duration::from_secs(20);

async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// A pair key of this process and test.
fn pair(test: i32) -> (i32, i32) {
    (i32::try_from(std::process::id()).unwrap(), 7_000_000 + test)
}

/// How many sessions wait for the pair key `key` on the server.
async fn waiting_on_server(control: &tokio_postgres::Client, key: (i32, i32)) -> i64 {
    control
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
             AND objsubid = 2 AND classid::bigint = $1 AND objid::bigint = $2",
            &[&i64::from(key.0), &i64::from(key.1)],
        )
        .await
        .unwrap()
        .get(0)
}

/// The waiters in line at `locks`' bound on connections, as its `Debug` shows them.
fn in_line(locks: &LockClient) -> usize {
    let debug = format!("{locks:?}");
    debug
        .split("in_line: ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `in_line` in {debug}"))
}

/// Waits until `locks` has `n` waiters in line, failing after [`PATIENCE`].
async fn until_in_line(locks: &LockClient, n: usize) {
    let start = Instant::now();
    while in_line(locks) != n {
        assert!(start.elapsed() < PATIENCE, "never {n} in line: {locks:?}");
        tokio::task::yield_now().await;
    }
}

/// Puts `locks` (bound 2) at its bound: it holds a name on its serving session, and a task
/// waits on the server, on the second session, for `pinned` (held by `other`). Returns the
/// held guard and the waiting task.
async fn at_the_bound(
    control: &tokio_postgres::Client,
    locks: &LockClient,
    pinned: (i32, i32),
) -> (
    chainlock::distributed::DistributedGuard,
    tokio::task::JoinHandle<()>,
) {
    let mine = locks.lock(unique("waits-mine").as_str()).await.unwrap();
    let waiter = {
        let locks = locks.clone();
        tokio::spawn(async move {
            drop(locks.lock(pinned).await);
        })
    };
    let start = Instant::now();
    while waiting_on_server(control, pinned).await != 1 {
        assert!(start.elapsed() < PATIENCE, "the first waiter never waited");
        tokio::task::yield_now().await;
    }
    (mine, waiter)
}

#[test]
fn a_waiter_in_line_at_the_bound_sees_another_process_release_within_the_heartbeat_interval() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let heartbeat = Duration::from_millis(500);
    let freed = unique("waits-freed");
    let pinned = pair(1);
    let mut releaser = Releaser::spawn("postgres", &url, &freed);
    runtime().block_on(async {
        let control = raw(&url).await;
        let other = LockClient::postgres(&url).await.unwrap();
        let pin = other.lock(pinned).await.unwrap();
        let options = PostgresOptions::new(&url)
            .unwrap()
            .max_connections(2)
            .heartbeat_interval(heartbeat);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let (mine, first) = at_the_bound(&control, &locks, pinned).await;
        // A second waiter, for the name the other process holds: no session is free for a
        // wait on the server, so it waits in line.
        let second = {
            let (locks, freed) = (locks.clone(), freed.clone());
            tokio::spawn(async move { locks.lock(freed.as_str()).await })
        };
        until_in_line(&locks, 1).await;
        releaser.release();
        let release_done = Instant::now();
        let bound = heartbeat + Duration::from_secs(1);
        let guard = tokio::time::timeout(bound, second)
            .await
            .unwrap_or_else(|_| {
                panic!("the waiter in line was not served within {bound:?} of the release")
            })
            .unwrap()
            .unwrap();
        let served = release_done.elapsed();
        eprintln!(
            "waiter in line at the bound served {served:?} after another process released (heartbeat interval {heartbeat:?})"
        );
        assert!(!guard.is_lost());
        guard.release().await.unwrap();
        mine.release().await.unwrap();
        first.abort();
        pin.release().await.unwrap();
    });
}

#[test]
fn a_timed_wait_in_line_asks_once_more_at_its_deadline() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let freed = unique("waits-deadline");
    let pinned = pair(2);
    let mut releaser = Releaser::spawn("postgres", &url, &freed);
    runtime().block_on(async {
        let control = raw(&url).await;
        let other = LockClient::postgres(&url).await.unwrap();
        let pin = other.lock(pinned).await.unwrap();
        // Re-checks far apart: only the last ask, at the deadline, can see the release.
        let options = PostgresOptions::new(&url)
            .unwrap()
            .max_connections(2)
            .heartbeat_interval(Duration::from_secs(30));
        let locks = LockClient::postgres_with(options).await.unwrap();
        let (mine, first) = at_the_bound(&control, &locks, pinned).await;
        let timeout = Duration::from_millis(1500);
        let second = {
            let (locks, freed) = (locks.clone(), freed.clone());
            tokio::spawn(async move {
                let start = Instant::now();
                let got = locks.try_lock_for(freed.as_str(), timeout).await;
                (got, start.elapsed())
            })
        };
        until_in_line(&locks, 1).await;
        releaser.release();
        let (got, waited) = second.await.unwrap();
        let guard = got.unwrap().unwrap_or_else(|| {
            panic!("try_lock_for returned None after {waited:?} although the name was free")
        });
        eprintln!("timed wait of {timeout:?} in line served after {waited:?}");
        assert!(waited < timeout + Duration::from_secs(2), "{waited:?}");
        guard.release().await.unwrap();
        mine.release().await.unwrap();
        first.abort();
        pin.release().await.unwrap();
    });
}

/// Readers of `name` in `locks`, until `stop`, that keep it read-held without a gap: one task
/// takes a new shared hold (`try_lock_shared`) before it leaves the one it has (a hand-over:
/// the name is never free while new readers are granted), and a new reader task comes every
/// 10 ms and holds it (`lock_shared`) for 100 ms.
fn reader_stream(
    locks: &LockClient,
    name: &str,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    {
        let (locks, name, stop) = (locks.clone(), name.to_owned(), Arc::clone(stop));
        tasks.spawn(async move {
            let mut held = None;
            while !stop.load(Ordering::Acquire) {
                let next = locks.try_lock_shared(name.as_str()).await.unwrap();
                // The previous hold leaves only now, after the next was asked for.
                held = next;
                // The reader's work (a load, not a synchronization).
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            drop(held);
        });
    }
    let (locks, name, stop) = (locks.clone(), name.to_owned(), Arc::clone(stop));
    tasks.spawn(async move {
        let mut arrivals = tokio::time::interval(Duration::from_millis(10));
        let mut readers = tokio::task::JoinSet::new();
        while !stop.load(Ordering::Acquire) {
            arrivals.tick().await;
            let (locks, name) = (locks.clone(), name.clone());
            readers.spawn(async move {
                let guard = locks.lock_shared(name.as_str()).await.unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
                guard.release().await.unwrap();
            });
            while let Some(done) = readers.try_join_next() {
                done.unwrap();
            }
        }
        while let Some(done) = readers.join_next().await {
            done.unwrap();
        }
    });
    tasks
}

#[test]
fn a_waiting_writer_is_not_overtaken_by_new_readers_of_its_own_client() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let name = unique("waits-writer");
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut readers = reader_stream(&locks, &name, &stop);
        // Once the stream is on, a writer of another client is refused.
        let other = LockClient::postgres(&url).await.unwrap();
        let start = Instant::now();
        while let Some(writer) = other.try_lock(name.as_str()).await.unwrap() {
            writer.release().await.unwrap();
            assert!(
                start.elapsed() < PATIENCE,
                "the reader stream never started"
            );
        }
        let mut slowest = Duration::ZERO;
        for round in 0..3 {
            let start = Instant::now();
            let writer = locks
                .try_lock_for(name.as_str(), Duration::from_secs(3))
                .await
                .unwrap()
                .unwrap_or_else(|| {
                    panic!("round {round}: the writer waited 3 s under its own client's readers")
                });
            slowest = slowest.max(start.elapsed());
            writer.release().await.unwrap();
        }
        eprintln!("slowest writer under a stream of same-client readers: {slowest:?}");
        assert!(slowest < Duration::from_secs(1), "{slowest:?}");
        stop.store(true, Ordering::Release);
        while let Some(reader) = readers.join_next().await {
            reader.unwrap();
        }
    });
}

#[test]
fn a_role_connection_limit_below_the_bound_makes_waiters_wait_in_line() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let role = format!("chainlock_limited_{}", std::process::id());
    let freed = unique("waits-role");
    let pinned = pair(3);
    let mut releaser = Releaser::spawn("postgres", &url, &freed);
    runtime().block_on(async {
        let control = raw(&url).await;
        // The objects exist (the releaser created them); the role may use them, and open two
        // connections.
        control
            .batch_execute(&format!(
                "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN CONNECTION LIMIT 2; \
                 GRANT USAGE ON SCHEMA chainlock TO {role}; \
                 GRANT USAGE, SELECT, UPDATE ON SEQUENCE chainlock.token_counter TO {role}; \
                 GRANT SELECT, INSERT ON chainlock.epochs TO {role}"
            ))
            .await
            .unwrap();
        let mut config: tokio_postgres::Config = url.parse().unwrap();
        config.user(&role);
        let options = PostgresOptions::from_config(config)
            .max_connections(4)
            .heartbeat_interval(Duration::from_millis(500));
        let other = LockClient::postgres(&url).await.unwrap();
        let pin = other.lock(pinned).await.unwrap();
        {
            let locks = LockClient::postgres_with(options).await.unwrap();
            // Two connections: the serving one holds a name, the other waits on the server.
            let (mine, first) = at_the_bound(&control, &locks, pinned).await;
            // A third would pass the role's limit: the waiter waits in line instead.
            let second = {
                let (locks, freed) = (locks.clone(), freed.clone());
                tokio::spawn(async move { locks.lock(freed.as_str()).await })
            };
            until_in_line(&locks, 1).await;
            releaser.release();
            let guard = tokio::time::timeout(PATIENCE, second)
                .await
                .expect("served after the release")
                .unwrap()
                .unwrap_or_else(|error| panic!("the waiter failed: {error}"));
            guard.release().await.unwrap();
            mine.release().await.unwrap();
            first.abort();
        }
        pin.release().await.unwrap();
        // The role's sessions close with its client; then it can go.
        let start = Instant::now();
        loop {
            let left: i64 = control
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = $1",
                    &[&role],
                )
                .await
                .unwrap()
                .get(0);
            if left == 0 {
                break;
            }
            assert!(start.elapsed() < PATIENCE, "the role's sessions stay open");
            tokio::task::yield_now().await;
        }
        control
            .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
            .await
            .unwrap();
    });
}
