//! A server restart or crash while locks are held: the lost signal fires, no two holders ever
//! share a token, and tokens keep increasing; also the counter crossing into a new epoch. In a
//! test binary of its own, so that the restarts disturb no other test (cargo runs test
//! binaries one after another); the tests here take turns through `SERVER`.

mod distributed_common;

use chainlock::distributed::{Error, LockClient, PostgresOptions};
use distributed_common::{pg_url, runtime};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One test at a time touches the server's lifetime or its counter.
static SERVER: Mutex<()> = Mutex::new(());

/// The script in `var` (set by `scripts/pg.sh`), or `None` with a notice outside CI.
fn script(var: &str) -> Option<String> {
    if let Ok(script) = std::env::var(var) {
        return Some(script);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{var} is not set in CI (scripts/pg.sh sets it)"
    );
    eprintln!("notice: {var} is not set; skipping this test");
    None
}

async fn run_script(script: String) {
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new("bash").arg(script).status()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(status.success(), "server script failed: {status}");
}

/// A plain connection, for looking at (and moving) the token counter.
async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Connects once the server accepts sessions again (crash recovery takes a moment).
async fn reconnect(options: &PostgresOptions) -> LockClient {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match LockClient::postgres_with(options.clone()).await {
            Ok(locks) => return locks,
            Err(err) if Instant::now() < deadline => {
                eprintln!("waiting for the server: {err}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("the server did not come back: {err}"),
        }
    }
}

fn assert_all_distinct(tokens: &[u64]) {
    let mut sorted = tokens.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        tokens.len(),
        "a token was handed out twice: {tokens:?}"
    );
}

#[test]
fn server_restart_fires_the_lost_signal_and_tokens_stay_unique() {
    let Some(url) = pg_url() else { return };
    let Some(restart) = script("CHAINLOCK_PG_RESTART") else {
        return;
    };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let options = PostgresOptions::new(&url).unwrap();
        let locks = LockClient::postgres_with(options.clone()).await.unwrap();
        let name = format!("restart-{}", std::process::id());
        let mut tokens = vec![];
        let held = locks.lock(&name).await.unwrap();
        let other = locks.lock(&format!("{name}-other")).await.unwrap();
        tokens.push(held.token().get());
        tokens.push(other.token().get());
        assert!(!held.is_lost());

        let start = Instant::now();
        run_script(restart).await;
        tokio::time::timeout(Duration::from_secs(5), held.lost())
            .await
            .expect("the lost signal fires");
        let detected = start.elapsed();
        assert!(
            held.is_lost() && other.is_lost(),
            "every lock of the restarted server is lost"
        );
        eprintln!("lost detected {detected:?} after the restart began");
        assert!(
            matches!(held.release().await, Err(Error::Lost)),
            "releasing a lost lock says so"
        );
        drop(other);

        // After the restart: new sessions (the pooled ones were cut too) and new tokens.
        let again = LockClient::postgres_with(options).await.unwrap();
        for _ in 0..3 {
            let guard = locks.lock(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
            let guard = again.lock(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
        }
        assert_all_distinct(&tokens);
        assert!(
            tokens[2..].iter().all(|&t| t > tokens[0].max(tokens[1])),
            "tokens went back: {tokens:?}"
        );
    });
}

/// Takes tokens of several names, crashes the server with `crash`, and checks that crash
/// recovery reset the unlogged counter (so the epoch path ran) and that every token handed out
/// afterwards, by 8 acquisitions at once, is greater than every token before.
async fn tokens_increase_across_a_crash(url: &str, crash: impl Future<Output = ()>) {
    let options = PostgresOptions::new(url).unwrap();
    let locks = LockClient::postgres_with(options.clone()).await.unwrap();
    let names: Vec<String> = (0..8)
        .map(|i| format!("crash-{}-{i}", std::process::id()))
        .collect();
    let mut before = vec![];
    for name in &names {
        for _ in 0..3 {
            let guard = locks.lock(name).await.unwrap();
            before.push(guard.token().get());
            guard.release().await.unwrap();
        }
    }
    let held = locks.lock(&names[0]).await.unwrap();
    before.push(held.token().get());

    crash.await;
    tokio::time::timeout(Duration::from_secs(5), held.lost())
        .await
        .expect("the lost signal fires");
    drop(held);

    let locks = reconnect(&options).await;
    let (last, called): (i64, bool) = {
        let row = raw(url)
            .await
            .query_one(
                "SELECT last_value, is_called FROM chainlock.token_counter",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert!(
        last == 1 && !called,
        "crash recovery resets the unlogged counter (last_value {last}, is_called {called})"
    );
    // Every client starts in epoch 0 at once: one records the new epoch, the others wait.
    let after: Vec<u64> = futures_join_all(names.iter().map(|name| {
        let locks = locks.clone();
        let name = name.clone();
        async move {
            let guard = locks.lock(&name).await.unwrap();
            let token = guard.token().get();
            guard.release().await.unwrap();
            token
        }
    }))
    .await;
    let highest_before = *before.iter().max().unwrap();
    assert!(
        after.iter().all(|&t| t > highest_before),
        "tokens went back after the crash: before up to {highest_before}, after {after:?}"
    );
    assert_all_distinct(&[before, after].concat());
}

/// Runs the futures at once (as tasks) and collects their outputs in order.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(tasks.len());
    for task in tasks {
        outputs.push(task.await.unwrap());
    }
    outputs
}

#[test]
fn tokens_increase_across_a_backend_crash() {
    // `kill -9` of one backend: the postmaster reinitializes and runs crash recovery without
    // restarting, so `pg_postmaster_start_time()` stays the same.
    let Some(url) = pg_url() else { return };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let victim = raw(&url).await;
        let pid: i32 = victim
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let started: std::time::SystemTime = victim
            .query_one("SELECT pg_postmaster_start_time()", &[])
            .await
            .unwrap()
            .get(0);
        let crash = async move {
            let status = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill -9 {pid} failed: {status}");
            drop(victim);
        };
        tokens_increase_across_a_crash(&url, crash).await;
        let still: std::time::SystemTime = raw(&url)
            .await
            .query_one("SELECT pg_postmaster_start_time()", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(started, still, "a backend crash keeps the postmaster");
    });
}

