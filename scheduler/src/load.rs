//! The load generator: client threads issuing a random mix of operations against a service,
//! for a duration or a number of operations, with the invariants checked periodically and
//! at the end.

use crate::invariants::{self, Violation};
use crate::leaf_work::lower_timer_slack;
use crate::{LectureId, Scheduler, Strategy};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// One of the service's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A random student attends a random lecture.
    Attend,
    /// A random student is expelled from their class.
    Expel,
    /// The class of a random student is cancelled.
    CancelClass,
    /// A random lecture is cancelled, and a new one opened in its place.
    CancelLecture,
    /// The statistics are read.
    Statistics,
}

impl Operation {
    /// Every operation, in the order of [`Mix`]'s fields.
    pub const ALL: [Operation; 5] = [
        Operation::Attend,
        Operation::Expel,
        Operation::CancelClass,
        Operation::CancelLecture,
        Operation::Statistics,
    ];

    /// The name in a [`Mix`] string.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Attend => "attend",
            Operation::Expel => "expel",
            Operation::CancelClass => "cancel-class",
            Operation::CancelLecture => "cancel-lecture",
            Operation::Statistics => "statistics",
        }
    }
}

/// Relative weights of the operations, written `attend=900,expel=50,...` (an operation left
/// out has weight 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    weights: [u32; 5],
}

impl Default for Mix {
    /// Mostly attendance, some churn: 90% attend, 5% expel, 2% cancel a class, 0.2% cancel
    /// a lecture, 2.8% statistics.
    fn default() -> Self {
        Self {
            weights: [900, 50, 20, 2, 28],
        }
    }
}

/// A [`Mix`] that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    /// An item is not `operation=weight`.
    #[error("`{0}` is not `operation=weight`")]
    Syntax(String),
    /// An unknown operation.
    #[error(
        "unknown operation `{0}` (expected attend, expel, cancel-class, cancel-lecture, statistics)"
    )]
    Operation(String),
    /// Every weight is zero.
    #[error("the mix has no operation with a weight above 0")]
    Empty,
}

impl Mix {
    /// A mix of these weights.
    ///
    /// # Errors
    ///
    /// [`MixError::Empty`] when every weight is 0 (or their sum overflows).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::load::{Mix, MixError, Operation};
    ///
    /// let mix = Mix::new([
    ///     (Operation::Attend, 3),
    ///     (Operation::Expel, 1),
    ///     (Operation::CancelClass, 0),
    ///     (Operation::CancelLecture, 0),
    ///     (Operation::Statistics, 0),
    /// ])?;
    /// assert_eq!(mix.to_string(), "attend=3,expel=1");
    /// assert_eq!("expel=1, attend=3".parse(), Ok(mix));
    /// assert_eq!(Mix::only(Operation::Statistics).to_string(), "statistics=1");
    /// assert_eq!("attend=0".parse::<Mix>(), Err(MixError::Empty));
    /// # Ok::<(), MixError>(())
    /// ```
    pub fn new(weights: [(Operation, u32); 5]) -> Result<Self, MixError> {
        let mut mix = Self { weights: [0; 5] };
        for (operation, weight) in weights {
            mix.weights[operation as usize] = weight;
        }
        mix.total().map(|_| mix)
    }

    /// Only this operation.
    pub fn only(operation: Operation) -> Self {
        let mut weights = [0; 5];
        weights[operation as usize] = 1;
        Self { weights }
    }

    fn total(&self) -> Result<u32, MixError> {
        self.weights
            .iter()
            .try_fold(0_u32, |sum, &weight| sum.checked_add(weight))
            .filter(|&total| total > 0)
            .ok_or(MixError::Empty)
    }

    fn choose(&self, mut roll: u32) -> Operation {
        for operation in Operation::ALL {
            let weight = self.weights[operation as usize];
            if roll < weight {
                return operation;
            }
            roll -= weight;
        }
        unreachable!("the roll is below the total weight")
    }
}

impl FromStr for Mix {
    type Err = MixError;

    fn from_str(text: &str) -> Result<Self, MixError> {
        let mut weights = [0; 5];
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (name, weight) = item
                .split_once('=')
                .ok_or_else(|| MixError::Syntax(item.to_owned()))?;
            let operation = Operation::ALL
                .into_iter()
                .find(|operation| operation.name() == name.trim())
                .ok_or_else(|| MixError::Operation(name.trim().to_owned()))?;
            weights[operation as usize] = weight
                .trim()
                .parse()
                .map_err(|_| MixError::Syntax(item.to_owned()))?;
        }
        let mix = Self { weights };
        mix.total().map(|_| mix)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for operation in Operation::ALL {
            let weight = self.weights[operation as usize];
            if weight > 0 {
                if !first {
                    f.write_str(",")?;
                }
                write!(f, "{}={weight}", operation.name())?;
                first = false;
            }
        }
        Ok(())
    }
}

