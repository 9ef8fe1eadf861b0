//! The PostgreSQL backend against a real server (`CHAINLOCK_PG_URL`, started by
//! `scripts/pg.sh`): mutual exclusion across processes, `kill -9`, timeouts and their race,
//! cancellation, hostile names, the pool never keeping a locked connection.

mod distributed_common;

use chainlock::distributed::{LockClient, PostgresOptions};
use distributed_common::{Holder, Scratch, hammer, hostile_names, pg_url, runtime, unique};
use std::time::{Duration, Instant};

#[test]
fn eight_processes_never_overlap() {
    let Some(url) = pg_url() else { return };
    let names = [unique("alpha"), unique("beta"), unique("gamma")];
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    hammer("postgres", &url, 8, 500, &names);
}

/// Waits until the server shows a session waiting for the advisory lock of `name` (the
/// documented key: the first 64 bits of the name's SHA-256).
fn wait_for_server_waiter(url: &str, name: &str) {
    runtime().block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let waiting: i64 = client
                .query_one(
                    "WITH k AS (SELECT ('x' || left(encode(sha256(convert_to($1, 'UTF8')), 'hex'), 16))::bit(64)::bigint AS key) \
                     SELECT count(*) FROM pg_locks, k WHERE locktype = 'advisory' AND NOT granted \
                     AND classid::bigint = (key >> 32) & 4294967295 AND objid::bigint = key & 4294967295",
                    &[&name],
                )
                .await
                .unwrap()
                .get(0);
            if waiting > 0 {
                return;
            }
            assert!(Instant::now() < deadline, "nobody waits for {name} on the server");
            tokio::task::yield_now().await;
        }
    });
}

#[test]
fn kill_9_of_the_holder_frees_the_name_within_a_second() {
    let Some(url) = pg_url() else { return };
    let name = unique("orders");
    let mut holder = Holder::spawn("postgres", &url, &name);
    let locks = LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap()).unwrap();
    assert!(
        locks.blocking_try_lock(&name).unwrap().is_none(),
        "the holder holds it"
    );
    holder.kill();
    let start = Instant::now();
    let guard = locks
        .blocking_try_lock_for(&name, Duration::from_secs(1))
        .unwrap();
    let guard = guard.expect("acquired within 1 s of the kill");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(
        guard.token().get() > holder.token,
        "tokens increase across the crash"
    );
}

#[test]
fn timeouts_zero_short_and_infinite() {
    let Some(url) = pg_url() else { return };
    let name = unique("t");
    let mut holder = Holder::spawn("postgres", &url, &name);
    let locks = LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap()).unwrap();

    let start = Instant::now();
    assert!(
        locks
            .blocking_try_lock_for(&name, Duration::ZERO)
            .unwrap()
            .is_none()
    );
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "a zero timeout does not wait"
    );

    let start = Instant::now();
    assert!(
        locks
            .blocking_try_lock_for(&name, Duration::from_millis(200))
            .unwrap()
            .is_none()
    );
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(190) && elapsed < Duration::from_secs(2),
        "waited {elapsed:?}"
    );

    let waiter = {
        let (locks, name) = (locks.clone(), name.clone());
        std::thread::spawn(move || locks.blocking_lock(&name).map(|guard| guard.token().get()))
    };
    wait_for_server_waiter(&url, &name);
    assert!(
        !waiter.is_finished(),
        "an unbounded acquire waits while the name is held"
    );
    holder.kill();
    let token = waiter.join().unwrap().unwrap();
    assert!(token > holder.token);
}

#[test]
fn a_grant_racing_a_timeout_is_released() {
    let Some(url) = pg_url() else { return };
    let name = unique("race");
    // One idle connection each: the racer's timed-out session is the one reused next.
    let options = PostgresOptions::new(&url).unwrap().max_idle_connections(1);
    let locks = LockClient::blocking_postgres_with(options.clone()).unwrap();
    let other = LockClient::blocking_postgres_with(options.clone()).unwrap();
    // A session that kept the lock would re-enter it (advisory locks are reentrant per
    // session), so look from a third client.
    let observer = LockClient::blocking_postgres_with(options).unwrap();
    let racer_timeout = Duration::from_millis(20);
    // When the holder releases, relative to the racer's start: adapted after every step
    // towards the racer's timeout (later after a grant, earlier after a timeout), so that
    // both outcomes, and releases right at the timeout, keep occurring on a loaded machine.
    let mut delay = Duration::from_millis(14);
    let (mut granted, mut timed_out) = (0, 0);
    for step in 0..60_u64 {
        let guard = locks
            .blocking_try_lock_for(&name, Duration::from_secs(5))
            .unwrap();
        let guard = guard.unwrap_or_else(|| panic!("step {step}: the name stayed locked"));
        let racer = {
            let (other, name) = (other.clone(), name.clone());
            std::thread::spawn(move || {
                let guard = other.blocking_try_lock_for(&name, racer_timeout).unwrap();
                // Released before the thread ends: the observer below looks at a settled
                // server (no background unlock still on its way).
                guard.map(|guard| {
                    let token = guard.token().get();
                    guard.blocking_release().unwrap();
                    token
                })
            })
        };
        // The schedule of the race (not a synchronization: any outcome is checked below).
        std::thread::sleep(delay);
        guard.blocking_release().unwrap();
        if racer.join().unwrap().is_some() {
            granted += 1;
            delay += Duration::from_millis(2);
        } else {
            timed_out += 1;
            delay = delay.saturating_sub(Duration::from_millis(2));
        }
        // What must never happen: the racer's session went back to its pool still holding
        // the name (a grant racing its timeout, not undone).
        let again = observer.blocking_try_lock(&name).unwrap();
        assert!(
            again.is_some(),
            "step {step}: a timed-out session kept the lock"
        );
        again.unwrap().blocking_release().unwrap();
        if step >= 20 && granted > 0 && timed_out > 0 {
            break;
        }
    }
    eprintln!("race outcomes: {granted} granted, {timed_out} timed out");
    assert!(
        timed_out > 0 && granted > 0,
        "the schedule never reached both outcomes; the race was not exercised"
    );
}

