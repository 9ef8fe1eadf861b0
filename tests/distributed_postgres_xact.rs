//! Transaction-scoped locks (`xact_lock` and its twins) in the caller's own transaction,
//! against the real server: held until commit or rollback and not after, excluding other
//! sessions (chainlock's session locks and raw SQL) meanwhile; a timed wait that gives up
//! leaves the transaction usable and its `lock_timeout` as it was.

mod distributed_common;

use chainlock::distributed::{LockClient, try_xact_lock, try_xact_lock_for, xact_lock};
use distributed_common::{pg_url, runtime, unique};
use std::time::{Duration, Instant};

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

#[test]
fn released_at_commit_and_at_rollback_and_not_before() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let mut client = connect(&url).await;
        let other = connect(&url).await;
        for commit in [true, false] {
            let name = unique(if commit {
                "xact-commit"
            } else {
                "xact-rollback"
            });
            let transaction = client.transaction().await.unwrap();
            xact_lock(&transaction, &name).await.unwrap();
            // Held: a session lock of chainlock and another transaction are refused.
            assert!(
                locks.try_lock(&name).await.unwrap().is_none(),
                "held by the transaction"
            );
            transaction.execute("SELECT 1", &[]).await.unwrap();
            assert!(locks.try_lock(&name).await.unwrap().is_none(), "still held");
            {
                let mut other = connect(&url).await;
                let theirs = other.transaction().await.unwrap();
                assert!(!try_xact_lock(&theirs, &name).await.unwrap());
                theirs.rollback().await.unwrap();
            }
            if commit {
                transaction.commit().await.unwrap();
            } else {
                transaction.rollback().await.unwrap();
            }
            let guard = locks.try_lock(&name).await.unwrap();
            assert!(
                guard.is_some(),
                "released at the end of the transaction (commit {commit})"
            );
            guard.unwrap().release().await.unwrap();
        }
        drop(other);
    });
}

#[test]
fn integer_keys_exclude_raw_sql_session_locks() {
    let Some(url) = pg_url() else { return };
    let key = (i32::try_from(std::process::id()).unwrap(), 6);
    let int = (i64::from(key.0) << 20) | 6;
    runtime().block_on(async {
        let mut client = connect(&url).await;
        let raw = connect(&url).await;
        let transaction = client.transaction().await.unwrap();
        xact_lock(&transaction, key).await.unwrap();
        assert!(try_xact_lock(&transaction, int).await.unwrap());
        let pair_free: bool = raw
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&key.0, &key.1])
            .await
            .unwrap()
            .get(0);
        let int_free: bool = raw
            .query_one("SELECT pg_try_advisory_lock($1)", &[&int])
            .await
            .unwrap()
            .get(0);
        assert!(!pair_free && !int_free, "held by the transaction");
        transaction.commit().await.unwrap();
        let pair_free: bool = raw
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&key.0, &key.1])
            .await
            .unwrap()
            .get(0);
        assert!(pair_free, "released at commit");
    });
}

#[test]
fn a_timed_wait_gives_up_cleanly_and_a_waiter_gets_the_lock_on_release() {
    let Some(url) = pg_url() else { return };
    let name = unique("xact-timeout");
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let guard = locks.lock(&name).await.unwrap();
        let mut client = connect(&url).await;
        let transaction = client.transaction().await.unwrap();
        transaction
            .batch_execute("SET LOCAL lock_timeout = '1234ms'")
            .await
            .unwrap();
        assert!(!try_xact_lock(&transaction, &name).await.unwrap());
        let start = Instant::now();
        let got = try_xact_lock_for(&transaction, &name, Duration::from_millis(100))
            .await
            .unwrap();
        assert!(!got, "held by the session lock");
        assert!(start.elapsed() >= Duration::from_millis(100));
        // The transaction goes on, with its own lock_timeout.
        let setting: String = transaction
            .query_one("SHOW lock_timeout", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(setting, "1234ms");
        // A waiter in the transaction is granted the lock when the session lock is released.
        let waiting = async {
            try_xact_lock_for(&transaction, &name, Duration::from_secs(30))
                .await
                .unwrap()
        };
        let releasing = async {
            wait_for_waiter(&url).await;
            guard.release().await.unwrap();
        };
        let (got, ()) = tokio::join!(waiting, releasing);
        assert!(got, "granted on release");
        let setting: String = transaction
            .query_one("SHOW lock_timeout", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(setting, "1234ms", "restored after the wait too");
        assert!(
            locks.try_lock(&name).await.unwrap().is_none(),
            "held until commit"
        );
        transaction.commit().await.unwrap();
        assert!(
            locks.try_lock(&name).await.unwrap().is_some(),
            "released at commit"
        );
    });
}

/// Waits until a transaction of this process's test waits for an advisory lock on the server.
async fn wait_for_waiter(url: &str) {
    let observer = connect(url).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = observer
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) \
                 WHERE l.locktype = 'advisory' AND NOT l.granted \
                 AND a.query LIKE '%pg_advisory_xact_lock%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no transaction waits on the server"
        );
        tokio::task::yield_now().await;
    }
}

#[test]
fn a_rollback_to_an_earlier_savepoint_releases_the_lock() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        let mut client = connect(&url).await;
        let name = unique("xact-savepoint");
        let transaction = client.transaction().await.unwrap();
        transaction.batch_execute("SAVEPOINT before").await.unwrap();
        xact_lock(&transaction, &name).await.unwrap();
        assert!(locks.try_lock(&name).await.unwrap().is_none(), "held");
        // As documented: undone with everything after the savepoint.
        transaction
            .batch_execute("ROLLBACK TO SAVEPOINT before")
            .await
            .unwrap();
        let guard = locks.try_lock(&name).await.unwrap();
        assert!(guard.is_some(), "released by the rollback to the savepoint");
        guard.unwrap().release().await.unwrap();
        transaction.rollback().await.unwrap();
    });
}

#[test]
fn blocking_twins_lock_inside_a_transaction_from_a_plain_thread() {
    let Some(url) = pg_url() else { return };
    // The connection is driven by a runtime on another thread; the calls block this one.
    let driver = runtime();
    let mut client = driver.block_on(connect(&url));
    let name = unique("xact-blocking");
    let locks = LockClient::blocking_postgres_with(
        chainlock::distributed::PostgresOptions::new(&url).unwrap(),
    )
    .unwrap();
    let held = locks.blocking_lock(&name).unwrap();
    let transaction = driver.block_on(client.transaction()).unwrap();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                use chainlock::distributed::{
                    blocking_try_xact_lock, blocking_try_xact_lock_for,
                    blocking_try_xact_lock_until, blocking_xact_lock,
                };
                assert!(!blocking_try_xact_lock(&transaction, &name).unwrap());
                assert!(
                    !blocking_try_xact_lock_for(&transaction, &name, Duration::from_millis(50))
                        .unwrap()
                );
                let deadline = Instant::now() + Duration::from_millis(50);
                assert!(!blocking_try_xact_lock_until(&transaction, &name, deadline).unwrap());
                held.blocking_release().unwrap();
                blocking_xact_lock(&transaction, &name).unwrap();
            })
            .join()
            .unwrap();
    });
    assert!(
        locks.blocking_try_lock(&name).unwrap().is_none(),
        "held by the transaction"
    );
    driver.block_on(transaction.commit()).unwrap();
    assert!(locks.blocking_try_lock(&name).unwrap().is_some());
}
