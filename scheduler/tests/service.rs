//! The scheduling service: a short loaded session per strategy
//! with the invariants checked all along, and the semantics of every operation, for every
//! strategy.

use chainlock_scheduler::invariants::{self, Violation};
use chainlock_scheduler::load::{LoadConfig, Mix, MixError, Operation, Session, Stop};
use chainlock_scheduler::{
    Cancelled, ClassSnapshot, ConfigError, LeafWork, ScheduleError, Scheduler, Seat, ServiceConfig,
    Snapshot, Statistics, Strategy,
};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

fn service(strategy: Strategy, students: u32, threshold: u32) -> Arc<dyn Scheduler> {
    let config = ServiceConfig::new(students, threshold, LeafWork::None).unwrap();
    let service = strategy.build(config);
    for lecture in 0..3 {
        service.open_lecture(lecture).unwrap();
    }
    service
}

/// Asserts the invariants on a snapshot, and that the statistics match it.
fn assert_consistent(service: &dyn Scheduler) -> Snapshot {
    let snapshot = service.snapshot();
    let threshold = service.config().threshold();
    assert_eq!(invariants::check(&snapshot, threshold), []);
    assert_eq!(service.statistics(), invariants::recount(&snapshot));
    snapshot
}

/// The students of each class of `lecture`, by class number.
fn classes_of(snapshot: &Snapshot, lecture: u32) -> Vec<(u32, BTreeSet<u32>)> {
    let mut classes: Vec<_> = snapshot
        .classes
        .iter()
        .filter(|class| class.seat.lecture == lecture)
        .map(|class| (class.seat.class, class.students.iter().copied().collect()))
        .collect();
    classes.sort();
    classes
}

#[test]
fn a_loaded_session_keeps_every_invariant_in_every_strategy() {
    // Small and crowded, with heavy churn: classes of 3, few lectures, every operation.
    let mix: Mix = "attend=70,expel=10,cancel-class=8,cancel-lecture=4,statistics=8"
        .parse()
        .unwrap();
    for strategy in Strategy::ALL {
        for leaf_work in [LeafWork::None, LeafWork::Cpu] {
            let config = ServiceConfig::new(200, 3, leaf_work).unwrap();
            let session = Session::new(strategy.build(config), 6);
            let load = LoadConfig {
                threads: 8,
                stop: Stop::Ops(40_000),
                mix,
                seed: 7,
                check_every: Some(Duration::from_millis(2)),
                record_latency: true,
            };
            let mut progress_calls = 0;
            let report = session.run(&load, &mut |_| progress_calls += 1);
            assert_eq!(
                report.violations,
                [],
                "{strategy} with {leaf_work} leaf work"
            );
            assert_eq!(report.ops, 40_000);
            assert!(report.failed < report.ops, "{strategy}: everything failed");
            assert!(report.checks >= 1);
            let latency = report.latency.expect("latency was recorded");
            assert!(latency.p50 <= latency.p99 && latency.p99 <= latency.max);
            // Something is still running after the churn, and it is consistent.
            let snapshot = assert_consistent(session.service());
            assert!(!snapshot.classes.is_empty(), "{strategy}: no class left");
        }
    }
}

#[test]
fn a_session_for_a_duration_stops_on_time() {
    for strategy in Strategy::ALL {
        let config = ServiceConfig::new(100, 4, LeafWork::Blocking).unwrap();
        let session = Session::new(strategy.build(config), 4);
        let load = LoadConfig {
            threads: 4,
            stop: Stop::After(Duration::from_millis(100)),
            ..LoadConfig::default()
        };
        let report = session.run(&load, &mut |_| {});
        assert!(
            report.invariants_hold(),
            "{strategy}: {:?}",
            report.violations
        );
        assert!(report.ops > 0);
        assert!(
            // Timed on the clients' clocks, which may start a little after the deadline's.
            report.elapsed >= Duration::from_millis(50) && report.elapsed < Duration::from_secs(5),
            "{strategy}: ran {:?}",
            report.elapsed
        );
    }
}

