//! [`Report::to_pprof`]: the statistics as a Go mutex profile (`profile.proto`), for `go tool
//! pprof` and every reader of that format.
//!
//! See [`Report::to_pprof`].

use super::report::{LockStats, Report, SiteStats};
use std::collections::HashMap;
use std::panic::Location;
use std::time::{SystemTime, UNIX_EPOCH};

impl Report {
    /// The statistics as a Go mutex profile: `profile.proto` bytes (uncompressed) that `go
    /// tool pprof` reads.
    ///
    /// # What the profile holds
    ///
    /// Go's semantics (`runtime.SetMutexProfileFraction`, `pprof.Lookup("mutex")`): two sample
    /// types, `contentions/count` and `delay/nanoseconds` (the default), period type
    /// `contentions/count` and period the sampling rate ([`Report::sample_every`]); the
    /// values are already estimates of the whole (each sampled event was recorded times the
    /// sampling rate, as Go scales its profile). As Go does, the delay is charged to the
    /// *holder*: each sample is a site that released a lock while others waited for it ([`LockStats::holder_sites`]), with
    /// the waiting it ended: every waiter's wait since the previous recorded release, as Go 1.22
    /// charges it. A sample's stack has
    /// two frames: the holder's call site (a function named `release at FILE:LINE`, with that
    /// file and line) and, as its caller, the lock (a function named after [`LockName`](super::LockName)'s
    /// display, `ClassLocker level 1 (Lecture)`, `walk depth 3`, ...). So `-top`
    /// lists the sites, `-top -cum` the locks, and `-traces` shows which lock each site holds.
    ///
    /// The waiters' side is in the profile too, labelled apart: samples with the label
    /// `side=waiter` and the frames `wait at FILE:LINE` under the same lock frames, from
    /// [`LockStats::waiter_sites`]. A reader that wants Go's numbers alone filters them out:
    /// `go tool pprof -tagignore=side=waiter` (or `-tagfocus=side=holder`). Without a filter the
    /// totals count each wait twice, once at each end.
    ///
    /// The bytes are uncompressed protobuf: `go tool pprof` (and the `pprof` tool of
    /// `github.com/google/pprof`) read it as it is, gzipped or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::telemetry::{self, Config};
    ///
    /// telemetry::enable(Config::new());
    /// let profile = telemetry::report().to_pprof();
    /// assert!(!profile.is_empty());
    /// std::fs::write(std::env::temp_dir().join("chainlock-mutex.pb"), &profile)?;
    /// // $ go tool pprof -top -sample_index=delay /tmp/chainlock-mutex.pb
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[must_use]
    pub fn to_pprof(&self) -> Vec<u8> {
        Profile::from_report(self).encode()
    }
}

/// Which end of a wait a sample describes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Side {
    Holder,
    Waiter,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Holder => "holder",
            Side::Waiter => "waiter",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Side::Holder => "release at",
            Side::Waiter => "wait at",
        }
    }
}

/// A profile being built: interned strings, functions and locations, and the samples.
#[derive(Default)]
struct Profile {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    /// `(name, filename, line)` of each function; its id is its index + 1.
    functions: Vec<(i64, i64, i64)>,
    function_ids: HashMap<(i64, i64, i64), u64>,
    /// The function of each location (one line each); its id is its index + 1.
    locations: Vec<(u64, i64)>,
    location_ids: HashMap<(u64, i64), u64>,
    /// Location ids leaf first, the two values, the side.
    samples: Vec<(Vec<u64>, [i64; 2], Side)>,
    /// The sampling period (`Report::sample_every`).
    period: i64,
}

impl Profile {
    fn from_report(report: &Report) -> Self {
        let mut profile = Profile::default();
        profile.string(""); // index 0 is the empty string, as the format requires
        profile.period = i64::from(report.sample_every.max(1));
        for lock in &report.locks {
            profile.lock_samples(lock, Side::Holder, &lock.holder_sites);
            profile.lock_samples(lock, Side::Waiter, &lock.waiter_sites);
        }
        profile
    }

    /// The samples of `sites` (their figures were scaled by the sampling rate when recorded).
    fn lock_samples(&mut self, lock: &LockStats, side: Side, sites: &[SiteStats]) {
        if sites.is_empty() {
            return;
        }
        let lock_name = lock.lock.to_string();
        let lock_frame = self.location(&lock_name, "", 0);
        for site in sites {
            let frame = self.site_location(side, site.site);
            let delay = i64::try_from(site.total.as_nanos()).unwrap_or(i64::MAX);
            let count = i64::try_from(site.count).unwrap_or(i64::MAX);
            self.samples
                .push((vec![frame, lock_frame], [count, delay], side));
        }
    }

    fn site_location(&mut self, side: Side, at: &Location<'_>) -> u64 {
        let name = format!("{} {}:{}", side.verb(), at.file(), at.line());
        self.location(&name, at.file(), i64::from(at.line()))
    }

    fn string(&mut self, text: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = i64::try_from(self.strings.len()).expect("fewer strings than i64::MAX");
        self.strings.push(text.to_owned());
        self.string_ids.insert(text.to_owned(), id);
        id
    }

