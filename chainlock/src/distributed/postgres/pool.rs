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
//! Both modes use one path: a reservation per key and session ([`Host::reserve`]: the mode and
//! how many holds or asks of this client). Advisory locks are re-entrant per session, so within one
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
//! the pool owns its serving sessions ([`Host`], in `host.rs`); a host owns its session, whose
//! driver task owns its [`Slot`], which refers to the pool *weakly*. Nothing a session or its
//! task owns leads back to the pool, so dropping the last clone of the client and its last
//! guard drops the pool, which drops its sessions, whose drop aborts their driver tasks and
//! closes their connections. Imports run the same way: `pool` → `host` → `session`; the
//! session keeps the slot as an opaque value and knows nothing of the pool.
//!
//! **Waiters at the bound queue.** A wait on the server needs a session of its own; when none
//! can be had (every session holds locks or waits, and the bound is reached, or the server
//! refused one more connection: [`Pool::refused`]), the waiter takes a ticket
//! ([`Pool::enqueue`]) and waits in line: only the first in line takes the next session freed,
//! and asks again for its key (a non-waiting ask on a serving session) at every change of the
//! client (a lock released, a session freed). An advisory unlock by another client notifies
//! nobody, so every `heartbeat_interval` the first in line for each key asks again too
//! ([`Pool::may_ask`]): a bounded re-check, one round trip per key waited for in line.
//!
//! **Writers first within the client.** The server grants a session a lock it already holds
//! without looking at its queue, so a reader joining a shared hold of its own client would
//! overtake every writer queued on the server. While an exclusive acquisition of the client
//! waits for a key ([`Pool::wait_as_writer`]), new shared asks of that key by the client do
//! not join: they count the key as held and queue behind the writer.

use super::super::Error;
use super::super::backend::Mode;
use super::super::name::Advisory;
use super::host::Host;
use super::options::PostgresOptions;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::Notify;

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
        Ok(Self::new(Arc::new(
            Host::open(options, runtime, slot).await?,
        )))
    }
}

/// A place in the bound on connections, taken before a session is opened. It refers to its
/// pool weakly: a session's driver keeps its slot, and must not keep the pool alive.
pub(super) struct Slot(Weak<Inner>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(inner) = self.0.upgrade() {
            let mut state = inner.state.lock();
            state.open -= 1;
            // A connection of ours closed: the server has room for one again.
            state.refused_until = None;
            drop(state);
            inner.changed.notify_waiters();
        }
    }
}

/// What [`Pool::pick`] found for a `pg_try_advisory_lock` of a key.
pub(super) enum Pick {
    /// A serving session, with the key reserved on it.
    Host(Arc<Host>),
    /// A session of this client holds the key, or is asking for it, or (for a shared ask) an
    /// exclusive acquisition of this client waits for it: it is not free.
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
    /// Notified when a session closes, becomes free or serves again, a lock is released, or a
    /// waiting writer gives up.
    changed: Notify,
    max: usize,
    max_idle: usize,
    /// How long the server's refusal of a new connection holds the bound at the open count.
    refusal: Duration,
}

struct State {
    /// Sessions answering short statements (the ones [`Conn`]s took are not here).
    serving: Vec<Arc<Host>>,
    /// Slots taken: sessions open (serving or owned) or being opened.
    open: usize,
    /// The waiters at the bound, first come first: their tickets and keys.
    line: VecDeque<(u64, Advisory)>,
    next_ticket: u64,
    /// Exclusive acquisitions of this client waiting for a key (on the server or in line):
    /// new shared asks of the key queue behind them instead of joining a shared hold.
    writers: HashMap<Advisory, usize>,
    /// Until then no session is opened beyond those open: the server refused one (a role's
    /// or database's `CONNECTION LIMIT`, or its own `max_connections`, counts other clients
    /// too). Lifted when a session of ours closes.
    refused_until: Option<Instant>,
}

impl State {
    /// Whether another session may be opened now.
    fn can_open(&self, max: usize) -> bool {
        self.open < max
            && self
                .refused_until
                .is_none_or(|until| Instant::now() >= until)
    }

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
    /// A pool of at most `max` sessions, keeping `max_idle` idle ones; a server's refusal of
    /// a connection holds the bound at the open count for `refusal` (or until one closes).
    pub(super) fn new(max: usize, max_idle: usize, refusal: Duration) -> Self {
        Self(Arc::new(Inner {
            state: Mutex::new(State {
                serving: Vec::new(),
                open: 0,
                line: VecDeque::new(),
                next_ticket: 0,
                writers: HashMap::new(),
                refused_until: None,
            }),
            changed: Notify::new(),
            max,
            max_idle,
            refusal,
        }))
    }

