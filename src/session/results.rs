//! What a response's result says of its request's kind (MCP 2026-07-28):
//! every result has a `resultType` (`complete` when it is missing, from an
//! older server); a call that may be answered otherwise (`tools/call`,
//! `prompts/get`, `resources/read`) may get an MRTR round
//! (`input_required`: the client retries under a new id) or a task
//! (`task`, the tasks extension; or a 2025-11-25 `CreateTaskResult`, whose
//! `task` holds the handle). Only those results are read, and only when
//! their text can hold the words at all.

use std::borrow::Cow;

use serde::Deserialize;

use super::audit::ResultType;

/// Whether `method`'s results may be other than complete.
pub(crate) fn may_be_other_than_complete(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

#[derive(Deserialize, Default)]
struct Head<'a> {
    #[serde(borrow, default, rename = "resultType")]
    result_type: Option<Cow<'a, str>>,
    #[serde(default)]
    task: Option<TaskHandle>,
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
}

#[derive(Deserialize)]
struct TaskHandle {
    #[serde(rename = "taskId")]
    task_id: String,
}

/// A result of `method`, as its type, and the task it created, if any.
pub(crate) fn read(method: &str, result: &str) -> (ResultType, Option<String>) {
    if !may_be_other_than_complete(method)
        || !(result.contains("resultType") || result.contains("task") || result.contains('\\'))
    {
        return (ResultType::Complete, None);
    }
    let head: Head = serde_json::from_str(result).unwrap_or_default();
    let task_id = head.task.map(|t| t.task_id).or(head.task_id);
    match head.result_type.as_deref() {
        Some("input_required") => (ResultType::InputRequired, None),
        Some("task") => (ResultType::Task, task_id),
        // A 2025-11-25 server: a task-augmented call's CreateTaskResult.
        None if task_id.is_some() => (ResultType::Task, task_id),
        Some(_) | None => (ResultType::Complete, None),
    }
}

/// What an `input_required` result names as its `requestState`:
/// Some(Some) a string, Some(None) none; None for any other result, and
/// for a state that is not a string.
pub(crate) fn input_required_state(result: &str) -> Option<Option<String>> {
    #[derive(Deserialize)]
    struct Round {
        #[serde(default, rename = "resultType")]
        result_type: Option<String>,
        #[serde(default, rename = "requestState")]
        request_state: Option<serde_json::Value>,
    }
    let round: Round = serde_json::from_str(result).ok()?;
    match (round.result_type.as_deref(), round.request_state) {
        (Some("input_required"), Some(serde_json::Value::String(state))) => Some(Some(state)),
        (Some("input_required"), None) => Some(None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_result_is_told() {
        let read = |method, text| read(method, text);
        assert_eq!(
            read("tools/call", r#"{"content":[]}"#),
            (ResultType::Complete, None)
        );
        assert_eq!(
            read(
                "tools/call",
                r#"{"resultType":"input_required","requestState":"x"}"#
            ),
            (ResultType::InputRequired, None)
        );
        assert_eq!(
            read(
                "tools/call",
                r#"{"resultType":"task","task":{"taskId":"t1","status":"working"}}"#
            ),
            (ResultType::Task, Some("t1".into()))
        );
        assert_eq!(
            read(
                "tools/call",
                r#"{"resultType":"task","taskId":"t2","status":"working"}"#
            ),
            (ResultType::Task, Some("t2".into()))
        );
        assert_eq!(
            read(
                "tools/call",
                r#"{"task":{"taskId":"t3","status":"working","ttl":60000}}"#
            ),
            (ResultType::Task, Some("t3".into())),
            "a 2025 CreateTaskResult"
        );
        // Other methods' results are complete, and not read.
        assert_eq!(
            read("tasks/get", r#"{"resultType":"task","taskId":"x"}"#),
            (ResultType::Complete, None)
        );
        assert_eq!(read("ping", "{}"), (ResultType::Complete, None));
        let state = |text| input_required_state(text);
        assert_eq!(
            state(r#"{"resultType":"input_required","requestState":"s1"}"#),
            Some(Some("s1".into()))
        );
        assert_eq!(state(r#"{"resultType":"input_required"}"#), Some(None));
        assert_eq!(
            state(r#"{"resultType":"complete","requestState":"s1"}"#),
            None
        );
        assert_eq!(
            state(r#"{"resultType":"input_required","requestState":7}"#),
            None
        );
    }
}
