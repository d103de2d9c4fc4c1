//! `auth/munge`: every request carries a MUNGE credential, which the receiving daemon hands to
//! munged to learn who sent it (uid and gid as the sending host's munged saw them), and which
//! munged refuses when it is forged, tampered with, expired, from the future or replayed.
//!
//! munged is asked over its socket by [`crate::munge_wire`], the protocol libmunge speaks,
//! rather than through libmunge itself: the commands are static programs, which cannot load
//! a shared library, and nothing but munged is then needed on a host (no libmunge, no -dev
//! package to build).
//!
//! Why a replay cache of our own next to munged's: munged remembers the credentials it decoded
//! only in memory, so a restarted munged would accept, within the credential's time-to-live, a
//! credential captured earlier. The daemon's own cache (keyed by a keyed hash of the
//! credential, kept until the credential expires) closes that window for as long as the daemon
//! runs.
//!
//! `AuthInfo=` takes Slurm's options for auth/munge: `socket=PATH` (a munged other than the
//! default `/run/munge/munge.socket.2`) and `ttl=SECONDS` (the lifetime of the credentials this
//! process creates; munged's default is 300 s). A bare path is Slurm's old spelling of
//! `socket=`.

use crate::munge_wire::{self, MungeClient};
use gsched_proto::auth::{AuthError, Authenticator, Identity, PendingCredential};
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds a decoded credential stays in the replay cache past its own expiry (clock skew
/// between hosts; munged allows the same).
const SKEW_SECS: i64 = 60;
/// The cache is swept of expired entries every this many insertions.
const SWEEP_EVERY: usize = 4096;

/// Options of `AuthInfo=` for auth/munge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MungeOptions {
    /// `socket=PATH`: munged's socket, default libmunge's (`/run/munge/munge.socket.2`).
    pub socket: Option<String>,
    /// `ttl=SECONDS`: lifetime of the credentials this process creates.
    pub ttl: Option<u32>,
}

impl MungeOptions {
    /// Parses `AuthInfo=` (`socket=/run/munge/munge.socket.2,ttl=60`, or a bare socket path).
    pub fn parse(info: &str) -> Result<MungeOptions, AuthError> {
        let mut o = MungeOptions::default();
        let info = info.trim();
        if info.starts_with('/') && !info.contains('=') {
            o.socket = Some(info.to_string());
            return Ok(o);
        }
        for item in info.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            match k.trim().to_ascii_lowercase().as_str() {
                "socket" if !v.is_empty() => o.socket = Some(v.to_string()),
                "ttl" => {
                    let t: u32 = v.trim().parse().ok().filter(|t| *t > 0).ok_or_else(|| {
                        AuthError(format!(
                            "AuthInfo: ttl={v:?} is not a positive number of seconds"
                        ))
                    })?;
                    o.ttl = Some(t);
                }
                "socket" => {
                    return Err(AuthError(
                        "AuthInfo: socket= needs the path of munged's socket".into(),
                    ))
                }
                _ => {
                    return Err(AuthError(format!(
                        "AuthInfo: unknown option {item:?} for auth/munge; valid options: \
                         socket=PATH, ttl=SECONDS"
                    )))
                }
            }
        }
        Ok(o)
    }
}

/// `auth/munge`.
#[derive(Debug)]
pub struct MungeAuth {
    client: MungeClient,
    ttl: u32,
    replay: Mutex<ReplayCache>,
}