    /// The location of a one-line function `name` at `file:line` (0: none), made once.
    fn location(&mut self, name: &str, file: &str, line: i64) -> u64 {
        let key = (self.string(name), self.string(file), line);
        let next_function = self.functions.len() as u64 + 1;
        let function = *self.function_ids.entry(key).or_insert(next_function);
        if function == next_function {
            self.functions.push(key);
        }
        let next_location = self.locations.len() as u64 + 1;
        let location = *self
            .location_ids
            .entry((function, line))
            .or_insert(next_location);
        if location == next_location {
            self.locations.push((function, line));
        }
        location
    }

    fn encode(mut self) -> Vec<u8> {
        let contentions = self.string("contentions");
        let count = self.string("count");
        let delay = self.string("delay");
        let nanoseconds = self.string("nanoseconds");
        let side_key = self.string("side");
        let sides = [
            self.string(Side::Holder.label()),
            self.string(Side::Waiter.label()),
        ];
        let mut out = Vec::new();
        // 1: sample_type, contentions/count then delay/nanoseconds (Go's order).
        for (kind, unit) in [(contentions, count), (delay, nanoseconds)] {
            message(&mut out, 1, &value_type(kind, unit));
        }
        // 2: samples.
        for (locations, values, side) in &self.samples {
            let mut sample = Vec::new();
            packed(&mut sample, 1, locations.iter().copied());
            // Values are int64: negative never occurs, so the varints are the same.
            packed(
                &mut sample,
                2,
                values.iter().map(|&v| u64::try_from(v).unwrap_or(0)),
            );
            let mut label = Vec::new();
            varint_field(&mut label, 1, side_key);
            let side = match side {
                Side::Holder => sides[0],
                Side::Waiter => sides[1],
            };
            varint_field(&mut label, 2, side);
            message(&mut sample, 3, &label);
            message(&mut out, 2, &sample);
        }
        // 4: locations, one line each.
        for (index, &(function, line)) in self.locations.iter().enumerate() {
            let mut location = Vec::new();
            varint_field(&mut location, 1, index as u64 + 1);
            let mut line_message = Vec::new();
            varint_field(&mut line_message, 1, function);
            varint_field(&mut line_message, 2, line);
            message(&mut location, 4, &line_message);
            message(&mut out, 4, &location);
        }
        // 5: functions.
        for (index, &(name, filename, start_line)) in self.functions.iter().enumerate() {
            let mut function = Vec::new();
            varint_field(&mut function, 1, index as u64 + 1);
            varint_field(&mut function, 2, name);
            varint_field(&mut function, 3, name);
            varint_field(&mut function, 4, filename);
            varint_field(&mut function, 5, start_line);
            message(&mut out, 5, &function);
        }
        // 6: the string table.
        for text in &self.strings {
            bytes_field(&mut out, 6, text.as_bytes());
        }
        // 9: time_nanos.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| u64::try_from(since.as_nanos()).unwrap_or(0));
        varint_field(&mut out, 9, now);
        // 11: period_type contentions/count; 12: period, the sampling rate (as Go's
        // `SetMutexProfileFraction`; the holder samples are already scaled by it).
        message(&mut out, 11, &value_type(contentions, count));
        varint_field(&mut out, 12, self.period);
        // 14: default_sample_type: delay.
        varint_field(&mut out, 14, delay);
        out
    }
}

/// A `ValueType { type, unit }` message.
fn value_type(kind: i64, unit: i64) -> Vec<u8> {
    let mut out = Vec::new();
    varint_field(&mut out, 1, kind);
    varint_field(&mut out, 2, unit);
    out
}

/// Protobuf base-128 varint.
fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A field's key: its number and wire type (0 varint, 2 length-delimited).
fn key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

/// A varint field (`uint64`, or an `int64` that is never negative here).
fn varint_field(out: &mut Vec<u8>, field: u32, value: impl TryInto<u64>) {
    let value = value.try_into().unwrap_or(0);
    key(out, field, 0);
    varint(out, value);
}

/// A length-delimited field.
fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An embedded message.
fn message(out: &mut Vec<u8>, field: u32, body: &[u8]) {
    bytes_field(out, field, body);
}

/// A packed repeated varint field.
fn packed(out: &mut Vec<u8>, field: u32, values: impl Iterator<Item = u64>) {
    let mut body = Vec::new();
    for value in values {
        varint(&mut body, value);
    }
    bytes_field(out, field, &body);
}

#[cfg(test)]
mod tests {
    use super::super::report::{LockName, LockStats, OtherSites, Report, SiteStats, Summary};
    use std::panic::Location;
    use std::process::Command;
    use std::sync::Arc;
    use std::time::Duration;

    fn site(site: &'static Location<'static>, count: u64, millis: u64) -> SiteStats {
        SiteStats {
            site,
            count,
            total: Duration::from_millis(millis),
        }
    }

