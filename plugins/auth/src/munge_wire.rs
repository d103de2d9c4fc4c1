//! The client side of munged's socket protocol: what libmunge's `munge_encode` and
//! `munge_decode` send to munged over its Unix socket and read back, spoken directly.
//!
//! Why not link libmunge: gsched's commands are built as static programs (a static program
//! starts in a third of the time of a dynamic glibc one, and a submission loop pays that
//! start per job, bench/RESULTS.md "Per-job start-up"), and a static program cannot load a
//! shared library. The protocol is small and stable: a header (magic `0x00606D4B`, message
//! version 4, type, retry count, body length) and a body of big-endian integers and
//! length-prefixed byte strings; munged 0.5.x (MUNGE_MSG_VERSION 4) answers each request on
//! its own connection and learns the client's uid and gid from the socket (`SO_PEERCRED`),
//! so the client sends nothing to prove who it is. Credentials are still made and checked by
//! munged alone: this module only carries its requests.
//!
//! Retries follow libmunge: a refused or busy connect is retried 10 times with a linearly
//! growing pause (50 ms × attempt), a failed exchange 5 times (10 ms × attempt, with the
//! header's retry count set so that munged does not take a retried decode for a replay); each
//! exchange waits at most 2 s for munged.

#![allow(unsafe_code)]

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// munged's socket when `AuthInfo=socket=` does not name another.
pub const DEFAULT_SOCKET: &str = "/run/munge/munge.socket.2";

const MAGIC: u32 = 0x0060_6D4B;
const VERSION: u8 = 4;
const HEADER_LEN: usize = 11;

const MSG_ENC_REQ: u8 = 2;
const MSG_ENC_RSP: u8 = 3;
const MSG_DEC_REQ: u8 = 4;
const MSG_DEC_RSP: u8 = 5;

/// munge.h: the daemon's default cipher, MAC and compression.
const DEFAULT_ALGORITHM: u8 = 1;
/// munge.h: `MUNGE_UID_ANY`, `MUNGE_GID_ANY`.
const ANY_ID: u32 = u32::MAX;

/// munged refuses bodies over twice its maximum payload (1 MiB); so does this client.
const MAX_BODY: u32 = 2 * 1024 * 1024;
const CONNECT_ATTEMPTS: u32 = 10;
const CONNECT_PAUSE: Duration = Duration::from_millis(50);
const XFER_ATTEMPTS: u8 = 5;
const XFER_PAUSE: Duration = Duration::from_millis(10);
const IO_TIMEOUT: Duration = Duration::from_secs(2);

// munge.h: enum munge_err (the ones this crate names).
pub const EMUNGE_SNAFU: u8 = 1;
pub const EMUNGE_BAD_LENGTH: u8 = 3;
pub const EMUNGE_OVERFLOW: u8 = 4;
pub const EMUNGE_SOCKET: u8 = 6;
pub const EMUNGE_CRED_INVALID: u8 = 14;
pub const EMUNGE_CRED_EXPIRED: u8 = 15;
pub const EMUNGE_CRED_REWOUND: u8 = 16;
pub const EMUNGE_CRED_REPLAYED: u8 = 17;
pub const EMUNGE_CRED_UNAUTHORIZED: u8 = 18;

/// A failed MUNGE operation: munge's error number and the most precise message known
/// (munged's own when it sent one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct MungeError {
    pub code: u8,
    pub message: String,
}

impl MungeError {
    fn new(code: u8, message: impl Into<String>) -> MungeError {
        MungeError {
            code,
            message: message.into(),
        }
    }
}

/// libmunge's `munge_strerror` texts, for errors munged reports without a message.
pub fn strerror(code: u8) -> &'static str {
    match code {
        0 => "Success",
        1 => "Internal error",
        2 => "Invalid argument",
        3 => "Exceeded maximum message length",
        4 => "Buffer overflow",
        5 => "Out of memory",
        6 => "Socket communication error",
        7 => "Socket timeout",
        8 => "Invalid credential format",
        9 => "Invalid credential version",
        10 => "Invalid cipher type",
        11 => "Invalid MAC type",
        12 => "Invalid compression type",
        13 => "Unrecognized security realm",
        14 => "Invalid credential",
        15 => "Expired credential",
        16 => "Rewound credential",
        17 => "Replayed credential",
        18 => "Unauthorized credential",
        _ => "Unknown error",
    }
}

