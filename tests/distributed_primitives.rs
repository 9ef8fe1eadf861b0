//! The reader-writer lock, the counting semaphore and all-or-nothing multi-name acquisition,
//! on both backends: the file backend always, PostgreSQL against a real server
//! (`CHAINLOCK_PG_URL`, started by `scripts/pg.sh`). Real processes hold shared locks, permits
//! and name sets; `kill -9` releases them; timeouts, cancellation, opposite-order multi-name
//! acquirers, nothing held after a failure.

mod distributed_common;

use chainlock::distributed::{LockClient, PostgresOptions};
use distributed_common::{Holder, Scratch, pg_url, runtime, unique, wait_for_flock_waiter};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One backend under test.
struct Under {
    backend: &'static str,
    target: String,
    _scratch: Option<Scratch>,
}

impl Under {
    fn client(&self) -> LockClient {
        match self.backend {
            "file" => LockClient::file(&self.target).unwrap(),
            _ => LockClient::blocking_postgres_with(PostgresOptions::new(&self.target).unwrap())
                .unwrap(),
        }
    }

    async fn async_client(&self) -> LockClient {
        match self.backend {
            "file" => LockClient::file(&self.target).unwrap(),
            _ => LockClient::postgres(&self.target).await.unwrap(),
        }
    }

    fn hold(&self, command: &str, extra: &[&str]) -> Holder {
        let mut args = vec![command, self.backend, &self.target];
        args.extend_from_slice(extra);
        Holder::spawn_with(&args)
    }

