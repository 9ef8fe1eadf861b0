//! Connections as a bounded resource (`PostgresOptions::max_connections`), against the real
//! server: many held locks share few sessions, the client never has more sessions than its
//! bound (waiters included), waiters at the bound still get their lock (and time out
//! cleanly), a waiter whose session ends before the grant waits again on a fresh one, a
//! session never grants a key twice within one client, a cancelled ask leaves nothing held,
//! and losing a shared session loses (and reports) every lock on it.

mod distributed_common;

use chainlock::distributed::{LockClient, LockKey, PostgresOptions};
use distributed_common::{pg_url, runtime};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The tests count the server's chainlock sessions: one at a time.
static SERVER: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Backends of chainlock sessions (`application_name = 'chainlock'`).
async fn chainlock_pids(control: &tokio_postgres::Client) -> Vec<i32> {
    control
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'chainlock'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// The sessions opened since `before`.
async fn ours(control: &tokio_postgres::Client, before: &[i32]) -> Vec<i32> {
    chainlock_pids(control)
        .await
        .into_iter()
        .filter(|pid| !before.contains(pid))
        .collect()
}

/// Integer keys of this test and process: `(pid, test)` pairs, second half `base..base + n`.
fn keys(test: i32, n: i32) -> Vec<(i32, i32)> {
    let pid = i32::try_from(std::process::id()).unwrap();
    (0..n).map(|i| (pid, test * 100_000 + i)).collect()
}

/// How many sessions hold the pair keys of this process's test `test`, and how many locks.
async fn holders(control: &tokio_postgres::Client, test: i32) -> (i64, i64) {
    let pid = i64::from(std::process::id());
    let row = control
        .query_one(
            "SELECT count(DISTINCT pid), count(*) FROM pg_locks WHERE locktype = 'advisory' \
             AND granted AND objsubid = 2 AND classid::bigint = $1 AND objid::bigint / 100000 = $2",
            &[&pid, &i64::from(test)],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn a_thousand_held_locks_share_the_bounded_connections() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    runtime().block_on(async {
        let control = raw(&url).await;
        let before = chainlock_pids(&control).await;
        let options = PostgresOptions::new(&url).unwrap().max_connections(3);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for key in keys(1, 1000) {
            let locks = locks.clone();
            tasks.spawn(async move { locks.lock(key).await.unwrap() });
        }
        let mut guards = Vec::new();
        while let Some(guard) = tasks.join_next().await {
            guards.push(guard.unwrap());
        }
        let (sessions, locks_held) = holders(&control, 1).await;
        assert_eq!(locks_held, 1000, "every lock is held");
        let open = ours(&control, &before).await;
        eprintln!(
            "1000 locks held on {sessions} sessions; {} open",
            open.len()
        );
        assert!(
            open.len() <= 3,
            "at most max_connections sessions: {open:?}"
        );
        assert!(sessions <= 3);
        let mut tokens: Vec<u64> = guards.iter().map(|guard| guard.token().get()).collect();
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), 1000, "distinct tokens");
        for guard in guards {
            guard.release().await.unwrap();
        }
        assert_eq!(holders(&control, 1).await.1, 0, "every lock released");
    });
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

#[test]
fn waiters_at_the_bound_all_get_the_lock_in_turn_without_exceeding_it() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let contended = keys(2, 1)[0];
    let others = keys(3, 50);
    runtime().block_on(async {
        let control = raw(&url).await;
        let holder = LockClient::postgres(&url).await.unwrap();
        let held = holder.lock(contended).await.unwrap();
        let before = chainlock_pids(&control).await;
        let options = PostgresOptions::new(&url).unwrap().max_connections(2);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let mut guards = Vec::new();
        for &key in &others {
            guards.push(locks.lock(key).await.unwrap());
        }
        // Ten waiters for the held key: one can wait on the server, the others are at the
        // bound (every session holds locks or waits).
        let inside = std::sync::Arc::new(AtomicUsize::new(0));
        let most = std::sync::Arc::new(AtomicUsize::new(0));
        let mut waiters = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let (locks, inside, most) = (locks.clone(), inside.clone(), most.clone());
            waiters.spawn(async move {
                let guard = locks
                    .try_lock_for(contended, Duration::from_mins(1))
                    .await
                    .unwrap()
                    .expect("granted in turn");
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            });
        }
        // The bound holds while they wait; a free key is still granted at once.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let waiting: i64 = control
                .query_one(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                     AND objsubid = 2 AND classid::bigint = $1 AND objid::bigint = $2",
                    &[&i64::from(contended.0), &i64::from(contended.1)],
                )
                .await
                .unwrap()
                .get(0);
            let open = ours(&control, &before).await;
            assert!(
                open.len() <= 2,
                "at most max_connections sessions: {open:?}"
            );
            if waiting >= 1 {
                assert_eq!(
                    waiting, 1,
                    "one waiter on the server, the others at the bound"
                );
                break;
            }
            assert!(Instant::now() < deadline, "no waiter on the server");
            tokio::task::yield_now().await;
        }
        let free = locks
            .try_lock(keys(4, 1)[0])
            .await
            .unwrap()
            .expect("a free key is granted while waiters wait");
        free.release().await.unwrap();
        assert_eq!(
            waiters.len(),
            10,
            "nobody got the held key: {:?}",
            waiters.try_join_next()
        );
        held.release().await.unwrap();
        while let Some(done) = waiters.join_next().await {
            done.unwrap();
            assert!(ours(&control, &before).await.len() <= 2);
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "one holder at a time");
        for guard in guards {
            guard.release().await.unwrap();
        }
    });
}

