//! The network actor: every connection attempt of a run goes through the policy and onto
//! the tape, allowed or not.

use serde::Serialize;

use super::policy::{Allowed, NetError, Network};
use crate::actor::{Actor, ActorContext, ActorRef, Answer};

/// A request to the [`NetActor`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetRequest {
    /// Open a connection to `host` on `port` (operation `connect`).
    Connect {
        /// The host as the pipeline names it.
        host: String,
        /// The port.
        port: u16,
    },
}

/// The network actor: answers each [`NetRequest::Connect`] with the policy's decision.
///
/// The decision takes no virtual time (latency 0): the policy is a local check, and the
/// time a real connection takes belongs to whatever actor carries the traffic. The
/// `request` and `reply` records of one attempt therefore share a timestamp.
///
/// ```
/// use simtape::cap::net::{NetActor, NetHandle, Network};
///
/// let mut builder = simtape::Sim::builder();
/// let net = NetHandle::new(builder.actor("net", NetActor::new(Network::deny().allow("*.corp"))));
/// let report = builder.build().unwrap().run(move |_host| async move {
///     (net.connect("git.corp", 22).await.is_ok(), net.connect("corp", 22).await.is_ok())
/// }).unwrap();
/// assert_eq!(report.output, (true, false));
/// ```
#[derive(Debug, Clone)]
pub struct NetActor {
    network: Network,
}

impl NetActor {
    /// Returns an actor enforcing `network`.
    pub fn new(network: Network) -> NetActor {
        NetActor { network }
    }

    /// Returns the policy it enforces.
    pub fn network(&self) -> &Network {
        &self.network
    }
}

impl Actor for NetActor {
    type Request = NetRequest;
    // The reply record is this `Result` as serde writes it: `{"Ok": allowed}` or
    // `{"Err": {"denied": …}}`, so the decision is on the tape either way.
    type Response = Result<Allowed, NetError>;

    fn operation(&self, request: &NetRequest) -> &'static str {
        match request {
            NetRequest::Connect { .. } => "connect",
        }
    }

    fn handle(
        &mut self,
        request: &NetRequest,
        _: &mut ActorContext<'_>,
    ) -> Answer<Result<Allowed, NetError>> {
        let NetRequest::Connect { host, port } = request;
        Answer {
            latency_ns: 0,
            response: self.network.check(host, *port),
        }
    }
}

/// The typed handle pipeline code dials through (see [`NetActor`] for an example).
#[derive(Debug, Clone, Copy)]
pub struct NetHandle(ActorRef<NetActor>);

impl NetHandle {
    /// Wraps the reference [`Builder::actor`](crate::Builder::actor) returned.
    pub fn new(actor: ActorRef<NetActor>) -> NetHandle {
        NetHandle(actor)
    }

    /// Returns the underlying actor reference.
    pub fn actor(&self) -> ActorRef<NetActor> {
        self.0
    }

    /// Asks the policy for a connection to `host` on `port`; the attempt is recorded on the
    /// tape whatever the answer.
    pub async fn connect(&self, host: &str, port: u16) -> Result<Allowed, NetError> {
        let request = NetRequest::Connect {
            host: host.to_string(),
            port,
        };
        self.0.call(request).await
    }
}

impl From<ActorRef<NetActor>> for NetHandle {
    fn from(actor: ActorRef<NetActor>) -> NetHandle {
        NetHandle::new(actor)
    }
}
