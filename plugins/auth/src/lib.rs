//! Authentication plugins, chosen by `AuthType=` in gsched.conf.
//!
//! * `auth/none`: the single-user local mode. A credential is just the caller's uid and gid;
//!   the server accepts only its own uid, and the daemons refuse to start with it unless they
//!   listen on loopback. It proves nothing, so it is for one user's laptop or a test cluster.
//! * `auth/munge` arrives with the security work (MUNGE credentials on every request); until
//!   then asking for it fails at start-up with a clear message.
//!
//! New plugins are added to [`by_name`], which is the only place names are mapped to code.

use gsched_proto::auth::{AuthError, Authenticator, Identity};
use std::sync::Arc;

/// Names accepted by `AuthType=`.
pub const VALID_NAMES: &[&str] = &["auth/none", "auth/munge"];

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("AuthType={0} is not a known authentication plugin; valid names: {valid}", valid = VALID_NAMES.join(", "))]
    Unknown(String),
    #[error("AuthType=auth/munge is not available in this build yet; use AuthType=auth/none for a single-user cluster on loopback")]
    MungeUnavailable,
}

/// The plugin for `AuthType=name`, acting for the current process.
pub fn by_name(name: &str) -> Result<Arc<dyn Authenticator>, PluginError> {
    match name.to_ascii_lowercase().as_str() {
        "auth/none" | "none" => Ok(Arc::new(NoneAuth::current())),
        "auth/munge" | "munge" => Err(PluginError::MungeUnavailable),
        _ => Err(PluginError::Unknown(name.to_string())),
    }
}

/// `auth/none`: the credential names the caller's uid and gid; the server accepts only
/// credentials of its own uid.
#[derive(Debug, Clone)]
pub struct NoneAuth {
    uid: u32,
    gid: u32,
}

impl NoneAuth {
    /// Acting as this process's real uid and gid.
    pub fn current() -> NoneAuth {
        let (uid, gid) = current_ids();
        NoneAuth { uid, gid }
    }

    /// A fixed identity (tests).
    pub fn with_ids(uid: u32, gid: u32) -> NoneAuth {
        NoneAuth { uid, gid }
    }
}

impl Authenticator for NoneAuth {
    fn name(&self) -> &'static str {
        "auth/none"
    }

    fn credential(&self) -> Result<String, AuthError> {
        Ok(format!("none:{}:{}", self.uid, self.gid))
    }

    fn verify_blocks(&self) -> bool {
        false
    }

    fn verify(&self, credential: &str) -> Result<Identity, AuthError> {
        let bad = || AuthError(format!("malformed auth/none credential {credential:?}"));
        let rest = credential.strip_prefix("none:").ok_or_else(bad)?;
        let (u, g) = rest.split_once(':').ok_or_else(bad)?;
        let uid: u32 = u.parse().map_err(|_| bad())?;
        let gid: u32 = g.parse().map_err(|_| bad())?;
        if uid != self.uid {
            return Err(AuthError(format!(
                "auth/none accepts only uid {} (the daemon's own user), not uid {uid}; \
                 configure AuthType=auth/munge for a multi-user cluster",
                self.uid
            )));
        }
        Ok(Identity { uid, gid })
    }
}

fn current_ids() -> (u32, u32) {
    // getuid/getgid cannot fail; the only reason for unsafe here is the FFI call itself.
    #[allow(unsafe_code)]
    // SAFETY: getuid(2) and getgid(2) take no arguments, touch no memory and always succeed.
    unsafe {
        (libc::getuid(), libc::getgid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_round_trip_and_refusals() {
        let a = NoneAuth::with_ids(1000, 1000);
        let c = a.credential().unwrap();
        assert_eq!(
            a.verify(&c).unwrap(),
            Identity {
                uid: 1000,
                gid: 1000
            }
        );
        let other = NoneAuth::with_ids(1001, 1001).credential().unwrap();
        assert!(a
            .verify(&other)
            .unwrap_err()
            .0
            .contains("accepts only uid 1000"));
        assert!(a.verify("munge:xyz").is_err());
        assert!(a.verify("none:1:").is_err());
    }

    #[test]
    fn unknown_plugin_lists_valid_names() {
        let e = by_name("auth/jwt").err().unwrap().to_string();
        assert!(e.contains("auth/none, auth/munge"), "{e}");
        assert!(by_name("auth/none").is_ok());
    }
}
