//! The connection to the cluster: connecting (one healthy member is enough, and refused
//! credentials, certificates or an unreachable cluster show at once), and the backend's
//! bounded requests (`request.rs` sends them).

use super::super::Error;
use super::lease::ClientLease;
use super::members::{self, Members};
use super::request::{ATTEMPT, request_on};
use super::retry::deadline_in;
use super::{EtcdBackend, EtcdOptions, Inner};
use etcd_client::Client;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

impl EtcdBackend {
    /// Connects within `connect_timeout`: returns as soon as one member answers (the others
    /// are connected and judged in the background), or with the first error that no member
    /// can cure (refused credentials or certificate, an invalid endpoint).
    pub(in crate::distributed) async fn connect(
        options: EtcdOptions,
        runtime: Handle,
    ) -> Result<Self, Error> {
        let (endpoints, connect) = options.connection();
        if endpoints.is_empty() {
            return Err(Error::Etcd(etcd_client::Error::InvalidArgs(
                "empty endpoints".to_owned(),
            )));
        }
        let limit = options.connect_timeout;
        let unresponsive = Error::EtcdUnresponsive {
            operation: "connect",
            after: limit,
        };
        let deadline = deadline_in(limit);
        let members = Arc::new(Members::new(endpoints, options.attempt_timeout));
        // Every member at once; each retried on transient errors until the deadline.
        let (sender, mut answers) = tokio::sync::mpsc::unbounded_channel();
        for index in 0..members.len() {
            let (members, connect, sender) = (members.clone(), connect.clone(), sender.clone());
            drop(runtime.spawn(async move {
                let outcome = loop {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    let outcome =
                        members::probe(&members, index, &connect, left.min(ATTEMPT)).await;
                    match outcome {
                        Err(error) if !members::is_final(&error) => {
                            let pause = tokio::time::Instant::now() + Duration::from_millis(50);
                            if pause >= deadline {
                                break Err(error);
                            }
                            tokio::time::sleep_until(pause).await;
                        }
                        other => break other,
                    }
                };
                sender.send((index, outcome)).ok();
            }));
        }
        drop(sender);
        loop {
            match tokio::time::timeout_at(deadline, answers.recv()).await {
                Ok(Some((index, Ok(())))) => {
                    members.prefer(index);
                    break;
                }
                Ok(Some((_, Err(error)))) if members::is_final(&error) => return Err(error),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return Err(unresponsive),
            }
        }
        // The members' judgement, for `telemetry::live` while the client lives.
        #[cfg(feature = "telemetry")]
        crate::telemetry::endpoints::register(Arc::downgrade(&members) as _);
        drop(runtime.spawn(members::watch_over(
            Arc::downgrade(&members),
            connect,
            options.probe_interval,
        )));
        Ok(Self(Arc::new(Inner {
            members,
            options,
            runtime,
            lease: ClientLease::new(),
        })))
    }

    /// `call` with a client of a healthy member, retried on transient errors (on another
    /// member at once while one is healthy) until `request_timeout` passed.
    pub(super) async fn call<T, F, Fut>(&self, operation: &'static str, call: F) -> Result<T, Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.call_on(operation, call).await.map(|(value, _)| value)
    }

    /// [`call`](Self::call), and which member answered.
    pub(super) async fn call_on<T, F, Fut>(
        &self,
        operation: &'static str,
        call: F,
    ) -> Result<(T, usize), Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        request_on(
            &self.0.members,
            self.0.options.request_timeout,
            operation,
            call,
        )
        .await
    }
}
