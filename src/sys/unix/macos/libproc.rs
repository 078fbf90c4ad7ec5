//! macOS's process table: every pid from `proc_listallpids`, each one's
//! parent, group, start time and state from `proc_pidinfo`
//! (`PROC_PIDTBSDINFO`), our children from `proc_listchildpids`, and a
//! process's environment from `sysctl(KERN_PROCARGS2)`, which answers
//! for the user's own processes (parsed by `super::super::procargs`).

use std::cell::RefCell;

use nix::libc;

use super::super::{Marked, ProcInfo, procargs};

/// One process, as libproc shows it now (None once it is reaped, or if
/// it cannot be read). Its start is microseconds since the epoch.
pub(super) fn proc_info(pid: i32) -> Option<ProcInfo> {
    let info = bsd_info(pid)?;
    Some(ProcInfo {
        pid,
        ppid: info.pbi_ppid as i32,
        pgid: info.pbi_pgid as i32,
        zombie: info.pbi_status == libc::SZOMB,
        start: info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec,
    })
}

fn bsd_info(pid: i32) -> Option<libc::proc_bsdinfo> {
    // SAFETY: proc_bsdinfo is plain data that proc_pidinfo fills.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: a writable buffer of the size given.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    (got == size).then_some(info)
}

/// Every pid a `list` call gives, asked again with room to spare while
/// the table grows between the calls.
fn pids(list: impl Fn(*mut libc::c_void, libc::c_int) -> libc::c_int) -> Vec<i32> {
    let mut room = list(std::ptr::null_mut(), 0).max(0) as usize + 64;
    loop {
        let mut pids = vec![0i32; room];
        let bytes = (room * std::mem::size_of::<i32>()) as libc::c_int;
        let got = list(pids.as_mut_ptr().cast(), bytes);
        if got < 0 {
            return Vec::new();
        }
        // proc_listallpids counts pids; proc_listchildpids counts bytes
        // on some versions: never read past what was written.
        let count = (got as usize).min(room);
        if count < room {
            pids.truncate(count);
            pids.retain(|pid| *pid > 0);
            return pids;
        }
        room *= 2;
    }
}

/// Every process the table shows now.
pub(super) fn all_processes() -> Vec<ProcInfo> {
    // SAFETY: a buffer of the size given, or none to ask for the count.
    pids(|buffer, size| unsafe { libc::proc_listallpids(buffer, size) })
        .into_iter()
        .filter_map(proc_info)
        .collect()
}

/// Our direct children.
pub(super) fn children_of_self() -> Vec<i32> {
    let me = std::process::id() as i32;
    // SAFETY: a buffer of the size given, or none to ask for the count.
    pids(|buffer, size| unsafe { libc::proc_listchildpids(me, buffer, size) })
}

thread_local! {
    /// One buffer of `kern.argmax` bytes for every read: memory stays
    /// constant however many processes a scan reads.
    static ARGUMENTS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn argmax() -> usize {
    let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
    let mut value: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>();
    // SAFETY: a valid name and an int-sized output.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            2,
            (&mut value as *mut libc::c_int).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc == 0 && value > 0 {
        value as usize
    } else {
        1 << 20
    }
}

/// Whether process `pid`'s environment holds exactly `entry`; a process
/// of this user whose environment cannot be read (a setuid program, one
/// exiting) is `Unreadable`; another user's is `No`.
pub(super) fn marked(pid: i32, entry: &[u8]) -> Marked {
    ARGUMENTS.with_borrow_mut(|buffer| {
        if buffer.is_empty() {
            buffer.resize(argmax(), 0);
        }
        let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
        let mut size = buffer.len();
        // SAFETY: a valid name and a writable buffer of `size` bytes.
        let rc = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                3,
                buffer.as_mut_ptr().cast(),
                &mut size,
                std::ptr::null_mut(),
                0,
            )
        };
        let environment = (rc == 0)
            .then(|| procargs::environment(&buffer[..size.min(buffer.len())]))
            .flatten();
        match environment {
            Some(entries) if entries.contains(&entry) => Marked::Yes,
            Some(_) => Marked::No,
            None => match bsd_info(pid) {
                Some(info) if info.pbi_uid == super::super::effective_uid() => {
                    if info.pbi_status == libc::SZOMB {
                        Marked::No
                    } else {
                        Marked::Unreadable
                    }
                }
                _ => Marked::No,
            },
        }
    })
}
