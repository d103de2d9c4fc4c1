//! Free loopback ports for the daemons of a test cluster.
//!
//! A port is found by binding `127.0.0.1:0` and closing the socket again. Another process can
//! take it before our daemon binds it, so starting a cluster retries with fresh ports when a
//! daemon reports that its address is in use. Within one test process no port is handed out
//! twice, so parallel tests of the same binary never race each other for one.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, OnceLock};

fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static SET: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

/// A loopback port that was free a moment ago and that this process has not handed out before.
pub fn free_port() -> u16 {
    for _ in 0..1000 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("cannot bind 127.0.0.1:0");
        let port = l.local_addr().expect("local_addr").port();
        drop(l);
        let mut set = handed_out().lock().unwrap_or_else(|e| e.into_inner());
        if set.insert(port) {
            return port;
        }
    }
    panic!("no free loopback port found after 1000 tries");
}

/// `n` distinct free ports.
pub fn free_ports(n: usize) -> Vec<u16> {
    (0..n).map(|_| free_port()).collect()
}

/// Whether something accepts TCP connections on `127.0.0.1:port` now.
pub fn is_listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &(Ipv4Addr::LOCALHOST, port).into(),
        std::time::Duration::from_millis(200),
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_never_handed_out_twice() {
        // More than a cluster's worth: the kernel hands the same free port out again and
        // again once it is closed; this process must not.
        let ports = free_ports(200);
        let set: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(set.len(), ports.len());
        assert!(ports.iter().all(|&p| p > 0));
        // Whether each is still free is not asserted: any process (or another test of this
        // binary, connecting out from an ephemeral port) may take one meanwhile, which is
        // why cluster start-up retries.
    }

    #[test]
    fn a_listener_is_seen_listening() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(is_listening(port));
    }
}