/// What munged says of a credential it decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Of the process that made the credential, as its host's munged saw it.
    pub uid: u32,
    pub gid: u32,
    /// When it was made (seconds since the epoch) and how long it lives.
    pub encoded_at: u32,
    pub ttl: u32,
    /// The payload, if the credential carries one.
    pub payload: Vec<u8>,
}

/// An encode request: the daemon's default cipher, MAC and compression, no realm, no
/// decode restriction; `ttl` 0 is munged's default.
fn encode_request(ttl: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(20 + payload.len());
    b.extend_from_slice(&[DEFAULT_ALGORITHM, DEFAULT_ALGORITHM, DEFAULT_ALGORITHM, 0]);
    b.extend_from_slice(&ttl.to_be_bytes());
    b.extend_from_slice(&ANY_ID.to_be_bytes());
    b.extend_from_slice(&ANY_ID.to_be_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    b.extend_from_slice(payload);
    b
}

/// A decode request: the credential, NUL-terminated as libmunge sends it.
fn decode_request(credential: &str) -> Result<Vec<u8>, MungeError> {
    if credential.is_empty() || credential.contains('\0') {
        return Err(MungeError::new(
            2,
            "the MUNGE credential is empty or contains NUL",
        ));
    }
    let mut b = Vec::with_capacity(5 + credential.len());
    b.extend_from_slice(&(credential.len() as u32 + 1).to_be_bytes());
    b.extend_from_slice(credential.as_bytes());
    b.push(0);
    check_length(&b)?;
    Ok(b)
}

/// munged refuses a request body over [`MAX_BODY`]; so does this client, before sending it.
fn check_length(body: &[u8]) -> Result<(), MungeError> {
    if body.len() as u64 > u64::from(MAX_BODY) {
        return Err(MungeError::new(
            EMUNGE_BAD_LENGTH,
            format!("the MUNGE request of {} bytes is too long", body.len()),
        ));
    }
    Ok(())
}

/// After failed exchange number `retry` (from 0): the pause before the next, or `None`
/// when libmunge would give up.
fn retry_pause(e: &MungeError, retry: u8) -> Option<Duration> {
    (retry + 1 < XFER_ATTEMPTS && e.code != EMUNGE_BAD_LENGTH)
        .then(|| XFER_PAUSE * (u32::from(retry) + 1))
}

/// A connect error worth trying again (munged's listen queue is full, or it is restarting).
fn transient(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::ECONNREFUSED)
    )
}

fn header(kind: u8, retry: u8, body_len: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(&MAGIC.to_be_bytes());
    h[4] = VERSION;
    h[5] = kind;
    h[6] = retry;
    h[7..].copy_from_slice(&body_len.to_be_bytes());
    h
}

/// Reads the fields of a response body in order; any overrun is a malformed message.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], MungeError> {
        if self.rest.len() < n {
            return Err(MungeError::new(
                EMUNGE_SOCKET,
                "munged sent a truncated message (is it MUNGE 0.5?)",
            ));
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, MungeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, MungeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A string munged sends with its NUL; the NUL is dropped.
    fn text(&mut self, n: usize) -> Result<String, MungeError> {
        let b = self.take(n)?;
        let b = b.strip_suffix(&[0]).unwrap_or(b);
        Ok(String::from_utf8_lossy(b).into_owned())
    }
    /// `(error number, error message)` that start every response.
    fn error(&mut self) -> Result<(u8, String), MungeError> {
        let code = self.u8()?;
        let len = self.u8()? as usize;
        let text = self.text(len)?;
        Ok((code, text))
    }
    fn finish(&self) -> Result<(), MungeError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(MungeError::new(
                EMUNGE_SOCKET,
                "munged sent a longer message than expected (is it MUNGE 0.5?)",
            ))
        }
    }
}

fn failure(code: u8, text: String) -> MungeError {
    let message = if text.is_empty() {
        strerror(code).to_string()
    } else {
        text
    };
    MungeError::new(code, message)
}