#[test]
fn cancelled_acquire_leaves_the_name_free() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let name = unique("cancel");
        let guard = locks.lock(&name).await.unwrap();
        let pending = tokio::time::timeout(Duration::from_millis(100), locks.lock(&name)).await;
        assert!(pending.is_err(), "the second acquire waits");
        guard.release().await.unwrap();
        let start = Instant::now();
        let again = tokio::time::timeout(Duration::from_secs(2), locks.lock(&name)).await;
        assert!(
            again
                .expect("not left locked by the cancelled acquire")
                .is_ok()
        );
        eprintln!("free again {:?} after the release", start.elapsed());
    });
}

#[test]
fn guards_dropped_or_released_return_clean_connections() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let locks =
            LockClient::postgres_with(PostgresOptions::new(&url).unwrap().max_idle_connections(4))
                .await
                .unwrap();
        let names: Vec<String> = (0..4).map(|i| unique(&format!("pool{i}"))).collect();
        let mut last = 0;
        for round in 0..40 {
            let name = &names[round % names.len()];
            let guard = locks.lock(name).await.unwrap();
            assert!(guard.token().get() > last, "tokens increase");
            last = guard.token().get();
            assert!(!guard.is_lost());
            if round % 2 == 0 {
                guard.release().await.unwrap();
            } else {
                drop(guard);
            }
            tokio::task::yield_now().await;
        }
        // Every name becomes free (dropped guards unlock in the background) and stays free:
        // no pooled connection kept a lock.
        let observer = LockClient::postgres(&url).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        for name in &names {
            loop {
                if let Some(guard) = observer.try_lock(name).await.unwrap() {
                    guard.release().await.unwrap();
                    break;
                }
                assert!(Instant::now() < deadline, "{name} is still locked");
                tokio::task::yield_now().await;
            }
        }
        for _ in 0..3 {
            for name in &names {
                let guard = observer.try_lock(name).await.unwrap();
                guard
                    .unwrap_or_else(|| panic!("{name} was locked again"))
                    .release()
                    .await
                    .unwrap();
            }
        }
    });
}

#[test]
fn hostile_names_are_distinct_locks() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let tag = unique("");
        let names: Vec<String> = hostile_names()
            .into_iter()
            .map(|name| format!("{name}{tag}"))
            .collect();
        let mut guards = Vec::new();
        for name in &names {
            guards.push(locks.try_lock(name).await.unwrap().expect("free"));
        }
        for name in &names {
            assert!(
                locks.try_lock(name).await.unwrap().is_none(),
                "same name, same lock"
            );
        }
        for guard in guards {
            guard.release().await.unwrap();
        }
    });
}

#[test]
fn a_bad_url_or_server_is_a_clear_error() {
    assert!(PostgresOptions::new("postgres://[not a url").is_err());
    runtime().block_on(async {
        // Nothing listens on port 1.
        let result =
            LockClient::postgres("postgres://nobody@127.0.0.1:1/none?connect_timeout=2").await;
        assert!(
            matches!(result, Err(chainlock::distributed::Error::Postgres(_))),
            "{result:?}"
        );
    });
}

#[test]
fn blocking_and_async_clients_share_the_server() {
    let Some(url) = pg_url() else { return };
    let dir = Scratch::new("pg-mixed");
    drop(dir);
    let name = unique("mixed");
    let blocking = LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap()).unwrap();
    let guard = blocking.blocking_lock(&name).unwrap();
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        assert!(locks.try_lock(&name).await.unwrap().is_none());
    });
    guard.blocking_release().unwrap();
}
