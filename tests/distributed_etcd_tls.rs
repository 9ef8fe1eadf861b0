//! TLS to etcd (feature `etcd-tls`) against the single-member clusters that `scripts/etcd.sh`
//! starts beside the three-member one: one with a server certificate signed by a CA of its
//! own, one that also requires a client certificate (`--client-cert-auth`). A verified
//! connection locks over TLS and excludes `etcdctl lock` over TLS; a CA that did not sign the
//! member's certificate, or a missing client certificate, is refused with
//! [`Error::EtcdTls`] within the connect timeout.
#![cfg(feature = "etcd-tls")]

mod distributed_common;

use chainlock::distributed::{Error, EtcdOptions, LockClient};
use distributed_common::{runtime, unique, wait_for};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test.sh, or \
             `bash scripts/etcd.sh cargo test --features etcd-tls --test distributed_etcd_tls`"
        )
    })
}

/// `etcdctl` against the TLS member, verifying it with the test CA.
fn etcdctl() -> Command {
    let mut command = Command::new("etcdctl");
    command.env("ETCDCTL_API", "3").args([
        format!("--endpoints={}", var("CHAINLOCK_ETCD_TLS_ENDPOINT")),
        format!("--cacert={}", var("CHAINLOCK_ETCD_TLS_CA")),
    ]);
    command
}

fn queue(name: &str) -> Vec<String> {
    let out = etcdctl()
        .args(["get", &format!("{name}/"), "--prefix", "--keys-only"])
        .output()
        .unwrap();
    assert!(out.status.success(), "etcdctl get: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

#[test]
fn a_verified_tls_connection_locks_and_excludes_etcdctl_over_tls() {
    let name = unique("etcd-tls");
    runtime().block_on(async {
        let options = EtcdOptions::new([var("CHAINLOCK_ETCD_TLS_ENDPOINT")])
            .ttl(Duration::from_secs(5))
            .tls_root_certificates(var("CHAINLOCK_ETCD_TLS_CA"))
            .unwrap();
        assert!(options.uses_tls());
        let locks = LockClient::etcd_with(options).await.unwrap();
        let guard = locks.lock(&name).await.unwrap();
        // etcdctl over TLS sees chainlock's key, queues behind it, and gets the name on release.
        assert_eq!(queue(&name).len(), 1);
        let mut child = etcdctl()
            // A short session TTL: should its revocation on SIGINT not get through, the name
            // is free 3 s later all the same.
            .args(["lock", "--ttl=3", &name])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let etcdctl_lock = Killed(child);
        let name2 = name.clone();
        tokio::task::spawn_blocking(move || {
            wait_for("etcdctl's key", Duration::from_secs(10), || {
                queue(&name2).len() == 2
            });
        })
        .await
        .unwrap();
        let token = guard.token().get();
        guard.release().await.unwrap();
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            line
        })
        .await
        .unwrap();
        assert!(
            line.starts_with(&format!("{name}/")),
            "etcdctl printed {line:?}"
        );
        // etcdctl holds: chainlock does not get the name until etcdctl lets go.
        assert!(locks.try_lock(&name).await.unwrap().is_none());
        Command::new("kill")
            .args(["-INT", &etcdctl_lock.0.id().to_string()])
            .status()
            .unwrap();
        let start = Instant::now();
        let guard = locks
            .try_lock_for(&name, Duration::from_secs(15))
            .await
            .unwrap()
            .expect("the name after etcdctl");
        eprintln!("the name after etcdctl's SIGINT in {:?}", start.elapsed());
        assert!(guard.token().get() > token);
        guard.release().await.unwrap();
    });
}

#[test]
fn an_http_endpoint_is_asked_for_over_tls_once_tls_is_on() {
    let endpoint = var("CHAINLOCK_ETCD_TLS_ENDPOINT").replacen("https://", "http://", 1);
    let name = unique("etcd-tls-http");
    runtime().block_on(async {
        let options = EtcdOptions::new([endpoint])
            .tls_root_certificates(var("CHAINLOCK_ETCD_TLS_CA"))
            .unwrap();
        let locks = LockClient::etcd_with(options).await.unwrap();
        let guard = locks.try_lock(&name).await.unwrap().expect("a free name");
        guard.release().await.unwrap();
    });
}