/// The credential in an encode response.
fn parse_encode_response(body: &[u8]) -> Result<String, MungeError> {
    let mut f = Fields { rest: body };
    let (code, text) = f.error()?;
    let len = f.u32()? as usize;
    let cred = f.text(len)?;
    f.finish()?;
    if code != 0 {
        return Err(failure(code, text));
    }
    if cred.is_empty() {
        return Err(MungeError::new(
            EMUNGE_SNAFU,
            "munged answered the encode request without a credential",
        ));
    }
    Ok(cred)
}

/// What a decode response says: the credential's facts, or munged's refusal.
fn parse_decode_response(body: &[u8]) -> Result<Decoded, MungeError> {
    let mut f = Fields { rest: body };
    let (code, text) = f.error()?;
    f.take(3)?; // cipher, MAC, compression
    let realm_len = f.u8()? as usize;
    f.take(realm_len)?;
    let ttl = f.u32()?;
    let addr_len = f.u8()? as usize;
    f.take(addr_len)?;
    let encoded_at = f.u32()?;
    let _decoded_at = f.u32()?;
    let uid = f.u32()?;
    let gid = f.u32()?;
    let _auth_uid = f.u32()?;
    let _auth_gid = f.u32()?;
    let len = f.u32()? as usize;
    let payload = f.take(len)?.to_vec();
    f.finish()?;
    if code != 0 {
        return Err(failure(code, text));
    }
    Ok(Decoded {
        uid,
        gid,
        encoded_at,
        ttl,
        payload,
    })
}

/// munged at one socket path.
#[derive(Debug, Clone)]
pub struct MungeClient {
    socket: std::path::PathBuf,
}