#[test]
fn tokens_increase_across_an_immediate_shutdown() {
    // `pg_ctl restart -m immediate`: the server stops without a checkpoint, as on power loss.
    let Some(url) = pg_url() else { return };
    let Some(crash) = script("CHAINLOCK_PG_CRASH") else {
        return;
    };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(tokens_increase_across_a_crash(&url, run_script(crash)));
}

#[test]
fn tokens_increase_when_the_counter_enters_a_new_epoch() {
    let Some(url) = pg_url() else { return };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let options = PostgresOptions::new(&url).unwrap();
        // Two clients, so that one of them knows only the older epoch when the other moved on.
        let (first, second) = (
            LockClient::postgres_with(options.clone()).await.unwrap(),
            LockClient::postgres_with(options).await.unwrap(),
        );
        let name = format!("epoch-{}", std::process::id());
        let mut tokens = vec![];
        for locks in [&first, &second] {
            let guard = locks.lock(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
        }
        let epoch = tokens[1] >> 32;
        let control = raw(&url).await;
        // Two tokens before the end of the epoch.
        let end = i64::try_from(((epoch + 1) << 32) - 3).unwrap();
        control
            .execute("SELECT setval('chainlock.token_counter', $1)", &[&end])
            .await
            .unwrap();
        for round in 0..6 {
            let locks = if round % 2 == 0 { &first } else { &second };
            let guard = locks.lock(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
        }
        assert!(
            tokens.windows(2).all(|pair| pair[0] < pair[1]),
            "tokens of one name increase: {tokens:?}"
        );
        assert_eq!(
            tokens.last().unwrap() >> 32,
            epoch + 1,
            "the counter moved into the next epoch: {tokens:?}"
        );
        let durable: i64 = control
            .query_one("SELECT max(epoch) FROM chainlock.epochs", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            u64::try_from(durable).unwrap(),
            epoch + 1,
            "the new epoch was recorded before its tokens were handed out"
        );
    });
}

#[test]
fn a_server_that_stops_answering_bounds_a_timed_wait() {
    // SIGSTOP of the backend behind the client's pooled connection: the server can no longer
    // enforce `lock_timeout`, so only a client-side limit ends the wait, with
    // `Error::Unresponsive`, and closes that connection: the acquisition's own (timeout +
    // heartbeat timeout) or, sooner, the connection's unanswered heartbeat (the acquisition
    // asks on the shared connection, which keeps its heartbeats).
    let Some(url) = pg_url() else { return };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let control = raw(&url).await;
        let options = PostgresOptions::new(&url)
            .unwrap()
            .heartbeat_interval(Duration::from_millis(200))
            .heartbeat_timeout(Duration::from_millis(500));
        let before: Vec<i32> = chainlock_pids(&control).await;
        let locks = LockClient::postgres_with(options).await.unwrap();
        let ours: Vec<i32> = chainlock_pids(&control)
            .await
            .into_iter()
            .filter(|pid| !before.contains(pid))
            .collect();
        assert_eq!(
            ours.len(),
            1,
            "the client keeps one idle connection: {ours:?}"
        );
        let signal = |signal: &str| {
            let status = std::process::Command::new("kill")
                .args([signal, &ours[0].to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        };
        signal("-STOP");
        let start = Instant::now();
        let outcome = tokio::time::timeout(
            Duration::from_secs(20),
            locks.try_lock_for("unresponsive", Duration::from_millis(300)),
        )
        .await;
        signal("-CONT");
        let outcome = outcome.expect("the wait was not bounded on the client");
        assert!(
            matches!(outcome, Err(Error::Unresponsive { .. })),
            "{:?}",
            outcome.map(|guard| guard.map(|guard| guard.token()))
        );
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(500) && elapsed < Duration::from_secs(5),
            "gave up after {elapsed:?}"
        );
        // The client still works, on a fresh connection.
        let guard = locks.lock("unresponsive").await.unwrap();
        guard.release().await.unwrap();
    });
}