/// When the clients stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// After this long.
    After(Duration),
    /// After this many operations in total, shared evenly among the clients.
    Ops(u64),
}

/// The load: clients, mix, length, checks.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Client threads (at least 1).
    pub threads: usize,
    /// When to stop.
    pub stop: Stop,
    /// The operation mix.
    pub mix: Mix,
    /// Seeds the clients' random choices.
    pub seed: u64,
    /// Checks the invariants on a snapshot this often during the run (they are always
    /// checked at the end).
    pub check_every: Option<Duration>,
    /// Measures every operation's latency (two clock reads each).
    pub record_latency: bool,
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            threads: 16,
            stop: Stop::After(Duration::from_secs(1)),
            mix: Mix::default(),
            seed: 1,
            check_every: Some(Duration::from_millis(200)),
            record_latency: true,
        }
    }
}

/// Where a run stands, for a progress line.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Time since the clients started.
    pub elapsed: Duration,
    /// Operations completed so far (updated by each client every 64 operations).
    pub ops: u64,
    /// Snapshots checked so far.
    pub checks: usize,
    /// Violations found so far.
    pub violations: usize,
}

/// Latency percentiles of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// The median.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The slowest operation.
    pub max: Duration,
}

/// What a run measured and found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The service's strategy.
    pub strategy: Strategy,
    /// Operations completed.
    pub ops: u64,
    /// Operations that failed as the service documents (a cancelled lecture or class, a
    /// student attending nothing); expected under churn.
    pub failed: u64,
    /// From the moment the first client started (all were ready) to the moment the last
    /// one finished, by the clients' own clocks.
    pub elapsed: Duration,
    /// Latency percentiles, when recorded.
    pub latency: Option<Latency>,
    /// Snapshots checked, periodic and final.
    pub checks: usize,
    /// Every broken invariant found.
    pub violations: Vec<Violation>,
}

impl Report {
    /// Operations per second.
    #[expect(
        clippy::cast_precision_loss,
        reason = "operation counts stay far below 2^52"
    )]
    pub fn throughput(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    /// Whether every invariant held in every check.
    pub fn invariants_hold(&self) -> bool {
        self.violations.is_empty()
    }
}

/// A service with lectures open, ready to take load (several runs in a row, as the
/// benchmark does).
pub struct Session {
    service: Arc<dyn Scheduler>,
    /// The lecture each slot currently stands for: cancelling a lecture opens a new one,
    /// with a fresh number, in its slot.
    slots: Box<[AtomicU32]>,
    next_lecture: AtomicU32,
}

