//! The client's sessions, a bounded resource: at most `max_connections` open (or opening) at
//! once, however many locks are held or awaited.
//!
//! Advisory locks belong to a session, and one session can hold many, so held locks share
//! sessions ([`Host`]): a *serving* session answers the short statements of every acquirer
//! (`pg_try_advisory_lock`, the token, `pg_advisory_unlock`) and holds any number of locks. A
//! wait on the server (`pg_advisory_lock`) blocks its session, so it runs on a session of its
//! own that holds nothing ([`Conn`], taken out of the serving set): a lock granted there stays
//! on that session, which then serves again. A session that holds a lock never waits: the
//! release of its locks could otherwise queue behind a wait that needs them (a deadlock the
//! server cannot see).
//!
//! Both modes use one path: a reservation per key and session ([`Reserved`]: the mode and how
//! many holds or asks of this client). Advisory locks are re-entrant per session, so within one
//! client a session never asks for a key it holds or asks for in another mode, and never asks
//! twice for an exclusive key: a second grant would break mutual exclusion between guards of
//! one client. Shared holds of one key may share a session (the server counts them, and each
//! release gives back one): a reader first looks for a serving session that has nothing of
//! the key, and joins a session holding the key shared only if there is none, so readers of a
//! name cost no session of their own.
//!
//! A slot ([`Slot`]) is taken before a session is opened and freed when its connection is
//! closed (the session's driver keeps it): the count of slots bounds the connections.
//!
//! **Ownership, one way only.** The client owns the pool ([`Pool`], an `Arc` of its state);
//! the pool owns its serving sessions ([`Host`]); a session's driver task owns its [`Slot`],
//! which refers to the pool *weakly*. Nothing a session or its task owns leads back to the
//! pool, so dropping the last clone of the client and its last guard drops the pool, which
//! drops its sessions, whose drop aborts their driver tasks and closes their connections.
//!
//! **Waiters at the bound queue.** A wait on the server needs a session of its own; when none
//! can be had (every session holds locks or waits, and the bound is reached), the waiter takes
//! a ticket ([`Pool::enqueue`]) and waits in line: only the first in line takes the next
//! session freed, and asks again for its key (a non-waiting ask on a serving session) when a
//! lock of the client is released; the others sleep until they are first. Nothing polls.

use super::super::Error;
use super::super::backend::Mode;
use super::super::name::Advisory;
use super::options::PostgresOptions;
use super::session::Session;
use super::sql;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio_postgres::Statement;
use tokio_postgres::types::{ToSql, Type};

/// What a session holds of one key, for guards of this client, or asks the server for.
#[derive(Clone, Copy, Debug)]
struct Reserved {
    mode: Mode,
    /// Holds and asks (more than one only for [`Mode::Shared`]).
    count: usize,
}

/// The statements of one mode, prepared on one session (the `bigint` key form).
struct Prepared {
    lock: Statement,
    try_lock: Statement,
    unlock: Statement,
}

/// One server session with its prepared statements; shared by the locks it holds.
pub(super) struct Host {
    pub(super) session: Session,
    /// By mode: exclusive, shared.
    prepared: [Prepared; 2],
    /// An epoch known to be durable on this session's server (a server restart or crash ends
    /// the session, so it stays true for the session's life).
    durable: AtomicI64,
    /// Keys this session holds for guards of this client, or is asking the server for.
    keys: Mutex<HashMap<Advisory, Reserved>>,
    /// Held while an epoch is recorded on this session (one transaction at a time).
    pub(super) recording: tokio::sync::Mutex<()>,
}

impl std::ops::Deref for Host {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Host {
    pub(super) fn is_lost(&self) -> bool {
        self.liveness.is_lost()
    }

    pub(super) fn durable_epoch(&self) -> i64 {
        self.durable.load(Ordering::Acquire)
    }

    pub(super) fn record_durable(&self, epoch: i64) {
        self.durable.fetch_max(epoch, Ordering::AcqRel);
    }

