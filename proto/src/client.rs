//! A small blocking HTTP/1.1 client for the API. The commands are short-lived processes whose
//! start-up cost is the submission rate (a user's `for` loop of `gsbatch`), so this client is a
//! plain `TcpStream`, no async runtime and no connection pool. The daemons use it too, from
//! blocking threads, so there is exactly one implementation of the protocol's client side.

use crate::api::{
    ApiError, ErrorCode, AUTH_HEADER, NODE_HEADER, PROTOCOL_HEADER, PROTOCOL_VERSION,
};
use crate::auth::Authenticator;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

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

/// A client for one server (`host:port`).
#[derive(Clone)]
pub struct Client {
    addr: String,
    auth: Arc<dyn Authenticator>,
    timeout: Duration,
    /// Sent as [`crate::api::NODE_HEADER`]: the node a call to a node daemon is for.
    node: Option<String>,
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
        }
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
        let connect_err = |source| ClientError::Connect {
            addr: self.addr.clone(),
            source,
        };
        let addrs = self.addr.to_socket_addrs().map_err(connect_err)?;
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
                Ok(s) => return Ok(s),
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
        let cred = self
            .auth
            .credential()
            .map_err(|e| ClientError::Auth(e.to_string()))?;
        let mut stream = self.connect()?;
        stream.set_nodelay(true).ok();
        stream
            .set_read_timeout(Some(self.timeout))
            .map_err(ClientError::Io)?;
        stream
            .set_write_timeout(Some(self.timeout))
            .map_err(ClientError::Io)?;
        let body = body.unwrap_or(&[]);
        let mut req = Vec::with_capacity(256 + body.len());
        write!(
            req,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n{AUTH_HEADER}: Gsched {cred}\r\nConnection: close\r\n",
            self.addr
        )
        .map_err(ClientError::Io)?;
        if let Some(node) = &self.node {
            write!(req, "{NODE_HEADER}: {node}\r\n").map_err(ClientError::Io)?;
        }
        if method == "POST" {
            write!(
                req,
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            )
            .map_err(ClientError::Io)?;
        }
        req.extend_from_slice(b"\r\n");
        req.extend_from_slice(body);
        stream.write_all(&req).map_err(ClientError::Io)?;
        let (status, bytes) = read_response(stream)?;
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
}

/// Reads status, headers and body (Content-Length or chunked or until close).
fn read_response(stream: TcpStream) -> Result<(u16, Vec<u8>), ClientError> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).map_err(ClientError::Io)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ClientError::Protocol(format!("bad status line {:?}", line.trim())))?;
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(ClientError::Io)? == 0 {
            return Err(ClientError::Protocol("connection closed in headers".into()));
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
    }
    Ok((status, body))
}