#[test]
fn a_waiter_at_the_bound_times_out_cleanly() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let key = keys(5, 2);
    runtime().block_on(async {
        let holder = LockClient::postgres(&url).await.unwrap();
        let held = holder.lock(key[0]).await.unwrap();
        let options = PostgresOptions::new(&url).unwrap().max_connections(1);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let mine = locks.lock(key[1]).await.unwrap();
        let start = Instant::now();
        let late = locks
            .try_lock_for(key[0], Duration::from_millis(200))
            .await
            .unwrap();
        assert!(late.is_none(), "still held after the timeout");
        assert!(start.elapsed() >= Duration::from_millis(200));
        // Nothing polls: a waiter at the bound waits in line for a session that holds nothing
        // (here the one session, once `mine` is released), then waits on the server.
        let waiter = {
            let contended = key[0];
            let locks = locks.clone();
            tokio::spawn(async move { locks.lock(contended).await })
        };
        mine.release().await.unwrap();
        let control = raw(&url).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while waiting_on_server(&control, key[0]).await == 0 {
            assert!(
                Instant::now() < deadline,
                "the waiter never waited on the server"
            );
            tokio::task::yield_now().await;
        }
        held.release().await.unwrap();
        let got = waiter.await.unwrap().unwrap();
        assert!(!got.is_lost());
        got.release().await.unwrap();
    });
}

/// The backends waiting on the server for the pair key `key`.
async fn waiting_pids(control: &tokio_postgres::Client, key: (i32, i32)) -> Vec<i32> {
    control
        .query(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
             AND objsubid = 2 AND classid::bigint = $1 AND objid::bigint = $2",
            &[&i64::from(key.0), &i64::from(key.1)],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[test]
fn a_waiter_whose_session_ends_before_the_grant_waits_again_on_a_fresh_one() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let key = keys(11, 1)[0];
    runtime().block_on(async {
        let control = raw(&url).await;
        let holder = LockClient::postgres(&url).await.unwrap();
        let held = holder.lock(key).await.unwrap();
        let options = PostgresOptions::new(&url).unwrap().max_connections(2);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.try_lock_for(key, Duration::from_mins(1)).await })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let first = loop {
            if let Some(&pid) = waiting_pids(&control, key).await.first() {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "the waiter never waited on the server"
            );
            tokio::task::yield_now().await;
        };
        // The waiter's session ends before its lock is granted (as when the driver gives up on
        // a session whose heartbeat went unanswered): it held nothing, so the waiter must wait
        // again on another session, not fail.
        control
            .execute("SELECT pg_terminate_backend($1)", &[&first])
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // A waiter that gave up (the bug) ends here: its outcome is checked below.
            if waiter.is_finished()
                || waiting_pids(&control, key)
                    .await
                    .iter()
                    .any(|&pid| pid != first)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the waiter never waited again on a fresh session"
            );
            tokio::task::yield_now().await;
        }
        assert!(
            !waiter.is_finished(),
            "the key is still held: {:?}",
            waiter.await
        );
        held.release().await.unwrap();
        let got = waiter
            .await
            .unwrap()
            .expect("a session that ended before the grant is not an error")
            .expect("granted within the deadline once released");
        assert!(!got.is_lost());
        got.release().await.unwrap();
    });
}