    /// How many keys this session holds or asks for.
    fn load(&self) -> usize {
        self.keys.lock().len()
    }

    fn prepared(&self, mode: Mode) -> &Prepared {
        match mode {
            Mode::Exclusive => &self.prepared[0],
            Mode::Shared => &self.prepared[1],
        }
    }

    /// `pg_try_advisory_lock` (or `_shared`): a drawn token if the lock was free, `None` if
    /// held in a conflicting mode.
    pub(super) async fn try_lock(
        &self,
        key: Advisory,
        mode: Mode,
    ) -> Result<Option<i64>, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                self.client
                    .query_one(&self.prepared(mode).try_lock, &[&key])
                    .await?
            }
            Advisory::Pair(high, low) => one_row(
                self.client
                    .query_typed(
                        sql::statements(mode).try_lock_pair,
                        &[(&high, Type::INT4), (&low, Type::INT4)],
                    )
                    .await?,
            ),
        };
        Ok(row.get(0))
    }

    /// `pg_advisory_lock` (or `_shared`) under `lock_timeout = timeout_ms` (`"0"`: none): a
    /// drawn token.
    pub(super) async fn lock(
        &self,
        key: Advisory,
        mode: Mode,
        timeout_ms: &str,
    ) -> Result<i64, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                let params: [&(dyn ToSql + Sync); 2] = [&key, &timeout_ms];
                self.client
                    .query_one(&self.prepared(mode).lock, &params)
                    .await?
            }
            Advisory::Pair(high, low) => one_row(
                self.client
                    .query_typed(
                        sql::statements(mode).lock_pair,
                        &[
                            (&high, Type::INT4),
                            (&timeout_ms, Type::TEXT),
                            (&low, Type::INT4),
                        ],
                    )
                    .await?,
            ),
        };
        Ok(row.get(0))
    }

    /// `pg_advisory_unlock` (or `_shared`): whether this session held the lock.
    pub(super) async fn unlock(
        &self,
        key: Advisory,
        mode: Mode,
    ) -> Result<bool, tokio_postgres::Error> {
        let row = match key {
            Advisory::Int(key) => {
                self.client
                    .query_one(&self.prepared(mode).unlock, &[&key])
                    .await?
            }
            Advisory::Pair(high, low) => one_row(
                self.client
                    .query_typed(
                        sql::statements(mode).unlock_pair,
                        &[(&high, Type::INT4), (&low, Type::INT4)],
                    )
                    .await?,
            ),
        };
        Ok(row.get(0))
    }
}

fn one_row(mut rows: Vec<tokio_postgres::Row>) -> tokio_postgres::Row {
    rows.pop().expect("the statement returns one row")
}

/// A session owned by one task: for a wait on the server, or a hold that needs a session of
/// its own. It holds no lock when taken out of the pool, and must hold none when put back;
/// dropping it closes the session (unless a guard shares it), which releases whatever it held.
pub(super) struct Conn {
    host: Arc<Host>,
    /// The host's durable epoch when taken (written back by [`Pool::put`]).
    pub(super) durable_epoch: i64,
}

impl std::ops::Deref for Conn {
    type Target = Host;
    fn deref(&self) -> &Host {
        &self.host
    }
}

impl Conn {
    fn new(host: Arc<Host>) -> Self {
        let durable_epoch = host.durable_epoch();
        Self {
            host,
            durable_epoch,
        }
    }

