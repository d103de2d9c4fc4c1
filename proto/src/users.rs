//! User and group lookups (uid ↔ name, home, groups) through the C library, so that NSS
//! (LDAP, sssd) answers exactly as it does for Slurm. Every command and daemon that needs a
//! name uses these functions instead of reading /etc/passwd itself.
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
}

/// Looks a user up by name.
pub fn user_by_name(name: &str) -> Option<UserEntry> {
    let cname = CString::new(name).ok()?;
    // SAFETY: as above; `cname` outlives the call.
    lookup_passwd(|pw, buf, size, res| unsafe {
        libc::getpwnam_r(cname.as_ptr(), pw, buf, size, res)
    })
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

/// The name of a gid, or the number.
pub fn group_name(gid: u32) -> String {
    let mut size = buf_size();
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        // SAFETY: an all-zero group is a valid out-parameter.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and `buf` has `size` bytes.
        let rc = unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), size, &mut result) };
        if rc == libc::ERANGE && size < (1 << 22) {
            size *= 2;
            continue;
        }
        if rc != 0 || result.is_null() || gr.gr_name.is_null() {
            return gid.to_string();
        }
        // SAFETY: gr_name points into `buf`, NUL-terminated.
        return unsafe { CStr::from_ptr(gr.gr_name) }
            .to_string_lossy()
            .into_owned();
    }
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
    fn root_is_known() {
        let r = user_by_uid(0).expect("uid 0 exists");
        assert_eq!(r.name, "root");
        assert_eq!(user_by_name("root").unwrap().uid, 0);
        assert_eq!(resolve_user("0").unwrap().name, "root");
        assert_eq!(group_name(0), "root");
    }

    #[test]
    fn unknown_ids_print_as_numbers() {
        assert_eq!(user_name(3_999_999_999), "3999999999");
        assert!(user_by_name("no-such-user-gsched").is_none());
    }
}