impl MungeAuth {
    /// Checks the options; does not contact munged (the daemons start before munged in some
    /// boot orders, and the commands only need it for their request).
    pub fn new(opts: &MungeOptions) -> Result<MungeAuth, AuthError> {
        if let Some(s) = &opts.socket {
            if s.contains('\0') {
                return Err(AuthError(format!(
                    "AuthInfo: socket path {s:?} contains NUL"
                )));
            }
        }
        Ok(MungeAuth {
            client: MungeClient::new(opts.socket.as_deref()),
            ttl: opts.ttl.unwrap_or(0),
            replay: Mutex::new(ReplayCache::default()),
        })
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Authenticator for MungeAuth {
    fn name(&self) -> &'static str {
        "auth/munge"
    }

    fn credential(&self) -> Result<String, AuthError> {
        self.client
            .encode(self.ttl, b"")
            .map_err(|e| encode_failed(e, self.client.socket()))
    }

    fn start_credential(&self) -> PendingCredential {
        let pending = self.client.start_encode(self.ttl, b"");
        let socket = self.client.socket().to_path_buf();
        PendingCredential::new(move || pending.finish().map_err(|e| encode_failed(e, &socket)))
    }

    fn verify(&self, credential: &str) -> Result<Identity, AuthError> {
        check_format(credential)?;
        let decoded = self.client.decode(credential).map_err(refusal)?;
        self.accept(credential, &decoded)
    }

    #[cfg(feature = "async")]
    fn verify_async(
        self: std::sync::Arc<Self>,
        credential: &str,
        _peer: Option<gsched_proto::auth::Peer>,
    ) -> Option<gsched_proto::auth::VerifyFuture> {
        let credential = credential.to_string();
        Some(Box::pin(async move {
            check_format(&credential)?;
            let decoded = self
                .client
                .decode_async(&credential)
                .await
                .map_err(refusal)?;
            self.accept(&credential, &decoded)
        }))
    }
}

impl MungeAuth {
    /// A credential munged found good, unless this daemon has already accepted it.
    fn accept(
        &self,
        credential: &str,
        decoded: &munge_wire::Decoded,
    ) -> Result<Identity, AuthError> {
        let now = now();
        let expires = (i64::from(decoded.encoded_at) + i64::from(decoded.ttl)).max(now) + SKEW_SECS;
        let fresh = self
            .replay
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(credential, expires, now);
        if !fresh {
            return Err(AuthError(
                "MUNGE credential replayed: this daemon has already accepted it".into(),
            ));
        }
        Ok(Identity {
            uid: decoded.uid,
            gid: decoded.gid,
        })
    }
}

/// What to say when no credential could be made.
fn encode_failed(e: munge_wire::MungeError, socket: &std::path::Path) -> AuthError {
    let hint = if e.code == munge_wire::EMUNGE_SOCKET {
        format!(
            "; is munged running and is {} its socket (AuthInfo=socket=PATH)?",
            socket.display()
        )
    } else {
        String::new()
    };
    AuthError(format!("cannot create a MUNGE credential: {e}{hint}"))
}

fn check_format(credential: &str) -> Result<(), AuthError> {
    if credential.starts_with("MUNGE:") {
        Ok(())
    } else {
        Err(AuthError(
            "the credential is not a MUNGE credential (is the sender configured with \
             AuthType=auth/munge?)"
                .into(),
        ))
    }
}

/// What to say of a credential munged refused.
fn refusal(e: munge_wire::MungeError) -> AuthError {
    let what = match e.code {
        munge_wire::EMUNGE_CRED_INVALID => {
            "invalid (forged, tampered with, or made with another key)"
        }
        munge_wire::EMUNGE_CRED_EXPIRED => "expired",
        munge_wire::EMUNGE_CRED_REWOUND => "from the future (check the clocks)",
        munge_wire::EMUNGE_CRED_REPLAYED => "replayed",
        munge_wire::EMUNGE_CRED_UNAUTHORIZED => "not meant for this user",
        munge_wire::EMUNGE_SOCKET => "not checked: munged cannot be reached",
        _ => "refused",
    };
    AuthError(format!(
        "MUNGE credential {what}: {} (munge error {})",
        e.message, e.code
    ))
}

/// Credentials this process accepted, until they expire.
#[derive(Debug, Default)]
pub struct ReplayCache {
    hasher: RandomState,
    seen: HashMap<u64, i64>,
    inserts: usize,
}

impl ReplayCache {
    /// Records `credential` (valid until `expires`); false when it was already recorded and
    /// has not expired.
    pub fn insert(&mut self, credential: &str, expires: i64, now: i64) -> bool {
        self.inserts += 1;
        if self.inserts % SWEEP_EVERY == 0 {
            self.seen.retain(|_, exp| *exp >= now);
        }
        let key = self.hasher.hash_one(credential);
        match self.seen.insert(key, expires) {
            Some(old) if old >= now => {
                // Keep the later expiry of the two.
                self.seen.insert(key, old.max(expires));
                false
            }
            _ => true,
        }
    }

    /// Entries held (tests).
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_info_options() {
        assert_eq!(
            MungeOptions::parse("socket=/tmp/m.sock,ttl=60").unwrap(),
            MungeOptions {
                socket: Some("/tmp/m.sock".into()),
                ttl: Some(60)
            }
        );
        assert_eq!(
            MungeOptions::parse("/run/munge/munge.socket.2")
                .unwrap()
                .socket
                .as_deref(),
            Some("/run/munge/munge.socket.2")
        );
        assert_eq!(MungeOptions::parse("").unwrap(), MungeOptions::default());
        let e = MungeOptions::parse("socket=/x,cred_expire=10")
            .unwrap_err()
            .0;
        assert!(e.contains("unknown option \"cred_expire=10\""), "{e}");
        assert!(MungeOptions::parse("ttl=0").is_err());
        assert!(MungeOptions::parse("ttl=abc").is_err());
        assert!(MungeOptions::parse("socket=").is_err());
    }

    proptest::proptest! {
        #[test]
        fn auth_info_round_trips(
            socket in proptest::option::of("/[a-z0-9/._-]{1,40}"),
            ttl in proptest::option::of(1u32..100_000),
        ) {
            let mut parts = Vec::new();
            if let Some(s) = &socket {
                parts.push(format!("socket={s}"));
            }
            if let Some(t) = ttl {
                parts.push(format!("ttl={t}"));
            }
            let o = MungeOptions::parse(&parts.join(",")).unwrap();
            proptest::prop_assert_eq!(o, MungeOptions { socket, ttl });
        }

        #[test]
        fn auth_info_never_panics(text in "\\PC{0,60}") {
            let _ = MungeOptions::parse(&text);
        }
    }

    #[test]
    fn replay_cache_refuses_until_expiry_and_sweeps() {
        let mut c = ReplayCache::default();
        assert!(c.insert("MUNGE:a", 100, 10));
        assert!(c.insert("MUNGE:b", 100, 10));
        assert!(
            !c.insert("MUNGE:a", 100, 50),
            "a replay within the lifetime"
        );
        assert!(
            c.insert("MUNGE:a", 300, 101),
            "after expiry it is a new credential"
        );
        assert_eq!(c.len(), 2);
        for i in 0..SWEEP_EVERY {
            c.insert(&format!("MUNGE:x{i}"), 200, 150);
        }
        // The sweep at now=150 dropped b (expired at 100) but kept a (300).
        assert!(!c.insert("MUNGE:a", 400, 160));
        assert!(c.len() < SWEEP_EVERY + 2);
    }
}
