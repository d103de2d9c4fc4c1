//! User and group lookups (uid ↔ name, home, groups) through the C library, so that NSS
//! (LDAP, sssd) answers exactly as it does for Slurm. Every command and daemon that needs a
//! name uses these functions instead of reading /etc/passwd itself.
//!
//! A static musl build (gsbatch, gsstepd) has no NSS modules: musl reads the files and asks
//! nscd, nothing else. There a name the C library does not know is asked of the system's
//! `getent` (glibc's, which loads the NSS modules), so an LDAP or sssd user still resolves.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};

/// What the password database says about a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: String,
    pub shell: String,
}

fn buf_size() -> usize {
    // SAFETY: sysconf has no memory effects; a negative answer means "no limit suggested".
    let n = unsafe { libc::sysconf(libc::_SC_GETPW_R_SIZE_MAX) };
    if n > 0 {
        n as usize
    } else {
        16384
    }
}

fn entry_from(pw: &libc::passwd) -> UserEntry {
    // SAFETY: getpwuid_r/getpwnam_r filled `pw` with pointers into our buffer, which is alive
    // while this runs; the strings are NUL-terminated.
    let s = |p: *const libc::c_char| {
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    UserEntry {
        name: s(pw.pw_name),
        uid: pw.pw_uid,
        gid: pw.pw_gid,
        home: s(pw.pw_dir),
        shell: s(pw.pw_shell),
    }
}

/// Calls a `getpw*_r` function with a buffer that grows until the entry fits.
fn lookup_passwd(
    call: impl Fn(
        *mut libc::passwd,
        *mut libc::c_char,
        libc::size_t,
        *mut *mut libc::passwd,
    ) -> libc::c_int,
) -> Option<UserEntry> {
    let mut size = buf_size();
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        // SAFETY: an all-zero passwd is a valid value for an out-parameter.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = call(&mut pw, buf.as_mut_ptr(), size, &mut result);
        if rc == libc::ERANGE && size < (1 << 22) {
            size *= 2;
            continue;
        }
        if rc != 0 || result.is_null() {
            return None;
        }
        return Some(entry_from(&pw));
    }
}

/// Looks a user up by uid.
pub fn user_by_uid(uid: u32) -> Option<UserEntry> {
    // SAFETY: every pointer lookup_passwd passes is valid and `buf` has `size` bytes.
    lookup_passwd(|pw, buf, size, res| unsafe { libc::getpwuid_r(uid, pw, buf, size, res) })
        .or_else(|| getent::user(&uid.to_string()))
}

/// Looks a user up by name.
pub fn user_by_name(name: &str) -> Option<UserEntry> {
    let cname = CString::new(name).ok()?;
    // SAFETY: as above; `cname` outlives the call.
    lookup_passwd(|pw, buf, size, res| unsafe {
        libc::getpwnam_r(cname.as_ptr(), pw, buf, size, res)
    })
    .or_else(|| getent::user(name).filter(|u| u.name == name))
}

/// A user given as a name or a numeric uid (`-u alice`, `-u 1000`).
pub fn resolve_user(s: &str) -> Option<UserEntry> {
    user_by_name(s).or_else(|| {
        s.parse::<u32>().ok().map(|uid| {
            user_by_uid(uid).unwrap_or(UserEntry {
                name: uid.to_string(),
                uid,
                gid: uid,
                home: "/".into(),
                shell: "/bin/sh".into(),
            })
        })
    })
}

/// The name of a uid, or the number when the database does not know it (as Slurm prints).
pub fn user_name(uid: u32) -> String {
    user_by_uid(uid)
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// What the group database says about a group: `(name, gid)`.
fn lookup_group(
    call: impl Fn(
        *mut libc::group,
        *mut libc::c_char,
        libc::size_t,
        *mut *mut libc::group,
    ) -> libc::c_int,
) -> Option<(String, u32)> {
    let mut size = buf_size();
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        // SAFETY: an all-zero group is a valid out-parameter.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        let rc = call(&mut gr, buf.as_mut_ptr(), size, &mut result);
        if rc == libc::ERANGE && size < (1 << 22) {
            size *= 2;
            continue;
        }
        if rc != 0 || result.is_null() || gr.gr_name.is_null() {
            return None;
        }
        // SAFETY: gr_name points into `buf`, NUL-terminated.
        let name = unsafe { CStr::from_ptr(gr.gr_name) }
            .to_string_lossy()
            .into_owned();
        return Some((name, gr.gr_gid));
    }
}

/// The name of a gid, or the number.
pub fn group_name(gid: u32) -> String {
    // SAFETY: every pointer lookup_group passes is valid and `buf` has `size` bytes.
    lookup_group(|gr, buf, size, res| unsafe { libc::getgrgid_r(gid, gr, buf, size, res) })
        .or_else(|| getent::group(&gid.to_string()))
        .map(|(name, _)| name)
        .unwrap_or_else(|| gid.to_string())
}