impl MungeClient {
    pub fn new(socket: Option<&str>) -> MungeClient {
        MungeClient {
            socket: socket.unwrap_or(DEFAULT_SOCKET).into(),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// A new credential carrying `payload`, valid for `ttl` seconds (0: munged's default).
    pub fn encode(&self, ttl: u32, payload: &[u8]) -> Result<String, MungeError> {
        self.start_encode(ttl, payload).finish()
    }

    /// munged's verdict on `credential`.
    pub fn decode(&self, credential: &str) -> Result<Decoded, MungeError> {
        let body = self.exchange(MSG_DEC_REQ, &decode_request(credential)?, MSG_DEC_RSP)?;
        parse_decode_response(&body)
    }

    /// Sends an encode request and returns without waiting for the credential, which
    /// [`PendingEncode::finish`] reads: munged makes it while the caller does something else
    /// (connects to the server the credential is for).
    pub fn start_encode(&self, ttl: u32, payload: &[u8]) -> PendingEncode {
        let body = encode_request(ttl, payload);
        let sent = check_length(&body)
            .and_then(|()| self.connect())
            .map(|mut stream| send(&mut stream, MSG_ENC_REQ, 0, &body).map(|()| stream));
        PendingEncode {
            client: self.clone(),
            body,
            sent,
        }
    }

    /// Sends one request on a connection of its own and returns the response's body;
    /// retried as libmunge retries.
    fn exchange(&self, kind: u8, body: &[u8], want: u8) -> Result<Vec<u8>, MungeError> {
        check_length(body)?;
        let mut stream = self.connect()?;
        let first = transfer(&mut stream, kind, 0, body, want);
        self.retried(first, kind, body, want)
    }

    /// The answer of a first exchange (`first`), or of libmunge's retries after it failed.
    fn retried(
        &self,
        first: Result<Vec<u8>, MungeError>,
        kind: u8,
        body: &[u8],
        want: u8,
    ) -> Result<Vec<u8>, MungeError> {
        let mut result = first;
        let mut retry = 0u8;
        loop {
            match result {
                Ok(b) => return Ok(b),
                Err(e) => match retry_pause(&e, retry) {
                    None => return Err(e),
                    Some(pause) => {
                        retry += 1;
                        std::thread::sleep(pause);
                        let mut stream = self.connect()?;
                        result = transfer(&mut stream, kind, retry, body, want);
                    }
                },
            }
        }
    }

    /// munged's socket is there and is a socket (libmunge's messages when not).
    fn precheck(&self) -> Result<(), MungeError> {
        let path = &self.socket;
        let shown = path.display();
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(MungeError::new(
                EMUNGE_SOCKET,
                format!("Failed to access \"{shown}\": {e} (Did you start munged?)"),
            )),
            Err(e) => Err(MungeError::new(
                EMUNGE_SOCKET,
                format!("Failed to access \"{shown}\": {e}"),
            )),
            Ok(m) if !m.file_type().is_socket() => Err(MungeError::new(
                EMUNGE_SOCKET,
                format!("Invalid file type for socket \"{shown}\""),
            )),
            Ok(_) => Ok(()),
        }
    }

    /// libmunge's error for a socket path too long for `sockaddr_un`.
    fn check_path_length(&self) -> Result<(), MungeError> {
        // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
        let addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        if self.socket.as_os_str().len() >= addr.sun_path.len() {
            return Err(MungeError::new(
                EMUNGE_OVERFLOW,
                format!(
                    "Exceeded maximum length of {} bytes for socket pathname",
                    addr.sun_path.len()
                ),
            ));
        }
        Ok(())
    }

    /// What a failed connect means, and whether to try again after a pause (`Ok`).
    fn connect_failed(&self, err: &std::io::Error, attempt: u32) -> Result<Duration, MungeError> {
        if attempt == 1 {
            // libmunge's messages for a socket that is missing or not a socket; looked at
            // only when the connection fails (one system call less per credential).
            self.precheck()?;
        }
        if !transient(err) || attempt >= CONNECT_ATTEMPTS {
            return Err(MungeError::new(
                EMUNGE_SOCKET,
                format!("Failed to connect to \"{}\": {err}", self.socket.display()),
            ));
        }
        Ok(CONNECT_PAUSE * attempt)
    }

    fn connect(&self) -> Result<UnixStream, MungeError> {
        self.check_path_length()?;
        let path = &self.socket;
        let bytes = path.as_os_str().as_bytes();
        // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        // SAFETY: plain socket(2); the descriptor is owned by `stream` below at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        if fd < 0 {
            return Err(MungeError::new(
                EMUNGE_SOCKET,
                format!(
                    "Failed to create socket: {}",
                    std::io::Error::last_os_error()
                ),
            ));
        }
        // SAFETY: `fd` is a fresh socket that nothing else owns.
        let stream = unsafe { UnixStream::from_raw_fd(fd) };
        let mut attempt = 1;
        loop {
            // SAFETY: `addr` is a valid sockaddr_un of the size given.
            let rc = unsafe {
                libc::connect(
                    fd,
                    (&addr as *const libc::sockaddr_un).cast(),
                    std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
                )
            };
            if rc == 0 {
                break;
            }
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            std::thread::sleep(self.connect_failed(&err, attempt)?);
            attempt += 1;
        }
        let setup = stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_read_timeout(Some(IO_TIMEOUT)))
            .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)));
        setup.map_err(|e| {
            MungeError::new(EMUNGE_SOCKET, format!("Failed to set up the socket: {e}"))
        })?;
        Ok(stream)
    }
}

/// The same exchanges for a daemon's async runtime: the request waits for munged on the
/// runtime's reactor instead of a blocking thread (see `Authenticator::verify_async`), with
/// libmunge's retries and time limits as above.
#[cfg(feature = "async")]
impl MungeClient {
    /// munged's verdict on `credential`, without blocking the calling thread.
    pub async fn decode_async(&self, credential: &str) -> Result<Decoded, MungeError> {
        let request = decode_request(credential)?;
        let body = self
            .exchange_async(MSG_DEC_REQ, &request, MSG_DEC_RSP)
            .await?;
        parse_decode_response(&body)
    }

    async fn exchange_async(&self, kind: u8, body: &[u8], want: u8) -> Result<Vec<u8>, MungeError> {
        check_length(body)?;
        let mut retry = 0u8;
        loop {
            let mut stream = self.connect_async().await?;
            match transfer_async(&mut stream, kind, retry, body, want).await {
                Ok(b) => return Ok(b),
                Err(e) => match retry_pause(&e, retry) {
                    None => return Err(e),
                    Some(pause) => {
                        retry += 1;
                        tokio::time::sleep(pause).await;
                    }
                },
            }
        }
    }

