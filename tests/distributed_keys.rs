//! Integer keys ([`LockKey::Int`], [`LockKey::Pair`]) on both backends: they are the very
//! advisory locks SQL takes (`pg_advisory_lock(42)`, `pg_advisory_lock(7, 42)`), in both
//! directions, with fencing tokens and timeouts; and the three kinds of keys never collide.

mod distributed_common;

use chainlock::distributed::{LockClient, LockKey};
use distributed_common::{Scratch, pg_url, runtime};
use std::time::{Duration, Instant};

/// A plain connection, as SQL of another program would use.
async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// `pg_try_advisory_lock` in the form `key` maps to.
async fn sql_try_lock(client: &tokio_postgres::Client, key: LockKey<'_>) -> bool {
    match key {
        LockKey::Int(key) => client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .await
            .unwrap()
            .get(0),
        LockKey::Pair(high, low) => client
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&high, &low])
            .await
            .unwrap()
            .get(0),
        _ => unreachable!("integer keys only"),
    }
}

async fn sql_unlock(client: &tokio_postgres::Client, key: LockKey<'_>) -> bool {
    match key {
        LockKey::Int(key) => client
            .query_one("SELECT pg_advisory_unlock($1)", &[&key])
            .await
            .unwrap()
            .get(0),
        LockKey::Pair(high, low) => client
            .query_one("SELECT pg_advisory_unlock($1, $2)", &[&high, &low])
            .await
            .unwrap()
            .get(0),
        _ => unreachable!("integer keys only"),
    }
}

/// Integer keys no other test (or process) uses: derived from the process id and `test`.
fn keys(test: i32) -> (i64, (i32, i32)) {
    let pid = i32::try_from(std::process::id()).unwrap();
    ((i64::from(pid) << 20) | i64::from(test), (-pid, test))
}

#[test]
fn integer_keys_are_the_advisory_locks_of_sql_both_ways() {
    const TEST: i32 = 1;
    let Some(url) = pg_url() else { return };
    let (int, pair) = keys(TEST);
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let sql = raw(&url).await;
        for key in [LockKey::Int(int), LockKey::Pair(pair.0, pair.1)] {
            // chainlock holds: SQL is refused, until the release.
            let guard = locks.lock(key).await.unwrap();
            assert_eq!(guard.name(), key.to_string());
            assert!(!sql_try_lock(&sql, key).await, "{key} held by chainlock");
            let first = guard.token();
            guard.release().await.unwrap();
            assert!(
                sql_try_lock(&sql, key).await,
                "{key} free after the release"
            );
            // SQL holds: chainlock is refused (try and timed), until SQL unlocks.
            assert!(
                locks.try_lock(key).await.unwrap().is_none(),
                "{key} held by SQL"
            );
            assert!(
                locks
                    .try_lock_for(key, Duration::from_millis(50))
                    .await
                    .unwrap()
                    .is_none(),
                "{key} held by SQL"
            );
            // A waiter on the server is granted the key when SQL unlocks it.
            let waiter = {
                let locks = locks.clone();
                tokio::spawn(async move { locks.try_lock_for(key, Duration::from_secs(30)).await })
            };
            wait_for_advisory_waiter(&sql, key).await;
            assert!(sql_unlock(&sql, key).await);
            let second = waiter.await.unwrap().unwrap().expect("granted on unlock");
            assert!(second.token() > first, "tokens increase for {key}");
            assert!(!sql_try_lock(&sql, key).await, "{key} held by the waiter");
            second.release().await.unwrap();
        }
    });
}

/// Waits until some session waits on the server for the advisory lock `key`.
async fn wait_for_advisory_waiter(client: &tokio_postgres::Client, key: LockKey<'_>) {
    // pg_locks shows a bigint key as (classid, objid) = (high, low 32 bits), objsubid 1; a
    // pair as (classid, objid) = (first, second), objsubid 2.
    let (class, obj, sub): (i64, i64, i16) = match key {
        LockKey::Int(key) => ((key >> 32) & 0xffff_ffff, key & 0xffff_ffff, 1),
        LockKey::Pair(high, low) => (
            i64::from(high.cast_unsigned()),
            i64::from(low.cast_unsigned()),
            2,
        ),
        _ => unreachable!(),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = $3",
                &[&class, &obj, &sub],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "nobody waits for {key}");
        tokio::task::yield_now().await;
    }
}

#[test]
fn names_ints_and_pairs_are_distinct_locks_on_postgres() {
    const TEST: i32 = 2;
    let Some(url) = pg_url() else { return };
    let (int, pair) = keys(TEST);
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let other = LockClient::postgres(&url).await.unwrap();
        let name = int.to_string();
        let low = i64::from(pair.1);
        let keys = [
            LockKey::Int(int),
            LockKey::Pair(pair.0, pair.1),
            LockKey::Name(&name),
            // The pair's second half alone, and as the pair (0, low): distinct from the pair.
            LockKey::Int(low),
            LockKey::Pair(0, pair.1),
            LockKey::Int(i64::MIN),
            LockKey::Pair(i32::MIN, i32::MAX),
        ];
        let mut guards = Vec::new();
        for key in keys {
            guards.push(
                locks
                    .try_lock(key)
                    .await
                    .unwrap()
                    .unwrap_or_else(|| panic!("{key} is free: no other key holds it")),
            );
        }
        for key in keys {
            assert!(other.try_lock(key).await.unwrap().is_none(), "{key} held");
        }
        for guard in guards {
            guard.release().await.unwrap();
        }
    });
}

#[test]
fn names_ints_and_pairs_are_distinct_locks_on_files() {
    let dir = Scratch::new("keys");
    let locks = LockClient::file(dir.path()).unwrap();
    let keys = [
        LockKey::Int(42),
        LockKey::Int(-42),
        LockKey::Pair(0, 42),
        LockKey::Pair(-1, 42),
        LockKey::Name("42"),
        LockKey::Name("i-42"),
        LockKey::Name("p-0_42"),
    ];
    let guards: Vec<_> = keys
        .iter()
        .map(|&key| {
            locks
                .blocking_try_lock(key)
                .unwrap()
                .unwrap_or_else(|| panic!("{key} is free"))
        })
        .collect();
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, keys.len(), "one lock file per key");
    let other = LockClient::file(dir.path()).unwrap();
    for key in keys {
        assert!(
            other.blocking_try_lock(key).unwrap().is_none(),
            "{key} held"
        );
    }
    let tokens: Vec<u64> = guards.iter().map(|guard| guard.token().get()).collect();
    drop(guards);
    // Fencing tokens per integer key, as per name.
    for (key, before) in keys.into_iter().zip(tokens) {
        let again = other.blocking_lock(key).unwrap();
        assert!(again.token().get() > before, "{key}: tokens increase");
    }
}

#[test]
fn plain_integers_and_strings_convert() {
    let dir = Scratch::new("keys-convert");
    let locks = LockClient::file(dir.path()).unwrap();
    let name = String::from("orders");
    let names = ["a", "b"];
    let by_literal = locks.blocking_lock(42).unwrap();
    assert_eq!(by_literal.name(), "advisory(42)");
    assert!(
        locks.blocking_try_lock(42_i64).unwrap().is_none(),
        "i32 42 is i64 42"
    );
    let by_string = locks.blocking_lock(&name).unwrap();
    assert_eq!(by_string.name(), "orders");
    for name in &names {
        let guard = locks.blocking_lock(name).unwrap();
        assert_eq!(guard.name(), *name);
    }
    drop((by_literal, by_string));
}