    /// Opens a session of our own in `slot`, ready for an acquisition. Not bounded here:
    /// callers bound it (dropping the future closes whatever was opened, and frees the slot).
    pub(super) async fn open(
        options: &PostgresOptions,
        runtime: &Handle,
        slot: Slot,
    ) -> Result<Self, Error> {
        let sent = Instant::now();
        let (client, connection) = options.connect().await?;
        // From here on, dropping `session` closes the connection.
        let session = Session::start(client, connection, options, runtime, slot);
        session
            .client
            .batch_execute(&sql::session_settings(options.server_release_after()))
            .await?;
        // Pipelined: one round trip's wait for all of them.
        let client = &session.client;
        let prepare = |mode: Mode| async move {
            let texts = sql::statements(mode);
            let (lock, try_lock, unlock) = tokio::try_join!(
                client.prepare(texts.lock),
                client.prepare(texts.try_lock),
                client.prepare(texts.unlock),
            )?;
            Ok::<_, tokio_postgres::Error>(Prepared {
                lock,
                try_lock,
                unlock,
            })
        };
        let (exclusive, shared, durable) = tokio::try_join!(
            prepare(Mode::Exclusive),
            prepare(Mode::Shared),
            client.query_one(sql::DURABLE_EPOCH, &[]),
        )?;
        let durable_epoch: i64 = durable.get(0);
        session.liveness.contact(sent);
        Ok(Self::new(Arc::new(Host {
            session,
            prepared: [exclusive, shared],
            durable: AtomicI64::new(durable_epoch),
            keys: Mutex::new(HashMap::new()),
            recording: tokio::sync::Mutex::new(()),
        })))
    }
}

/// A place in the bound on connections, taken before a session is opened. It refers to its
/// pool weakly: a session's driver keeps its slot, and must not keep the pool alive.
pub(super) struct Slot(Weak<Inner>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(inner) = self.0.upgrade() {
            inner.state.lock().open -= 1;
            inner.changed.notify_waiters();
        }
    }
}

/// What [`Pool::pick`] found for a `pg_try_advisory_lock` of a key.
pub(super) enum Pick {
    /// A serving session, with the key reserved on it.
    Host(Arc<Host>),
    /// A session of this client holds the key, or is asking for it: it is not free.
    HeldHere,
    /// No serving session can ask; a new one may be opened in this slot.
    Open(Slot),
    /// No serving session can ask and the bound is reached: wait for [`Pool::changed`].
    Full,
}

/// The sessions of one client: at most `max` open or opening at once.
pub(super) struct Pool(Arc<Inner>);

struct Inner {
    state: Mutex<State>,
    /// Notified when a session closes, becomes free or serves again, or a lock is released.
    changed: Notify,
    max: usize,
    max_idle: usize,
}

struct State {
    /// Sessions answering short statements (the ones [`Conn`]s took are not here).
    serving: Vec<Arc<Host>>,
    /// Slots taken: sessions open (serving or owned) or being opened.
    open: usize,
    /// Tickets of the waiters at the bound, first come first.
    line: VecDeque<u64>,
    next_ticket: u64,
}

impl State {
    /// Forgets lost sessions (they close once their guards let go of them) into `dead`.
    ///
    /// Sessions leave the state into `dead`, dropped by the caller after unlocking: dropping
    /// the last reference to a session frees its slot, which locks the state.
    fn prune(&mut self, dead: &mut Vec<Arc<Host>>) {
        let (lost, live) = std::mem::take(&mut self.serving)
            .into_iter()
            .partition(|host| host.is_lost());
        self.serving = live;
        dead.extend::<Vec<_>>(lost);
    }
}

/// Whether nobody but the pool uses `host`: it holds no lock and no statement is in flight.
fn unused(host: &Arc<Host>) -> bool {
    Arc::strong_count(host) == 1 && host.load() == 0
}

impl Pool {
    pub(super) fn new(max: usize, max_idle: usize) -> Self {
        Self(Arc::new(Inner {
            state: Mutex::new(State {
                serving: Vec::new(),
                open: 0,
                line: VecDeque::new(),
                next_ticket: 0,
            }),
            changed: Notify::new(),
            max,
            max_idle,
        }))
    }

    /// A place for a new session, if the bound allows one.
    pub(super) fn slot(&self) -> Option<Slot> {
        let mut state = self.0.state.lock();
        (state.open < self.0.max).then(|| {
            state.open += 1;
            Slot(Arc::downgrade(&self.0))
        })
    }

