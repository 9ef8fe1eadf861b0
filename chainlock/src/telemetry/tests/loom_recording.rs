//! loom models of the recording path: the histogram and a class's counters and sites under
//! concurrent records and a concurrent snapshot (every interleaving, within loom's
//! preemption bound). The switches and the registry are plain statics outside the models.

use std::panic::Location;

use super::super::class::Class;
use super::super::histogram::Histogram;
use super::super::report::LockName;
use crate::loom::sync::Arc;
use crate::loom::thread;

/// Two threads record while a third reads: the snapshot never shows a record in its count
/// that is missing from its buckets, its percentiles lie within its min and max, and after
/// the joins everything is exact.
#[test]
fn loom_histogram_records_racing_a_snapshot() {
    loom::model(|| {
        let histogram = Arc::new(Histogram::new());
        let writers: Vec<_> = [3_u64, 1_000]
            .into_iter()
            .map(|nanos| {
                let histogram = Arc::clone(&histogram);
                thread::spawn(move || histogram.record(nanos))
            })
            .collect();
        let during = histogram.summary();
        let in_buckets: u64 = during.buckets().map(|(_, n)| n).sum();
        assert!(
            in_buckets >= during.count,
            "a counted record is in a bucket"
        );
        assert!(during.count <= 2);
        if during.count > 0 {
            assert!(during.min <= during.p50 && during.p99 <= during.max);
        }
        for writer in writers {
            writer.join().unwrap();
        }
        let after = histogram.summary();
        assert_eq!(after.count, 2);
        assert_eq!(after.total.as_nanos(), 1_003);
        assert_eq!((after.min.as_nanos(), after.max.as_nanos()), (3, 1_000));
        assert_eq!(after.buckets().map(|(_, n)| n).sum::<u64>(), 2);
    });
}

/// Two threads record a contended acquisition each into one class, at two sites or one:
/// the counters are exact and a site is never given two slots (the slot claim races). The
/// concurrent snapshot is the histogram model's; here the state space is the records'.
#[test]
fn loom_class_counters_and_sites_under_racing_records() {
    for same_site in [false, true] {
        loom::model(move || {
            let class = Arc::new(Class::new(LockName::Depth {
                walk: "loom",
                depth: 0,
            }));
            let here: &'static Location<'static> = Location::caller();
            let there: &'static Location<'static> = Location::caller();
            let sites = if same_site {
                [here, here]
            } else {
                [here, there]
            };
            let threads: Vec<_> = sites
                .into_iter()
                .map(|site| {
                    let class = Arc::clone(&class);
                    thread::spawn(move || {
                        use crate::loom::sync::atomic::Ordering;
                        class.acquisitions.fetch_add(1, Ordering::Relaxed);
                        class.contended.fetch_add(1, Ordering::Relaxed);
                        class.wait.record(10);
                        class.waiter_sites.record(site, 1, 10);
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            let stats = class.stats();
            assert_eq!((stats.acquisitions, stats.contended), (2, 2));
            assert_eq!(stats.wait.count, 2);
            let expected = if same_site { vec![2] } else { vec![1, 1] };
            let counts: Vec<u64> = stats.waiter_sites.iter().map(|s| s.count).collect();
            assert_eq!(counts, expected, "one slot per site");
        });
    }
}
