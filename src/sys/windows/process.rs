//! Helpers on Windows: found and quoted (`cmdline.rs`), started into a
//! Job Object of their own (`job.rs`), waited for by their process
//! handle, ended with the job, and counted by the job's accounting.
//!
//! The rest of mcp-bound names a helper by its pid and its "group" by
//! the negative pid, as on Unix; here the group is the helper's job:
//! KILL to it is `TerminateJobObject`, its members are the job's process
//! list, and each helper's handles stay in a table until it is reaped.
//! Reaping closes the job, whose kill-on-close ends whatever is left.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use windows_sys::Win32::Foundation::{FILETIME, WAIT_OBJECT_0};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, GetExitCodeProcess, GetProcessTimes, INFINITE,
    OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE, TerminateProcess,
    WaitForSingleObject,
};

use super::cmdline::{DEFAULT_PATHEXT, batch_line, find_program, is_batch, program_line};
use super::job::{Job, Stdio};
use super::reactor::{JOB_KEY, reactor};
use super::{SIGKILL, console};
use crate::sys::{ChildExit, Descendants, ProcInfo, Setup};

/// A program and its environment, ready to start.
pub struct Exec {
    /// The program's path (for a batch file, cmd.exe's), NUL-terminated.
    application: Vec<u16>,
    line: Vec<u16>,
    /// The environment block with the tree's mark, when there is one.
    environment: Option<Vec<u16>>,
}

fn invalid(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.into())
}

impl Exec {
    /// Find `argv[0]` as the shell would, and build its command line; an
    /// argument that cannot be passed safely is an error (nothing runs).
    pub fn new(argv: &[OsString], extra: Option<(&str, &str)>) -> io::Result<Exec> {
        let (program, args) = argv.split_first().ok_or_else(|| invalid("no program"))?;
        let name = program
            .to_str()
            .ok_or_else(|| invalid("the program's name is not valid Unicode"))?;
        let path = std::env::var("PATH").unwrap_or_default();
        let pathext = std::env::var("PATHEXT").unwrap_or_else(|_| DEFAULT_PATHEXT.into());
        let exists = |candidate: &str| std::path::Path::new(candidate).is_file();
        let found = find_program(name, &path, &pathext, &exists).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name}: not found in PATH (with PATHEXT)"),
            )
        })?;
        let wide = |text: &std::ffi::OsStr| -> Vec<u16> { text.encode_wide().collect() };
        let args: Vec<Vec<u16>> = args.iter().map(|arg| wide(arg)).collect();
        let args: Vec<&[u16]> = args.iter().map(Vec::as_slice).collect();
        let found_wide: Vec<u16> = found.encode_utf16().collect();
        let (application, line) = if is_batch(&found) {
            (system_cmd()?, batch_line(&found_wide, &args))
        } else {
            (found_wide.clone(), program_line(&found_wide, &args))
        };
        let line = line.map_err(|why| invalid(why.why()))?;
        Ok(Exec {
            application: application.into_iter().chain([0]).collect(),
            line,
            environment: extra.map(|(name, value)| environment_with(name, value)),
        })
    }
}

/// Why `argv` cannot be run safely, if it cannot: an argument that no
/// command line carries to the program as it is (a NUL; for a batch file,
/// a line break cmd.exe would run as a second command). Checked before
/// anything starts; a program not found is the spawn's to report (127).
pub(super) fn refused_command(argv: &[OsString]) -> Option<String> {
    let program = argv.first()?.to_string_lossy().into_owned();
    match Exec::new(argv, None) {
        Err(err) if err.kind() == io::ErrorKind::InvalidInput => Some(format!("{program}: {err}")),
        _ => None,
    }
}

/// cmd.exe in the system directory, never one a search would find first.
fn system_cmd() -> io::Result<Vec<u16>> {
    let root = std::env::var_os("SystemRoot")
        .or_else(|| std::env::var_os("windir"))
        .ok_or_else(|| io::Error::other("no SystemRoot: cannot find cmd.exe"))?;
    let mut path = std::path::PathBuf::from(root);
    path.push("System32");
    path.push("cmd.exe");
    Ok(path.as_os_str().encode_wide().collect())
}

/// Our environment and `name=value`, as a Unicode environment block,
/// sorted as Windows keeps one (without case).
fn environment_with(name: &str, value: &str) -> Vec<u16> {
    let mut entries: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(key, _)| !key.eq_ignore_ascii_case(name))
        .collect();
    entries.push((name.into(), value.into()));
    entries.sort_by_key(|(key, _)| key.to_string_lossy().to_uppercase());
    let mut block = Vec::new();
    for (key, value) in entries {
        block.extend(key.encode_wide());
        block.push(u16::from(b'='));
        block.extend(value.encode_wide());
        block.push(0);
    }
    block.push(0);
    block
}

