//! A small blocking HTTP/1.1 client for the API. The commands are short-lived processes whose
//! start-up cost is the submission rate (a user's `for` loop of `gsbatch`), so this client is a
//! plain `TcpStream` and no async runtime; a command makes one connection per call. The
//! daemons use it too, from blocking threads, so there is exactly one implementation of the
//! protocol's client side; they call each other for every job (the controller launches it,
//! the node reports its end), so they keep their connections open between calls
//! ([`ConnectionPool`]): a new TCP connection for each call cost a job about a tenth of a
//! millisecond of CPU on each side. Every call still carries its own credential.

use crate::api::{
    ApiError, ErrorCode, AUTH_HEADER, NODE_HEADER, PROTOCOL_HEADER, PROTOCOL_VERSION,
};
use crate::auth::{Authenticator, PendingCredential};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a call failed.
#[derive(Debug)]
pub enum ClientError {
    /// No connection could be made (daemon down, wrong address).
    Connect {
        addr: String,
        source: std::io::Error,
    },
    /// The connection broke or timed out mid-call.
    Io(std::io::Error),
    /// The server answered with an API error.
    Api(ApiError),
    /// The answer was not what the protocol says.
    Protocol(String),
    /// No credential could be made.
    Auth(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect { addr, source } => write!(
                f,
                "Unable to contact slurm controller (connect failure): {addr}: {source}"
            ),
            ClientError::Io(e) => write!(f, "Socket timed out on send/recv operation: {e}"),
            ClientError::Api(e) => write!(f, "{e}"),
            ClientError::Protocol(m) => write!(f, "Protocol error: {m}"),
            ClientError::Auth(m) => write!(f, "Protocol authentication error: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl ClientError {
    /// The API error code, when the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Api(e) => Some(e.code),
            _ => None,
        }
    }
}

/// How long an idle connection is kept for the next call. Well under the servers'
/// `MessageTimeout` (at least a second), after which they close idle connections; a
/// connection the server closed anyway is noticed on the next call, which then makes a new
/// one (see [`Client::call`]).
const IDLE_LIMIT: Duration = Duration::from_millis(900);

/// At most this many idle connections are kept per server.
const IDLE_PER_SERVER: usize = 4;

/// Whether a connection idle since `since` may still be used at `now`.
fn fresh(since: Instant, now: Instant) -> bool {
    now.duration_since(since) < IDLE_LIMIT
}

/// Open connections of a daemon's clients, by server address, kept between calls.
#[derive(Default)]
pub struct ConnectionPool {
    idle: Mutex<Idle>,
}

#[derive(Default)]
struct Idle {
    by_addr: HashMap<String, Vec<(TcpStream, Instant)>>,
    /// When connections idle too long were last closed, for all servers.
    swept: Option<Instant>,
}

impl ConnectionPool {
    pub fn new() -> Arc<ConnectionPool> {
        Arc::new(ConnectionPool::default())
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The most recently used connection to `addr` that has not been idle too long.
    fn take(&self, addr: &str, now: Instant) -> Option<TcpStream> {
        let mut idle = self.idle();
        let list = idle.by_addr.get_mut(addr)?;
        list.retain(|&(_, since)| fresh(since, now));
        let taken = list.pop().map(|(s, _)| s);
        if list.is_empty() {
            idle.by_addr.remove(addr);
        }
        taken
    }

    /// Keeps `stream` for the next call to `addr`. Now and then also closes the connections
    /// to every server that have been idle too long, so that a controller calling thousands
    /// of nodes does not hold their connections open until each node's next job.
    fn put(&self, addr: &str, stream: TcpStream, now: Instant) {
        let mut idle = self.idle();
        if idle
            .swept
            .is_none_or(|t| now.duration_since(t) >= IDLE_LIMIT)
        {
            idle.by_addr.retain(|_, list| {
                list.retain(|&(_, since)| fresh(since, now));
                !list.is_empty()
            });
            idle.swept = Some(now);
        }
        let list = idle.by_addr.entry(addr.to_string()).or_default();
        if list.len() < IDLE_PER_SERVER {
            list.push((stream, now));
        }
    }

    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.idle().by_addr.values().map(Vec::len).sum()
    }
}