impl Session {
    /// Opens `lectures` lectures (numbered `0..lectures`) on an empty `service`.
    ///
    /// # Panics
    ///
    /// When `lectures` is 0, or a lecture of those numbers is already running.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::load::Session;
    /// use chainlock_scheduler::{LeafWork, ServiceConfig, Strategy};
    ///
    /// let session = Session::new(Strategy::Coarse.build(ServiceConfig::new(10, 2, LeafWork::None)?), 3);
    /// let seat = session.service().attend(4, 2)?;
    /// assert_eq!(seat.lecture, 2);
    /// assert_eq!(session.check(), [], "the invariants hold");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(service: Arc<dyn Scheduler>, lectures: u32) -> Self {
        assert!(lectures > 0, "a session needs at least one lecture");
        for lecture in 0..lectures {
            service
                .open_lecture(lecture)
                .expect("the service starts empty");
        }
        Self {
            service,
            slots: (0..lectures).map(AtomicU32::new).collect(),
            next_lecture: AtomicU32::new(lectures),
        }
    }

    /// The service.
    pub fn service(&self) -> &dyn Scheduler {
        &*self.service
    }

    /// Checks the invariants on a snapshot; returns the violations.
    pub fn check(&self) -> Vec<Violation> {
        invariants::check(&self.service.snapshot(), self.service.config().threshold())
    }

    /// Runs `load` to its end, calling `on_progress` about every 100 ms.
    ///
    /// # Panics
    ///
    /// When `load.threads` is 0, or a client panics.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::load::{LoadConfig, Session, Stop};
    /// use chainlock_scheduler::{LeafWork, ServiceConfig, Strategy};
    /// use std::time::Duration;
    ///
    /// let session = Session::new(Strategy::Chain.build(ServiceConfig::new(100, 3, LeafWork::None)?), 4);
    /// let load = LoadConfig {
    ///     threads: 4,
    ///     stop: Stop::Ops(2_000),
    ///     check_every: Some(Duration::from_millis(1)),
    ///     ..LoadConfig::default()
    /// };
    /// let report = session.run(&load, &mut |progress| assert!(progress.ops <= 2_000));
    /// assert_eq!(report.ops, 2_000);
    /// assert!(report.invariants_hold() && report.checks >= 1);
    /// assert!(report.throughput() > 0.0);
    /// let latency = report.latency.expect("recorded by default");
    /// assert!(latency.p50 <= latency.p99 && latency.p99 <= latency.max);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run(&self, load: &LoadConfig, on_progress: &mut dyn FnMut(Progress)) -> Report {
        assert!(load.threads > 0, "a run needs at least one client thread");
        let stop = AtomicBool::new(false);
        let counters: Vec<AtomicU64> = (0..load.threads).map(|_| AtomicU64::new(0)).collect();
        let barrier = Barrier::new(load.threads + 1);
        let mut checks = Checks::default();
        // One independent stream per client and seed (`seed + index` would replay another
        // run's client).
        let mut seeds = SmallRng::seed_from_u64(load.seed);
        let clients = thread::scope(|scope| {
            let clients: Vec<_> = (0..load.threads)
                .map(|index| {
                    let quota = match load.stop {
                        Stop::Ops(total) => {
                            let threads = load.threads as u64;
                            total / threads + u64::from((index as u64) < total % threads)
                        }
                        Stop::After(_) => u64::MAX,
                    };
                    let client = Client {
                        session: self,
                        rng: SmallRng::from_rng(&mut seeds),
                        counter: &counters[index],
                    };
                    let (stop, barrier) = (&stop, &barrier);
                    scope.spawn(move || client.run(load, quota, stop, barrier))
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            self.watch(
                load,
                start,
                &clients,
                &stop,
                &counters,
                &mut checks,
                on_progress,
            );
            let clients: Vec<ClientReport> = clients
                .into_iter()
                .map(|client| client.join().expect("a client thread panicked"))
                .collect();
            clients
        });

        checks.count += 1;
        checks.violations.extend(self.final_check());

        // The clients' own clocks: after the barrier, the watcher may be scheduled late.
        let begin = clients
            .iter()
            .map(|client| client.begin)
            .min()
            .expect("at least one client");
        let end = clients
            .iter()
            .map(|client| client.end)
            .max()
            .expect("at least one client");
        let latency = load.record_latency.then(|| {
            let mut all: Vec<u32> = clients
                .iter()
                .flat_map(|client| client.latencies.iter().copied())
                .collect();
            percentiles(&mut all)
        });
        Report {
            strategy: self.service.strategy(),
            ops: clients.iter().map(|client| client.ops).sum(),
            failed: clients.iter().map(|client| client.failed).sum(),
            elapsed: end.saturating_duration_since(begin),
            latency: latency.flatten(),
            checks: checks.count,
            violations: checks.violations,
        }
    }

    /// Until every client is done: stops them at the deadline, checks the invariants and
    /// reports progress on time.
    #[expect(
        clippy::too_many_arguments,
        reason = "the run's shared state, borrowed"
    )]
    fn watch(
        &self,
        load: &LoadConfig,
        start: Instant,
        clients: &[thread::ScopedJoinHandle<'_, ClientReport>],
        stop: &AtomicBool,
        counters: &[AtomicU64],
        checks: &mut Checks,
        on_progress: &mut dyn FnMut(Progress),
    ) {
        let deadline = match load.stop {
            Stop::After(duration) => Some(start + duration),
            Stop::Ops(_) => None,
        };
        let mut next_check = load.check_every.map(|every| start + every);
        let mut next_progress = start + PROGRESS_EVERY;
        while !clients.iter().all(thread::ScopedJoinHandle::is_finished) {
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                stop.store(true, Ordering::Relaxed);
            }
            if let (Some(due), Some(every)) = (next_check, load.check_every)
                && now >= due
            {
                checks.violations.extend(self.check());
                checks.count += 1;
                next_check = Some(Instant::now() + every);
            }
            if now >= next_progress {
                on_progress(Progress {
                    elapsed: now - start,
                    ops: counters.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
                    checks: checks.count,
                    violations: checks.violations.len(),
                });
                next_progress = now + PROGRESS_EVERY;
            }
            let wake = [deadline, next_check, Some(next_progress), Some(now + POLL)]
                .into_iter()
                .flatten()
                .min()
                .expect("at least the poll interval");
            thread::sleep(wake.saturating_duration_since(Instant::now()));
        }
    }

    /// The check at the end, with nothing running: the statistics must also match a
    /// recount outside a snapshot.
    fn final_check(&self) -> Vec<Violation> {
        let snapshot = self.service.snapshot();
        let mut violations = invariants::check(&snapshot, self.service.config().threshold());
        let recounted = invariants::recount(&snapshot);
        let reported = self.service.statistics();
        if reported != recounted {
            violations.push(Violation::Statistics {
                reported,
                recounted,
            });
        }
        violations
    }

    fn lecture(&self, rng: &mut SmallRng) -> (usize, LectureId) {
        let slot = rng.random_range(0..self.slots.len());
        (slot, self.slots[slot].load(Ordering::Relaxed))
    }
}

