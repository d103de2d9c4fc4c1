//! The authentication hook of the API, in one place: every outgoing request gets a credential
//! from an [`Authenticator`], every server verifies the credential of every incoming request
//! with the same trait. Implementations (auth/none, auth/munge) live in `plugins/auth` and are
//! chosen by `AuthType=` in the config.

use std::fmt;
use std::net::SocketAddr;

/// The two ends of the TCP connection a request came on, as the server sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The sender's address and port.
    pub remote: SocketAddr,
    /// The server's own address and port of this connection.
    pub local: SocketAddr,
}

/// Who sent a request, as proven by its credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthError(pub String);

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AuthError {}

/// An authentication plugin (`AuthType=auth/<name>`).
pub trait Authenticator: Send + Sync {
    /// `auth/none`, `auth/munge`.
    fn name(&self) -> &'static str;
    /// A credential for a request this process sends.
    fn credential(&self) -> Result<String, AuthError>;
    /// Starts making a credential and returns before it is made, so that the caller can
    /// connect to the server meanwhile (auth/munge: munged works on it while the connection
    /// is set up); [`PendingCredential::finish`] returns it. The default makes it at once.
    fn start_credential(&self) -> PendingCredential {
        PendingCredential::ready(self.credential())
    }
    /// Checks a credential from a request this process received.
    fn verify(&self, credential: &str) -> Result<Identity, AuthError>;
    /// Checks a credential that came on the connection `peer`. Servers call this one; the
    /// default ignores the connection (a MUNGE credential proves the sender by itself), and
    /// auth/none uses it to learn who really holds the other end.
    fn verify_from(&self, credential: &str, peer: Option<Peer>) -> Result<Identity, AuthError> {
        let _ = peer;
        self.verify(credential)
    }
    /// Whether `verify` may block (talk to another daemon); servers then call it off their
    /// async threads.
    fn verify_blocks(&self) -> bool {
        true
    }
    /// `verify_from` as a future that waits without blocking its thread, for plugins that
    /// can ask their daemon asynchronously (auth/munge in the daemons); `None` (the default)
    /// when the plugin cannot, and servers then use `verify_from` as `verify_blocks` says.
    ///
    /// Why: a server on one async thread would otherwise hand every request's check to a
    /// blocking thread and take the answer back, two thread wake-ups per request, which cost
    /// a lone client's submission loop about a tenth of its time (bench/RESULTS.md, "A
    /// submission's wake-ups").
    fn verify_async(
        self: std::sync::Arc<Self>,
        credential: &str,
        peer: Option<Peer>,
    ) -> Option<VerifyFuture> {
        let _ = (credential, peer);
        None
    }
}

/// A credential on its way ([`Authenticator::start_credential`]).
pub struct PendingCredential(Box<dyn FnOnce() -> Result<String, AuthError> + Send>);

impl PendingCredential {
    /// One already made (or that could not be).
    pub fn ready(credential: Result<String, AuthError>) -> PendingCredential {
        PendingCredential(Box::new(move || credential))
    }

    /// One that `finish` waits for.
    pub fn new(
        finish: impl FnOnce() -> Result<String, AuthError> + Send + 'static,
    ) -> PendingCredential {
        PendingCredential(Box::new(finish))
    }

    /// Waits for the credential.
    pub fn finish(self) -> Result<String, AuthError> {
        (self.0)()
    }
}

impl fmt::Debug for PendingCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PendingCredential")
    }
}

/// What [`Authenticator::verify_async`] returns.
pub type VerifyFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Identity, AuthError>> + Send>>;