    /// Sessions open (or opening), and waiters in line at the bound: what `Debug` shows.
    pub(super) fn occupancy(&self) -> (usize, usize) {
        let state = self.0.state.lock();
        (state.open, state.line.len())
    }

    /// A place for a new session, if the bound allows one.
    pub(super) fn slot(&self) -> Option<Slot> {
        let mut state = self.0.state.lock();
        state.can_open(self.0.max).then(|| {
            state.open += 1;
            Slot(Arc::downgrade(&self.0))
        })
    }

    /// The server refused a new connection: hold the bound at the sessions open for a while
    /// (waiters wait in line meanwhile, and the first tries again after it).
    pub(super) fn refused(&self) {
        self.0.state.lock().refused_until = Some(Instant::now() + self.0.refusal);
    }

    /// A place in the line of waiters at the bound, for `key`; leaves the line when dropped.
    pub(super) fn enqueue(&self, key: Advisory) -> Ticket<'_> {
        let mut state = self.0.state.lock();
        let number = state.next_ticket;
        state.next_ticket += 1;
        state.line.push_back((number, key));
        Ticket { pool: self, number }
    }

    /// Whether `ticket` (or a waiter without one, when nobody is in line) is first in line.
    pub(super) fn is_first(&self, ticket: Option<&Ticket<'_>>) -> bool {
        let state = self.0.state.lock();
        match ticket {
            Some(ticket) => state.line.front().map(|&(number, _)| number) == Some(ticket.number),
            None => state.line.is_empty(),
        }
    }

    /// Whether the waiter holding `ticket` may ask for its key now: a newcomer always; in
    /// line, the first on any change, and on a re-check (`recheck`) the first in line for its
    /// key (the others of that key queue behind it).
    pub(super) fn may_ask(&self, ticket: Option<&Ticket<'_>>, recheck: bool) -> bool {
        let Some(ticket) = ticket else {
            return true;
        };
        let state = self.0.state.lock();
        let mut ahead = state
            .line
            .iter()
            .take_while(|&&(number, _)| number != ticket.number);
        let Some(&(_, key)) = state
            .line
            .iter()
            .find(|&&(number, _)| number == ticket.number)
        else {
            return true;
        };
        let first = state.line.front().map(|&(number, _)| number) == Some(ticket.number);
        first || (recheck && !ahead.any(|&(_, other)| other == key))
    }

    /// Registers an exclusive acquisition of this client waiting for `key` until the returned
    /// value is dropped: meanwhile new shared asks of `key` by this client do not join a
    /// shared hold of it (they would overtake the writer: the server grants a session a lock
    /// it holds already without looking at its queue), they queue on the server behind it.
    pub(super) fn wait_as_writer(&self, key: Advisory) -> WaitingWriter<'_> {
        *self.0.state.lock().writers.entry(key).or_insert(0) += 1;
        WaitingWriter { pool: self, key }
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
        if mode == Mode::Shared && state.writers.contains_key(&key) {
            return Pick::HeldHere;
        }
        let mut best: Option<(&Arc<Host>, usize)> = None;
        let mut join: Option<&Arc<Host>> = None;
        let mut here = false;
        for host in &state.serving {
            match host.reserved(key) {
                (Some(Mode::Shared), _) if mode == Mode::Shared => join = join.or(Some(host)),
                (Some(_), _) => here = true,
                (None, load) => {
                    if best.is_none_or(|(_, best_load)| load > best_load) {
                        best = Some((host, load));
                    }
                }
            }
        }
        if let Some(host) = best.map(|(host, _)| host).or(join) {
            host.reserve(key, mode);
            return Pick::Host(Arc::clone(host));
        }
        if here {
            return Pick::HeldHere;
        }
        if state.can_open(self.0.max) {
            state.open += 1;
            return Pick::Open(Slot(Arc::downgrade(&self.0)));
        }
        Pick::Full
    }

    /// A serving session for a short statement that takes no lock (a read), if one is open.
    pub(super) fn any_serving(&self) -> Option<Arc<Host>> {
        let mut dead = Vec::new();
        let mut state = self.0.state.lock();
        state.prune(&mut dead);
        let host = state.serving.first().cloned();
        drop(state);
        drop(dead);
        host
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
        if keep_one_serving
            && self.0.max > 1
            && state.serving.len() < 2
            && !state.can_open(self.0.max)
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
        host.reserve(key, mode);
        self.0.state.lock().serving.push(Arc::clone(&host));
        self.0.changed.notify_waiters();
        host
    }

    /// `key` is no longer held or asked for on `host`: released (`notify`: waiters may go on),
    /// or refused by the server (no notice: waiters asking in turn would wake each other for
    /// nothing, round after round).
    pub(super) fn forget(&self, host: Arc<Host>, key: Advisory, notify: bool) {
        host.unreserve(key);
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

/// A waiter's place in the line at the bound ([`Pool::enqueue`]).
pub(super) struct Ticket<'a> {
    pool: &'a Pool,
    number: u64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.0.state.lock();
        let first = state.line.front().map(|&(number, _)| number) == Some(self.number);
        state.line.retain(|&(number, _)| number != self.number);
        drop(state);
        if first {
            // The next in line may take what this one leaves.
            self.pool.0.changed.notify_waiters();
        }
    }
}

