//! The job layer (Windows): the helper is started suspended in a Job
//! Object of its own (`sys::spawn`), so nothing it starts runs outside
//! it, and the system ends the job when our last handle to it closes,
//! whatever ended us. The job applies the limits as its own
//! (`job_limits`, each asked of the system first).
//!
//! As a layer: KILL ends every process in the job at once
//! (`TerminateJobObject`). A job cannot deliver any other signal to all
//! it holds, so `deliver` says so and the group under it sends the
//! polite one (Ctrl-Break, where the helper shares our console). What it
//! holds is the group's answer too: on Windows the group's members are
//! the jobs' own process lists.

use super::layer::{Delivered, Layer, Reached};
use super::limits::{BEST_EFFORT, Limits};
use crate::error::NotStarted;
use crate::signals::Signal;
use crate::sys;

/// The helper's job.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// The helper whose job it is.
    helper: i32,
    jobs: sys::Jobs,
}

impl Job {
    /// Helper `helper`'s job, where the system has jobs.
    pub(crate) fn of(helper: i32) -> Option<Job> {
        Some(Job {
            helper,
            jobs: sys::JOBS?,
        })
    }
}

impl Layer for Job {
    fn target(&self) -> Reached {
        Reached::Job
    }

    /// Only KILL goes to every process in the job at once.
    fn deliver(&self, signal: Signal, live: &[sys::ProcInfo]) -> Option<Delivered> {
        if signal != crate::signals::SIGKILL {
            return None;
        }
        let ended = (self.jobs.end)(self.helper);
        Some(Delivered {
            to_layer: u32::from(ended),
            one_by_one: 0,
            reached: live.iter().map(|p| p.pid).collect(),
        })
    }

    /// The group's scan is the jobs' own lists.
    fn members(&self) -> Option<sys::Descendants> {
        None
    }

    fn is_empty(&self) -> Option<bool> {
        None
    }

    fn boxed(&self) -> Box<dyn Layer> {
        Box::new(self.clone())
    }
}

/// The limits a Job Object takes, each asked of the system first: what
/// it refuses is left out with --limits best-effort, and refuses the
/// call otherwise. Returns the limits kept and the record's `applied`
/// and `not_applied`.
pub(super) fn job_limits(
    limits: &Limits,
) -> Result<(sys::JobLimits, Vec<String>, Vec<String>), NotStarted> {
    let (mut kept, mut not_applied) = (sys::JobLimits::default(), Vec::new());
    let unsupported: fn(&sys::JobLimits) -> std::io::Result<()> =
        |_| Err(std::io::ErrorKind::Unsupported.into());
    let try_limits = sys::JOBS.map_or(unsupported, |jobs| jobs.try_limits);
    for (option, one) in as_job(limits).each() {
        match try_limits(&one) {
            Ok(()) => kept = kept.with(one),
            Err(why) if limits.best_effort => {
                not_applied.push(format!("{option}: the job refused it: {why}"));
            }
            Err(why) => {
                return Err(
                    NotStarted::nothing(format!("--{option}: the job refused it: {why}"))
                        .hint(BEST_EFFORT),
                );
            }
        }
    }
    let processors = std::thread::available_parallelism().map_or(1, usize::from);
    Ok((kept, kept.applied(processors), not_applied))
}

/// The limits as a Job Object's.
fn as_job(limits: &Limits) -> sys::JobLimits {
    sys::JobLimits {
        memory: limits.memory_max,
        processes: limits
            .pids_max
            .map(|count| u32::try_from(count).unwrap_or(u32::MAX)),
        cpus: limits.cpu_max,
    }
}
