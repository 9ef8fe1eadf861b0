//! The PostgreSQL backend under the faults of issue 11, each real: a holder process whose
//! runtime is stalled or that is stopped with `SIGSTOP`, a listener that accepts and never
//! answers, another role with its own schema, `search_path` and `statement_timeout`, a role
//! without privileges.

mod distributed_common;

use chainlock::distributed::{Error, LockClient, PostgresOptions, Stage};
use distributed_common::{pg_url, runtime, unique};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The child side of [`StalledHolder`]: this test binary, run again with `STALLED_HOLDER` set.
/// Acquires the name on a current-thread runtime and then never drives that runtime again (as
/// a long synchronous call would): no task of it can run, so only the clock can tell the loss.
/// Answers every line on stdin with `lost <is_lost()>`.
#[test]
fn stalled_holder_child() {
    let Ok(spec) = std::env::var("STALLED_HOLDER") else {
        return;
    };
    let [url, name, interval, timeout]: [&str; 4] =
        spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let millis = |text: &str| Duration::from_millis(text.parse().unwrap());
    let options = PostgresOptions::new(url)
        .unwrap()
        .heartbeat_interval(millis(interval))
        .heartbeat_timeout(millis(timeout));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let guard = runtime
        .block_on(async {
            let locks = LockClient::postgres_with(options).await?;
            locks.lock(name).await
        })
        .unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "STALLED held {}", guard.token()).unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        line.unwrap();
        writeln!(out, "STALLED lost {}", guard.is_lost()).unwrap();
        out.flush().unwrap();
    }
}

/// A holder process whose runtime never runs again after it acquired the name.
struct StalledHolder {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl StalledHolder {
    fn spawn(url: &str, name: &str, interval_ms: u64, timeout_ms: u64) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "stalled_holder_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                "STALLED_HOLDER",
                format!("{url}\n{name}\n{interval_ms}\n{timeout_ms}"),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut holder = Self {
            child,
            stdin,
            stdout,
        };
        let line = holder.line();
        assert!(line.starts_with("held "), "{line}");
        holder
    }

    /// The next line the child printed itself (the test harness prints others).
    fn line(&mut self) -> String {
        loop {
            let mut line = String::new();
            assert_ne!(
                self.stdout.read_line(&mut line).unwrap(),
                0,
                "the holder died"
            );
            // The harness may have printed `test ... ` on the same line first.
            if let Some((_, ours)) = line.trim().split_once("STALLED ") {
                return ours.to_owned();
            }
        }
    }

    fn is_lost(&mut self) -> bool {
        writeln!(self.stdin).unwrap();
        self.stdin.flush().unwrap();
        match self.line().as_str() {
            "lost true" => true,
            "lost false" => false,
            other => panic!("holder said {other:?}"),
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for StalledHolder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Heartbeats of the stalled holders: every 200 ms, answered within 300 ms. So the guard
/// says "lost" 1 s after its last contact, and the server may release it after 1.5 s.
const INTERVAL_MS: u64 = 200;
const TIMEOUT_MS: u64 = 300;

#[test]
fn a_stalled_holder_knows_it_lost_the_lock_before_anyone_else_holds_it() {
    let Some(url) = pg_url() else { return };
    let name = unique("stalled");
    let mut holder = StalledHolder::spawn(&url, &name, INTERVAL_MS, TIMEOUT_MS);
    let taker = {
        let (url, name) = (url.clone(), name.clone());
        std::thread::spawn(move || {
            let locks =
                LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap()).unwrap();
            let guard = locks
                .blocking_try_lock_for(&name, Duration::from_secs(30))
                .unwrap()
                .expect("the server releases a silent holder's lock");
            (Instant::now(), guard.token().get())
        })
    };
    // Poll the holder until it says lost (a deadline, not a sleep: each answer is a round
    // trip through its stdin).
    let deadline = Instant::now() + Duration::from_secs(30);
    let lost_at = loop {
        let asked = Instant::now();
        let lost = holder.is_lost();
        if lost {
            break asked;
        }
        // What must never happen: the holder thinks it holds while another process does.
        assert!(
            !taker.is_finished(),
            "another process holds the name while the stalled holder says it is not lost"
        );
        assert!(
            Instant::now() < deadline,
            "the stalled holder never noticed"
        );
        // The poll interval of a wait for a condition, not a synchronization.
        std::thread::sleep(Duration::from_millis(5));
    };
    let (taken_at, token) = taker.join().unwrap();
    assert!(
        lost_at <= taken_at,
        "the loss was visible {:?} after another process took the name",
        lost_at.duration_since(taken_at)
    );
    eprintln!(
        "stalled holder: lost visible {:?} before the server gave the name away",
        taken_at.duration_since(lost_at)
    );
    assert!(holder.is_lost(), "the loss is sticky");
    let _ = token;
}

#[test]
fn a_sigstopped_holder_sees_the_loss_the_instant_it_resumes() {
    let Some(url) = pg_url() else { return };
    let name = unique("sigstop");
    let mut holder = StalledHolder::spawn(&url, &name, INTERVAL_MS, TIMEOUT_MS);
    holder.signal("-STOP");
    let locks = LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap()).unwrap();
    let start = Instant::now();
    let guard = locks
        .blocking_try_lock_for(&name, Duration::from_secs(30))
        .unwrap();
    holder.signal("-CONT");
    let guard = guard.expect("the server released the stopped holder's lock");
    eprintln!(
        "the server released the stopped holder's lock after {:?}",
        start.elapsed()
    );
    assert!(
        holder.is_lost(),
        "the stopped holder, resumed, still believes it holds the lock"
    );
    guard.blocking_release().unwrap();
}

/// A TCP listener on loopback that accepts connections and never says a word.
fn mute_listener() -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let mut accepted = vec![];
        listener.set_nonblocking(false).unwrap();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            accepted.push(stream);
            if accepted.len() >= 4 {
                // Keep them open until the test process ends.
                std::mem::forget(accepted);
                return;
            }
        }
    });
    (port, thread)
}

