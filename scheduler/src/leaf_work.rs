//! The work a service does at a class while holding its lock (and, in `coarse`, the global
//! lock): nothing, about a microsecond of CPU, or a blocking wait of about 50 µs standing for
//! I/O.

use crate::UnknownName;
use std::fmt;
use std::hint::black_box;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The work done at a class when a student joins or is expelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeafWork {
    /// No work: the cost of the locking alone.
    None,
    /// About [`CPU_WORK`] of computation (a spin loop calibrated once per process).
    Cpu,
    /// A `std::thread::sleep` of [`BLOCKING_WAIT`], standing for I/O. The thread sleeps
    /// longer than asked: see [`lower_timer_slack`].
    Blocking,
}

/// How long [`LeafWork::Cpu`] computes.
pub const CPU_WORK: Duration = Duration::from_micros(1);

/// How long [`LeafWork::Blocking`] asks to sleep.
pub const BLOCKING_WAIT: Duration = Duration::from_micros(50);

impl LeafWork {
    /// Every kind, in the order tables show them.
    pub const ALL: [LeafWork; 3] = [LeafWork::None, LeafWork::Cpu, LeafWork::Blocking];

    /// The name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            LeafWork::None => "none",
            LeafWork::Cpu => "cpu",
            LeafWork::Blocking => "blocking",
        }
    }

    /// Does the work.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::LeafWork;
    /// use chainlock_scheduler::leaf_work::BLOCKING_WAIT;
    /// use std::time::Instant;
    ///
    /// LeafWork::Cpu.prepare(); // calibrate now, not in the first measured operation
    /// let start = Instant::now();
    /// LeafWork::Blocking.perform();
    /// assert!(start.elapsed() >= BLOCKING_WAIT);
    /// assert_eq!(LeafWork::Blocking.name(), "blocking");
    /// ```
    #[inline]
    pub fn perform(self) {
        match self {
            LeafWork::None => {}
            LeafWork::Cpu => spin(spins_per_cpu_work()),
            LeafWork::Blocking => std::thread::sleep(BLOCKING_WAIT),
        }
    }

    /// Calibrates [`LeafWork::Cpu`] now rather than on first use (it takes a few
    /// milliseconds), so that the first operation of a measured run does not pay for it.
    pub fn prepare(self) {
        if self == LeafWork::Cpu {
            spins_per_cpu_work();
        }
    }

    /// Measures what one [`perform`](Self::perform) really costs on this thread: the median
    /// of `samples` runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::LeafWork;
    /// use chainlock_scheduler::leaf_work::{BLOCKING_WAIT, CPU_WORK};
    ///
    /// let work: LeafWork = "blocking".parse()?;
    /// assert!(work.measure(5) >= BLOCKING_WAIT, "a sleep takes at least what it asks");
    /// assert!(LeafWork::Cpu.measure(101) >= CPU_WORK / 2, "calibrated to about 1 µs");
    /// # Ok::<(), chainlock_scheduler::UnknownName>(())
    /// ```
    pub fn measure(self, samples: usize) -> Duration {
        self.prepare();
        let mut times: Vec<Duration> = (0..samples.max(1))
            .map(|_| {
                let start = Instant::now();
                self.perform();
                start.elapsed()
            })
            .collect();
        let middle = times.len() / 2;
        *times.select_nth_unstable(middle).1
    }
}

impl fmt::Display for LeafWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for LeafWork {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, UnknownName> {
        UnknownName::find("leaf work", &LeafWork::ALL, LeafWork::name, name)
    }
}

fn spin(iterations: u64) {
    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    for _ in 0..iterations {
        // xorshift: cheap, and black_box keeps the loop from being folded away.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state = black_box(state);
    }
}

/// Spin iterations that take [`CPU_WORK`], measured once: the fastest of several runs, so
/// that a preemption during calibration does not shorten the work.
fn spins_per_cpu_work() -> u64 {
    static SPINS: OnceLock<u64> = OnceLock::new();
    *SPINS.get_or_init(|| {
        const PROBE: u64 = 20_000;
        let fastest = (0..20)
            .map(|_| {
                let start = Instant::now();
                spin(PROBE);
                start.elapsed()
            })
            .min()
            .expect("twenty probes");
        let spins = u128::from(PROBE) * CPU_WORK.as_nanos() / fastest.as_nanos().max(1);
        u64::try_from(spins).unwrap_or(u64::MAX).max(1)
    })
}

/// Lowers the calling thread's timer slack to 1 µs (Linux; a no-op elsewhere). With the
/// default 50 µs slack, a 50 µs sleep takes about 110 µs; with 1 µs, about 60 µs. Load
/// generator threads call it so that [`LeafWork::Blocking`] is close to what it says.
pub fn lower_timer_slack() {
    #[cfg(target_os = "linux")]
    {
        const ONE_MICROSECOND_NS: libc::c_ulong = 1_000;
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only changes the calling
        // thread's timer slack; no memory is passed.
        let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ONE_MICROSECOND_NS) };
    }
}