/// A client for one server (`host:port`).
#[derive(Clone)]
pub struct Client {
    addr: String,
    auth: Arc<dyn Authenticator>,
    timeout: Duration,
    /// Sent as [`crate::api::NODE_HEADER`]: the node a call to a node daemon is for.
    node: Option<String>,
    /// Where connections are kept between calls; `None`: one connection per call.
    pool: Option<Arc<ConnectionPool>>,
    /// How long a refused connection is tried again (the commands: `MessageTimeout`, as
    /// Slurm's commands wait for a controller that is restarting); zero: not at all.
    connect_patience: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("addr", &self.addr).finish()
    }
}

impl Client {
    pub fn new(addr: impl Into<String>, auth: Arc<dyn Authenticator>) -> Client {
        Client {
            addr: addr.into(),
            auth,
            timeout: Duration::from_secs(60),
            node: None,
            pool: None,
            connect_patience: Duration::ZERO,
        }
    }

    /// Tries a refused connection again for up to `patience` (nothing was sent, so any
    /// request may be retried): a server that is restarting is waited for, as Slurm's
    /// commands wait `MessageTimeout` for their controller.
    pub fn with_connect_patience(mut self, patience: Duration) -> Client {
        self.connect_patience = patience;
        self
    }

    /// Keeps connections open in `pool` between calls (the daemons' clients).
    pub fn with_pool(mut self, pool: Arc<ConnectionPool>) -> Client {
        self.pool = Some(pool);
        self
    }

    /// Names the node every request of this client is for (controller-to-node calls).
    pub fn for_node(mut self, node: impl Into<String>) -> Client {
        self.node = Some(node.into());
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn get<R: DeserializeOwned>(&self, path: &str) -> Result<R, ClientError> {
        self.call("GET", path, None)
    }

    pub fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<R, ClientError> {
        let body = serde_json::to_vec(body)
            .map_err(|e| ClientError::Protocol(format!("cannot encode request: {e}")))?;
        self.call("POST", path, Some(&body))
    }

    fn connect(&self) -> Result<TcpStream, ClientError> {
        let give_up = Instant::now() + self.connect_patience;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.connect_once() {
                Err(ClientError::Connect { source, .. })
                    if source.kind() == std::io::ErrorKind::ConnectionRefused
                        && Instant::now() + pause < give_up =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                r => return r,
            }
        }
    }