    fn lock(lock: LockName, holders: Vec<SiteStats>, waiters: Vec<SiteStats>) -> LockStats {
        let wait: Duration = waiters.iter().map(|site| site.total).sum();
        LockStats {
            lock,
            acquisitions: 10,
            contended: waiters.iter().map(|site| site.count).sum(),
            wait: Summary {
                count: waiters.iter().map(|site| site.count).sum(),
                total: wait,
                ..Summary::default()
            },
            gave_up: Summary::default(),
            hold: Summary::default(),
            hold_across_await: Summary::default(),
            waiters_at_release: 0,
            waiter_sites: waiters,
            other_waiter_sites: OtherSites::default(),
            holder_sites: holders,
            other_holder_sites: OtherSites::default(),
            restarts: 0,
            fallbacks: 0,
        }
    }

    /// A report with known sites and delays: two holder sites of a chain level, one of a
    /// distributed name, and the waiters' side of the level.
    fn known() -> (Report, [&'static Location<'static>; 4]) {
        let sites = [
            Location::caller(),
            Location::caller(),
            Location::caller(),
            Location::caller(),
        ];
        let level = LockName::Level {
            locker: "ClassLocker",
            level: 1,
            name: "Lecture",
        };
        let orders = LockName::Distributed {
            backend: "file",
            name: Arc::from("orders"),
        };
        let report = Report {
            sample_every: 1,
            locks: vec![
                lock(
                    level,
                    vec![site(sites[0], 3, 2_000), site(sites[1], 1, 500)],
                    vec![site(sites[2], 4, 2_500)],
                ),
                lock(orders, vec![site(sites[3], 2, 1_250)], Vec::new()),
            ],
        };
        (report, sites)
    }

    #[test]
    fn encodes_a_well_formed_profile() {
        let (report, _) = known();
        let bytes = report.to_pprof();
        // The first field is sample_type (field 1, length-delimited): key 0x0a.
        assert_eq!(bytes[0], 0x0a);
        let text = String::from_utf8_lossy(&bytes);
        for expected in [
            "contentions",
            "delay",
            "nanoseconds",
            "ClassLocker level 1 (Lecture)",
        ] {
            assert!(text.contains(expected), "{expected} in the string table");
        }
        assert!(
            Report {
                locks: Vec::new(),
                sample_every: 1
            }
            .to_pprof()
            .len()
                > 10,
            "an empty profile has its types"
        );
    }

    /// The profile read back by Go's own reader, `go tool pprof` (Debian's `golang-go`,
    /// installed by `scripts/test.sh`): the holder sites and their delays as Go's mutex
    /// profile shows them. Without `go` on the PATH the test passes with a note, unless
    /// `CHAINLOCK_REQUIRE_GO` is set (the test command sets it: there, nothing is skipped).
    #[test]
    fn go_tool_pprof_reads_it() {
        let go_present = Command::new("go").arg("version").output().is_ok();
        if !go_present {
            assert!(
                std::env::var_os("CHAINLOCK_REQUIRE_GO").is_none(),
                "CHAINLOCK_REQUIRE_GO is set but `go` is not on the PATH (apt-get install golang-go)"
            );
            eprintln!("note: `go` not found: the pprof reader check did not run");
            return;
        }
        let (report, sites) = known();
        let path = std::env::temp_dir().join(format!(
            "chainlock-pprof-{}-{}.pb",
            std::process::id(),
            line!()
        ));
        std::fs::write(&path, report.to_pprof()).expect("write the profile");
        let top = |extra: &[&str]| {
            let output = Command::new("go")
                .args(["tool", "pprof", "-top"])
                .args(extra)
                .arg(&path)
                .output()
                .expect("run go tool pprof");
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "go tool pprof failed: {}\n{stdout}",
                String::from_utf8_lossy(&output.stderr)
            );
            stdout
        };
        let name =
            |verb: &str, site: &Location<'_>| format!("{verb} {}:{}", site.file(), site.line());
        // Go's semantics: the delay at the holders' sites (the waiters' side filtered out).
        let delay = top(&["-sample_index=delay", "-tagignore=side=waiter"]);
        assert!(delay.contains("Type: delay"), "{delay}");
        // Filtered: the holders' 3.75 s of the 6.25 s the profile holds with the waiters'.
        assert!(delay.contains("accounting for 3750ms"), "{delay}");
        assert!(delay.contains("of 6250ms total"), "{delay}");
        for (site, flat) in [
            (sites[0], "2000ms"),
            (sites[1], "500ms"),
            (sites[3], "1250ms"),
        ] {
            let line = delay
                .lines()
                .find(|line| line.ends_with(&name("release at", site)))
                .unwrap_or_else(|| panic!("{} in\n{delay}", name("release at", site)));
            assert_eq!(line.split_whitespace().next(), Some(flat), "{line}");
        }
        assert!(!delay.contains("wait at"), "{delay}");
        // The counts, and the waiters' side when asked for.
        let contentions = top(&["-sample_index=contentions", "-tagfocus=side=waiter"]);
        let line = contentions
            .lines()
            .find(|line| line.ends_with(&name("wait at", sites[2])))
            .unwrap_or_else(|| panic!("the waiter site in\n{contentions}"));
        assert_eq!(line.split_whitespace().next(), Some("4"), "{line}");
        std::fs::remove_file(&path).ok();
    }
}