/// How the helper got into its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Started suspended, assigned to its job, then resumed.
    Job,
}

struct Child {
    process: OwnedHandle,
    job: Job,
}

static CHILDREN: Mutex<Option<HashMap<i32, Child>>> = Mutex::new(None);

fn children() -> MutexGuard<'static, Option<HashMap<i32, Child>>> {
    CHILDREN.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with_child<T>(pid: i32, f: impl FnOnce(&Child) -> T) -> Option<T> {
    children().as_ref()?.get(&pid).map(f)
}

/// What `f` makes of helper `pid`'s job, while the helper is ours.
pub(super) fn with_job<T>(pid: i32, f: impl FnOnce(&Job) -> T) -> Option<T> {
    with_child(pid, |child| f(&child.job))
}

/// Start `exec` into a job of its own, with `setup`'s standard handles
/// (ours where it has none) and no other handle of ours.
pub fn spawn(exec: &Exec, setup: &Setup<'_>) -> io::Result<(i32, Entry)> {
    if !setup.rlimits.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "--rlimit: Windows has no rlimits",
        ));
    }
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("NUL")?;
    let handle = |slot: usize| -> BorrowedHandle<'_> {
        match setup.stdio[slot] {
            Some(fd) => fd,
            None => match console::std_fd(slot as i32) {
                0 => std::os::windows::io::AsHandle::as_handle(&null),
                // SAFETY: our standard handle, open for our lifetime.
                fd => unsafe { BorrowedHandle::borrow_raw(fd as _) },
            },
        }
    };
    let stdio = Stdio {
        input: handle(0),
        output: handle(1),
        error: handle(2),
    };
    let flags = if console::has_console() {
        CREATE_NEW_PROCESS_GROUP
    } else {
        CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW
    };
    let job = Job::new(reactor()?.port(), JOB_KEY)?;
    if setup.job_limits != Default::default() {
        job.limit(&setup.job_limits)?;
    }
    let started = job.start(
        &exec.application,
        &exec.line,
        flags,
        exec.environment.as_deref(),
        &stdio,
    )?;
    let pid = started.pid as i32;
    children().get_or_insert_with(HashMap::new).insert(
        pid,
        Child {
            process: started.process,
            job,
        },
    );
    Ok((pid, Entry::Job))
}

/// Whether a job takes `limits`, asked of a job made for the question
/// before anything runs (Wine, for one, refuses a CPU rate).
pub(super) fn try_job_limits(limits: &crate::sys::JobLimits) -> io::Result<()> {
    Job::new(reactor()?.port(), JOB_KEY)?.limit(limits)
}

/// End every process in helper `pid`'s job at once: whether it was
/// ended (false once the job is gone).
pub(super) fn end_job(pid: i32) -> bool {
    with_child(pid, |child| child.job.kill(1).is_ok()).unwrap_or(false)
}

/// How the helper ended, if it has (waiting for it with `block`).
pub fn wait_exit(pid: i32, block: bool) -> Option<ChildExit> {
    let process = with_child(pid, |child| child.process.try_clone().ok())??;
    // SAFETY: our open process handle.
    let waited =
        unsafe { WaitForSingleObject(process.as_raw_handle(), if block { INFINITE } else { 0 }) };
    if waited != WAIT_OBJECT_0 {
        return None;
    }
    let mut code = 0u32;
    // SAFETY: as above; `code` is written.
    if unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) } == 0 {
        return None;
    }
    Some(ChildExit::Code(code))
}

pub fn wait_child(pid: i32) {
    let _ = wait_exit(pid, true);
    reap(pid);
}

static CPU_100NS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);
static REAPED_ANY: AtomicBool = AtomicBool::new(false);

/// Forget the helper once it has exited: its job's accounting is added
/// to the tree's, and the job closes (ending whatever is left of it).
pub fn reap(pid: i32) {
    let _ = reap_with_usage(pid);
}

/// As [`reap`], with the CPU (user, system) the helper's whole job used.
pub fn reap_with_usage(pid: i32) -> Option<(Duration, Duration)> {
    wait_exit(pid, false)?;
    let child = children().as_mut()?.remove(&pid)?;
    let usage = child.job.usage().ok()?;
    CPU_100NS[0].fetch_add(usage.user_100ns, Ordering::SeqCst);
    CPU_100NS[1].fetch_add(usage.kernel_100ns, Ordering::SeqCst);
    PEAK_BYTES.fetch_max(usage.peak_bytes, Ordering::SeqCst);
    REAPED_ANY.store(true, Ordering::SeqCst);
    let time = |units: u64| Duration::from_nanos(units.saturating_mul(100));
    Some((time(usage.user_100ns), time(usage.kernel_100ns)))
}