/// An exclusive acquisition of this client waiting for a key ([`Pool::wait_as_writer`]).
pub(super) struct WaitingWriter<'a> {
    pool: &'a Pool,
    key: Advisory,
}

impl Drop for WaitingWriter<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.0.state.lock();
        if let Some(count) = state.writers.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                state.writers.remove(&self.key);
            }
        }
        drop(state);
        // Readers in line behind it may ask again.
        self.pool.0.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::backend::Mode;
    use super::super::super::name::Advisory;
    use super::{Pick, Pool};
    use std::time::Duration;

    const A: Advisory = Advisory::Int(1);
    const B: Advisory = Advisory::Pair(1, 2);

    fn pool(max: usize) -> Pool {
        Pool::new(max, 1, Duration::from_mins(1))
    }

    #[test]
    fn waiters_at_the_bound_are_first_in_the_order_they_came() {
        let pool = pool(1);
        assert!(pool.is_first(None), "nobody in line: a newcomer may go");
        let first = pool.enqueue(A);
        let second = pool.enqueue(A);
        let third = pool.enqueue(A);
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
    fn on_a_recheck_the_first_in_line_for_each_key_asks() {
        let pool = pool(1);
        let first_a = pool.enqueue(A);
        let second_a = pool.enqueue(A);
        let first_b = pool.enqueue(B);
        assert!(pool.may_ask(None, false), "a newcomer asks");
        // On a change, only the first in line.
        assert!(pool.may_ask(Some(&first_a), false));
        assert!(!pool.may_ask(Some(&second_a), false));
        assert!(!pool.may_ask(Some(&first_b), false));
        // On a re-check, the first for each key: another client may have freed it.
        assert!(pool.may_ask(Some(&first_a), true));
        assert!(
            !pool.may_ask(Some(&second_a), true),
            "behind a waiter of its key"
        );
        assert!(pool.may_ask(Some(&first_b), true));
        drop(first_a);
        assert!(pool.may_ask(Some(&second_a), false));
        drop((second_a, first_b));
    }

    #[test]
    fn a_waiting_writer_turns_new_readers_of_its_key_away() {
        let pool = pool(2);
        let writer = pool.wait_as_writer(A);
        let again = pool.wait_as_writer(A);
        assert!(matches!(pool.pick(A, Mode::Shared), Pick::HeldHere));
        assert!(
            matches!(pool.pick(B, Mode::Shared), Pick::Open(_)),
            "other keys are not concerned"
        );
        drop(writer);
        assert!(
            matches!(pool.pick(A, Mode::Shared), Pick::HeldHere),
            "one still waits"
        );
        drop(again);
        assert!(matches!(pool.pick(A, Mode::Shared), Pick::Open(_)));
    }

    #[test]
    fn a_refused_connection_holds_the_bound_until_one_of_ours_closes() {
        let pool = pool(3);
        let slot = pool.slot().expect("a free slot");
        pool.refused();
        assert!(pool.slot().is_none(), "the server refused: no more for now");
        assert!(matches!(pool.pick(A, Mode::Exclusive), Pick::Full));
        drop(slot);
        let again = pool.slot().expect("one of ours closed: room again");
        drop(again);
        let expired = Pool::new(3, 1, Duration::ZERO);
        expired.refused();
        assert!(
            expired.slot().is_some(),
            "the refusal holds for a while only"
        );
    }

    #[test]
    fn a_slot_does_not_keep_its_pool_alive() {
        let pool = pool(2);
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