    fn connect_once(&self) -> Result<TcpStream, ClientError> {
        let connect_err = |source| ClientError::Connect {
            addr: self.addr.clone(),
            source,
        };
        let addrs = self.addr.to_socket_addrs().map_err(connect_err)?;
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
                Ok(s) => {
                    s.set_nodelay(true).ok();
                    s.set_read_timeout(Some(self.timeout))
                        .and_then(|()| s.set_write_timeout(Some(self.timeout)))
                        .map_err(connect_err)?;
                    return Ok(s);
                }
                Err(e) => last = e,
            }
        }
        Err(connect_err(last))
    }

    fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<R, ClientError> {
        let reused = self
            .pool
            .as_ref()
            .and_then(|p| p.take(&self.addr, Instant::now()));
        let (status, bytes) = match reused {
            // A kept connection the server has closed in the meantime (idle timeout, restart)
            // fails before any answer: the request never reached the server, so it is sent
            // again, with a new credential, on a new connection.
            Some(stream) => {
                match self.exchange(stream, self.auth.start_credential(), method, path, body) {
                    Err(Failure {
                        answered: false, ..
                    }) => self.send_new(method, path, body),
                    other => other,
                }
            }
            None => self.send_new(method, path, body),
        }
        .map_err(|f| f.error)?;
        if (200..300).contains(&status) {
            serde_json::from_slice(&bytes).map_err(|e| {
                ClientError::Protocol(format!("cannot decode answer to {method} {path}: {e}"))
            })
        } else {
            match serde_json::from_slice::<ApiError>(&bytes) {
                Ok(e) => Err(ClientError::Api(e)),
                Err(_) => Err(ClientError::Protocol(format!(
                    "HTTP {status} from {}{path}: {}",
                    self.addr,
                    String::from_utf8_lossy(&bytes).trim()
                ))),
            }
        }
    }
    /// Sends one request on a new connection; the credential is made while the connection
    /// is set up (a lone command's request waits for both one after the other otherwise).
    fn send_new(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<(u16, Vec<u8>), Failure> {
        let cred = self.auth.start_credential();
        let stream = match self.connect() {
            Ok(s) => s,
            Err(e) => {
                // Read the credential all the same: munged would otherwise find its answer
                // unwanted (a closed socket) and log a failure for every such call.
                let _ = cred.finish();
                return Err(Failure::answered(e));
            }
        };
        self.exchange(stream, cred, method, path, body)
    }

    /// Sends one request on `stream` and reads the answer; gives the connection back to the
    /// pool when there is one and the server left it open.
    fn exchange(
        &self,
        mut stream: TcpStream,
        cred: PendingCredential,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<(u16, Vec<u8>), Failure> {
        let cred = cred
            .finish()
            .map_err(|e| Failure::answered(ClientError::Auth(e.to_string())))?;
        let body = body.unwrap_or(&[]);
        let mut req = Vec::with_capacity(256 + body.len());
        let connection = if self.pool.is_some() {
            ""
        } else {
            "Connection: close\r\n"
        };
        // Writing to a Vec cannot fail.
        let _ = write!(
            req,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n{AUTH_HEADER}: Gsched {cred}\r\n{connection}",
            self.addr
        );
        if let Some(node) = &self.node {
            let _ = write!(req, "{NODE_HEADER}: {node}\r\n");
        }
        if method == "POST" {
            let _ = write!(
                req,
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            );
        }
        req.extend_from_slice(b"\r\n");
        req.extend_from_slice(body);
        if let Err(e) = stream.write_all(&req) {
            return Err(Failure::before_answer(e));
        }
        let answer = read_response(stream, self.pool.is_some())?;
        if let (Some(pool), Some(stream)) = (&self.pool, answer.reusable) {
            pool.put(&self.addr, stream, Instant::now());
        }
        Ok((answer.status, answer.body))
    }
}

/// A failed exchange, and whether the server may have seen the request.
struct Failure {
    error: ClientError,
    /// False when the connection was found closed before any answer came (the server had
    /// closed it): the request did not reach the server and may be sent again.
    answered: bool,
}

impl Failure {
    fn answered(error: ClientError) -> Failure {
        Failure {
            error,
            answered: true,
        }
    }

    /// An I/O error before the first byte of the answer: the connection was closed under
    /// us, or a timeout (the server may be working on the request: not to be sent again).
    fn before_answer(e: std::io::Error) -> Failure {
        use std::io::ErrorKind::*;
        let closed = matches!(
            e.kind(),
            UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
        );
        Failure {
            error: ClientError::Io(e),
            answered: !closed,
        }
    }
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Failure {
        Failure::answered(error)
    }
}

/// A server's answer.
struct Answer {
    status: u16,
    body: Vec<u8>,
    /// The connection, when `keep` was asked, the whole answer was read by its length and
    /// the server did not say it closes the connection.
    reusable: Option<TcpStream>,
}

/// Reads status, headers and body (Content-Length or chunked or until close).
fn read_response(stream: TcpStream, keep: bool) -> Result<Answer, Failure> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) => {
            return Err(Failure::before_answer(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed before the answer",
            )))
        }
        Ok(_) => {}
        Err(e) => return Err(Failure::before_answer(e)),
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ClientError::Protocol(format!("bad status line {:?}", line.trim())))?;
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    let mut close = false;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(ClientError::Io)? == 0 {
            return Err(ClientError::Protocol("connection closed in headers".into()).into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim();
            if k == "content-length" {
                content_length = v.parse().ok();
            } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k == "connection" && v.eq_ignore_ascii_case("close") {
                close = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line).map_err(ClientError::Io)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| ClientError::Protocol("bad chunk size".into()))?;
            if size == 0 {
                // The (empty) trailer's end.
                line.clear();
                r.read_line(&mut line).map_err(ClientError::Io)?;
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..]).map_err(ClientError::Io)?;
            line.clear();
            r.read_line(&mut line).map_err(ClientError::Io)?;
        }
    } else if let Some(n) = content_length {
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(ClientError::Io)?;
    } else {
        r.read_to_end(&mut body).map_err(ClientError::Io)?;
        close = true;
    }
    // Anything buffered beyond the answer would be out of step with the next call.
    let reusable = (keep && !close && r.buffer().is_empty()).then(|| r.into_inner());
    Ok(Answer {
        status,
        body,
        reusable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthError, Identity};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Hands out numbered credentials, so that a test sees which call sent what.
    struct Counting(AtomicU32);

    impl Authenticator for Counting {
        fn name(&self) -> &'static str {
            "test/counting"
        }
        fn credential(&self) -> Result<String, AuthError> {
            Ok(format!("c{}", self.0.fetch_add(1, Ordering::SeqCst)))
        }
        fn verify(&self, _: &str) -> Result<Identity, AuthError> {
            unreachable!("the client does not verify")
        }
    }

    /// Reads one request head (the tests' requests have no body) and returns its credential.
    fn read_request(r: &mut BufReader<TcpStream>) -> Option<String> {
        let mut cred = None;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line.trim_end().is_empty() {
                return cred;
            }
            if let Some(v) = line.strip_prefix(&format!("{AUTH_HEADER}: Gsched ")) {
                cred = Some(v.trim().to_string());
            }
        }
    }

    fn answer(s: &mut TcpStream, body: &str, close: bool) {
        let extra = if close { "Connection: close\r\n" } else { "" };
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{extra}\r\n{body}",
            body.len()
        )
        .unwrap();
    }

    /// A server that runs `script` on each accepted connection, in order, and returns the
    /// credentials each connection carried.
    fn server(
        script: Vec<Box<dyn FnOnce(TcpStream) -> Vec<String> + Send>>,
    ) -> (String, std::thread::JoinHandle<Vec<Vec<String>>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let t = std::thread::spawn(move || {
            script
                .into_iter()
                .map(|f| f(l.accept().unwrap().0))
                .collect()
        });
        (addr, t)
    }

    /// Answers `n` requests on the connection, then closes it.
    fn serve(n: usize) -> Box<dyn FnOnce(TcpStream) -> Vec<String> + Send> {
        Box::new(move |s| {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut s = s;
            let mut seen = Vec::new();
            for i in 0..n {
                let Some(c) = read_request(&mut r) else { break };
                seen.push(c);
                answer(&mut s, &format!("{i}"), false);
            }
            seen
        })
    }

    fn client(addr: &str, pool: Option<Arc<ConnectionPool>>) -> Client {
        let c = Client::new(addr, Arc::new(Counting(AtomicU32::new(0))))
            .with_timeout(Duration::from_secs(5));
        match pool {
            Some(p) => c.with_pool(p),
            None => c,
        }
    }

    #[test]
    fn a_refused_connection_is_tried_again_within_the_patience_only() {
        // A port nothing listens on yet: refused at once without patience.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let c = client(&addr.to_string(), None);
        let t = Instant::now();
        assert!(matches!(
            c.get::<u32>("/x"),
            Err(ClientError::Connect { .. })
        ));
        assert!(
            t.elapsed() < Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        // With patience, a server that starts listening meanwhile answers.
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let l = TcpListener::bind(addr).unwrap();
            serve(1)(l.accept().unwrap().0)
        });
        let c = client(&addr.to_string(), None).with_connect_patience(Duration::from_secs(5));
        assert_eq!(c.get::<u32>("/x").unwrap(), 0);
        late.join().unwrap();
        // A server that stays away: given up after the patience.
        let t = Instant::now();
        let c = c.with_connect_patience(Duration::from_millis(400));
        assert!(matches!(
            c.get::<u32>("/x"),
            Err(ClientError::Connect { .. })
        ));
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[test]
    fn pooled_calls_share_one_connection_with_a_credential_each() {
        let (addr, t) = server(vec![serve(3)]);
        let pool = ConnectionPool::new();
        let c = client(&addr, Some(pool.clone()));
        for i in 0..3u32 {
            assert_eq!(c.get::<u32>("/x").unwrap(), i);
        }
        assert_eq!(pool.idle_count(), 1);
        drop(pool);
        drop(c);
        assert_eq!(t.join().unwrap(), vec![vec!["c0", "c1", "c2"]]);
    }

    #[test]
    fn a_kept_connection_the_server_closed_is_replaced_and_the_call_sent_again() {
        // The first connection answers once and is closed by the server (as an idle timeout
        // does); the second call finds it closed and goes out again on a new connection.
        let (addr, t) = server(vec![serve(1), serve(1)]);
        let c = client(&addr, Some(ConnectionPool::new()));
        assert_eq!(c.get::<u32>("/x").unwrap(), 0);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(c.get::<u32>("/x").unwrap(), 0);
        // The request that met the closed connection was never read; the one sent again
        // carries a new credential.
        assert_eq!(t.join().unwrap(), vec![vec!["c0"], vec!["c2"]]);
    }

    #[test]
    fn connection_close_and_unpooled_clients_do_not_keep_connections() {
        let close_after_one: Box<dyn FnOnce(TcpStream) -> Vec<String> + Send> = Box::new(|s| {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let c = read_request(&mut r).unwrap();
            answer(&mut s.try_clone().unwrap(), "7", true);
            vec![c]
        });
        let (addr, t) = server(vec![close_after_one]);
        let pool = ConnectionPool::new();
        assert_eq!(
            client(&addr, Some(pool.clone())).get::<u32>("/x").unwrap(),
            7
        );
        assert_eq!(pool.idle_count(), 0, "the server said Connection: close");
        t.join().unwrap();

        // Without a pool the client asks the server to close.
        let (addr, t) = server(vec![Box::new(|s| {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                head.push_str(&line);
                if line.trim_end().is_empty() {
                    break;
                }
            }
            answer(&mut s.try_clone().unwrap(), "1", false);
            vec![head]
        })]);
        assert_eq!(client(&addr, None).get::<u32>("/x").unwrap(), 1);
        assert!(t.join().unwrap()[0][0].contains("Connection: close\r\n"));
    }

    #[test]
    fn a_timeout_on_a_kept_connection_is_not_sent_again() {
        // The server answers once, then reads the next request on the same connection and
        // never answers: the call times out and is not repeated (the server may be working
        // on it), so no second connection is made.
        let (addr, t) = server(vec![Box::new(|s| {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let first = read_request(&mut r).unwrap();
            answer(&mut s.try_clone().unwrap(), "0", false);
            let second = read_request(&mut r).unwrap();
            std::thread::sleep(Duration::from_millis(700));
            vec![first, second]
        })]);
        let c = client(&addr, Some(ConnectionPool::new())).with_timeout(Duration::from_millis(300));
        assert_eq!(c.get::<u32>("/x").unwrap(), 0);
        assert!(matches!(c.get::<u32>("/x"), Err(ClientError::Io(_))));
        assert_eq!(t.join().unwrap(), vec![vec!["c0", "c1"]]);
    }

    #[test]
    fn idle_connections_expire() {
        let pool = ConnectionPool::default();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t0 = Instant::now();
        pool.put("a", s.try_clone().unwrap(), t0);
        assert!(pool.take("a", t0 + IDLE_LIMIT).is_none());
        assert_eq!(pool.idle_count(), 0);
        // A call to another server closes what has been idle too long.
        pool.put("a", s.try_clone().unwrap(), t0);
        pool.put("b", s.try_clone().unwrap(), t0 + IDLE_LIMIT);
        assert_eq!(pool.idle_count(), 1);
        assert!(pool.take("b", t0 + IDLE_LIMIT).is_some());
        // At most a few per server.
        for _ in 0..10 {
            pool.put("c", s.try_clone().unwrap(), t0);
        }
        assert_eq!(pool.idle_count(), IDLE_PER_SERVER);
    }
}