    async fn connect_async(&self) -> Result<tokio::net::UnixStream, MungeError> {
        self.check_path_length()?;
        let mut attempt = 1;
        loop {
            match tokio::net::UnixStream::connect(&self.socket).await {
                Ok(s) => return Ok(s),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => tokio::time::sleep(self.connect_failed(&e, attempt)?).await,
            }
            attempt += 1;
        }
    }
}

/// [`transfer`] on tokio's reactor; each step waits at most `IO_TIMEOUT`, as the blocking
/// socket's timeouts do there.
#[cfg(feature = "async")]
async fn transfer_async(
    stream: &mut tokio::net::UnixStream,
    kind: u8,
    retry: u8,
    body: &[u8],
    want: u8,
) -> Result<Vec<u8>, MungeError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    async fn timed<T>(
        what: &str,
        step: impl std::future::Future<Output = std::io::Result<T>>,
    ) -> Result<T, MungeError> {
        match tokio::time::timeout(IO_TIMEOUT, step).await {
            Ok(r) => r.map_err(|e| io_error(what, e)),
            Err(_) => Err(io_error(what, std::io::ErrorKind::TimedOut.into())),
        }
    }
    timed("send message", stream.write_all(&framed(kind, retry, body))).await?;
    let mut h = [0u8; HEADER_LEN];
    timed("receive message header", stream.read_exact(&mut h)).await?;
    let len = check_header(&h, want)?;
    let mut body = vec![0u8; len as usize];
    timed("receive message body", stream.read_exact(&mut body)).await?;
    Ok(body)
}

fn io_error(what: &str, e: std::io::Error) -> MungeError {
    let e = if matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ) {
        "Timed-out".to_string()
    } else {
        e.to_string()
    };
    MungeError::new(EMUNGE_SOCKET, format!("Failed to {what}: {e}"))
}

/// A request with its header, as sent.
fn framed(kind: u8, retry: u8, body: &[u8]) -> Vec<u8> {
    let mut msg = Vec::with_capacity(HEADER_LEN + body.len());
    msg.extend_from_slice(&header(kind, retry, body.len() as u32));
    msg.extend_from_slice(body);
    msg
}

/// The body length a response header announces, once the header is checked.
fn check_header(h: &[u8; HEADER_LEN], want: u8) -> Result<u32, MungeError> {
    let magic = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    if magic != MAGIC {
        return Err(MungeError::new(
            EMUNGE_SOCKET,
            format!("Received invalid message magic {magic:#x}; is munged listening there?"),
        ));
    }
    if h[4] != VERSION {
        return Err(MungeError::new(
            EMUNGE_SOCKET,
            format!(
                "munged speaks message version {}, gsched version {VERSION} (MUNGE 0.5); \
                 install a MUNGE 0.5 munged",
                h[4]
            ),
        ));
    }
    if h[5] != want {
        return Err(MungeError::new(
            EMUNGE_SOCKET,
            format!(
                "Received unexpected message type: wanted {want}, got {}",
                h[5]
            ),
        ));
    }
    let len = u32::from_be_bytes([h[7], h[8], h[9], h[10]]);
    if len > MAX_BODY {
        return Err(MungeError::new(
            EMUNGE_BAD_LENGTH,
            format!("munged's response of {len} bytes is too long"),
        ));
    }
    Ok(len)
}

/// An encode request on its way ([`MungeClient::start_encode`]).
#[derive(Debug)]
pub struct PendingEncode {
    client: MungeClient,
    body: Vec<u8>,
    /// The connection the request went on; the inner error: sending failed (retried as
    /// any failed exchange); the outer: no connection (not retried, as in `exchange`).
    sent: Result<Result<UnixStream, MungeError>, MungeError>,
}

impl PendingEncode {
    /// The credential (libmunge's retries included).
    pub fn finish(self) -> Result<String, MungeError> {
        let first = match self.sent? {
            Ok(mut stream) => receive(&mut stream, MSG_ENC_RSP),
            Err(e) => Err(e),
        };
        let body = self
            .client
            .retried(first, MSG_ENC_REQ, &self.body, MSG_ENC_RSP)?;
        parse_encode_response(&body)
    }
}

