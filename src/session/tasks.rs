//! The tasks that audited calls created, so that each task's end is
//! journaled against the tool call that made it (`mcp_task`): how it
//! finally went, not only that a task was handed out.
//!
//! A task is made when a call's result says so (`session/results.rs`). Its
//! end is seen in a 2025-11-25 `tasks/result` (which returns what the call
//! would have), a `tasks/get` whose status is terminal, or a
//! `notifications/tasks/status`; a server that goes away loses its tasks.
//! Bounded like the request table: past the bound the oldest is forgotten
//! (its end then goes unjournaled, and `verify` lists it as unfinished).

use std::collections::VecDeque;
use std::time::Instant;

use serde::Deserialize;

use super::audit::TaskStatus;

/// A task an audited call created.
pub(crate) struct Created {
    /// The creating request's id, as the client wrote it.
    pub id: String,
    pub method: String,
    /// When the creating request came.
    pub started: Instant,
}

pub(crate) struct Tasks {
    open: super::HashMap<String, Created>,
    order: VecDeque<String>,
    cap: usize,
}

impl Tasks {
    pub(super) fn new(cap: usize) -> Tasks {
        Tasks {
            open: super::HashMap::default(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    pub(super) fn is_open(&self, task_id: &str) -> bool {
        self.open.contains_key(task_id)
    }

    pub(super) fn created(&mut self, task_id: String, created: Created) {
        if self.open.len() >= self.cap
            && let Some(oldest) = self.order.pop_front()
        {
            self.open.remove(&oldest);
        }
        if self.open.insert(task_id.clone(), created).is_none() {
            self.order.push_back(task_id);
        }
    }

    /// The task ended: what created it (once).
    pub(super) fn ended(&mut self, task_id: &str) -> Option<Created> {
        let created = self.open.remove(task_id)?;
        self.order.retain(|id| id != task_id);
        Some(created)
    }

    /// Every open task's id, oldest first (for a server that is gone:
    /// each is then ended as lost).
    pub(super) fn open_ids(&self) -> Vec<String> {
        self.order.iter().cloned().collect()
    }
}

#[derive(Deserialize)]
struct State {
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    error: Option<ErrorCode>,
}

#[derive(Deserialize)]
struct ErrorCode {
    #[serde(default)]
    code: Option<i64>,
}

/// A task's state, in a tasks/get result or a status notification's
/// params: its id, and its status if terminal (with the error's code for
/// a failed one).
pub(crate) fn terminal(text: &str) -> Option<(Option<String>, TaskStatus, Option<i64>)> {
    let state: State = serde_json::from_str(text).ok()?;
    let status = match state.status.as_deref()? {
        "completed" => TaskStatus::Completed,
        "failed" => TaskStatus::Failed,
        "cancelled" => TaskStatus::Cancelled,
        _ => return None,
    };
    Some((state.task_id, status, state.error.and_then(|e| e.code)))
}

#[derive(Deserialize)]
struct TaskParams {
    #[serde(rename = "taskId")]
    task_id: String,
}

/// `params.taskId` of a `tasks/*` request.
pub(crate) fn task_id_of(params: Option<&str>) -> Option<String> {
    serde_json::from_str::<TaskParams>(params?)
        .ok()
        .map(|p| p.task_id)
}