/// The gid of a group given by name.
pub fn group_by_name(name: &str) -> Option<u32> {
    let cname = CString::new(name).ok()?;
    // SAFETY: as above; `cname` outlives the call.
    lookup_group(|gr, buf, size, res| unsafe {
        libc::getgrnam_r(cname.as_ptr(), gr, buf, size, res)
    })
    .or_else(|| getent::group(name).filter(|(n, _)| n == name))
    .map(|(_, gid)| gid)
}

/// The names of the groups a user is in (its primary group and every group that lists it),
/// as `id -Gn` prints them; `None` when the password database does not know the uid.
pub fn group_names_of(uid: u32) -> Option<Vec<String>> {
    let user = user_by_uid(uid)?;
    let cname = CString::new(user.name).ok()?;
    let mut gids: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut n = gids.len() as libc::c_int;
        // SAFETY: `gids` has room for `n` entries; `cname` outlives the call.
        let rc = unsafe { libc::getgrouplist(cname.as_ptr(), user.gid, gids.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            gids.truncate(n.max(0) as usize);
            break;
        }
        // Too small: `n` says how many there are.
        let want = (n.max(0) as usize).max(gids.len() * 2);
        if want > 65_536 {
            return None;
        }
        gids.resize(want, 0);
    }
    Some(gids.into_iter().map(group_name).collect())
}

/// [`group_names_of`], remembered for a minute (the controller checks a partition's
/// `AllowGroups=` at every submission).
pub fn cached_group_names_of(uid: u32) -> Option<Vec<String>> {
    static CACHE: std::sync::OnceLock<LookupCache<u32, Vec<String>>> = std::sync::OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .get(uid, std::time::Instant::now(), group_names_of)
}

/// The system's `getent`, for the static builds (see the module's notes); the glibc builds
/// already asked NSS and never call it.
mod getent {
    use super::UserEntry;

    #[cfg(target_env = "musl")]
    fn query(db: &str, key: &str) -> Option<String> {
        if key.is_empty() || key.starts_with('-') {
            return None;
        }
        let bin = ["/usr/bin/getent", "/bin/getent"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())?;
        let out = std::process::Command::new(bin)
            .args([db, key])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8(out.stdout).ok()
    }

    #[cfg(not(target_env = "musl"))]
    fn query(_db: &str, _key: &str) -> Option<String> {
        None
    }

    pub fn user(key: &str) -> Option<UserEntry> {
        parse_passwd(query("passwd", key)?.lines().next()?)
    }

    pub fn group(key: &str) -> Option<(String, u32)> {
        parse_group(query("group", key)?.lines().next()?)
    }

    /// `name:password:uid:gid:gecos:home:shell`
    pub(super) fn parse_passwd(line: &str) -> Option<UserEntry> {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 7 || f[0].is_empty() {
            return None;
        }
        Some(UserEntry {
            name: f[0].to_string(),
            uid: f[2].parse().ok()?,
            gid: f[3].parse().ok()?,
            home: f[5].to_string(),
            shell: f[6].to_string(),
        })
    }

    /// `name:password:gid:members`
    pub(super) fn parse_group(line: &str) -> Option<(String, u32)> {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 3 || f[0].is_empty() {
            return None;
        }
        Some((f[0].to_string(), f[2].parse().ok()?))
    }
}

/// How long a [`LookupCache`] trusts an answer: a renamed user shows under the new name
/// (a changed group list reaches new jobs) within a minute, as nscd's and sssd's own caches
/// behave.
const NAME_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// Answers of a lookup by key, each trusted for [`NAME_TTL`]: the daemons ask NSS (files,
/// LDAP) about the same few users for every request or job. A lookup that finds nothing is
/// not remembered (the user may be added at any moment).
pub struct LookupCache<K, V>(
    std::sync::Mutex<std::collections::HashMap<K, (V, std::time::Instant)>>,
);

impl<K, V> Default for LookupCache<K, V> {
    fn default() -> Self {
        LookupCache(Default::default())
    }
}

impl<K: std::hash::Hash + Eq + Copy, V: Clone> LookupCache<K, V> {
    /// The remembered answer for `key`, or `look_up`'s, remembered from `now`.
    pub fn get(
        &self,
        key: K,
        now: std::time::Instant,
        look_up: impl FnOnce(K) -> Option<V>,
    ) -> Option<V> {
        let entries = || self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, at)) = entries().get(&key) {
            if now.saturating_duration_since(*at) < NAME_TTL {
                return Some(v.clone());
            }
        }
        // Not under the lock: NSS may take its time (LDAP).
        let v = look_up(key)?;
        let mut c = entries();
        if c.len() > 65_536 {
            c.clear();
        }
        c.insert(key, (v.clone(), now));
        Some(v)
    }
}

type NameCache = LookupCache<u32, String>;

fn cached(
    cache: &NameCache,
    id: u32,
    now: std::time::Instant,
    look_up: impl Fn(u32) -> String,
) -> String {
    cache
        .get(id, now, |id| Some(look_up(id)))
        .unwrap_or_default()
}