#[derive(Default)]
struct Checks {
    count: usize,
    violations: Vec<Violation>,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(100);
const POLL: Duration = Duration::from_millis(1);

struct Client<'a> {
    session: &'a Session,
    rng: SmallRng,
    counter: &'a AtomicU64,
}

struct ClientReport {
    ops: u64,
    failed: u64,
    begin: Instant,
    end: Instant,
    latencies: Vec<u32>,
}

impl Client<'_> {
    fn run(
        mut self,
        load: &LoadConfig,
        quota: u64,
        stop: &AtomicBool,
        barrier: &Barrier,
    ) -> ClientReport {
        lower_timer_slack();
        self.session.service.config().leaf_work().prepare();
        let total = load.mix.total().expect("a Mix is never empty");
        let mut latencies = Vec::new();
        let (mut ops, mut failed) = (0, 0);
        barrier.wait();
        let begin = Instant::now();
        while ops < quota && !stop.load(Ordering::Relaxed) {
            let operation = load.mix.choose(self.rng.random_range(0..total));
            let started = load.record_latency.then(Instant::now);
            if !self.perform(operation) {
                failed += 1;
            }
            if let Some(started) = started {
                let nanos = started.elapsed().as_nanos();
                latencies.push(u32::try_from(nanos).unwrap_or(u32::MAX));
            }
            ops += 1;
            if ops % 64 == 0 {
                self.counter.store(ops, Ordering::Relaxed);
            }
        }
        self.counter.store(ops, Ordering::Relaxed);
        ClientReport {
            ops,
            failed,
            begin,
            end: Instant::now(),
            latencies,
        }
    }

    /// Performs one operation on random arguments; `false` if it failed as documented.
    fn perform(&mut self, operation: Operation) -> bool {
        let session = self.session;
        let service = &*session.service;
        let student = self.rng.random_range(0..service.config().students());
        match operation {
            Operation::Attend => {
                let (_, lecture) = session.lecture(&mut self.rng);
                service.attend(student, lecture).is_ok()
            }
            Operation::Expel => service.expel(student).is_ok(),
            Operation::CancelClass => match service.seat(student) {
                Ok(Some(seat)) => service.cancel_class(seat.lecture, seat.class).is_ok(),
                _ => false,
            },
            Operation::CancelLecture => {
                let (slot, lecture) = session.lecture(&mut self.rng);
                if service.cancel_lecture(lecture).is_err() {
                    return false;
                }
                let replacement = session.next_lecture.fetch_add(1, Ordering::Relaxed);
                service
                    .open_lecture(replacement)
                    .expect("lecture numbers are never reused");
                session.slots[slot].store(replacement, Ordering::Relaxed);
                true
            }
            Operation::Statistics => {
                std::hint::black_box(service.statistics());
                true
            }
        }
    }
}

/// p50, p99 and max of `nanos` (reordered), `None` when empty.
fn percentiles(nanos: &mut [u32]) -> Option<Latency> {
    if nanos.is_empty() {
        return None;
    }
    let mut at = |permille: usize| {
        let index = (nanos.len() - 1) * permille / 1000;
        Duration::from_nanos(u64::from(*nanos.select_nth_unstable(index).1))
    };
    Some(Latency {
        p50: at(500),
        p99: at(990),
        max: at(1000),
    })
}
