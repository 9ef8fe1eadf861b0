//! TLS to PostgreSQL (feature `postgres-tls`) against the test server, which `scripts/pg.sh`
//! starts with `ssl=on` and a certificate signed by a CA of its own: a verified connection
//! locks over TLS; a CA that did not sign the server's certificate is refused with
//! [`Error::Tls`] before anything is sent.
#![cfg(feature = "postgres-tls")]

mod distributed_common;

use chainlock::distributed::{Error, LockClient, PostgresOptions};
use distributed_common::{pg_url, runtime};

/// `(CHAINLOCK_PG_TLS_URL, CHAINLOCK_PG_TLS_CA, CHAINLOCK_PG_TLS_WRONG_CA)`, set by
/// `scripts/pg.sh`; `None` (a skipped test) outside CI when no server was started.
fn tls_server() -> Option<(String, String, String)> {
    pg_url()?;
    let var = |name: &str| {
        std::env::var(name)
            .unwrap_or_else(|_| panic!("{name} is not set: start the server with scripts/pg.sh"))
    };
    Some((
        var("CHAINLOCK_PG_TLS_URL"),
        var("CHAINLOCK_PG_TLS_CA"),
        var("CHAINLOCK_PG_TLS_WRONG_CA"),
    ))
}

#[test]
fn a_verified_tls_connection_locks_over_tls() {
    let Some((url, ca, _)) = tls_server() else {
        return;
    };
    let plain_url = pg_url().unwrap();
    let key = (i32::try_from(std::process::id()).unwrap(), 5);
    runtime().block_on(async {
        let options = PostgresOptions::new(&url)
            .unwrap()
            .tls_root_certificates(&ca)
            .unwrap();
        assert!(options.uses_tls());
        let locks = LockClient::postgres_with(options).await.unwrap();
        let guard = locks.lock(key).await.unwrap();
        // The session that holds the lock is encrypted, as the server sees it.
        let (observer, connection) = tokio_postgres::connect(&plain_url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let row = observer
            .query_one(
                "SELECT s.ssl, s.version FROM pg_locks l JOIN pg_stat_ssl s USING (pid) \
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
                 AND l.classid::bigint = $1 AND l.objid::bigint = $2",
                &[&i64::from(key.0), &i64::from(key.1)],
            )
            .await
            .unwrap();
        let (ssl, version): (bool, Option<String>) = (row.get(0), row.get(1));
        assert!(ssl, "the holder's session is TLS");
        eprintln!("holder's session: {version:?}");
        assert!(!guard.is_lost());
        guard.release().await.unwrap();
        assert!(locks.try_lock(key).await.unwrap().is_some());
    });
}

#[test]
fn a_certificate_from_another_ca_is_refused_with_a_typed_error() {
    let Some((url, _, wrong_ca)) = tls_server() else {
        return;
    };
    runtime().block_on(async {
        let options = PostgresOptions::new(&url)
            .unwrap()
            .tls_root_certificates(&wrong_ca)
            .unwrap();
        let refused = LockClient::postgres_with(options).await.unwrap_err();
        assert!(
            matches!(&refused, Error::Tls(message) if message.contains("UnknownIssuer")),
            "{refused:?}"
        );
        eprintln!("refused: {refused}");
    });
}

#[test]
fn the_plain_url_gets_tls_too_once_asked_for() {
    // `sslmode` absent (prefer) in the URL: asking for TLS makes it required and verified.
    let Some((_, ca, wrong_ca)) = tls_server() else {
        return;
    };
    let plain_url = pg_url().unwrap();
    runtime().block_on(async {
        let verified = PostgresOptions::new(&plain_url)
            .unwrap()
            .tls_root_certificates(&ca)
            .unwrap();
        LockClient::postgres_with(verified).await.unwrap();
        let wrong = PostgresOptions::new(&plain_url)
            .unwrap()
            .tls_root_certificates(&wrong_ca)
            .unwrap();
        let refused = LockClient::postgres_with(wrong).await.unwrap_err();
        assert!(matches!(refused, Error::Tls(_)), "{refused:?}");
    });
}

#[test]
fn unusable_roots_are_a_typed_error() {
    let dir = std::env::temp_dir().join(format!("chainlock-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let options = PostgresOptions::new("postgres://locks@db.internal/app").unwrap();
    let missing = options
        .clone()
        .tls_root_certificates(dir.join("missing.pem"))
        .unwrap_err();
    assert!(matches!(missing, Error::Tls(_)), "{missing:?}");
    let none = options.tls_root_certificates(&empty).unwrap_err();
    assert!(matches!(none, Error::Tls(_)), "{none:?}");
    std::fs::remove_dir_all(&dir).ok();
}