#[test]
fn a_full_lecture_gets_a_new_class_and_no_class_exceeds_the_threshold() {
    for strategy in Strategy::ALL {
        let service = service(strategy, 100, 2);
        let seats: Vec<Seat> = (0..5).map(|s| service.attend(s, 0).unwrap()).collect();
        let classes: BTreeSet<u32> = seats.iter().map(|seat| seat.class).collect();
        assert_eq!(classes.len(), 3, "{strategy}: 5 students in classes of 2");
        assert!(seats.iter().all(|seat| seat.lecture == 0));
        let snapshot = assert_consistent(&*service);
        let sizes: Vec<usize> = classes_of(&snapshot, 0)
            .iter()
            .map(|(_, students)| students.len())
            .collect();
        assert_eq!(sizes, [2, 2, 1], "{strategy}");
        assert_eq!(
            service.statistics(),
            Statistics {
                classes: 3,
                students: 5
            }
        );
        // A free seat is reused before a class is added.
        service.expel(0).unwrap();
        service.attend(5, 0).unwrap();
        service.attend(6, 0).unwrap();
        assert_eq!(service.statistics().classes, 3, "{strategy}: seats reused");
        service.attend(7, 0).unwrap();
        assert_eq!(service.statistics().classes, 4, "{strategy}");
        assert_consistent(&*service);
    }
}

#[test]
fn joining_another_lecture_logs_the_student_out_of_their_class() {
    for strategy in Strategy::ALL {
        let service = service(strategy, 10, 5);
        let first = service.attend(1, 0).unwrap();
        service.attend(2, 0).unwrap();
        let second = service.attend(1, 1).unwrap();
        assert_eq!(second.lecture, 1);
        assert_eq!(service.seat(1), Ok(Some(second)), "{strategy}");
        let snapshot = assert_consistent(&*service);
        assert_eq!(
            classes_of(&snapshot, 0),
            [(first.class, BTreeSet::from([2]))]
        );
        assert_eq!(
            classes_of(&snapshot, 1),
            [(second.class, BTreeSet::from([1]))]
        );
        // Attending the lecture one is in keeps the seat.
        assert_eq!(service.attend(1, 1), Ok(second), "{strategy}");
        assert_eq!(service.statistics().students, 2);
        // Attending a lecture that does not exist fails, and the student has left.
        assert_eq!(service.attend(2, 9), Err(ScheduleError::NoSuchLecture(9)));
        assert_eq!(service.seat(2), Ok(None), "{strategy}");
        assert_eq!(service.statistics().students, 1);
        assert_consistent(&*service);
    }
}

#[test]
fn expelled_students_attend_nothing() {
    for strategy in Strategy::ALL {
        let service = service(strategy, 10, 5);
        let seat = service.attend(3, 2).unwrap();
        service.attend(4, 2).unwrap();
        assert_eq!(service.expel(3), Ok(seat), "{strategy}");
        assert_eq!(service.seat(3), Ok(None));
        assert_eq!(service.expel(3), Err(ScheduleError::NotAttending(3)));
        assert_eq!(service.expel(5), Err(ScheduleError::NotAttending(5)));
        let snapshot = assert_consistent(&*service);
        assert_eq!(
            classes_of(&snapshot, 2),
            [(seat.class, BTreeSet::from([4]))]
        );
    }
}

#[test]
fn a_cancelled_class_logs_its_students_out_and_is_gone() {
    for strategy in Strategy::ALL {
        let service = service(strategy, 10, 3);
        let seats: Vec<Seat> = (0..4).map(|s| service.attend(s, 1).unwrap()).collect();
        let full = seats[0];
        assert_eq!(service.cancel_class(1, full.class), Ok(3), "{strategy}");
        for student in 0..3 {
            assert_eq!(service.seat(student), Ok(None), "{strategy}");
            assert_eq!(
                service.expel(student),
                Err(ScheduleError::NotAttending(student))
            );
        }
        assert_eq!(service.seat(3), Ok(Some(seats[3])));
        let gone = Err(ScheduleError::NoSuchClass {
            lecture: 1,
            class: full.class,
        });
        assert_eq!(service.cancel_class(1, full.class), gone, "{strategy}");
        assert_eq!(
            service.statistics(),
            Statistics {
                classes: 1,
                students: 1
            }
        );
        // The students come back: they fill the remaining class, then a new one.
        let back: Vec<Seat> = (0..3).map(|s| service.attend(s, 1).unwrap()).collect();
        assert!(
            back.iter().all(|seat| seat.class != full.class),
            "{strategy}"
        );
        assert_consistent(&*service);
    }
}

