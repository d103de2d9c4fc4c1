//! `auth/munge`: every request carries a MUNGE credential, which the receiving daemon hands to
//! munged to learn who sent it (uid and gid as the sending host's munged saw them), and which
//! munged refuses when it is forged, tampered with, expired, from the future or replayed.
//!
//! Why a hand-written FFI loaded with `dlopen` rather than a `-lmunge` link: gsched then builds
//! on machines without `libmunge-dev` (only single-user clusters with `auth/none` need nothing
//! more), and a cluster that asks for `auth/munge` on a host without `libmunge.so.2` fails at
//! start-up with a message naming the package, not at link time. The surface is six functions
//! of `munge.h` (0.5.x ABI, stable since 2004).
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

#![allow(unsafe_code)]

use gsched_proto::auth::{AuthError, Authenticator, Identity};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The library loaded at run time (the runtime package `libmunge2` on Debian).
pub const LIBRARY: &str = "libmunge.so.2";

// munge.h: enum munge_opt.
const MUNGE_OPT_TTL: c_int = 4;
const MUNGE_OPT_ENCODE_TIME: c_int = 6;
const MUNGE_OPT_SOCKET: c_int = 8;

// munge.h: enum munge_err.
const EMUNGE_SUCCESS: c_int = 0;
const EMUNGE_SOCKET: c_int = 6;
const EMUNGE_CRED_INVALID: c_int = 14;
const EMUNGE_CRED_EXPIRED: c_int = 15;
const EMUNGE_CRED_REWOUND: c_int = 16;
const EMUNGE_CRED_REPLAYED: c_int = 17;
const EMUNGE_CRED_UNAUTHORIZED: c_int = 18;

/// Seconds a decoded credential stays in the replay cache past its own expiry (clock skew
/// between hosts; munged allows the same).
const SKEW_SECS: i64 = 60;
/// The cache is swept of expired entries every this many insertions.
const SWEEP_EVERY: usize = 4096;

type MungeCtx = *mut c_void;
type EncodeFn = unsafe extern "C" fn(*mut *mut c_char, MungeCtx, *const c_void, c_int) -> c_int;
type DecodeFn = unsafe extern "C" fn(
    *const c_char,
    MungeCtx,
    *mut *mut c_void,
    *mut c_int,
    *mut libc::uid_t,
    *mut libc::gid_t,
) -> c_int;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;
type CtxCreateFn = unsafe extern "C" fn() -> MungeCtx;
type CtxDestroyFn = unsafe extern "C" fn(MungeCtx);
type CtxStrerrorFn = unsafe extern "C" fn(MungeCtx) -> *const c_char;
type CtxOptFn = unsafe extern "C" fn(MungeCtx, c_int, ...) -> c_int;

/// The functions of libmunge that gsched calls.
struct Lib {
    encode: EncodeFn,
    decode: DecodeFn,
    strerror: StrerrorFn,
    ctx_create: CtxCreateFn,
    ctx_destroy: CtxDestroyFn,
    ctx_strerror: CtxStrerrorFn,
    ctx_set: CtxOptFn,
    ctx_get: CtxOptFn,
}

/// Loads libmunge once per process; the handle is never closed.
fn lib() -> Result<&'static Lib, AuthError> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load)
        .as_ref()
        .map_err(|e| AuthError(e.clone()))
}