    /// A place in the line of waiters at the bound; leaves the line when dropped.
    pub(super) fn enqueue(&self) -> Ticket<'_> {
        let mut state = self.0.state.lock();
        let number = state.next_ticket;
        state.next_ticket += 1;
        state.line.push_back(number);
        Ticket { pool: self, number }
    }

    /// Whether `ticket` (or a waiter without one, when nobody is in line) is first in line.
    pub(super) fn is_first(&self, ticket: Option<&Ticket<'_>>) -> bool {
        let state = self.0.state.lock();
        match ticket {
            Some(ticket) => state.line.front() == Some(&ticket.number),
            None => state.line.is_empty(),
        }
    }

    /// Completes at the next change that may let a waiter on the bound go on. Create it
    /// before checking the state (then no change in between is missed).
    pub(super) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.changed.notified()
    }

    /// A serving session to ask for `key` in `mode`, the key reserved on it: the one holding
    /// the most keys among those holding nothing of `key`, so that others stay free for waits;
    /// for a shared ask, if there is none, one that holds `key` shared (the reader joins).
    pub(super) fn pick(&self, key: Advisory, mode: Mode) -> Pick {
        let mut dead = Vec::new();
        let mut state = self.0.state.lock();
        state.prune(&mut dead);
        let mut best: Option<(&Arc<Host>, usize)> = None;
        let mut join: Option<&Arc<Host>> = None;
        let mut here = false;
        for host in &state.serving {
            let keys = host.keys.lock();
            match keys.get(&key) {
                Some(reserved) if mode == Mode::Shared && reserved.mode == Mode::Shared => {
                    join = join.or(Some(host));
                }
                Some(_) => here = true,
                None => {
                    if best.is_none_or(|(_, load)| keys.len() > load) {
                        best = Some((host, keys.len()));
                    }
                }
            }
        }
        if let Some(host) = best.map(|(host, _)| host).or(join) {
            reserve(host, key, mode);
            return Pick::Host(Arc::clone(host));
        }
        if here {
            return Pick::HeldHere;
        }
        if state.open < self.0.max {
            state.open += 1;
            return Pick::Open(Slot(Arc::downgrade(&self.0)));
        }
        Pick::Full
    }

    /// A session of its own, holding nothing: a serving one nobody uses, unless it is the
    /// last serving one at the bound and `keep_one_serving` (a wait must not leave the short
    /// statements of other acquirers without a session; with `max_connections(1)` it may).
    /// `None` if there is none; see [`Pool::slot`].
    pub(super) fn take(&self, keep_one_serving: bool) -> Option<Conn> {
        let mut dead = Vec::new();
        let mut state = self.0.state.lock();
        state.prune(&mut dead);
        // With one connection in all, a wait takes it when it holds nothing: the acquisitions
        // that come meanwhile wait for it (there is no other).
        if keep_one_serving && self.0.max > 1 && state.serving.len() < 2 && state.open >= self.0.max
        {
            return None;
        }
        let index = state.serving.iter().position(unused)?;
        Some(Conn::new(state.serving.swap_remove(index)))
    }

    /// Takes back a [`Conn`] that holds no lock (closing it if lost, or if enough sessions are
    /// idle).
    pub(super) fn put(&self, conn: Conn) {
        let host = conn.host;
        host.record_durable(conn.durable_epoch);
        let mut dead = Vec::new();
        if host.is_lost() {
            dead.push(host);
        } else {
            let mut state = self.0.state.lock();
            state.serving.push(host);
            self.trim(&mut state, &mut dead);
        }
        drop(dead);
        self.0.changed.notify_waiters();
    }

    /// A [`Conn`] that was granted `key` on the server (or a new session from [`Pick::Open`],
    /// about to ask for it) joins the serving set, `key` reserved on it.
    pub(super) fn share(&self, conn: Conn, key: Advisory, mode: Mode) -> Arc<Host> {
        let host = conn.host;
        host.record_durable(conn.durable_epoch);
        reserve(&host, key, mode);
        self.0.state.lock().serving.push(Arc::clone(&host));
        self.0.changed.notify_waiters();
        host
    }

    /// `key` is no longer held or asked for on `host`: released (`notify`: waiters may go on),
    /// or refused by the server (no notice: waiters asking in turn would wake each other for
    /// nothing, round after round).
    pub(super) fn forget(&self, host: Arc<Host>, key: Advisory, notify: bool) {
        {
            let mut keys = host.keys.lock();
            if let Some(reserved) = keys.get_mut(&key) {
                reserved.count -= 1;
                if reserved.count == 0 {
                    keys.remove(&key);
                }
            }
        }
        drop(host);
        let mut dead = Vec::new();
        let mut state = self.0.state.lock();
        self.trim(&mut state, &mut dead);
        drop(state);
        drop(dead);
        if notify {
            self.0.changed.notify_waiters();
        }
    }

    /// Closes `host` at once: its state is unknown (a statement failed or went unanswered).
    /// Every lock it held is lost: its guards say so, and the server releases the locks with
    /// the session.
    pub(super) fn close(&self, host: &Host) {
        host.session.close();
        let mut dead = Vec::new();
        let mut state = self.0.state.lock();
        state.prune(&mut dead);
        drop(state);
        drop(dead);
        self.0.changed.notify_waiters();
    }

    /// Moves serving sessions nobody uses beyond `max_idle` into `dead` (see [`State::prune`]).
    fn trim(&self, state: &mut State, dead: &mut Vec<Arc<Host>>) {
        let mut idle = 0;
        let (kept, surplus) = std::mem::take(&mut state.serving)
            .into_iter()
            .partition(|host| {
                if unused(host) {
                    idle += 1;
                    idle <= self.0.max_idle
                } else {
                    true
                }
            });
        state.serving = kept;
        dead.extend::<Vec<_>>(surplus);
    }
}