#[test]
fn a_guard_whose_runtime_is_gone_reports_the_loss() {
    // The connection is driven by a task of the client's runtime; dropping the runtime drops
    // that task, closes the connection and frees the lock on the server. The guard must say so
    // even though no task is left to report it.
    let Some(url) = pg_url() else { return };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = format!("orphan-{}", std::process::id());
    let first = runtime();
    let guard = first.block_on(async {
        let locks = LockClient::postgres(&url).await.unwrap();
        locks.lock(&name).await.unwrap()
    });
    assert!(!guard.is_lost());
    drop(first);
    assert!(guard.is_lost(), "the guard's connection is gone");
    runtime().block_on(async {
        let other = LockClient::postgres(&url).await.unwrap();
        let taken = tokio::time::timeout(Duration::from_secs(5), other.lock(&name)).await;
        assert!(taken.expect("the server freed the name").is_ok());
    });
    drop(guard);
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

/// Sends `signal` to `pid`.
fn kill(signal: &str, pid: i32) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}: {status}");
}

/// A process stopped with `SIGSTOP` until this is dropped (even when a test fails).
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> Self {
        kill("-STOP", pid);
        Self(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        kill("-CONT", self.0);
    }
}

/// The postmaster's pid, from the data directory.
fn postmaster_pid() -> Option<i32> {
    let data = script("CHAINLOCK_PG_DATA")?;
    let text = std::fs::read_to_string(std::path::Path::new(&data).join("postmaster.pid")).unwrap();
    Some(text.lines().next().unwrap().trim().parse().unwrap())
}

#[test]
fn a_stopped_postmaster_bounds_every_call_that_must_connect() {
    // SIGSTOP of the postmaster: the kernel still accepts connections, nobody answers them.
    // A client with no idle connection must open one for each call: each call stays within
    // its own bound, pool checkout included.
    let Some(url) = pg_url() else { return };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(postmaster) = postmaster_pid() else {
        return;
    };
    runtime().block_on(async {
        let options = PostgresOptions::new(&url)
            .unwrap()
            .max_idle_connections(0)
            .heartbeat_timeout(Duration::from_millis(500));
        let locks = LockClient::postgres_with(options).await.unwrap();
        let stopped = Stopped::new(postmaster);

        let start = Instant::now();
        let tried = tokio::time::timeout(Duration::from_secs(20), locks.try_lock("stopped"))
            .await
            .expect("try_acquire was not bounded");
        let elapsed = start.elapsed();
        assert!(
            matches!(tried, Err(Error::Unresponsive { after, .. }) if after == Duration::from_millis(500)),
            "{:?}",
            tried.map(|guard| guard.map(|guard| guard.token()))
        );
        assert!(elapsed < Duration::from_secs(2), "try_acquire took {elapsed:?}");

        let start = Instant::now();
        let timed = tokio::time::timeout(
            Duration::from_secs(20),
            locks.try_lock_for("stopped", Duration::from_secs(1)),
        )
        .await
        .expect("try_lock_for was not bounded");
        let elapsed = start.elapsed();
        assert!(
            matches!(timed, Err(Error::Unresponsive { after, .. }) if after == Duration::from_millis(1500)),
            "{:?}",
            timed.map(|guard| guard.map(|guard| guard.token()))
        );
        assert!(elapsed < Duration::from_secs(3), "try_lock_for took {elapsed:?}");
        drop(stopped);
        // The server answers again: so does the client.
        let guard = locks.lock("stopped").await.unwrap();
        guard.release().await.unwrap();
    });
}

#[test]
fn a_stopped_backend_bounds_a_release() {
    let Some(url) = pg_url() else { return };
    let _server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let control = raw(&url).await;
        let before = chainlock_pids(&control).await;
        let options = PostgresOptions::new(&url)
            .unwrap()
            .max_idle_connections(1)
            .heartbeat_interval(Duration::from_secs(5))
            .heartbeat_timeout(Duration::from_millis(500));
        let locks = LockClient::postgres_with(options).await.unwrap();
        let name = format!("stopped-release-{}", std::process::id());
        let guard = locks.lock(&name).await.unwrap();
        let ours: Vec<i32> = chainlock_pids(&control)
            .await
            .into_iter()
            .filter(|pid| !before.contains(pid))
            .collect();
        assert_eq!(ours.len(), 1, "one session, holding the lock: {ours:?}");
        let stopped = Stopped::new(ours[0]);
        let start = Instant::now();
        let released = tokio::time::timeout(Duration::from_secs(20), guard.release())
            .await
            .expect("release was not bounded");
        let elapsed = start.elapsed();
        drop(stopped);
        assert!(
            matches!(
                released,
                Err(Error::Unresponsive {
                    stage: chainlock::distributed::Stage::Release,
                    ..
                })
            ),
            "{released:?}"
        );
        assert!(elapsed < Duration::from_secs(2), "release took {elapsed:?}");
        // The connection was closed: the server frees the name.
        let again = tokio::time::timeout(Duration::from_secs(10), locks.lock(&name))
            .await
            .expect("the name was freed");
        again.unwrap().release().await.unwrap();
    });
}