#[test]
fn a_cancelled_lecture_behaves_as_if_it_never_existed() {
    for strategy in Strategy::ALL {
        let service = service(strategy, 10, 2);
        let seats: Vec<Seat> = (0..5).map(|s| service.attend(s, 0).unwrap()).collect();
        service.attend(9, 1).unwrap();
        assert_eq!(
            service.cancel_lecture(0),
            Ok(Cancelled {
                classes: 3,
                students: 5
            }),
            "{strategy}"
        );
        let absent = Err(ScheduleError::NoSuchLecture(0));
        assert_eq!(service.attend(7, 0), absent, "{strategy}");
        assert_eq!(
            service.cancel_lecture(0),
            absent.map(|_| Cancelled::default())
        );
        assert_eq!(
            service.cancel_class(0, seats[0].class),
            Err(ScheduleError::NoSuchClass {
                lecture: 0,
                class: seats[0].class
            })
        );
        for student in 0..5 {
            assert_eq!(service.seat(student), Ok(None), "{strategy}");
        }
        assert_eq!(
            service.statistics(),
            Statistics {
                classes: 1,
                students: 1
            }
        );
        let snapshot = assert_consistent(&*service);
        assert!(classes_of(&snapshot, 0).is_empty());
        // Its number may be reused: a new, empty lecture.
        service.open_lecture(0).unwrap();
        assert_eq!(service.attend(0, 0).map(|seat| seat.lecture), Ok(0));
        assert_eq!(
            service.open_lecture(0),
            Err(ScheduleError::LectureExists(0))
        );
        assert_consistent(&*service);
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    for strategy in Strategy::ALL {
        let service = service(strategy, 10, 2);
        let unknown = ScheduleError::UnknownStudent {
            student: 10,
            students: 10,
        };
        assert_eq!(service.attend(10, 0), Err(unknown));
        assert_eq!(service.expel(10), Err(unknown));
        assert_eq!(service.seat(10), Err(unknown));
        assert_eq!(
            service.open_lecture(1),
            Err(ScheduleError::LectureExists(1))
        );
    }
    assert_eq!(
        ServiceConfig::new(10, 0, LeafWork::None),
        Err(ConfigError::ZeroThreshold)
    );
    assert_eq!(
        ServiceConfig::new(0, 1, LeafWork::None),
        Err(ConfigError::NoStudents)
    );
    assert_eq!("".parse::<Mix>(), Err(MixError::Empty));
    assert_eq!("attend=0".parse::<Mix>(), Err(MixError::Empty));
    assert_eq!(
        "attend".parse::<Mix>(),
        Err(MixError::Syntax("attend".into()))
    );
    assert_eq!(
        "dance=1".parse::<Mix>(),
        Err(MixError::Operation("dance".into()))
    );
    assert!("fast".parse::<Strategy>().is_err());
    assert!("io".parse::<LeafWork>().is_err());
    let mix: Mix = "attend=3, statistics=1".parse().unwrap();
    assert_eq!(mix.to_string(), "attend=3,statistics=1");
    assert_eq!(mix.to_string().parse(), Ok(mix));
    assert_eq!(Mix::only(Operation::Expel).to_string(), "expel=1");
    assert_eq!(
        Mix::default().to_string().parse::<Mix>(),
        Ok(Mix::default())
    );
}

#[test]
fn the_checker_catches_each_broken_invariant() {
    let class = |lecture, class, students: &[u32]| ClassSnapshot {
        seat: Seat { lecture, class },
        students: students.to_vec(),
    };
    let broken = Snapshot {
        classes: vec![
            class(0, 0, &[1, 2, 3]),
            class(0, 1, &[3]),
            class(1, 0, &[4, 4]),
        ],
        statistics: Statistics {
            classes: 3,
            students: 5,
        },
    };
    assert_eq!(
        invariants::check(&broken, 2),
        [
            Violation::OverThreshold {
                seat: Seat {
                    lecture: 0,
                    class: 0
                },
                students: 3,
                threshold: 2
            },
            Violation::TwoClasses {
                student: 3,
                first: Seat {
                    lecture: 0,
                    class: 0
                },
                second: Seat {
                    lecture: 0,
                    class: 1
                }
            },
            Violation::TwoClasses {
                student: 4,
                first: Seat {
                    lecture: 1,
                    class: 0
                },
                second: Seat {
                    lecture: 1,
                    class: 0
                }
            },
            Violation::Statistics {
                reported: Statistics {
                    classes: 3,
                    students: 5
                },
                recounted: Statistics {
                    classes: 3,
                    students: 6
                }
            },
        ]
    );
    let fine = Snapshot {
        classes: vec![class(0, 0, &[1, 2])],
        statistics: Statistics {
            classes: 1,
            students: 2,
        },
    };
    assert_eq!(invariants::check(&fine, 2), []);
}

#[test]
fn leaf_work_costs_what_it_says() {
    assert!(LeafWork::None.measure(50) < Duration::from_micros(5));
    let cpu = LeafWork::Cpu.measure(200);
    assert!(
        cpu >= Duration::from_nanos(500) && cpu < Duration::from_micros(50),
        "cpu leaf work took {cpu:?}"
    );
    chainlock_scheduler::leaf_work::lower_timer_slack();
    let blocking = LeafWork::Blocking.measure(20);
    assert!(
        blocking >= Duration::from_micros(50),
        "blocking leaf work took {blocking:?}"
    );
}

/// One thread, one random sequence of operations, four strategies: every result, every
/// seat and every snapshot must be the same, so the strategies implement one semantics.
#[test]
fn every_strategy_gives_the_same_answers_to_the_same_requests() {
    use rand::{Rng, SeedableRng, rngs::SmallRng};

    let services: Vec<Arc<dyn Scheduler>> = Strategy::ALL
        .into_iter()
        .map(|strategy| service(strategy, 40, 3))
        .collect();
    let mut rng = SmallRng::seed_from_u64(11);
    let sorted = |service: &dyn Scheduler| {
        let mut snapshot = service.snapshot();
        snapshot.classes.sort_by_key(|class| class.seat);
        snapshot
    };
    for step in 0..5_000 {
        let student = rng.random_range(0..40);
        let lecture = rng.random_range(0..4); // lecture 3 is never opened
        let class = rng.random_range(0..6);
        let roll = rng.random_range(0..100);
        let answers: Vec<String> = services
            .iter()
            .map(|service| match roll {
                0..70 => format!("{:?}", service.attend(student, lecture)),
                70..85 => format!("{:?}", service.expel(student)),
                85..93 => format!("{:?}", service.cancel_class(lecture, class)),
                93..95 => format!("{:?}", service.cancel_lecture(lecture)),
                95..97 => format!("{:?}", service.open_lecture(lecture)),
                _ => format!("{:?}", service.seat(student)),
            })
            .collect();
        assert!(
            answers.iter().all(|answer| *answer == answers[0]),
            "step {step}: {answers:?}"
        );
        let statistics: Vec<_> = services.iter().map(|s| s.statistics()).collect();
        assert!(
            statistics.iter().all(|s| *s == statistics[0]),
            "step {step}"
        );
        if step % 100 == 0 {
            let snapshots: Vec<_> = services.iter().map(|s| sorted(&**s)).collect();
            assert!(snapshots.iter().all(|s| *s == snapshots[0]), "step {step}");
            assert_consistent(&*services[0]);
        }
    }
}
