//! Authentication plugins, chosen by `AuthType=` in gsched.conf.
//!
//! * `auth/none`: the single-user local mode. A credential is just the caller's uid and gid;
//!   the server accepts only its own uid, and the daemons refuse to start with it unless they
//!   listen on loopback. It proves nothing, so it is for one user's laptop or a test cluster.
//! * `auth/munge` (the default): a MUNGE credential on every request, verified by munged
//!   ([`munge`]); uid and gid come from the credential, so any number of users may share the
//!   cluster.
//!
//! New plugins are added to [`by_name`], which is the only place names are mapped to code.

pub mod munge;

use gsched_proto::auth::{AuthError, Authenticator, Identity};
use gsched_proto::config::{AuthType, Config};
use std::sync::Arc;

/// Names accepted by `AuthType=`.
pub const VALID_NAMES: &[&str] = &["auth/none", "auth/munge"];

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("AuthType={0} is not a known authentication plugin; valid names: {valid}", valid = VALID_NAMES.join(", "))]
    Unknown(String),
    #[error("{0}")]
    Munge(AuthError),
    #[error(
        "AuthInfo={0} is for AuthType=auth/munge; auth/none takes no options, remove AuthInfo="
    )]
    InfoForNone(String),
}

/// The plugin for `AuthType=name` with `AuthInfo=info`, acting for the current process.
pub fn by_name_with(name: &str, info: Option<&str>) -> Result<Arc<dyn Authenticator>, PluginError> {
    match name.to_ascii_lowercase().as_str() {
        "auth/none" | "none" => match info {
            Some(i) if !i.trim().is_empty() => Err(PluginError::InfoForNone(i.to_string())),
            _ => Ok(Arc::new(NoneAuth::current())),
        },
        "auth/munge" | "munge" => {
            let opts =
                munge::MungeOptions::parse(info.unwrap_or("")).map_err(PluginError::Munge)?;
            Ok(Arc::new(
                munge::MungeAuth::new(&opts).map_err(PluginError::Munge)?,
            ))
        }
        _ => Err(PluginError::Unknown(name.to_string())),
    }
}

/// The plugin for `AuthType=name` with its default options.
pub fn by_name(name: &str) -> Result<Arc<dyn Authenticator>, PluginError> {
    by_name_with(name, None)
}

/// The plugin the config names (`AuthType=`, `AuthInfo=`).
pub fn from_config(cfg: &Config) -> Result<Arc<dyn Authenticator>, PluginError> {
    let name = match cfg.auth_type {
        AuthType::Munge => "auth/munge",
        AuthType::None => "auth/none",
    };
    by_name_with(name, cfg.auth_info.as_deref())
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
        let e = by_name_with("auth/none", Some("socket=/x"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("remove AuthInfo="), "{e}");
        let e = by_name_with("auth/munge", Some("bogus=1"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("valid options: socket=PATH, ttl=SECONDS"), "{e}");
    }
}