/// The CPU of every job reaped so far.
pub fn children_cpu() -> Option<(Duration, Duration)> {
    let time = |slot: &AtomicU64| Duration::from_nanos(slot.load(Ordering::SeqCst) * 100);
    Some((time(&CPU_100NS[0]), time(&CPU_100NS[1])))
}

/// The most memory one reaped job held at once, KiB.
pub fn reaped_peak_kib() -> Option<u64> {
    REAPED_ANY
        .load(Ordering::SeqCst)
        .then(|| PEAK_BYTES.load(Ordering::SeqCst) / 1024)
}

/// KILL to a helper's group ends its job; KILL to a pid ends that
/// process. BREAK, INT and TERM are Ctrl-Break to the helper's process
/// group, which only reaches a helper that shares our console: without
/// one, nothing is sent (false), and the record says none was.
pub fn send_signal(target: i32, signal: super::Signal) -> bool {
    let pid = target.unsigned_abs() as i32;
    if signal == SIGKILL {
        if target < 0 {
            return end_job(pid);
        }
        return terminate(pid);
    }
    let polite = [super::SIGINT, super::SIGBREAK, super::SIGTERM].contains(&signal);
    // SAFETY: a console event to a process group id; harmless if none.
    polite
        && target < 0
        && console::has_console()
        && with_child(pid, |_| ()).is_some()
        && unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pid as u32) } != 0
}

fn terminate(pid: i32) -> bool {
    if let Some(done) = with_child(pid, |child| {
        // SAFETY: our own child's handle.
        unsafe { TerminateProcess(child.process.as_raw_handle(), 1) != 0 }
    }) {
        return done;
    }
    // SAFETY: opening a process by id for termination only.
    let raw = unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid as u32) };
    if raw.is_null() {
        return false;
    }
    // SAFETY: the handle just opened, owned here.
    let process = unsafe { OwnedHandle::from_raw_handle(raw) };
    // SAFETY: as above.
    unsafe { TerminateProcess(process.as_raw_handle(), 1) != 0 }
}

/// One process as the table shows it: its start time (100 ns units since
/// 1601), and as its "group" the helper whose job holds it.
pub fn proc_info(pid: i32) -> Option<ProcInfo> {
    let start = start_time(pid)?;
    let group = children()
        .as_ref()?
        .iter()
        .find(|(helper, child)| {
            **helper == pid || child.job.pids().is_ok_and(|p| p.contains(&(pid as u32)))
        })
        .map_or(pid, |(helper, _)| *helper);
    Some(ProcInfo {
        pid,
        ppid: 0,
        pgid: group,
        zombie: false,
        start,
    })
}

fn start_time(pid: i32) -> Option<u64> {
    // SAFETY: opening a process by id to read its times.
    let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32) };
    if raw.is_null() {
        return None;
    }
    // SAFETY: the handle just opened, owned here.
    let process = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut times = [FILETIME::default(); 4];
    let [created, exited, kernel, user] = &mut times;
    // SAFETY: an open handle; four FILETIMEs written.
    let ok = unsafe { GetProcessTimes(process.as_raw_handle(), created, exited, kernel, user) };
    (ok != 0).then(|| u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime))
}

/// No child of ours is outside a job: nothing re-parents to us.
pub fn children_of_self() -> Vec<i32> {
    Vec::new()
}

/// The live processes of our helpers' jobs, but those `skip` names (an
/// approver's job, when its helper is skipped): the job's own list, so
/// nothing of a tree is missed and no stranger is found.
pub fn descendants(
    _root: i32,
    _mark: Option<&[u8]>,
    skip: &dyn Fn(&ProcInfo) -> bool,
) -> Descendants {
    let jobs: Vec<(i32, Vec<u32>)> = children()
        .as_ref()
        .map(|all| {
            all.iter()
                .map(|(helper, child)| (*helper, child.job.pids().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let mut processes = Vec::new();
    for (helper, pids) in jobs {
        let Some(info) = proc_info(helper) else {
            continue;
        };
        if skip(&info) {
            continue;
        }
        processes.extend(pids.into_iter().filter_map(|pid| {
            let start = start_time(pid as i32)?;
            Some(ProcInfo {
                pid: pid as i32,
                ppid: 0,
                pgid: helper,
                zombie: false,
                start,
            })
        }));
    }
    Descendants {
        processes,
        unreadable: None,
    }
}