#[test]
fn a_session_never_grants_a_key_twice_within_a_client() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let key = keys(6, 1)[0];
    runtime().block_on(async {
        for max in [1, 4] {
            let options = PostgresOptions::new(&url).unwrap().max_connections(max);
            let locks = LockClient::postgres_with(options).await.unwrap();
            let guard = locks.lock(key).await.unwrap();
            // PostgreSQL would grant the key again on the session holding it: chainlock must
            // not ask there.
            assert!(locks.try_lock(key).await.unwrap().is_none(), "max {max}");
            assert!(
                locks
                    .try_lock_for(key, Duration::from_millis(50))
                    .await
                    .unwrap()
                    .is_none(),
                "max {max}"
            );
            let mut tries = tokio::task::JoinSet::new();
            for _ in 0..20 {
                let locks = locks.clone();
                tries.spawn(async move { locks.try_lock(key).await.unwrap().is_some() });
            }
            while let Some(got) = tries.join_next().await {
                assert!(!got.unwrap(), "granted twice (max {max})");
            }
            guard.release().await.unwrap();
        }
    });
}

#[test]
fn a_cancelled_ask_leaves_nothing_held() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let keys = keys(7, 50);
    runtime().block_on(async {
        let options = PostgresOptions::new(&url).unwrap().max_connections(2);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let observer = LockClient::postgres(&url).await.unwrap();
        for &key in &keys {
            // Dropped at its first await: the ask is on the wire, or not sent yet.
            let cancelled =
                tokio::time::timeout(Duration::ZERO, locks.lock(LockKey::from(key))).await;
            drop(cancelled);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for &key in &keys {
            loop {
                if let Some(guard) = observer.try_lock(key).await.unwrap() {
                    guard.release().await.unwrap();
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{key:?} stayed held after the cancel"
                );
                tokio::task::yield_now().await;
            }
        }
    });
}

#[test]
fn losing_a_shared_session_loses_and_reports_every_lock_on_it() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let keys = keys(8, 5);
    runtime().block_on(async {
        let control = raw(&url).await;
        let before = chainlock_pids(&control).await;
        let options = PostgresOptions::new(&url).unwrap().max_connections(1);
        let locks = LockClient::postgres_with(options).await.unwrap();
        let mut guards = Vec::new();
        for &key in &keys {
            guards.push(locks.lock(key).await.unwrap());
        }
        let open = ours(&control, &before).await;
        assert_eq!(open.len(), 1, "one session holds all five");
        control
            .execute("SELECT pg_terminate_backend($1)", &[&open[0]])
            .await
            .unwrap();
        for guard in &guards {
            tokio::time::timeout(Duration::from_secs(5), guard.lost())
                .await
                .expect("every guard on the session reports the loss");
        }
        // The client goes on, on a new session: the server releases everything. The client
        // sees the session end (the server's FATAL message) before the dying backend has
        // released its locks, so a loaded machine may need a few tries.
        let deadline = Instant::now() + Duration::from_secs(10);
        for &key in &keys {
            loop {
                if let Some(guard) = locks.try_lock(key).await.unwrap() {
                    drop(guard);
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{key:?} never freed by the server"
                );
                tokio::task::yield_now().await;
            }
        }
        for guard in guards {
            assert!(matches!(
                guard.release().await,
                Err(chainlock::distributed::Error::Lost)
            ));
        }
    });
}

/// Waits until none of `pids` is a backend of the server any more; how long that took.
async fn wait_closed(control: &tokio_postgres::Client, pids: &[i32]) -> Duration {
    let start = Instant::now();
    loop {
        let open: Vec<i32> = chainlock_pids(control)
            .await
            .into_iter()
            .filter(|pid| pids.contains(pid))
            .collect();
        if open.is_empty() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sessions of a dropped client still open after 10 s: {open:?}"
        );
        tokio::task::yield_now().await;
    }
}