#[test]
fn a_certificate_from_another_ca_is_refused_with_a_typed_error_in_time() {
    runtime().block_on(async {
        let options = EtcdOptions::new([var("CHAINLOCK_ETCD_TLS_ENDPOINT")])
            .connect_timeout(Duration::from_secs(20))
            .tls_root_certificates(var("CHAINLOCK_ETCD_TLS_WRONG_CA"))
            .unwrap();
        let start = Instant::now();
        let refused = LockClient::etcd_with(options).await.unwrap_err();
        let took = start.elapsed();
        assert!(
            matches!(&refused, Error::EtcdTls(message) if message.contains("UnknownIssuer")),
            "{refused:?}"
        );
        // Refused, not retried until the connect timeout.
        assert!(took < Duration::from_secs(10), "refused after {took:?}");
        eprintln!("refused after {took:?}: {refused}");
    });
}

#[test]
fn without_tls_a_tls_member_is_not_reached() {
    // Plain HTTP/2 to a TLS listener: no answer the client understands, within the bound.
    let endpoint = var("CHAINLOCK_ETCD_TLS_ENDPOINT").replacen("https://", "http://", 1);
    runtime().block_on(async {
        let options = EtcdOptions::new([endpoint]).connect_timeout(Duration::from_secs(3));
        assert!(!options.uses_tls());
        let start = Instant::now();
        let refused = LockClient::etcd_with(options).await.unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(8), "{refused:?}");
        assert!(
            matches!(refused, Error::EtcdUnresponsive { .. } | Error::Etcd(_)),
            "{refused:?}"
        );
    });
}

#[test]
fn mutual_tls_locks_with_a_client_certificate_and_is_refused_without() {
    let endpoint = var("CHAINLOCK_ETCD_MTLS_ENDPOINT");
    let name = unique("etcd-mtls");
    runtime().block_on(async {
        let options = EtcdOptions::new([endpoint.clone()])
            .tls_client_certificate(
                var("CHAINLOCK_ETCD_TLS_CLIENT_CERT"),
                var("CHAINLOCK_ETCD_TLS_CLIENT_KEY"),
            )
            .unwrap()
            .tls_root_certificates(var("CHAINLOCK_ETCD_TLS_CA"))
            .unwrap();
        let locks = LockClient::etcd_with(options).await.unwrap();
        let guard = locks.try_lock(&name).await.unwrap().expect("a free name");
        assert!(locks.try_lock(&name).await.unwrap().is_none());
        guard.release().await.unwrap();

        // TLS 1.3: the member refuses the missing certificate after the client's handshake,
        // by closing the connection (the reason does not reach the client): no client is
        // made, and the call returns within its connect timeout.
        let anonymous = EtcdOptions::new([endpoint])
            .connect_timeout(Duration::from_secs(3))
            .tls_root_certificates(var("CHAINLOCK_ETCD_TLS_CA"))
            .unwrap();
        let start = Instant::now();
        let refused = LockClient::etcd_with(anonymous).await.unwrap_err();
        let took = start.elapsed();
        assert!(
            matches!(
                &refused,
                Error::EtcdTls(_)
                    | Error::EtcdUnresponsive {
                        operation: "connect",
                        ..
                    }
            ),
            "{refused:?}"
        );
        assert!(took < Duration::from_secs(8), "refused after {took:?}");
        eprintln!("refused after {took:?}: {refused}");
    });
}

#[test]
fn unusable_certificate_files_are_a_typed_error() {
    let dir = std::env::temp_dir().join(format!("chainlock-etcd-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let options = EtcdOptions::new(["https://127.0.0.1:2379"]);
    let missing = options
        .clone()
        .tls_root_certificates(dir.join("missing.pem"))
        .unwrap_err();
    assert!(matches!(missing, Error::EtcdTls(_)), "{missing:?}");
    let none = options.clone().tls_root_certificates(&junk).unwrap_err();
    assert!(matches!(none, Error::EtcdTls(_)), "{none:?}");
    let no_key = options
        .tls_client_certificate(&junk, dir.join("missing.key"))
        .unwrap_err();
    assert!(matches!(no_key, Error::EtcdTls(_)), "{no_key:?}");
    std::fs::remove_dir_all(&dir).ok();
}