/// Reserves `key` in `mode` on `host` (one more hold or ask).
fn reserve(host: &Host, key: Advisory, mode: Mode) {
    host.keys
        .lock()
        .entry(key)
        .and_modify(|reserved| reserved.count += 1)
        .or_insert(Reserved { mode, count: 1 });
}

/// A waiter's place in the line at the bound ([`Pool::enqueue`]).
pub(super) struct Ticket<'a> {
    pool: &'a Pool,
    number: u64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.0.state.lock();
        let first = state.line.front() == Some(&self.number);
        state.line.retain(|&number| number != self.number);
        drop(state);
        if first {
            // The next in line may take what this one leaves.
            self.pool.0.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pool;

    #[test]
    fn waiters_at_the_bound_are_first_in_the_order_they_came() {
        let pool = Pool::new(1, 1);
        assert!(pool.is_first(None), "nobody in line: a newcomer may go");
        let first = pool.enqueue();
        let second = pool.enqueue();
        let third = pool.enqueue();
        assert!(!pool.is_first(None), "a newcomer does not pass the line");
        assert!(pool.is_first(Some(&first)));
        assert!(!pool.is_first(Some(&second)) && !pool.is_first(Some(&third)));
        // One that gives up (a timeout, a cancellation) leaves its place.
        drop(second);
        assert!(pool.is_first(Some(&first)));
        drop(first);
        assert!(pool.is_first(Some(&third)));
        drop(third);
        assert!(pool.is_first(None));
    }

    #[test]
    fn a_slot_does_not_keep_its_pool_alive() {
        let pool = Pool::new(2, 1);
        let slot = pool.slot().expect("a free slot");
        let weak = std::sync::Arc::downgrade(&pool.0);
        drop(pool);
        assert!(
            weak.upgrade().is_none(),
            "a session's slot must not own the pool"
        );
        drop(slot);
    }
}
