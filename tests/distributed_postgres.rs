//! The PostgreSQL backend against a real server (`CHAINLOCK_PG_URL`, started by
//! `scripts/pg.sh`): mutual exclusion across processes, `kill -9`, timeouts and their race,
//! cancellation, hostile names, the pool never keeping a locked connection.

mod distributed_common;

use chainlock::distributed::{LockClient, PostgresOptions};
use distributed_common::{Holder, Scratch, hammer, hostile_names, pg_url};
use std::time::{Duration, Instant};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A per-test prefix, so that tests running at once never share a name.
fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[test]
fn eight_processes_never_overlap() {
    let Some(url) = pg_url() else { return };
    let names = [unique("alpha"), unique("beta"), unique("gamma")];
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    hammer("postgres", &url, 8, 500, &names);
}

#[test]
fn kill_9_of_the_holder_frees_the_name_within_a_second() {
    let Some(url) = pg_url() else { return };
    let name = unique("orders");
    let mut holder = Holder::spawn("postgres", &url, &name);
    let locks = LockClient::blocking_postgres(PostgresOptions::new(&url).unwrap()).unwrap();
    assert!(
        locks.blocking_try_acquire(&name).unwrap().is_none(),
        "the holder holds it"
    );
    holder.kill();
    let start = Instant::now();
    let guard = locks
        .blocking_acquire_timeout(&name, Duration::from_secs(1))
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
    let locks = LockClient::blocking_postgres(PostgresOptions::new(&url).unwrap()).unwrap();

    let start = Instant::now();
    assert!(
        locks
            .blocking_acquire_timeout(&name, Duration::ZERO)
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
            .blocking_acquire_timeout(&name, Duration::from_millis(200))
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
        std::thread::spawn(move || {
            locks
                .blocking_acquire(&name)
                .map(|guard| guard.token().get())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
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
    let locks = LockClient::blocking_postgres(options.clone()).unwrap();
    let other = LockClient::blocking_postgres(options.clone()).unwrap();
    // A session that kept the lock would re-enter it (advisory locks are reentrant per
    // session), so look from a third client.
    let observer = LockClient::blocking_postgres(options).unwrap();
    let (mut granted, mut timed_out) = (0, 0);
    for step in 0..30_u64 {
        let guard = locks
            .blocking_acquire_timeout(&name, Duration::from_secs(5))
            .unwrap();
        let guard = guard.unwrap_or_else(|| panic!("step {step}: the name stayed locked"));
        let racer = {
            let (other, name) = (other.clone(), name.clone());
            std::thread::spawn(move || {
                let guard = other
                    .blocking_acquire_timeout(&name, Duration::from_millis(20))
                    .unwrap();
                guard.map(|guard| guard.token().get())
            })
        };
        std::thread::sleep(Duration::from_micros(14_000 + step * 400));
        guard.blocking_release().unwrap();
        match racer.join().unwrap() {
            Some(_) => granted += 1,
            None => timed_out += 1,
        }
        // The racer's session went back to its pool: it must not still hold the name.
        std::thread::sleep(Duration::from_millis(5)); // a granted racer unlocks in the background
        let again = observer.blocking_try_acquire(&name).unwrap();
        assert!(
            again.is_some(),
            "step {step}: a timed-out session kept the lock"
        );
        again.unwrap().blocking_release().unwrap();
    }
    eprintln!("race outcomes: {granted} granted, {timed_out} timed out");
    assert!(
        timed_out > 0,
        "the schedule never reached the timeout; the race was not exercised"
    );
}

#[test]
fn cancelled_acquire_leaves_the_name_free() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let name = unique("cancel");
        let guard = locks.acquire(&name).await.unwrap();
        let pending = tokio::time::timeout(Duration::from_millis(100), locks.acquire(&name)).await;
        assert!(pending.is_err(), "the second acquire waits");
        guard.release().await.unwrap();
        let start = Instant::now();
        let again = tokio::time::timeout(Duration::from_secs(2), locks.acquire(&name)).await;
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
            let guard = locks.acquire(name).await.unwrap();
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
        // Every name is free: no pooled connection kept a lock.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let observer = LockClient::postgres(&url).await.unwrap();
        for name in &names {
            assert!(
                observer.try_acquire(name).await.unwrap().is_some(),
                "{name} is still locked"
            );
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
            guards.push(locks.try_acquire(name).await.unwrap().expect("free"));
        }
        for name in &names {
            assert!(
                locks.try_acquire(name).await.unwrap().is_none(),
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
    let blocking = LockClient::blocking_postgres(PostgresOptions::new(&url).unwrap()).unwrap();
    let guard = blocking.blocking_acquire(&name).unwrap();
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        assert!(locks.try_acquire(&name).await.unwrap().is_none());
    });
    guard.blocking_release().unwrap();
}