/// [`user_name`], remembered for a minute: the controller names the submitter of every
/// request, and asking NSS (files, LDAP) each time costs more than the rest of a held
/// submission's bookkeeping.
pub fn cached_user_name(uid: u32) -> String {
    static CACHE: std::sync::OnceLock<NameCache> = std::sync::OnceLock::new();
    cached(
        CACHE.get_or_init(Default::default),
        uid,
        std::time::Instant::now(),
        user_name,
    )
}

/// [`group_name`], remembered for a minute.
pub fn cached_group_name(gid: u32) -> String {
    static CACHE: std::sync::OnceLock<NameCache> = std::sync::OnceLock::new();
    cached(
        CACHE.get_or_init(Default::default),
        gid,
        std::time::Instant::now(),
        group_name,
    )
}

/// [`user_by_uid`], remembered for a minute: the controller builds every job's login
/// environment (`HOME`, `SHELL`) from it when it starts the job.
pub fn cached_user_by_uid(uid: u32) -> Option<UserEntry> {
    static CACHE: std::sync::OnceLock<LookupCache<u32, UserEntry>> = std::sync::OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .get(uid, std::time::Instant::now(), user_by_uid)
}

/// The real uid and gid of this process.
pub fn current_ids() -> (u32, u32) {
    // SAFETY: getuid/getgid always succeed and touch no memory.
    unsafe { (libc::getuid(), libc::getgid()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_in_its_primary_group() {
        let groups = group_names_of(0).expect("root is in the password database");
        assert!(groups.contains(&group_name(0)), "{groups:?}");
        assert_eq!(group_names_of(u32::MAX - 7), None);
    }

    #[test]
    fn root_is_known() {
        let r = user_by_uid(0).expect("uid 0 exists");
        assert_eq!(r.name, "root");
        assert_eq!(user_by_name("root").unwrap().uid, 0);
        assert_eq!(resolve_user("0").unwrap().name, "root");
        assert_eq!(group_name(0), "root");
    }

    #[test]
    fn getent_lines_parse() {
        let u = getent::parse_passwd("alice:x:1234:100:Alice A.:/home/alice:/bin/bash").unwrap();
        assert_eq!(
            (
                u.name.as_str(),
                u.uid,
                u.gid,
                u.home.as_str(),
                u.shell.as_str()
            ),
            ("alice", 1234, 100, "/home/alice", "/bin/bash")
        );
        assert!(getent::parse_passwd("alice:x:notanumber:100::/h:/s").is_none());
        assert!(getent::parse_passwd("short:x:1").is_none());
        assert_eq!(
            getent::parse_group("lab:*:4242:alice,bob"),
            Some(("lab".into(), 4242))
        );
        assert!(getent::parse_group(":x:1:").is_none());
        assert_eq!(group_by_name("root"), Some(0));
        assert_eq!(group_by_name("no-such-group-gsched"), None);
    }

    /// Static builds only (`cargo test -p gsched-proto --target x86_64-unknown-linux-musl`):
    /// the fallback runs the system's getent.
    #[cfg(target_env = "musl")]
    #[test]
    fn static_builds_ask_getent() {
        let u = getent::user("0").expect("getent passwd 0");
        assert_eq!((u.name.as_str(), u.uid), ("root", 0));
        assert_eq!(getent::group("root"), Some(("root".into(), 0)));
        assert!(getent::user("-s").is_none(), "an option is not a key");
        assert!(getent::user("no-such-user-gsched").is_none());
    }

    #[test]
    fn cached_names_are_looked_up_once_within_their_lifetime() {
        let cache = NameCache::default();
        let calls = std::cell::Cell::new(0);
        let look = |id: u32| {
            calls.set(calls.get() + 1);
            format!("u{id}")
        };
        let t0 = std::time::Instant::now();
        assert_eq!(cached(&cache, 7, t0, look), "u7");
        assert_eq!(cached(&cache, 7, t0 + NAME_TTL / 2, look), "u7");
        assert_eq!(cached(&cache, 8, t0, look), "u8");
        assert_eq!(calls.get(), 2);
        // An expired entry is asked again.
        assert_eq!(cached(&cache, 7, t0 + NAME_TTL, look), "u7");
        assert_eq!(calls.get(), 3);
        assert_eq!(cached_user_name(0), "root");
        assert_eq!(cached_group_name(0), "root");
    }

    #[test]
    fn a_lookup_that_finds_nothing_is_asked_again() {
        let cache = LookupCache::<(u32, u32), u32>::default();
        let calls = std::cell::Cell::new(0);
        let t0 = std::time::Instant::now();
        let missing = |_| {
            calls.set(calls.get() + 1);
            None
        };
        assert_eq!(cache.get((1, 2), t0, missing), None);
        assert_eq!(cache.get((1, 2), t0, missing), None);
        assert_eq!(calls.get(), 2);
        assert_eq!(cache.get((1, 2), t0, |(a, b)| Some(a + b)), Some(3));
        assert_eq!(cache.get((1, 2), t0, missing), Some(3));
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn unknown_ids_print_as_numbers() {
        assert_eq!(user_name(3_999_999_999), "3999999999");
        assert!(user_by_name("no-such-user-gsched").is_none());
    }
}
