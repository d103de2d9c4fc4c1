//! Authentication plugins, chosen by `AuthType=` in gsched.conf.
//!
//! * `auth/none`: the single-user local mode. A credential is just the caller's uid and gid;
//!   the server accepts only its own uid, and the daemons refuse to start with it unless they
//!   listen on loopback. Because the claim itself proves nothing, the server also looks up who
//!   owns the other end of the loopback connection (the kernel's socket diagnostics, else
//!   `/proc/net/tcp{,6}`) and refuses a request
//!   whose socket belongs to another uid than the one claimed: another local user cannot pass
//!   for the cluster's owner. It is for one user's laptop or a test cluster.
//! * `auth/munge` (the default): a MUNGE credential on every request, verified by munged
//!   ([`munge`]); uid and gid come from the credential, so any number of users may share the
//!   cluster.
//!
//! New plugins are added to [`by_name`], which is the only place names are mapped to code.

pub mod munge;
pub mod munge_wire;
mod sock_diag;

use gsched_proto::auth::{AuthError, Authenticator, Identity, Peer};
use gsched_proto::config::{AuthType, Config};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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

    /// The credential check is a parse, but the connection check asks the kernel (a system
    /// call or, as a fallback, `/proc/net/tcp`, which grows with every socket on the host):
    /// keep it off the async threads.
    fn verify_blocks(&self) -> bool {
        true
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

    fn verify_from(&self, credential: &str, peer: Option<Peer>) -> Result<Identity, AuthError> {
        let id = self.verify(credential)?;
        let Some(peer) = peer else {
            return Ok(id);
        };
        if !peer.remote.ip().is_loopback() && !is_mapped_loopback(peer.remote.ip()) {
            return Err(AuthError(format!(
                "auth/none accepts requests only over loopback, not from {}; configure \
                 AuthType=auth/munge for a multi-host cluster",
                peer.remote
            )));
        }
        match socket_owner(peer) {
            Some(uid) if uid == id.uid => Ok(id),
            Some(uid) => Err(AuthError(format!(
                "auth/none: the request claims uid {} but its connection belongs to uid {uid}; \
                 configure AuthType=auth/munge for a multi-user cluster",
                id.uid
            ))),
            None => Err(AuthError(format!(
                "auth/none: cannot find who owns the connection from {} in /proc/net/tcp; \
                 configure AuthType=auth/munge",
                peer.remote
            ))),
        }
    }
}

fn is_mapped_loopback(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
}

/// `::ffff:a.b.c.d` as `a.b.c.d`, so both ends compare whatever table they are in.
fn canonical(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

/// The uid owning the sender's end of the connection: the socket whose local address is the
/// server's remote one and whose remote address is the server's local one.
fn socket_owner(peer: Peer) -> Option<u32> {
    let (remote, local) = (canonical(peer.remote), canonical(peer.local));
    // An IPv4 client has an AF_INET socket, or an AF_INET6 one connected to a mapped address.
    let mapped = |a: SocketAddr| match a.ip() {
        IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), a.port()),
        IpAddr::V6(_) => a,
    };
    let mut diag_answered = false;
    for (r, l) in [(remote, local), (mapped(remote), mapped(local))] {
        match sock_diag::owner(r, l) {
            Ok(Some(uid)) => return Some(uid),
            Ok(None) => diag_answered = true,
            Err(_) => {}
        }
    }
    if diag_answered {
        return None;
    }
    socket_owner_from_proc(peer)
}

/// [`socket_owner`] from `/proc/net/tcp{,6}`, for kernels without socket diagnostics.
fn socket_owner_from_proc(peer: Peer) -> Option<u32> {
    use std::io::BufRead;
    // An IPv4 client is in `tcp` even when the server sees it as `::ffff:a.b.c.d`; the
    // other table is the fallback (an IPv6 socket connected to a mapped address).
    let remote = canonical(peer.remote);
    let tables: &[&str] = if remote.is_ipv4() {
        &["/proc/net/tcp", "/proc/net/tcp6"]
    } else {
        &["/proc/net/tcp6", "/proc/net/tcp"]
    };
    tables.iter().find_map(|f| {
        let file = std::fs::File::open(f).ok()?;
        // Read line by line and stop at the match: the kernel writes the table as it is read.
        let lines = std::io::BufReader::new(file).lines().map_while(Result::ok);
        find_socket_uid(lines, remote, canonical(peer.local))
    })
}

/// In the lines of a `/proc/net/tcp{,6}` table, the uid of the socket `local` → `remote`.
fn find_socket_uid(
    table: impl IntoIterator<Item = impl AsRef<str>>,
    local: SocketAddr,
    remote: SocketAddr,
) -> Option<u32> {
    table.into_iter().skip(1).find_map(|line| {
        let line = line.as_ref();
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            return None;
        }
        let l = canonical(parse_proc_addr(f[1])?);
        let r = canonical(parse_proc_addr(f[2])?);
        (l == local && r == remote).then(|| f[7].parse().ok())?
    })
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the address words as the
/// kernel prints them, in this machine's byte order; the port as a number.
fn parse_proc_addr(s: &str) -> Option<SocketAddr> {
    let (a, p) = s.split_once(':')?;
    let port = u16::from_str_radix(p, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        Some(
            u32::from_str_radix(a.get(i * 8..i * 8 + 8)?, 16)
                .ok()?
                .to_ne_bytes(),
        )
    };
    let ip = match a.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
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
    fn proc_net_tcp_lines() {
        // Little-endian layout, as on the x86 and arm64 machines the tests run on.
        if cfg!(target_endian = "little") {
            let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                     \x20  0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n\
                     \x20  1: 0100007F:AF16 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 2\n";
            let client: SocketAddr = "127.0.0.1:44822".parse().unwrap();
            let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
            assert_eq!(find_socket_uid(t.lines(), client, server), Some(1001));
            assert_eq!(find_socket_uid(t.lines(), server, client), None);
            let v6 = parse_proc_addr("0000000000000000FFFF00000100007F:1F90").unwrap();
            assert_eq!(canonical(v6), server);
            let lo6 = parse_proc_addr("00000000000000000000000001000000:0050").unwrap();
            assert_eq!(lo6, "[::1]:80".parse().unwrap());
        }
        assert_eq!(parse_proc_addr("zz:1"), None);
    }

    #[test]
    fn none_finds_the_real_owner_of_a_loopback_connection() {
        // A real connection of this process: its uid owns the client end.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, remote) = l.accept().unwrap();
        let peer = Peer {
            remote,
            local: s.local_addr().unwrap(),
        };
        assert_eq!(c.local_addr().unwrap(), remote);
        let (uid, gid) = current_ids();
        let a = NoneAuth::with_ids(uid, gid);
        let me = a.credential().unwrap();
        assert_eq!(a.verify_from(&me, Some(peer)).unwrap().uid, uid);
        // Someone claiming another uid on the daemon's behalf: the connection is ours, not
        // theirs.
        let other = NoneAuth::with_ids(uid + 1, gid);
        let claim = other.credential().unwrap();
        let e = other.verify_from(&claim, Some(peer)).unwrap_err().0;
        assert!(e.contains(&format!("belongs to uid {uid}")), "{e}");
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