#[test]
fn a_listener_that_never_answers_bounds_opening_a_client() {
    let (port, _listener) = mute_listener();
    let url = format!("postgres://nobody@127.0.0.1:{port}/none?connect_timeout=1");
    runtime().block_on(async {
        let start = Instant::now();
        let outcome = tokio::time::timeout(Duration::from_secs(20), LockClient::postgres(&url))
            .await
            .expect("LockClient::postgres hung on a mute server");
        let elapsed = start.elapsed();
        assert!(
            matches!(
                outcome,
                Err(Error::Unresponsive {
                    stage: Stage::Connect,
                    after
                }) if after == Duration::from_secs(1)
            ),
            "{outcome:?}"
        );
        assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    });
    let start = Instant::now();
    let outcome = LockClient::blocking_postgres_with(PostgresOptions::new(&url).unwrap());
    assert!(
        matches!(outcome, Err(Error::Unresponsive { .. })),
        "{outcome:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(3));
}

/// A superuser session on the test server.
async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

fn options_as(
    url: &str,
    role: &str,
    extra: impl FnOnce(&mut tokio_postgres::Config),
) -> PostgresOptions {
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.user(role);
    extra(&mut config);
    PostgresOptions::from_config(config)
}

/// Drops `role` and what it owns, if it exists.
async fn drop_role(admin: &tokio_postgres::Client, role: &str) {
    let exists: bool = admin
        .query_one(
            "SELECT count(*) > 0 FROM pg_roles WHERE rolname = $1",
            &[&role],
        )
        .await
        .unwrap()
        .get(0);
    if exists {
        admin
            .batch_execute(&format!("DROP OWNED BY {role} CASCADE; DROP ROLE {role}"))
            .await
            .unwrap();
    }
}

#[test]
fn clients_of_other_roles_and_search_paths_share_one_counter_and_keep_their_timeouts() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let admin = admin(&url).await;
        let role = format!("chainlock_other_{}", std::process::id());
        drop_role(&admin, &role).await;
        // The objects exist (created by a privileged client) before the other role starts.
        let first = LockClient::postgres(&url).await.unwrap();
        admin
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN; \
                 CREATE SCHEMA {role} AUTHORIZATION {role}; \
                 ALTER ROLE {role} SET search_path = {role}; \
                 ALTER ROLE {role} SET statement_timeout = '500ms'; \
                 GRANT USAGE ON SCHEMA chainlock TO {role}; \
                 GRANT USAGE, SELECT, UPDATE ON SEQUENCE chainlock.token_counter TO {role}; \
                 GRANT SELECT, INSERT, UPDATE ON chainlock.epochs TO {role}"
            ))
            .await
            .unwrap();
        // The other role (its own schema first in its path, no CREATE on the database) and a
        // client that sets its own search_path in the connection options.
        let other = LockClient::postgres_with(options_as(&url, &role, |_| {}))
            .await
            .expect("a role without CREATE starts when the objects exist");
        let pathed = LockClient::postgres_with(options_as(&url, "postgres", |config| {
            config.options(format!("-c search_path={role},public"));
        }))
        .await
        .unwrap();
        let name = unique("roles");
        let mut tokens = vec![];
        for round in 0..9 {
            let locks = [&first, &other, &pathed][round % 3];
            let guard = locks.lock(&name).await.unwrap();
            tokens.push(guard.token().get());
            guard.release().await.unwrap();
        }
        assert!(
            tokens.windows(2).all(|pair| pair[0] < pair[1]),
            "tokens of one name went back between clients that exclude each other: {tokens:?}"
        );
        // Nothing was created in the other role's schema.
        let stray: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1",
                &[&role],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(stray, 0, "objects were created in the role's own schema");

        // The role's statement_timeout (500 ms) does not cut a 2 s lock wait short.
        let held = first.lock(&name).await.unwrap();
        let start = Instant::now();
        let outcome = other.try_lock_for(&name, Duration::from_secs(2)).await;
        let elapsed = start.elapsed();
        assert!(
            matches!(outcome, Ok(None)),
            "{:?}",
            outcome.map(|guard| guard.map(|guard| guard.token()))
        );
        assert!(
            elapsed >= Duration::from_millis(1900),
            "the wait ended after {elapsed:?}"
        );
        held.release().await.unwrap();
        drop((other, pathed));
        drop_role(&admin, &role).await;
    });
}

