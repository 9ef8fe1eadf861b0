//! The servers the distributed locks talk to, as their clients judge them now: [`Endpoint`]
//! in [`Live::endpoints`](super::Live::endpoints).
//!
//! A client registers its endpoints once, when it connects (a weak reference: nothing is kept
//! after the client is dropped), whether or not recording is enabled: its judgement is read
//! only when [`live`](super::live) is called, so this costs nothing per request.

use parking_lot::Mutex;
use std::fmt;
use std::sync::Weak;

/// One server endpoint of a live distributed-lock client, and how the client judges it now.
///
/// Today the etcd backend reports each member of its cluster (a hung or cut-off member shows
/// as [`EndpointState::Unhealthy`] while the client sends its requests elsewhere).
///
/// ```
/// for endpoint in &chainlock::telemetry::live().endpoints {
///     if endpoint.state != chainlock::telemetry::EndpointState::Healthy {
///         println!("{endpoint}");
///     }
/// }
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The backend (`"etcd"`).
    pub backend: &'static str,
    /// The endpoint as the client was given it.
    pub address: String,
    /// How the client judges it now.
    pub state: EndpointState,
    /// How many times the client has judged it unhealthy since it connected.
    pub judged_unhealthy: u64,
}

/// How a client judges one of its endpoints.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointState {
    /// It answers; requests may go to it.
    Healthy,
    /// Its last attempt or probe timed out or failed in a way that asking again may cure;
    /// requests go to another endpoint while one is healthy.
    Unhealthy,
    /// The client has no connection to it yet (it never answered).
    NotConnected,
}

impl fmt::Display for EndpointState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EndpointState::Healthy => "healthy",
            EndpointState::Unhealthy => "unhealthy",
            EndpointState::NotConnected => "not connected",
        })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} (judged unhealthy {} times)",
            self.backend, self.address, self.state, self.judged_unhealthy
        )
    }
}

/// A client's endpoints, read when [`live`](super::live) is called.
pub(crate) trait EndpointSource: Send + Sync {
    /// Appends this client's endpoints to `out`.
    fn endpoints(&self, out: &mut Vec<Endpoint>);
}

/// Every registered client; dropped ones are pruned when read.
static SOURCES: Mutex<Vec<Weak<dyn EndpointSource>>> = Mutex::new(Vec::new());

/// Registers a client's endpoints for as long as `source` lives.
#[cfg_attr(not(feature = "etcd"), allow(dead_code))] // the etcd backend's members call it
pub(crate) fn register(source: Weak<dyn EndpointSource>) {
    let mut sources = SOURCES.lock();
    // Pruned here too, so that clients made and dropped with `live` never called do not
    // accumulate.
    sources.retain(|source| source.strong_count() > 0);
    sources.push(source);
}

/// The endpoints of every live client, in registration order.
pub(super) fn snapshot() -> Vec<Endpoint> {
    let sources: Vec<_> = {
        let mut sources = SOURCES.lock();
        sources.retain(|source| source.strong_count() > 0);
        sources.iter().filter_map(Weak::upgrade).collect()
    };
    // Read outside the registry's lock: a source's own locks are never taken under it.
    let mut endpoints = Vec::new();
    for source in sources {
        source.endpoints(&mut endpoints);
    }
    endpoints
}

#[cfg(test)]
mod tests {
    use super::{Endpoint, EndpointSource, EndpointState, register, snapshot};
    use std::sync::Arc;

    struct Fixed(&'static str, EndpointState);

    impl EndpointSource for Fixed {
        fn endpoints(&self, out: &mut Vec<Endpoint>) {
            out.push(Endpoint {
                backend: "test",
                address: self.0.to_owned(),
                state: self.1,
                judged_unhealthy: 2,
            });
        }
    }

    fn mine(address: &str) -> Vec<Endpoint> {
        snapshot()
            .into_iter()
            .filter(|endpoint| endpoint.address == address)
            .collect()
    }

    /// A live source is read; a dropped one is gone from the next snapshot.
    #[test]
    fn a_dropped_client_leaves_no_endpoint() {
        let source: Arc<dyn EndpointSource> =
            Arc::new(Fixed("endpoints-test:1", EndpointState::Unhealthy));
        register(Arc::downgrade(&source));
        let seen = mine("endpoints-test:1");
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].state, EndpointState::Unhealthy);
        assert_eq!(
            seen[0].to_string(),
            "test endpoints-test:1 unhealthy (judged unhealthy 2 times)"
        );
        drop(source);
        assert!(mine("endpoints-test:1").is_empty());
    }
}