fn load() -> Result<Lib, String> {
    let name = CString::new(LIBRARY).map_err(|e| e.to_string())?;
    // SAFETY: `name` is a valid NUL-terminated string; dlopen has no other preconditions.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!(
            "AuthType=auth/munge needs {LIBRARY}, which cannot be loaded ({}); install MUNGE \
             (Debian/Ubuntu: apt-get install munge libmunge2) or use AuthType=auth/none for a \
             single-user cluster on loopback",
            dlerror()
        ));
    }
    let sym = |s: &str| -> Result<*mut c_void, String> {
        let c = CString::new(s).map_err(|e| e.to_string())?;
        // SAFETY: `handle` is a live handle from dlopen, `c` a valid C string.
        let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "{LIBRARY} has no symbol {s} ({}); is it MUNGE 0.5?",
                dlerror()
            ))
        } else {
            Ok(p)
        }
    };
    // SAFETY: each symbol is the libmunge function of that name, whose C prototype (munge.h,
    // 0.5.x) is exactly the function pointer type it is transmuted to.
    unsafe {
        Ok(Lib {
            encode: std::mem::transmute::<*mut c_void, EncodeFn>(sym("munge_encode")?),
            decode: std::mem::transmute::<*mut c_void, DecodeFn>(sym("munge_decode")?),
            strerror: std::mem::transmute::<*mut c_void, StrerrorFn>(sym("munge_strerror")?),
            ctx_create: std::mem::transmute::<*mut c_void, CtxCreateFn>(sym("munge_ctx_create")?),
            ctx_destroy: std::mem::transmute::<*mut c_void, CtxDestroyFn>(sym(
                "munge_ctx_destroy",
            )?),
            ctx_strerror: std::mem::transmute::<*mut c_void, CtxStrerrorFn>(sym(
                "munge_ctx_strerror",
            )?),
            ctx_set: std::mem::transmute::<*mut c_void, CtxOptFn>(sym("munge_ctx_set")?),
            ctx_get: std::mem::transmute::<*mut c_void, CtxOptFn>(sym("munge_ctx_get")?),
        })
    }
}

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl* call
    // of this thread; it is copied at once.
    unsafe {
        let p = libc::dlerror();
        if p.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// A munge context, destroyed when dropped.
struct Ctx {
    lib: &'static Lib,
    ptr: MungeCtx,
}

impl Ctx {
    fn new(lib: &'static Lib, socket: Option<&CStr>) -> Result<Ctx, AuthError> {
        // SAFETY: munge_ctx_create takes nothing and returns NULL or a context we own.
        let ptr = unsafe { (lib.ctx_create)() };
        if ptr.is_null() {
            return Err(AuthError(
                "cannot create a MUNGE context (out of memory)".into(),
            ));
        }
        let ctx = Ctx { lib, ptr };
        if let Some(s) = socket {
            // SAFETY: MUNGE_OPT_SOCKET takes one `char *`; libmunge copies the string.
            let e = unsafe { (lib.ctx_set)(ptr, MUNGE_OPT_SOCKET, s.as_ptr()) };
            if e != EMUNGE_SUCCESS {
                return Err(AuthError(format!(
                    "cannot set the MUNGE socket {}: {}",
                    s.to_string_lossy(),
                    ctx.error(e)
                )));
            }
        }
        Ok(ctx)
    }

    fn set_ttl(&self, ttl: c_int) -> Result<(), AuthError> {
        // SAFETY: MUNGE_OPT_TTL takes one `int`.
        let e = unsafe { (self.lib.ctx_set)(self.ptr, MUNGE_OPT_TTL, ttl) };
        if e == EMUNGE_SUCCESS {
            Ok(())
        } else {
            Err(AuthError(format!(
                "cannot set the MUNGE ttl: {}",
                self.error(e)
            )))
        }
    }

    /// `(encode time, ttl)` of the credential last decoded with this context.
    fn times(&self) -> Option<(i64, i64)> {
        // libc deprecates `time_t` on musl (gsstepd's static build); MUNGE writes a C `time_t`.
        #[allow(deprecated)]
        let mut encoded: libc::time_t = 0;
        let mut ttl: c_int = 0;
        // SAFETY: MUNGE_OPT_ENCODE_TIME writes one `time_t` through the pointer, MUNGE_OPT_TTL
        // one `int`; both point at live locals.
        let (a, b) = unsafe {
            (
                (self.lib.ctx_get)(self.ptr, MUNGE_OPT_ENCODE_TIME, &mut encoded as *mut _),
                (self.lib.ctx_get)(self.ptr, MUNGE_OPT_TTL, &mut ttl as *mut c_int),
            )
        };
        (a == EMUNGE_SUCCESS && b == EMUNGE_SUCCESS).then_some((encoded as i64, ttl as i64))
    }

    /// The context's detailed message for error `e`, else the generic one.
    fn error(&self, e: c_int) -> String {
        // SAFETY: both return NULL or a string owned by the library (the context's lives as
        // long as the context, which outlives this call); copied at once.
        unsafe {
            let p = (self.lib.ctx_strerror)(self.ptr);
            let p = if p.is_null() {
                (self.lib.strerror)(e)
            } else {
                p
            };
            if p.is_null() {
                format!("MUNGE error {e}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from munge_ctx_create and is destroyed exactly once.
        unsafe { (self.lib.ctx_destroy)(self.ptr) }
    }
}

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
pub struct MungeAuth {
    lib: &'static Lib,
    socket: Option<CString>,
    ttl: Option<c_int>,
    replay: Mutex<ReplayCache>,
}

impl std::fmt::Debug for MungeAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MungeAuth")
            .field("socket", &self.socket)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl MungeAuth {
    /// Loads libmunge and checks the options; does not contact munged (the daemons start
    /// before munged in some boot orders, and the commands only need it for their request).
    pub fn new(opts: &MungeOptions) -> Result<MungeAuth, AuthError> {
        let lib = lib()?;
        let socket = opts
            .socket
            .as_deref()
            .map(|s| {
                CString::new(s)
                    .map_err(|_| AuthError(format!("AuthInfo: socket path {s:?} contains NUL")))
            })
            .transpose()?;
        let ttl = opts
            .ttl
            .map(|t| {
                c_int::try_from(t).map_err(|_| AuthError(format!("AuthInfo: ttl={t} is too large")))
            })
            .transpose()?;
        Ok(MungeAuth {
            lib,
            socket,
            ttl,
            replay: Mutex::new(ReplayCache::default()),
        })
    }

    fn socket_name(&self) -> String {
        self.socket
            .as_ref()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "the default socket".into())
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
        let ctx = Ctx::new(self.lib, self.socket.as_deref())?;
        if let Some(t) = self.ttl {
            ctx.set_ttl(t)?;
        }
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: `out` receives a malloc'ed NUL-terminated string on success; no payload.
        let e = unsafe { (self.lib.encode)(&mut out, ctx.ptr, std::ptr::null(), 0) };
        if e != EMUNGE_SUCCESS {
            if !out.is_null() {
                // SAFETY: allocated by libmunge with malloc, freed once.
                unsafe { libc::free(out.cast()) };
            }
            let hint = if e == EMUNGE_SOCKET {
                format!(
                    "; is munged running and is {} reachable (AuthInfo=socket=PATH)?",
                    self.socket_name()
                )
            } else {
                String::new()
            };
            return Err(AuthError(format!(
                "cannot create a MUNGE credential: {}{hint}",
                ctx.error(e)
            )));
        }
        // SAFETY: on success `out` is a NUL-terminated string that we own; copied, then freed.
        let cred = unsafe {
            let s = CStr::from_ptr(out).to_string_lossy().into_owned();
            libc::free(out.cast());
            s
        };
        Ok(cred)
    }

    fn verify(&self, credential: &str) -> Result<Identity, AuthError> {
        if !credential.starts_with("MUNGE:") {
            return Err(AuthError(
                "the credential is not a MUNGE credential (is the sender configured with \
                 AuthType=auth/munge?)"
                    .into(),
            ));
        }
        let c = CString::new(credential)
            .map_err(|_| AuthError("the MUNGE credential contains NUL".into()))?;
        let ctx = Ctx::new(self.lib, self.socket.as_deref())?;
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut len: c_int = 0;
        let mut uid: libc::uid_t = libc::uid_t::MAX;
        let mut gid: libc::gid_t = libc::gid_t::MAX;
        // SAFETY: every out-pointer points at a live local; `c` is NUL-terminated.
        let e = unsafe {
            (self.lib.decode)(c.as_ptr(), ctx.ptr, &mut buf, &mut len, &mut uid, &mut gid)
        };
        if !buf.is_null() {
            // SAFETY: the payload (possibly allocated even on error) is malloc'ed; freed once.
            unsafe { libc::free(buf) };
        }
        if e != EMUNGE_SUCCESS {
            let what = match e {
                EMUNGE_CRED_INVALID => "invalid (forged, tampered with, or made with another key)",
                EMUNGE_CRED_EXPIRED => "expired",
                EMUNGE_CRED_REWOUND => "from the future (check the clocks)",
                EMUNGE_CRED_REPLAYED => "replayed",
                EMUNGE_CRED_UNAUTHORIZED => "not meant for this user",
                EMUNGE_SOCKET => "not checked: munged cannot be reached",
                _ => "refused",
            };
            return Err(AuthError(format!(
                "MUNGE credential {what}: {} (munge error {e})",
                ctx.error(e)
            )));
        }
        let now = now();
        let expires = ctx
            .times()
            .map(|(enc, ttl)| enc + ttl)
            .unwrap_or(now + 3600)
            .max(now)
            + SKEW_SECS;
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
        Ok(Identity { uid, gid })
    }
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