    /// Waits until some process waits for the lock `name` (in `flock` or on the server).
    fn wait_for_waiter(&self, name: &str) {
        if self.backend == "file" {
            // The documented encoding of short names: `n-<percent-encoded>.lock`.
            let encoded: String = name
                .bytes()
                .map(|byte| {
                    if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
                        char::from(byte).to_string()
                    } else {
                        format!("%{byte:02X}")
                    }
                })
                .collect();
            let path = std::path::Path::new(&self.target).join(format!("n-{encoded}.lock"));
            wait_for_flock_waiter(&path);
            return;
        }
        runtime().block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.target, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let waiting: i64 = client
                    .query_one(
                        "WITH k AS (SELECT ('x' || left(encode(sha256($1::bytea), 'hex'), 16))::bit(64)::bigint AS key) \
                         SELECT count(*) FROM pg_locks, k WHERE locktype = 'advisory' AND NOT granted \
                         AND classid::bigint = (key >> 32) & 4294967295 AND objid::bigint = key & 4294967295",
                        &[&name.as_bytes()],
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
}

/// The file backend, and PostgreSQL when a server is configured.
fn targets() -> Vec<Under> {
    let scratch = Scratch::new("primitives");
    let mut targets = vec![Under {
        backend: "file",
        target: scratch.path().to_str().unwrap().to_owned(),
        _scratch: Some(scratch),
    }];
    if let Some(url) = pg_url() {
        targets.push(Under {
            backend: "postgres",
            target: url,
            _scratch: None,
        });
    }
    targets
}

const LONG: Duration = Duration::from_secs(10);

#[test]
fn reader_processes_share_and_exclude_writers_until_killed() {
    for t in targets() {
        let name = unique("catalog");
        let locks = t.client();
        let before = locks.blocking_lock(&name).unwrap();
        let writer_token = before.token();
        before.blocking_release().unwrap();

        let mut readers = [
            t.hold("hold-shared", &[&name]),
            t.hold("hold-shared", &[&name]),
        ];
        for reader in &readers {
            assert!(
                reader.token >= writer_token.get(),
                "{}: a reader sees the last writer",
                t.backend
            );
        }
        assert!(
            locks.blocking_try_lock(&name).unwrap().is_none(),
            "{}: readers exclude a writer",
            t.backend
        );
        let mine = locks.blocking_try_lock_shared(&name).unwrap();
        let mine = mine.unwrap_or_else(|| panic!("{}: a third reader joins", t.backend));
        assert!(!mine.is_lost());
        mine.blocking_release().unwrap();
        // (After this, the file backend's timed-out writer still waits in the kernel until the
        // readers inside leave, and new readers yield to it as to any waiting writer.)
        assert!(
            locks
                .blocking_try_lock_for(&name, Duration::from_millis(50))
                .unwrap()
                .is_none(),
            "{}: a writer times out behind readers",
            t.backend
        );

        readers[0].kill();
        assert!(
            locks.blocking_try_lock(&name).unwrap().is_none(),
            "{}: one reader left",
            t.backend
        );
        readers[1].kill();
        let writer = locks.blocking_try_lock_for(&name, LONG).unwrap();
        let writer =
            writer.unwrap_or_else(|| panic!("{}: kill -9 freed the readers' locks", t.backend));
        for reader in &readers {
            assert!(
                writer.token().get() > reader.token,
                "{}: a writer's token exceeds the readers'",
                t.backend
            );
        }
        assert!(writer.token() > writer_token);
        writer.blocking_release().unwrap();
    }
}

#[test]
fn reader_and_writer_processes_never_overlap() {
    for t in targets() {
        let name = unique("shared-log");
        let logs = Scratch::new("rw-logs");
        let children: Vec<_> = (0..4_u64)
            .map(|id| {
                distributed_common::worker()
                    .args(["rw-hammer", t.backend, &t.target, &id.to_string(), "120"])
                    .arg(logs.path())
                    .arg(&name)
                    .spawn()
                    .expect("spawn worker")
            })
            .collect();
        for mut child in children {
            let status = child.wait().unwrap();
            assert!(status.success(), "{}: worker failed: {status}", t.backend);
        }
        // Writers never interleaved and their tokens increase.
        let writes = distributed_common::check_log(&logs.join(&format!("{name}.log")));
        assert!(writes > 0, "{}: some iterations wrote", t.backend);
    }
}

#[test]
fn a_writer_process_excludes_readers_until_killed() {
    for t in targets() {
        let name = unique("catalog");
        let locks = t.client();
        let mut writer = t.hold("hold", &[&name]);
        assert!(
            locks.blocking_try_lock_shared(&name).unwrap().is_none(),
            "{}",
            t.backend
        );
        assert!(
            locks
                .blocking_try_lock_shared_for(&name, Duration::from_millis(50))
                .unwrap()
                .is_none(),
            "{}: a reader times out behind a writer",
            t.backend
        );
        let waiting = {
            let locks = locks.clone();
            let name = name.clone();
            std::thread::spawn(move || locks.blocking_try_lock_shared_for(&name, LONG))
        };
        t.wait_for_waiter(&name);
        writer.kill();
        let reader = waiting.join().unwrap().unwrap();
        let reader = reader
            .unwrap_or_else(|| panic!("{}: the waiting reader got it after the kill", t.backend));
        assert!(reader.token().get() >= writer.token, "{}", t.backend);
        drop(reader);
    }
}

#[test]
fn cancelled_shared_waiters_leave_nothing_held() {
    for t in targets() {
        let name = unique("catalog");
        let mut writer = t.hold("hold", &[&name]);
        runtime().block_on(async {
            let locks = t.async_client().await;
            let waiter = {
                let (locks, name) = (locks.clone(), name.clone());
                tokio::spawn(async move { locks.lock_shared(&name).await })
            };
            let t_ref = &t;
            let name_ref = &name;
            tokio::task::block_in_place(|| t_ref.wait_for_waiter(name_ref));
            waiter.abort();
            assert!(waiter.await.unwrap_err().is_cancelled());
            tokio::task::block_in_place(|| writer.kill());
            // The cancelled reader holds nothing: a writer gets the name.
            let exclusive = locks.try_lock_for(&name, LONG).await.unwrap();
            assert!(
                exclusive.is_some(),
                "{}: nothing held after cancellation",
                t.backend
            );
        });
    }
}

#[test]
fn semaphore_permits_across_processes_and_kill_9() {
    for t in targets() {
        let name = unique("downloads");
        let locks = t.client();
        let downloads = locks.semaphore(&name, 2);
        let mut first = t.hold("hold-permit", &[&name, "2"]);
        let _second = t.hold("hold-permit", &[&name, "2"]);
        assert!(
            downloads.blocking_try_acquire().unwrap().is_none(),
            "{}: two permits at most",
            t.backend
        );
        assert!(
            downloads
                .blocking_try_acquire_for(Duration::from_millis(50))
                .unwrap()
                .is_none(),
            "{}: times out while both are held",
            t.backend
        );
        first.kill();
        let permit = downloads.blocking_try_acquire_for(LONG).unwrap();
        let permit =
            permit.unwrap_or_else(|| panic!("{}: kill -9 gave the permit back", t.backend));
        assert!(permit.slot() < 2);
        assert!(
            downloads.blocking_try_acquire().unwrap().is_none(),
            "{}: two again",
            t.backend
        );
        permit.blocking_release().unwrap();
    }
}

#[test]
fn semaphore_waiters_sleep_until_a_permit_comes_back() {
    for t in targets() {
        let name = unique("single");
        let locks = t.client();
        let mut holder = t.hold("hold-permit", &[&name, "1"]);
        let waiting = {
            let downloads = locks.semaphore(&name, 1);
            std::thread::spawn(move || downloads.blocking_try_acquire_for(LONG))
        };
        t.wait_for_waiter(&format!("{name}\0chainlock-semaphore-slot\00"));
        holder.kill();
        let permit = waiting.join().unwrap().unwrap();
        assert!(
            permit.is_some(),
            "{}: the waiter got the permit after the kill",
            t.backend
        );
    }
}

#[test]
fn a_semaphore_waiter_takes_whichever_slot_frees_first() {
    for t in targets() {
        for freed in 0..2 {
            let name = unique("either");
            // Slots are tried in order: the first holder has slot 0, the second slot 1.
            let mut holders = [
                t.hold("hold-permit", &[&name, "2"]),
                t.hold("hold-permit", &[&name, "2"]),
            ];
            let waiting = {
                let downloads = t.client().semaphore(&name, 2);
                std::thread::spawn(move || downloads.blocking_try_acquire_for(LONG))
            };
            // The waiter sleeps on both slots, not on one of them.
            for slot in 0..2 {
                t.wait_for_waiter(&format!("{name}\0chainlock-semaphore-slot\0{slot}"));
            }
            // Free one slot while the other stays held: the waiter must get that one.
            holders[freed].kill();
            let permit = waiting.join().unwrap().unwrap();
            let permit = permit.unwrap_or_else(|| {
                panic!(
                    "{}: slot {freed} was free and the waiter slept on",
                    t.backend
                )
            });
            assert_eq!(permit.slot(), freed, "{}", t.backend);
            permit.blocking_release().unwrap();
        }
    }
}

#[test]
fn semaphore_never_exceeds_its_permits() {
    for t in targets() {
        let name = unique("pool");
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
                // A client each: distinct files and connections, excluded by the kernel or server.
                let semaphore = t.client().semaphore(&name, 3);
                std::thread::spawn(move || {
                    for _ in 0..15 {
                        let permit = semaphore
                            .blocking_try_acquire_for(LONG)
                            .unwrap()
                            .expect("a permit");
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        permit.blocking_release().unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let most = most.load(Ordering::SeqCst);
        assert!(
            (1..=3).contains(&most),
            "{}: {most} holders at once",
            t.backend
        );
    }
}

#[test]
fn cancelled_semaphore_waiters_leave_nothing_held() {
    for t in targets() {
        let name = unique("single");
        let mut holder = t.hold("hold-permit", &[&name, "1"]);
        runtime().block_on(async {
            let locks = t.async_client().await;
            let waiter = {
                let semaphore = locks.semaphore(&name, 1);
                tokio::spawn(async move { semaphore.acquire().await })
            };
            let slot = format!("{name}\0chainlock-semaphore-slot\00");
            tokio::task::block_in_place(|| t.wait_for_waiter(&slot));
            waiter.abort();
            assert!(waiter.await.unwrap_err().is_cancelled());
            tokio::task::block_in_place(|| holder.kill());
            let permit = locks
                .semaphore(&name, 1)
                .try_acquire_for(LONG)
                .await
                .unwrap();
            assert!(
                permit.is_some(),
                "{}: nothing held after cancellation",
                t.backend
            );
        });
    }
}

#[test]
fn multi_name_acquirers_in_opposite_orders_never_deadlock() {
    for t in targets() {
        let names = [unique("a"), unique("b"), unique("c")];
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let mut order = names.to_vec();
                if i % 2 == 1 {
                    order.reverse();
                }
                let locks = t.client();
                let inside = Arc::clone(&inside);
                std::thread::spawn(move || {
                    for _ in 0..15 {
                        let all = locks.blocking_try_lock_all_for(&order, LONG).unwrap();
                        let all = all.expect("no deadlock: acquired within the deadline");
                        assert_eq!(all.len(), 3);
                        assert_eq!(
                            inside.fetch_add(1, Ordering::SeqCst),
                            0,
                            "the sets exclude each other"
                        );
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        all.blocking_release().unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
}

#[test]
fn failed_multi_name_acquisitions_hold_nothing() {
    for t in targets() {
        let names = [unique("m1"), unique("m2"), unique("m3")];
        let locks = t.client();
        let mut holder = t.hold("hold", &[&names[1]]);
        assert!(
            locks.blocking_try_lock_all(&names).unwrap().is_none(),
            "{}",
            t.backend
        );
        assert!(
            locks
                .blocking_try_lock_all_for(&names, Duration::from_millis(100))
                .unwrap()
                .is_none(),
            "{}",
            t.backend
        );
        // The names before and after the held one are free: nothing stayed held.
        for name in [&names[0], &names[2]] {
            let other = t.client();
            assert!(
                other.blocking_try_lock(name).unwrap().is_some(),
                "{}: {name} stayed held",
                t.backend
            );
        }
        holder.kill();
        let all = locks.blocking_try_lock_all_for(&names, LONG).unwrap();
        let all = all.unwrap_or_else(|| panic!("{}: kill -9 freed the middle name", t.backend));
        assert!(all.token(&names[1]).unwrap().get() > holder.token);
        all.blocking_release().unwrap();
    }
}

#[test]
fn a_process_holding_a_set_is_killed_and_the_set_frees() {
    for t in targets() {
        let names = [unique("x"), unique("y")];
        let locks = t.client();
        let mut holder = t.hold("hold-all", &[&names[1], &names[0]]);
        assert!(
            locks.blocking_try_lock(&names[0]).unwrap().is_none(),
            "{}",
            t.backend
        );
        assert!(
            locks.blocking_try_lock(&names[1]).unwrap().is_none(),
            "{}",
            t.backend
        );
        holder.kill();
        let all = locks.blocking_try_lock_all_for(&names, LONG).unwrap();
        assert!(all.is_some(), "{}: kill -9 freed the whole set", t.backend);
    }
}

/// Terminates every server session holding the advisory lock of `name` (any mode).
async fn terminate_holders(admin: &tokio_postgres::Client, name: &str) -> i64 {
    admin
        .query_one(
            "WITH k AS (SELECT ('x' || left(encode(sha256($1::bytea), 'hex'), 16))::bit(64)::bigint AS key) \
             SELECT count(pg_terminate_backend(pid)) FROM pg_locks, k WHERE locktype = 'advisory' AND granted \
             AND classid::bigint = (key >> 32) & 4294967295 AND objid::bigint = key & 4294967295",
            &[&name.as_bytes()],
        )
        .await
        .unwrap()
        .get(0)
}

#[test]
fn shared_guards_and_permits_signal_the_loss_of_their_session() {
    let Some(url) = pg_url() else { return };
    runtime().block_on(async {
        let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let locks = LockClient::postgres(&url).await.unwrap();
        let name = unique("catalog");
        let reader = locks.lock_shared(&name).await.unwrap();
        let permit = locks.semaphore(&name, 1).acquire().await.unwrap();
        assert!(!reader.is_lost() && !permit.is_lost());
        // Shared holds and permits share the client's sessions, as exclusive holds do: both
        // sit on the one session a new client has, and terminating it loses both.
        assert_eq!(
            terminate_holders(&admin, &name).await,
            1,
            "the reader and the permit share one session"
        );
        tokio::time::timeout(LONG, reader.lost())
            .await
            .expect("the shared guard sees its session end");
        tokio::time::timeout(LONG, permit.lost())
            .await
            .expect("the permit sees its session end");
        assert!(reader.is_lost() && permit.is_lost(), "the loss is sticky");
        assert!(matches!(
            reader.release().await,
            Err(chainlock::distributed::Error::Lost)
        ));
        assert!(matches!(
            permit.release().await,
            Err(chainlock::distributed::Error::Lost)
        ));
        assert!(
            locks.try_lock(&name).await.unwrap().is_some(),
            "the server freed it"
        );
    });
}

/// PostgreSQL queues a shared request behind an exclusive one waiting before it: new readers
/// do not starve a waiting writer (the documented fairness; `flock` promises none).
#[test]
fn postgres_new_readers_queue_behind_a_waiting_writer() {
    let Some(url) = pg_url() else { return };
    let t = Under {
        backend: "postgres",
        target: url,
        _scratch: None,
    };
    let name = unique("catalog");
    let locks = t.client();
    let mut reader = t.hold("hold-shared", &[&name]);
    let writer = {
        let (locks, name) = (locks.clone(), name.clone());
        std::thread::spawn(move || locks.blocking_try_lock_for(&name, LONG))
    };
    t.wait_for_waiter(&name);
    assert!(
        locks.blocking_try_lock_shared(&name).unwrap().is_none(),
        "a new reader waits behind the waiting writer"
    );
    reader.kill();
    let writer = writer.join().unwrap().unwrap();
    let writer = writer.expect("the writer got the name once the reader died");
    assert!(writer.token().get() > reader.token);
}
