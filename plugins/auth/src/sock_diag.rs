//! auth/none's peer check through the kernel's socket diagnostics (`NETLINK_SOCK_DIAG`,
//! see sock_diag(7)): one exact lookup of the client's socket by its four-tuple, answered
//! with the uid that owns it. Reading `/proc/net/tcp` instead costs the kernel a formatted
//! line per socket on the host, and a busy controller has thousands (every request is a
//! connection, each leaving a TIME_WAIT socket behind): with 1,000 nodes heartbeating, that
//! scan was 85% of an idle gsctld's CPU. `/proc/net/tcp` stays the fallback for kernels
//! without `inet_diag`.

use std::io;
use std::net::{IpAddr, SocketAddr};

const NETLINK_SOCK_DIAG: libc::c_int = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
/// `nlmsghdr` + `inet_diag_req_v2` (family, protocol, ext, pad, states, `inet_diag_sockid`).
const REQUEST_LEN: usize = 16 + 8 + 48;
/// Where the uid is in an answer: `nlmsghdr`, then `inet_diag_msg`'s family, state, timer,
/// retrans, its `inet_diag_sockid`, expires, rqueue and wqueue.
const UID_OFFSET: usize = 16 + 4 + 48 + 12;

/// The request for the TCP socket whose local end is `src` and remote end `dst`.
fn request(src: SocketAddr, dst: SocketAddr) -> [u8; REQUEST_LEN] {
    let mut r = [0u8; REQUEST_LEN];
    r[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    r[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    r[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    r[8..12].copy_from_slice(&1u32.to_ne_bytes());
    let v4 = src.is_ipv4() && dst.is_ipv4();
    r[16] = if v4 { libc::AF_INET } else { libc::AF_INET6 } as u8;
    r[17] = libc::IPPROTO_TCP as u8;
    // Every TCP state.
    r[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    r[24..26].copy_from_slice(&src.port().to_be_bytes());
    r[26..28].copy_from_slice(&dst.port().to_be_bytes());
    let addr = |ip: IpAddr| -> [u8; 16] {
        let mut b = [0u8; 16];
        match (ip, v4) {
            (IpAddr::V4(a), true) => b[..4].copy_from_slice(&a.octets()),
            (IpAddr::V4(a), false) => b = a.to_ipv6_mapped().octets(),
            (IpAddr::V6(a), _) => b = a.octets(),
        }
        b
    };
    r[28..44].copy_from_slice(&addr(src.ip()));
    r[44..60].copy_from_slice(&addr(dst.ip()));
    // No interface; the cookie INET_DIAG_NOCOOKIE (both words all ones).
    r[64..72].copy_from_slice(&[0xff; 8]);
    r
}

/// What an answer says: `Ok(Some(uid))`, `Ok(None)` (no such socket), or an error.
fn parse_answer(a: &[u8]) -> io::Result<Option<u32>> {
    let word = |at: usize| -> io::Result<[u8; 4]> {
        a.get(at..at + 4)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| io::Error::other("short sock_diag answer"))
    };
    let kind = u16::from_ne_bytes([
        a.get(4).copied().unwrap_or(0),
        a.get(5).copied().unwrap_or(0),
    ]);
    match kind {
        NLMSG_ERROR => match -i32::from_ne_bytes(word(16)?) {
            libc::ENOENT => Ok(None),
            0 => Ok(None),
            e => Err(io::Error::from_raw_os_error(e)),
        },
        SOCK_DIAG_BY_FAMILY => Ok(Some(u32::from_ne_bytes(word(UID_OFFSET)?))),
        other => Err(io::Error::other(format!(
            "unexpected sock_diag answer type {other}"
        ))),
    }
}

/// The uid owning the TCP socket whose local end is `src` and remote end `dst`; `None` when
/// the kernel knows no such socket.
pub(crate) fn owner(src: SocketAddr, dst: SocketAddr) -> io::Result<Option<u32>> {
    let req = request(src, dst);
    let mut answer = [0u8; 512];
    #[allow(unsafe_code)]
    // SAFETY: plain system calls on a socket this function opens and closes; every pointer
    // passed is to a local buffer or struct that outlives the call, with its true length.
    let got = unsafe {
        let fd = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_SOCK_DIAG,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let timeout = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        let mut kernel: libc::sockaddr_nl = std::mem::zeroed();
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        let result = if libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            std::ptr::addr_of!(timeout).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        ) < 0
            || libc::sendto(
                fd,
                req.as_ptr().cast(),
                req.len(),
                0,
                std::ptr::addr_of!(kernel).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            ) < 0
        {
            Err(io::Error::last_os_error())
        } else {
            let n = libc::recv(fd, answer.as_mut_ptr().cast(), answer.len(), 0);
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        };
        libc::close(fd);
        result
    }?;
    parse_answer(&answer[..got])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_the_owner_of_a_loopback_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let me = crate::current_ids().0;
        // The client's socket, as the server sees it: from its peer to its own address.
        let (peer, local) = (s.peer_addr().unwrap(), s.local_addr().unwrap());
        assert_eq!(owner(peer, local).unwrap(), Some(me));
        assert_eq!(owner(local, peer).unwrap(), Some(me), "the server's end");
        drop(c);
    }

    #[test]
    fn an_unknown_socket_is_none() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let free = l.local_addr().unwrap();
        let other: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(owner(other, free).unwrap(), None);
    }

    #[test]
    fn ipv6_loopback_too() {
        let Ok(l) = TcpListener::bind("[::1]:0") else {
            eprintln!("skipping: no IPv6 loopback here");
            return;
        };
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let me = crate::current_ids().0;
        assert_eq!(
            owner(s.peer_addr().unwrap(), s.local_addr().unwrap()).unwrap(),
            Some(me)
        );
    }

    #[test]
    fn answers_are_parsed_and_errors_kept() {
        let mut a = vec![0u8; UID_OFFSET + 8];
        a[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        a[UID_OFFSET..UID_OFFSET + 4].copy_from_slice(&1234u32.to_ne_bytes());
        assert_eq!(parse_answer(&a).unwrap(), Some(1234));
        let mut e = vec![0u8; 36];
        e[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e[16..20].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
        assert_eq!(parse_answer(&e).unwrap(), None);
        e[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert!(parse_answer(&e).is_err());
        assert!(parse_answer(&a[..20]).is_err());
    }
}