#[test]
fn server_errors_display_the_servers_message() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let admin = admin(&url).await;
        let role = format!("chainlock_noperm_{}", std::process::id());
        drop_role(&admin, &role).await;
        drop(LockClient::postgres(&url).await.unwrap());
        admin
            .batch_execute(&format!("CREATE ROLE {role} LOGIN"))
            .await
            .unwrap();
        let outcome = LockClient::postgres_with(options_as(&url, &role, |_| {})).await;
        let Err(error) = outcome else {
            panic!("a role without any privilege started a client")
        };
        let text = error.to_string();
        assert!(
            text.contains("permission denied"),
            "the server's message is missing: {text}"
        );
        drop_role(&admin, &role).await;
    });
}

/// A database where chainlock's first release handed out tokens (its objects in `public`):
/// the first token of this release is above every one of them.
#[test]
fn tokens_keep_increasing_across_the_upgrade_from_the_first_release() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let admin = admin(&url).await;
        let database = format!("chainlock_upgrade_{}", std::process::id());
        // One statement per call: CREATE/DROP DATABASE refuse the implicit transaction of a
        // multi-statement batch.
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {database}"))
            .await
            .unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {database}"))
            .await
            .unwrap();
        let mut config: tokio_postgres::Config = url.parse().unwrap();
        config.dbname(&database);
        let (old, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        // What the first release left behind: epoch 7 recorded, tokens handed out up to there.
        let last_old_token: i64 = (7 << 32) + 41;
        old.batch_execute(&format!(
            "CREATE UNLOGGED SEQUENCE public.chainlock_token_counter CACHE 1; \
             SELECT setval('public.chainlock_token_counter', {last_old_token}); \
             CREATE TABLE public.chainlock_epochs \
             (epoch bigint PRIMARY KEY, recorded timestamptz NOT NULL DEFAULT now()); \
             INSERT INTO public.chainlock_epochs (epoch) VALUES (3), (7)"
        ))
        .await
        .unwrap();
        let locks = LockClient::postgres_with(PostgresOptions::from_config(config))
            .await
            .unwrap();
        let guard = locks.lock("upgraded").await.unwrap();
        let first = guard.token().get();
        guard.release().await.unwrap();
        assert!(
            i64::try_from(first).unwrap() > last_old_token,
            "the first token after the upgrade ({first}) is not above the last one before ({last_old_token})"
        );
        drop((locks, old));
        admin
            .batch_execute(&format!("DROP DATABASE {database} WITH (FORCE)"))
            .await
            .unwrap();
    });
}
