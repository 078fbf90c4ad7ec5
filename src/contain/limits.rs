//! The limits on the helper's whole tree, as the options give them
//! (`--memory-max`, `--pids-max`, `--cpu-max`, `--limits`). Each layer
//! that can hold them applies them its own way, in its own file: the
//! cgroup as its controllers' files (`cgroup::apply_limits`), the job as
//! a Job Object's limits (`job::job_limits`). The group holds none.

/// What a refused limit says would run instead.
pub(super) const BEST_EFFORT: &str = "--limits best-effort goes on without it";

/// Limits on the whole tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Limits {
    /// Memory, bytes (memory.max; a job's memory limit).
    pub memory_max: Option<u64>,
    /// Processes (pids.max; a job's active process limit).
    pub pids_max: Option<u64>,
    /// CPU as a number of CPUs, 0.5 being half of one (cpu.max; a job's
    /// CPU rate).
    pub cpu_max: Option<f64>,
    /// Go on without the ones the machine cannot apply (recorded).
    pub best_effort: bool,
}