#[test]
fn dropping_a_client_and_its_last_guard_closes_every_connection() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let held = keys(9, 1)[0];
    let name = distributed_common::unique("lifecycle");
    runtime().block_on(async {
        let control = raw(&url).await;
        let other = LockClient::postgres(&url).await.unwrap();
        let blocker = other.lock(held).await.unwrap();
        let before = chainlock_pids(&control).await;
        let mut slowest = Duration::ZERO;
        for round in 0..5 {
            let options = PostgresOptions::new(&url).unwrap().max_connections(3);
            let locks = LockClient::postgres_with(options).await.unwrap();
            let clone = locks.clone();
            let a = locks.lock(&name).await.unwrap();
            let b = clone.lock_shared((7, round)).await.unwrap();
            // A timed wait on the server takes a session of its own: two sessions now. Long
            // enough that the first ask (on the serving session) cannot use up the wait on a
            // loaded machine (with 20 ms it did: then no wait session is opened at all).
            assert!(
                locks
                    .try_lock_for(held, Duration::from_millis(500))
                    .await
                    .unwrap()
                    .is_none()
            );
            let opened = ours(&control, &before).await;
            assert!((2..=3).contains(&opened.len()), "round {round}: {opened:?}");
            a.release().await.unwrap();
            drop(locks);
            drop(clone);
            // The last guard keeps the client's sessions: its lock is still held.
            assert!(!b.is_lost());
            let reader = other.try_lock_shared((7, round)).await.unwrap();
            reader.expect("shared with `b`").release().await.unwrap();
            assert!(
                other.try_lock((7, round)).await.unwrap().is_none(),
                "still held"
            );
            drop(b);
            slowest = slowest.max(wait_closed(&control, &opened).await);
            assert!(
                other.try_lock((7, round)).await.unwrap().is_some(),
                "freed with the sessions"
            );
        }
        eprintln!("slowest close after the last drop: {slowest:?}");
        // The stated bound: at once, or after the release of the last dropped guard, which
        // takes at most `heartbeat_timeout` (2 s); slack for a loaded machine.
        assert!(slowest < Duration::from_secs(5), "{slowest:?}");
        blocker.release().await.unwrap();
    });
    // A blocking client (driven by chainlock's background runtime) closes its sessions too.
    let control_runtime = runtime();
    let control = control_runtime.block_on(raw(&url));
    let before = control_runtime.block_on(chainlock_pids(&control));
    let locks = LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap()).unwrap();
    let guard = locks.blocking_lock_shared("blocking-lifecycle").unwrap();
    let opened = control_runtime.block_on(ours(&control, &before));
    assert!(!opened.is_empty());
    drop(locks);
    drop(guard);
    control_runtime.block_on(wait_closed(&control, &opened));
}

#[test]
fn shared_holds_are_granted_within_the_bound_at_any_number_of_readers() {
    let Some(url) = pg_url() else { return };
    let _serial = serial();
    let free = keys(10, 40);
    runtime().block_on(async {
        let control = raw(&url).await;
        let before = chainlock_pids(&control).await;
        let options = PostgresOptions::new(&url).unwrap().max_connections(3);
        let locks = LockClient::postgres_with(options).await.unwrap();
        // Readers of 20 free keys, one after another: each granted at once (the issue: the 4th
        // failed with `Unresponsive` after 2 s, each shared hold taking a connection).
        let mut readers = Vec::new();
        for &key in &free[..20] {
            let start = Instant::now();
            let reader = locks
                .try_lock_shared(key)
                .await
                .unwrap()
                .expect("a free key is granted shared");
            assert!(
                start.elapsed() < Duration::from_secs(1),
                "{:?}",
                start.elapsed()
            );
            readers.push(reader);
        }
        // 30 concurrent readers of one key.
        let one = free[20];
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..30 {
            let locks = locks.clone();
            tasks.spawn(async move { locks.lock_shared(one).await.unwrap() });
        }
        while let Some(reader) = tasks.join_next().await {
            readers.push(reader.unwrap());
        }
        // Exclusive holds still go through while 50 shared ones are held.
        let writer = locks
            .try_lock(free[21])
            .await
            .unwrap()
            .expect("a free key is granted exclusively");
        let open = ours(&control, &before).await;
        assert!(
            open.len() <= 3,
            "at most max_connections sessions: {open:?}"
        );
        let other = LockClient::postgres(&url).await.unwrap();
        assert!(
            other.try_lock(one).await.unwrap().is_none(),
            "30 readers hold it"
        );
        let another = other.try_lock_shared(one).await.unwrap();
        another.expect("readers share").release().await.unwrap();
        writer.release().await.unwrap();
        for reader in readers {
            assert!(reader.is_shared());
            reader.release().await.unwrap();
        }
        assert!(
            other.try_lock(one).await.unwrap().is_some(),
            "every reader released"
        );
    });
}
