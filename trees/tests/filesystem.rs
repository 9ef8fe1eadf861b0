//! The file system under concurrent clients: every operation kind on a small, colliding
//! namespace, then the checker (no node reachable twice, bytes add up, nothing written to a
//! removed file after its `rm -r` returned); and the operations' answers one by one.

use chainlock_trees::{FileSystem, FsError, Rng};
use std::time::Duration;

#[test]
fn operations_answer_as_a_file_system_does() {
    let fs = FileSystem::new(Duration::ZERO);
    assert_eq!(fs.create("/a", "f"), Err(FsError::NotFound));
    fs.mkdir_p("/a/b").unwrap();
    fs.mkdir_p("/a/b").unwrap(); // idempotent
    fs.create("/a", "f").unwrap();
    assert_eq!(fs.create("/a", "f"), Err(FsError::Exists));
    assert_eq!(fs.mkdir_p("/a/f/g"), Err(FsError::NotADirectory));
    assert_eq!(fs.write("/a/b", b"x"), Err(FsError::IsADirectory));
    fs.write("/a/f", b"hello").unwrap();
    assert_eq!(fs.read("/a/f").unwrap(), b"hello");
    assert_eq!(fs.stat("/a/f"), Ok(5));
    assert_eq!(fs.list("/a").unwrap(), ["b", "f"]);
    fs.rename("/a", "f", "g").unwrap();
    assert_eq!(fs.rename("/a", "f", "h"), Err(FsError::NotFound));
    assert_eq!(fs.rename("/a", "g", "b"), Err(FsError::Exists));
    assert_eq!(fs.read("/a/g").unwrap(), b"hello");
    fs.remove_all("/a").unwrap();
    assert_eq!(fs.read("/a/g"), Err(FsError::NotFound));
    assert_eq!(fs.list("/"), Ok(vec![]));
    assert_eq!(fs.bytes(), (5, 5));
    // Hostile names and paths are refused, never stored where no path can reach them.
    for bad in ["", ".", "..", "a/b"] {
        assert_eq!(fs.create("/", bad), Err(FsError::InvalidName), "{bad:?}");
    }
    assert_eq!(fs.mkdir_p("/x/../y"), Err(FsError::InvalidName));
    assert_eq!(fs.read("/./x"), Err(FsError::InvalidName));
    assert_eq!(fs.remove_all("/"), Err(FsError::Root));
    assert_eq!(fs.remove_all("//"), Err(FsError::Root));
    fs.mkdir_p("/k").unwrap();
    assert_eq!(
        fs.rename("/", "k", "k"),
        Ok(()),
        "a rename to its own name does nothing"
    );
    assert_eq!(fs.rename("/", "k", "a/b"), Err(FsError::InvalidName));
    assert_eq!(fs.list("/"), Ok(vec!["k".to_string()]));
    assert_eq!(fs.removed_files(), 1);
    assert!(fs.check().is_empty());
}

#[test]
fn concurrent_clients_leave_no_violation() {
    const CLIENTS: u64 = 8;
    const OPS: u64 = 10_000;
    let fs = FileSystem::new(Duration::ZERO);
    let successes: u64 = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let fs = &fs;
                scope.spawn(move || {
                    let mut rng = Rng::new(client);
                    let mut ok = 0;
                    for _ in 0..OPS {
                        ok += u64::from(fs.random_operation(&mut rng).is_ok());
                    }
                    ok
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().unwrap())
            .sum()
    });
    assert_eq!(fs.check(), Vec::<String>::new());
    let (written, removed) = fs.bytes();
    assert!(
        successes > 0 && written > 0 && removed > 0,
        "the load exercised writes and rm -r"
    );
}