/// One request and its response on a connected stream.
fn transfer(
    stream: &mut UnixStream,
    kind: u8,
    retry: u8,
    body: &[u8],
    want: u8,
) -> Result<Vec<u8>, MungeError> {
    send(stream, kind, retry, body)?;
    receive(stream, want)
}

fn send(stream: &mut UnixStream, kind: u8, retry: u8, body: &[u8]) -> Result<(), MungeError> {
    stream
        .write_all(&framed(kind, retry, body))
        .map_err(|e| io_error("send message", e))
}

/// A response's body, once its header is checked.
fn receive(stream: &mut UnixStream, want: u8) -> Result<Vec<u8>, MungeError> {
    let mut h = [0u8; HEADER_LEN];
    stream
        .read_exact(&mut h)
        .map_err(|e| io_error("receive message header", e))?;
    let len = check_header(&h, want)?;
    let mut body = vec![0u8; len as usize];
    stream
        .read_exact(&mut body)
        .map_err(|e| io_error("receive message body", e))?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encode_request_is_what_libmunge_sends() {
        // Captured from libmunge 0.5.15 (`strace` of munge_encode with a default context).
        let mut msg = header(MSG_ENC_REQ, 0, 20).to_vec();
        msg.extend(encode_request(0, b""));
        assert_eq!(
            msg,
            b"\0`mK\x04\x02\0\0\0\0\x14\x01\x01\x01\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\0"
        );
        let body = encode_request(60, b"hi");
        assert_eq!(&body[4..8], &60u32.to_be_bytes());
        assert_eq!(&body[16..], b"\0\0\0\x02hi");
    }

    #[test]
    fn a_decode_request_carries_the_credential_with_its_nul() {
        assert_eq!(
            decode_request("MUNGE:ab:").unwrap(),
            b"\0\0\0\x0aMUNGE:ab:\0"
        );
        assert!(decode_request("").is_err());
        assert!(decode_request("MUNGE:a\0b:").is_err());
        let long = format!("MUNGE:{}:", "A".repeat(MAX_BODY as usize));
        assert_eq!(decode_request(&long).unwrap_err().code, EMUNGE_BAD_LENGTH);
    }

    #[test]
    fn retries_follow_libmunge() {
        let socket = MungeError::new(EMUNGE_SOCKET, "x");
        let pauses: Vec<_> = (0..XFER_ATTEMPTS)
            .map(|r| retry_pause(&socket, r))
            .collect();
        assert_eq!(
            pauses,
            vec![
                Some(XFER_PAUSE),
                Some(XFER_PAUSE * 2),
                Some(XFER_PAUSE * 3),
                Some(XFER_PAUSE * 4),
                None
            ]
        );
        assert_eq!(
            retry_pause(&MungeError::new(EMUNGE_BAD_LENGTH, "x"), 0),
            None
        );
    }

    fn response(code: u8, text: &str, rest: &[u8]) -> Vec<u8> {
        let mut b = vec![code];
        if text.is_empty() {
            b.push(0);
        } else {
            b.push(text.len() as u8 + 1);
            b.extend_from_slice(text.as_bytes());
            b.push(0);
        }
        b.extend_from_slice(rest);
        b
    }

    #[test]
    fn encode_responses() {
        let mut rest = 8u32.to_be_bytes().to_vec();
        rest.extend_from_slice(b"MUNGE:x\0");
        assert_eq!(
            parse_encode_response(&response(0, "", &rest)).unwrap(),
            "MUNGE:x"
        );
        let e = parse_encode_response(&response(6, "", &0u32.to_be_bytes())).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (6, "Socket communication error")
        );
        let e = parse_encode_response(&response(0, "", &0u32.to_be_bytes())).unwrap_err();
        assert!(e.message.contains("without a credential"), "{e}");
        // A length past the end is a malformed message, not a panic.
        let e = parse_encode_response(&response(0, "", &99u32.to_be_bytes())).unwrap_err();
        assert!(e.message.contains("truncated"), "{e}");
    }

    fn decode_body(ttl: u32, time0: u32, uid: u32, gid: u32, payload: &[u8]) -> Vec<u8> {
        let mut b = vec![4, 2, 0, 0]; // cipher, mac, zip, no realm
        b.extend_from_slice(&ttl.to_be_bytes());
        b.push(4);
        b.extend_from_slice(&[127, 0, 0, 1]);
        b.extend_from_slice(&time0.to_be_bytes());
        b.extend_from_slice(&(time0 + 1).to_be_bytes());
        for v in [uid, gid, ANY_ID, ANY_ID, payload.len() as u32] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn decode_responses() {
        let ok = response(0, "", &decode_body(300, 1_700_000_000, 1001, 1002, b""));
        assert_eq!(
            parse_decode_response(&ok).unwrap(),
            Decoded {
                uid: 1001,
                gid: 1002,
                encoded_at: 1_700_000_000,
                ttl: 300,
                payload: vec![]
            }
        );
        let replayed = response(
            EMUNGE_CRED_REPLAYED,
            "Replayed credential",
            &decode_body(300, 1, 0, 0, b"p"),
        );
        let e = parse_decode_response(&replayed).unwrap_err();
        assert_eq!(e.code, EMUNGE_CRED_REPLAYED);
        assert_eq!(e.message, "Replayed credential");
        let mut long = ok.clone();
        long.push(0);
        assert!(parse_decode_response(&long).is_err());
        for cut in 0..ok.len() {
            assert!(parse_decode_response(&ok[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// How the stand-in answers one request (its header and body); `None` hangs up.
    type Answer = fn(&[u8], &[u8]) -> Option<Vec<u8>>;
    /// The stand-in's thread, which returns each request's header and body.
    type Served = std::thread::JoinHandle<Vec<(Vec<u8>, Vec<u8>)>>;

    /// A munged stand-in on a socket of its own: serves `answers.len()` connections, the
    /// n-th with `answers[n]` (given the request's header and body; `None` hangs up without
    /// answering), and returns what it was sent.
    fn fake_munged(answers: Vec<Answer>) -> (tempfile_path::Dir, Served) {
        let dir = tempfile_path::Dir::new();
        let listener = std::os::unix::net::UnixListener::bind(dir.socket()).unwrap();
        let served = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for answer in answers {
                let (mut s, _) = listener.accept().unwrap();
                let mut h = [0u8; HEADER_LEN];
                s.read_exact(&mut h).unwrap();
                let len = u32::from_be_bytes([h[7], h[8], h[9], h[10]]) as usize;
                let mut body = vec![0u8; len];
                s.read_exact(&mut body).unwrap();
                if let Some(reply) = answer(&h, &body) {
                    s.write_all(&framed(h[5] + 1, 0, &reply)).unwrap();
                }
                seen.push((h.to_vec(), body));
            }
            seen
        });
        (dir, served)
    }

    /// A private folder for a test's socket, removed afterwards.
    mod tempfile_path {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "gsched-munge-test-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub fn socket(&self) -> std::path::PathBuf {
                self.0.join("munge.socket")
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn encoded(_: &[u8], _: &[u8]) -> Option<Vec<u8>> {
        let mut rest = 8u32.to_be_bytes().to_vec();
        rest.extend_from_slice(b"MUNGE:x\0");
        Some(response(0, "", &rest))
    }

    #[test]
    fn a_started_encode_sends_what_encode_sends_and_finishes_with_the_credential() {
        let (dir, served) = fake_munged(vec![encoded, encoded]);
        let socket = dir.socket();
        let client = MungeClient::new(socket.to_str());
        let pending = client.start_encode(60, b"");
        assert_eq!(pending.finish().unwrap(), "MUNGE:x");
        assert_eq!(client.encode(60, b"").unwrap(), "MUNGE:x");
        let seen = served.join().unwrap();
        assert_eq!(seen[0], seen[1], "started and plain encode requests differ");
        assert_eq!(seen[0].0[5], MSG_ENC_REQ);
        assert_eq!(seen[0].1, encode_request(60, b""));
    }

    #[test]
    fn a_started_encode_is_retried_as_libmunge_retries() {
        fn hang_up(_: &[u8], _: &[u8]) -> Option<Vec<u8>> {
            None
        }
        fn retried(h: &[u8], b: &[u8]) -> Option<Vec<u8>> {
            assert_eq!(h[6], 1, "second attempt must carry retry 1");
            encoded(h, b)
        }
        let (dir, served) = fake_munged(vec![hang_up, retried]);
        let socket = dir.socket();
        let pending = MungeClient::new(socket.to_str()).start_encode(0, b"");
        assert_eq!(pending.finish().unwrap(), "MUNGE:x");
        assert_eq!(served.join().unwrap().len(), 2);
        let e = MungeClient::new(Some("/nonexistent/munge.socket"))
            .start_encode(0, b"")
            .finish()
            .unwrap_err();
        assert_eq!(e.code, EMUNGE_SOCKET);
        assert!(e.message.contains("Did you start munged?"), "{e}");
    }

    #[cfg(feature = "async")]
    #[tokio::test]
    async fn async_decode_sends_what_the_blocking_one_sends_and_reads_the_verdict() {
        fn ok(_: &[u8], _: &[u8]) -> Option<Vec<u8>> {
            Some(response(
                0,
                "",
                &decode_body(300, 1_700_000_000, 1001, 1002, b""),
            ))
        }
        let (dir, served) = fake_munged(vec![ok, ok]);
        let socket = dir.socket();
        let client = MungeClient::new(socket.to_str());
        let want = Decoded {
            uid: 1001,
            gid: 1002,
            encoded_at: 1_700_000_000,
            ttl: 300,
            payload: vec![],
        };
        assert_eq!(client.decode_async("MUNGE:abc:").await.unwrap(), want);
        let blocking = client.clone();
        let b = tokio::task::spawn_blocking(move || blocking.decode("MUNGE:abc:"));
        assert_eq!(b.await.unwrap().unwrap(), want);
        let seen = served.join().unwrap();
        assert_eq!(seen[0], seen[1], "async and blocking requests differ");
        assert_eq!(seen[0].1, decode_request("MUNGE:abc:").unwrap());
        assert_eq!(seen[0].0[5], MSG_DEC_REQ);
    }

    #[cfg(feature = "async")]
    #[tokio::test]
    async fn async_decode_retries_a_dropped_exchange_with_the_retry_count_set() {
        fn hang_up(_: &[u8], _: &[u8]) -> Option<Vec<u8>> {
            None
        }
        fn replayed(h: &[u8], _: &[u8]) -> Option<Vec<u8>> {
            // munged counts retries so that a retried decode is not taken for a replay.
            assert_eq!(h[6], 1, "second attempt must carry retry 1");
            Some(response(
                EMUNGE_CRED_REPLAYED,
                "Replayed credential",
                &decode_body(300, 1, 0, 0, b""),
            ))
        }
        let (dir, served) = fake_munged(vec![hang_up, replayed]);
        let socket = dir.socket();
        let e = MungeClient::new(socket.to_str())
            .decode_async("MUNGE:abc:")
            .await
            .unwrap_err();
        assert_eq!(e.code, EMUNGE_CRED_REPLAYED, "{e}");
        assert_eq!(served.join().unwrap().len(), 2);
    }

    #[cfg(feature = "async")]
    #[tokio::test]
    async fn async_decode_of_a_missing_socket_says_to_start_munged() {
        let e = MungeClient::new(Some("/nonexistent/munge.socket"))
            .decode_async("MUNGE:abc:")
            .await
            .unwrap_err();
        assert_eq!(e.code, EMUNGE_SOCKET);
        assert!(e.message.contains("Did you start munged?"), "{e}");
        let long = format!("/tmp/{}", "s".repeat(200));
        let e = MungeClient::new(Some(&long))
            .decode_async("MUNGE:abc:")
            .await
            .unwrap_err();
        assert_eq!(e.code, EMUNGE_OVERFLOW, "{e}");
    }

    #[test]
    fn a_missing_socket_says_to_start_munged() {
        let c = MungeClient::new(Some("/nonexistent/munge.socket"));
        let e = c.encode(0, b"").unwrap_err();
        assert_eq!(e.code, EMUNGE_SOCKET);
        assert!(e.message.contains("Did you start munged?"), "{e}");
        let e = MungeClient::new(Some("/etc/passwd"))
            .encode(0, b"")
            .unwrap_err();
        assert!(e.message.contains("Invalid file type"), "{e}");
    }
}
