//! The cgroup v2 device filter: on v2 the devices controller is an eBPF program of type
//! `BPF_PROG_TYPE_CGROUP_DEVICE` attached to the job's cgroup, not a `devices.deny` file.
//! This module builds that program from the same [`DeviceRule`]s v1 writes (a deny list:
//! every other device stays allowed, as under v1 where a job's cgroup starts from its
//! parent's "a *:* rwm"), as raw instruction bytes, interprets it in the unit tests so the
//! decision each rule makes is checked without a kernel, and attaches it ([`attach`]; checked
//! against the kernel in `tests/real.rs`).
//!
//! [`attach`] loads it: `bpf(BPF_PROG_LOAD)` with `prog_type = BPF_PROG_TYPE_CGROUP_DEVICE`
//! (15), these instructions and license "GPL", then `bpf(BPF_PROG_ATTACH)` with the job
//! cgroup's directory fd, `attach_type = BPF_CGROUP_DEVICE` (6) and `BPF_F_ALLOW_MULTI` (so
//! programs of the cgroups above, such as systemd's, still apply too); the program goes with
//! the cgroup when it is removed, so nothing else tracks it. The `bpf` system call is the only
//! `unsafe` code of this crate (module `sys`); it needs root (CAP_BPF and CAP_SYS_ADMIN).
//!
//! The program sees `struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }`,
//! `access_type` = access bits (mknod 1, read 2, write 4) << 16 | type (block 1, char 2),
//! and returns 1 to allow, 0 to deny.

use crate::DeviceRule;

/// `BPF_DEVCG_DEV_BLOCK`, `BPF_DEVCG_DEV_CHAR`.
pub const DEV_BLOCK: u32 = 1;
pub const DEV_CHAR: u32 = 2;
/// `BPF_DEVCG_ACC_MKNOD`, `_READ`, `_WRITE`.
pub const ACC_MKNOD: u32 = 1;
pub const ACC_READ: u32 = 2;
pub const ACC_WRITE: u32 = 4;

// Opcodes (linux/bpf_common.h, linux/bpf.h).
const LDX_MEM_W: u8 = 0x61;
const ALU64_AND_K: u8 = 0x57;
const ALU64_RSH_K: u8 = 0x77;
const ALU64_MOV_K: u8 = 0xb7;
const ALU64_MOV_X: u8 = 0xbf;
const JMP_JNE_K: u8 = 0x55;
const JMP_JEQ_K: u8 = 0x15;
const JMP_EXIT: u8 = 0x95;

/// One eBPF instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    /// The 8 bytes the kernel reads (little-endian host, as x86_64 and aarch64).
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.src << 4) | (self.dst & 0x0f);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

fn access_bits(access: &str) -> i32 {
    let mut bits = 0;
    for c in access.chars() {
        bits |= match c {
            'm' => ACC_MKNOD,
            'r' => ACC_READ,
            'w' => ACC_WRITE,
            _ => 0,
        };
    }
    bits as i32
}

/// The program that denies `rules` and allows every other device.
pub fn device_program(rules: &[DeviceRule]) -> Vec<Insn> {
    let mut p = vec![
        // r2 = type, r3 = access, r4 = major, r5 = minor (r1 is the context).
        Insn::new(LDX_MEM_W, 2, 1, 0, 0),
        Insn::new(ALU64_AND_K, 2, 0, 0, 0xffff),
        Insn::new(LDX_MEM_W, 3, 1, 0, 0),
        Insn::new(ALU64_RSH_K, 3, 0, 0, 16),
        Insn::new(LDX_MEM_W, 4, 1, 4, 0),
        Insn::new(LDX_MEM_W, 5, 1, 8, 0),
    ];
    for r in rules {
        let kind = if r.kind == 'b' { DEV_BLOCK } else { DEV_CHAR };
        // Each test jumps to the next rule when it does not match; the jump length is the
        // number of instructions left in this rule's block.
        let mut block = vec![
            Insn::new(JMP_JNE_K, 2, 0, 0, kind as i32),
            Insn::new(JMP_JNE_K, 4, 0, 0, r.major as i32),
        ];
        if let Some(m) = r.minor {
            block.push(Insn::new(JMP_JNE_K, 5, 0, 0, m as i32));
        }
        block.push(Insn::new(ALU64_MOV_X, 0, 3, 0, 0));
        block.push(Insn::new(ALU64_AND_K, 0, 0, 0, access_bits(&r.access)));
        block.push(Insn::new(JMP_JEQ_K, 0, 0, 0, 0));
        block.push(Insn::new(ALU64_MOV_K, 0, 0, 0, 0));
        block.push(Insn::new(JMP_EXIT, 0, 0, 0, 0));
        let n = block.len();
        for (i, insn) in block.iter_mut().enumerate() {
            if insn.code == JMP_JNE_K || insn.code == JMP_JEQ_K {
                insn.off = (n - i - 1) as i16;
            }
        }
        p.extend(block);
    }
    p.push(Insn::new(ALU64_MOV_K, 0, 0, 0, 1));
    p.push(Insn::new(JMP_EXIT, 0, 0, 0, 0));
    p
}

