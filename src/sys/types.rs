//! What the backends' answers are made of: plain data, the same on every
//! system, so that the rest of mcp-bound reads them one way.

use super::fd::{BorrowedFd, RawFd};

/// What the caller wants to hear about one descriptor. A descriptor with
/// neither flag set still reports hang-up and error, which is how a closed
/// reader of our stdout is noticed without writing to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest {
    pub fd: RawFd,
    pub read: bool,
    pub write: bool,
    /// Also report the peer's end of writing as a hang-up: a socket shut
    /// down with SHUT_WR never reports POLLHUP, only POLLRDHUP (Linux).
    pub peer_closed: bool,
}

impl Interest {
    pub fn new(fd: RawFd, read: bool, write: bool) -> Interest {
        Interest {
            fd,
            read,
            write,
            peer_closed: false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
    pub hangup: bool,
    pub error: bool,
}

/// A signal, as this system numbers it. Only `sys` makes one from a
/// number (its constants, what arrived, what a wait reported, and a
/// number `signal_of` found this system has), so a pid or a count is
/// never taken for one. `number` is what a status of 128 + n says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Signal(pub(super) i32);

impl Signal {
    /// Its number here: for an exit status (128 + n), a name, a record.
    pub fn number(self) -> i32 {
        self.0
    }
}

/// What arrived at the signal source since the last look
/// (`SignalPipe::take`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    /// A child may have exited (SIGCHLD; on Windows a job's news).
    pub child_changed: bool,
    /// Terminating signals (on Windows, console events under the C
    /// runtime's numbers) with how many of each arrived.
    pub terminating: Vec<(Signal, u32)>,
    /// SIGUSR1s: each opens or closes the debug window. mcp-bound's
    /// own, never forwarded, never an end (none on Windows).
    pub debug_toggles: u32,
}

/// One process, as the process table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub zombie: bool,
    /// When it started, in the table's own unit (clock ticks since boot
    /// from /proc, microseconds since the epoch from libproc), compared
    /// only with another start from the same table: with the pid, this
    /// names one process even after its pid is reused.
    pub start: u64,
}

/// How a child ended, as the system reports it (waitid(2) on Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// The exit code: 0 to 255 on Unix, 32 bits on Windows (where a
    /// crash's code is an NTSTATUS, such as 0xC0000005).
    Code(u32),
    Signal {
        signal: Signal,
        core_dumped: bool,
    },
}

/// What a waiter does once mcp-bound is gone, made before it starts and
/// never changed after (it shares mcp-bound's memory): a first strike at
/// the tree, then an exec of `exe` with `argv0 mode target pgid mark`, a fresh
/// process that ends the rest and removes the cgroup.
pub struct Orphaned {
    /// cgroup.kill of the tree's cgroup.
    pub kill: Option<std::ffi::CString>,
    pub exe: std::ffi::CString,
    pub argv0: std::ffi::CString,
    pub mode: std::ffi::CString,
    pub target: std::ffi::CString,
    /// The call's mark, last (the approvers carry it).
    pub mark: std::ffi::CString,
}

/// Limits on a helper's whole tree where a Job Object holds it (Windows,
/// `BACKEND.job`); where a cgroup holds the limits, none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JobLimits {
    /// `JobMemoryLimit`: the memory the whole job may commit, in bytes.
    pub memory: Option<u64>,
    /// `ActiveProcessLimit`: the most processes alive in the job at once.
    pub processes: Option<u32>,
    /// The CPU rate's hard cap, as a number of CPUs (0.5: half of one).
    pub cpus: Option<f64>,
}

impl JobLimits {
    /// A hard cap of `cpus` as the job's `CpuRate`: cycles per 10,000 of
    /// the whole machine's (`processors` of them), at least 1.
    pub fn cpu_rate(cpus: f64, processors: usize) -> u32 {
        let share = cpus / processors.max(1) as f64;
        (share * 10_000.0).round().clamp(1.0, 10_000.0) as u32
    }

    /// Each limit alone, with the option that asked for it.
    pub fn each(&self) -> Vec<(&'static str, JobLimits)> {
        let none = JobLimits::default();
        let mut each = Vec::new();
        if let Some(bytes) = self.memory {
            let memory = Some(bytes);
            each.push(("memory-max", JobLimits { memory, ..none }));
        }
        if let Some(count) = self.processes {
            let processes = Some(count);
            each.push(("pids-max", JobLimits { processes, ..none }));
        }
        if let Some(share) = self.cpus {
            let cpus = Some(share);
            each.push(("cpu-max", JobLimits { cpus, ..none }));
        }
        each
    }

    /// These and `other`'s.
    pub fn with(self, other: JobLimits) -> JobLimits {
        JobLimits {
            memory: other.memory.or(self.memory),
            processes: other.processes.or(self.processes),
            cpus: other.cpus.or(self.cpus),
        }
    }

    /// What the record's `contain.applied` says of them, in Windows's
    /// names.
    pub fn applied(&self, processors: usize) -> Vec<String> {
        let mut applied = Vec::new();
        if let Some(bytes) = self.memory {
            applied.push(format!("JobMemoryLimit={bytes}"));
        }
        if let Some(count) = self.processes {
            applied.push(format!("ActiveProcessLimit={count}"));
        }
        if let Some(cpus) = self.cpus {
            applied.push(format!("CpuRate={}", JobLimits::cpu_rate(cpus, processors)));
        }
        applied
    }
}

/// How a child is set up before it runs the program (on Unix, between
/// fork and exec), besides its own process group and the default signal
/// state.
pub struct Setup<'a> {
    /// Descriptors for 0, 1 and 2 (`None`: inherited).
    pub stdio: [Option<BorrowedFd<'a>>; 3],
    /// Die with this parent: only where the system has a parent-death
    /// signal (`BACKEND.parent_death_signal`).
    pub die_with: Option<i32>,
    pub rlimits: &'a [crate::rlimit::Rlimit],
    /// The cgroup to start in: its directory and its `cgroup.procs`.
    pub cgroup: Option<(BorrowedFd<'a>, &'a std::ffi::CStr)>,
    /// Fork and write `cgroup.procs`, rather than clone into the cgroup.
    pub move_into_cgroup: bool,
    /// The job's limits (`BACKEND.job`); a backend without a job refuses
    /// any.
    pub job_limits: JobLimits,
}

/// What an inherited output descriptor is (`output_kind`), for how it
/// is written without ever blocking and without changing its flags
/// (O_NONBLOCK is shared with every process that holds it).
pub enum OutputKind {
    /// Not open for writing: output is drained and counted, never written.
    Absent,
    /// Written by a relay's thread (Windows): a write that finds it busy
    /// is `WouldBlock`, and the poller says when it is free.
    Relayed,
    /// Already non-blocking when we got it.
    AlreadyNonblocking,
    /// A FIFO, and our own non-blocking description of it (Linux, through
    /// /proc): large writes are safe.
    Reopened(std::fs::File),
    /// A socket, and the send that is non-blocking for one call.
    Socket(SendNowait),
    /// A regular file or the null device: a write does not wait on a
    /// reader.
    NeverWaits,
    /// Anything else (a terminal, a FIFO not re-opened): at most PIPE_BUF
    /// bytes after poll(2) says POLLOUT, which the kernel takes at once.
    AfterPollout,
}

/// send(2) with MSG_DONTWAIT: non-blocking for one call on a socket we
/// must not make non-blocking for everyone.
pub type SendNowait = fn(super::fd::BorrowedFd<'_>, &[u8]) -> std::io::Result<usize>;

#[cfg(test)]
mod tests {
    use super::JobLimits;

    #[test]
    fn a_cpu_cap_is_a_share_of_the_whole_machine() {
        assert_eq!(JobLimits::cpu_rate(1.0, 4), 2500);
        assert_eq!(JobLimits::cpu_rate(0.5, 2), 2500);
        assert_eq!(JobLimits::cpu_rate(8.0, 4), 10_000, "at most all of it");
        assert_eq!(JobLimits::cpu_rate(0.000_01, 64), 1, "never none");
        assert_eq!(JobLimits::cpu_rate(1.0, 0), 10_000);
    }

    #[test]
    fn the_record_names_the_job_s_fields() {
        let limits = JobLimits {
            memory: Some(1 << 20),
            processes: Some(16),
            cpus: Some(1.0),
        };
        assert_eq!(
            limits.applied(2),
            [
                "JobMemoryLimit=1048576",
                "ActiveProcessLimit=16",
                "CpuRate=5000"
            ]
        );
        assert!(JobLimits::default().applied(2).is_empty());
    }
}