/// `BPF_PROG_TYPE_CGROUP_DEVICE`, `BPF_CGROUP_DEVICE`, `BPF_F_ALLOW_MULTI`, commands.
const PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const ATTACH_CGROUP_DEVICE: u32 = 6;
const F_ALLOW_MULTI: u32 = 2;
const BPF_PROG_LOAD: i32 = 5;
const BPF_PROG_ATTACH: i32 = 8;

#[allow(unsafe_code)]
mod sys {
    use std::os::fd::{FromRawFd, OwnedFd};

    /// `bpf(cmd, attr, sizeof attr)`; a returned descriptor is owned.
    pub fn bpf(cmd: i32, attr: &mut [u8; 128]) -> std::io::Result<Option<OwnedFd>> {
        // SAFETY: `attr` is a valid, writable buffer of the size passed; the pointers inside
        // it (instructions, license, log) are the caller's live borrows.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                libc::c_long::from(cmd),
                attr.as_mut_ptr(),
                attr.len() as libc::c_long,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: for BPF_PROG_LOAD the kernel returned a new descriptor that nothing else
        // owns; other commands return 0 and no descriptor.
        Ok((r > 0).then(|| unsafe { OwnedFd::from_raw_fd(r as i32) }))
    }
}

fn put_u32(a: &mut [u8; 128], at: usize, v: u32) {
    a[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(a: &mut [u8; 128], at: usize, v: u64) {
    a[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Loads the program denying `rules` and attaches it to the cgroup folder `dir`.
pub fn attach(dir: &std::path::Path, rules: &[DeviceRule]) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let insns = program_bytes(rules);
    let license = b"GPL\0";
    let mut log = vec![0u8; 64 * 1024];
    let load = |log_level: u32, log: &mut Vec<u8>| {
        let mut attr = [0u8; 128];
        put_u32(&mut attr, 0, PROG_TYPE_CGROUP_DEVICE);
        put_u32(&mut attr, 4, (insns.len() / 8) as u32);
        put_u64(&mut attr, 8, insns.as_ptr() as u64);
        put_u64(&mut attr, 16, license.as_ptr() as u64);
        if log_level > 0 {
            put_u32(&mut attr, 24, log_level);
            put_u32(&mut attr, 28, log.len() as u32);
            put_u64(&mut attr, 32, log.as_mut_ptr() as u64);
        }
        sys::bpf(BPF_PROG_LOAD, &mut attr)
    };
    let prog = match load(0, &mut log) {
        Ok(Some(fd)) => fd,
        Ok(None) => return Err("BPF_PROG_LOAD returned no descriptor".into()),
        Err(e) => {
            // Again with the verifier's log, for the message.
            let _ = load(1, &mut log);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let why = String::from_utf8_lossy(&log[..end]).trim().to_string();
            return Err(format!(
                "cannot load the device filter: {e}{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ));
        }
    };
    let cg = std::fs::File::open(dir).map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
    let mut attr = [0u8; 128];
    put_u32(&mut attr, 0, cg.as_raw_fd() as u32);
    put_u32(&mut attr, 4, prog.as_raw_fd() as u32);
    put_u32(&mut attr, 8, ATTACH_CGROUP_DEVICE);
    put_u32(&mut attr, 12, F_ALLOW_MULTI);
    sys::bpf(BPF_PROG_ATTACH, &mut attr)
        .map_err(|e| format!("cannot attach the device filter to {}: {e}", dir.display()))?;
    Ok(())
}

/// The program as the bytes `BPF_PROG_LOAD` takes.
pub fn program_bytes(rules: &[DeviceRule]) -> Vec<u8> {
    device_program(rules)
        .into_iter()
        .flat_map(Insn::to_bytes)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the instructions this module emits, as the kernel would, on one device access.
    fn run(bytes: &[u8], kind: u32, major: u32, minor: u32, access: u32) -> u64 {
        let ctx = [(access << 16) | kind, major, minor];
        let mut r = [0u64; 11];
        let mut pc = 0usize;
        let insns: Vec<&[u8]> = bytes.chunks(8).collect();
        for _ in 0..10_000 {
            let b = insns[pc];
            let (code, dst, src) = (b[0], (b[1] & 0x0f) as usize, (b[1] >> 4) as usize);
            let off = i16::from_le_bytes([b[2], b[3]]);
            let imm = i32::from_le_bytes([b[4], b[5], b[6], b[7]]) as i64 as u64;
            pc += 1;
            match code {
                LDX_MEM_W => {
                    assert_eq!(src, 1, "loads only from the context");
                    r[dst] = u64::from(ctx[off as usize / 4]);
                }
                ALU64_AND_K => r[dst] &= imm,
                ALU64_RSH_K => r[dst] >>= imm,
                ALU64_MOV_K => r[dst] = imm,
                ALU64_MOV_X => r[dst] = r[src],
                JMP_JNE_K if r[dst] != imm => pc = (pc as i64 + i64::from(off)) as usize,
                JMP_JEQ_K if r[dst] == imm => pc = (pc as i64 + i64::from(off)) as usize,
                JMP_JNE_K | JMP_JEQ_K => {}
                JMP_EXIT => return r[0],
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
        panic!("the program does not end");
    }

    fn rule(kind: char, major: u32, minor: Option<u32>, access: &str) -> DeviceRule {
        DeviceRule {
            kind,
            major,
            minor,
            access: access.into(),
        }
    }

    #[test]
    fn denies_the_listed_gpus_only() {
        let p = program_bytes(&[
            rule('c', 195, Some(0), "rwm"),
            rule('c', 195, Some(2), "rwm"),
        ]);
        assert_eq!(p.len() % 8, 0);
        assert_eq!(run(&p, DEV_CHAR, 195, 0, ACC_READ), 0);
        assert_eq!(run(&p, DEV_CHAR, 195, 2, ACC_WRITE | ACC_READ), 0);
        assert_eq!(run(&p, DEV_CHAR, 195, 1, ACC_READ), 1);
        assert_eq!(
            run(&p, DEV_CHAR, 195, 255, ACC_READ),
            1,
            "nvidiactl stays allowed"
        );
        assert_eq!(run(&p, DEV_BLOCK, 195, 0, ACC_READ), 1);
        assert_eq!(
            run(&p, DEV_CHAR, 1, 3, ACC_READ | ACC_WRITE),
            1,
            "/dev/null"
        );
    }

    #[test]
    fn wildcard_minor_and_partial_access() {
        let p = program_bytes(&[rule('c', 195, None, "w")]);
        assert_eq!(run(&p, DEV_CHAR, 195, 7, ACC_WRITE), 0);
        assert_eq!(
            run(&p, DEV_CHAR, 195, 7, ACC_READ),
            1,
            "only writes are denied"
        );
        assert_eq!(run(&p, DEV_CHAR, 195, 7, ACC_READ | ACC_WRITE), 0);
        let empty = program_bytes(&[]);
        assert_eq!(empty.len(), 8 * 8);
        assert_eq!(run(&empty, DEV_CHAR, 195, 0, ACC_READ), 1);
    }

    #[test]
    fn encoding() {
        let i = Insn::new(LDX_MEM_W, 4, 1, 4, 0).to_bytes();
        assert_eq!(i, [0x61, 0x14, 4, 0, 0, 0, 0, 0]);
        let j = Insn::new(JMP_JNE_K, 4, 0, 3, 195).to_bytes();
        assert_eq!(j, [0x55, 0x04, 3, 0, 195, 0, 0, 0]);
    }
}
