//! The server's side of the session: each line the stdout guard offers,
//! read as JSON-RPC; a response ends the client request it names (or is a
//! late one, dropped), a task's end is journaled against the call that
//! created it, and progress may push a deadline out.

use std::time::Instant;

use super::audit::{Audit, McpTask};
use super::message::{self, Line, Message, join_batch};
use super::replay::Replayed;
use super::{
    End, InFlight, Key, RequestOutcome, ResultType, Session, TaskStatus, answer, results, tasks,
};
use crate::request_id;
use crate::units::millis;

impl Session {
    /// A complete line from the server, offered by the stdout guard: what
    /// reaches the client goes to `out`. False if the line is not one
    /// JSON message (then nothing was taken: the guard diverts it).
    pub(crate) fn on_server_line(&mut self, now: Instant, line: &[u8], out: &mut Vec<u8>) -> bool {
        match message::parse(line) {
            Line::NotJson => return false,
            Line::One(message) => {
                let mut rewritten = None;
                if self.server_message(now, message, line, &mut rewritten) {
                    match rewritten {
                        Some(text) => out.extend_from_slice(text.as_bytes()),
                        None => out.extend_from_slice(line),
                    }
                }
            }
            Line::Batch(elements) => {
                let total = elements.len();
                let mut rewrote = false;
                let kept: Vec<std::borrow::Cow<'_, str>> = elements
                    .into_iter()
                    .filter_map(|(raw, message)| {
                        let mut rewritten = None;
                        let pass =
                            self.server_message(now, message, raw.as_bytes(), &mut rewritten);
                        rewrote |= rewritten.is_some();
                        pass.then(|| rewritten.map_or(raw.into(), Into::into))
                    })
                    .collect();
                let kept: Vec<&str> = kept.iter().map(|k| &**k).collect();
                if rewrote {
                    // Not the line as it came, whatever else was kept.
                    join_batch(line, usize::MAX, &kept, out);
                } else {
                    join_batch(line, total, &kept, out);
                }
            }
        }
        true
    }

    /// One message; true to pass it on (`rewritten`, when set, in place
    /// of `raw`: a `tools/list` result with the denied tools removed).
    fn server_message(
        &mut self,
        now: Instant,
        message: Message<'_>,
        raw: &[u8],
        rewritten: &mut Option<String>,
    ) -> bool {
        match message {
            Message::Response { id, result, error } => {
                self.server_response(now, (id, result, error), raw, rewritten)
            }
            Message::Request { .. } => {
                self.facts.server.requests += 1;
                true
            }
            Message::Notification { method, params, .. } => {
                self.facts.server.notifications += 1;
                if method == "notifications/progress"
                    && let Some(token) = message::progress_token(params)
                    && let Some(key) = self.progress.get(&token).cloned()
                {
                    self.extend_deadline(now, &key);
                } else if method == "notifications/tasks/status"
                    && let Some((Some(task_id), status, code)) = params.and_then(tasks::terminal)
                {
                    self.task_ended(now, &task_id, status, code);
                } else if method == "notifications/cancelled"
                    && let Some(key) = message::cancelled_id(params)
                    && self
                        .in_flight
                        .get(key.as_str())
                        .is_some_and(|entry| entry.kind.ended_by_a_server_cancel())
                    && let Some((id, entry)) = self.remove(&key)
                {
                    // The server ended a stream: nothing more is said for
                    // it, and an answer after all would be a second end.
                    self.answered.insert(key);
                    self.finish(now, id, entry, End::by(RequestOutcome::Ended, None), 0);
                }
                true
            }
            // Only the permissive reading of client lines says Ambiguous.
            Message::Invalid | Message::Ambiguous { .. } => {
                self.facts.server.non_jsonrpc_lines += 1;
                true
            }
        }
    }

    /// A response: the end of the request it names (a `tools/list`
    /// result filtered, a task it created kept), the replayed initialize's
    /// answer, or a late one, dropped. True to pass it on.
    fn server_response(
        &mut self,
        now: Instant,
        (id, result, error): (&str, Option<&str>, Option<Option<i64>>),
        raw: &[u8],
        rewritten: &mut Option<String>,
    ) -> bool {
        self.facts.server.responses += 1;
        let Some(key) = request_id::key(id) else {
            self.facts.unmatched_responses += 1;
            return true;
        };
        if let Some(replayed) = self.opening.replay.on_server_response(&key, result) {
            self.opening.replayed = Some(match replayed {
                Replayed::Same {
                    to_server,
                    to_client,
                } => {
                    self.to_server.extend(to_server);
                    self.to_client.extend(to_client);
                    Ok(())
                }
                Replayed::Changed(why) => Err(why),
            });
            return false;
        }
        if let Some(result) = result
            && self
                .gate
                .as_ref()
                .is_some_and(|g| g.settings.ask_host || g.pinning.is_some())
            && self.opening.spoken.era == Some(crate::record::mcp::Era::Modern)
        {
            // The card and the pins name the server: once, from the
            // first result that does.
            self.opening.replay.on_modern_result(result);
        }
        let Some((id, entry)) = self.remove(&key) else {
            if self.answered.take(&key) {
                self.facts.late_responses_dropped += 1;
                return false;
            }
            self.facts.unmatched_responses += 1;
            return true;
        };
        if &*entry.method == "tools/list"
            && let (Some(result), None) = (result, error)
        {
            *rewritten = self.filter_tools(&id, raw, result);
        }
        if &*entry.method == "tools/call"
            && let Some(gate) = self.gate.as_mut()
            && gate.grants.awaits(&key)
        {
            // An approval covers the server's next round only: the one
            // retry carrying the state this answer names.
            let state = match (result, error) {
                (Some(result), None) => results::input_required_state(result),
                _ => None,
            };
            gate.grants.answered(&key, state);
        }
        self.on_task_answer(now, &entry, result, error);
        let end = match error {
            Some(code) => End::error(code),
            // Read only for the audit: most results are not.
            None if entry.audited => {
                let (result_type, task) = results::read(&entry.method, result.unwrap_or_default());
                if let Some(task_id) = task {
                    let created = tasks::Created {
                        id: id.to_string(),
                        method: entry.method.to_string(),
                        started: entry.started,
                    };
                    self.tasks.created(task_id, created);
                }
                End::result(result_type)
            }
            None => End::result(ResultType::Complete),
        };
        // The message's own bytes, for its audit.
        self.finish(now, id, entry, end, raw.len() as u64);
        true
    }

    /// A `tasks/*` request about a task an audited call created was
    /// answered: its end, if the answer tells one.
    fn on_task_answer(
        &mut self,
        now: Instant,
        entry: &InFlight,
        result: Option<&str>,
        error: Option<Option<i64>>,
    ) {
        let Some(task_id) = &entry.task else {
            return;
        };
        let end = match (&*entry.method, result, error) {
            // A 2025-11-25 tasks/result: what the call would have returned.
            ("tasks/result", _, Some(code)) => Some((TaskStatus::Failed, code)),
            ("tasks/result", Some(_), None) => Some((TaskStatus::Completed, None)),
            ("tasks/get", Some(result), None) => {
                tasks::terminal(result).map(|(_, status, code)| (status, code))
            }
            _ => None,
        };
        if let Some((status, code)) = end {
            let task_id = task_id.clone();
            self.task_ended(now, &task_id, status, code);
        }
    }

    /// A task ended: journaled against the call that created it, once.
    pub(super) fn task_ended(
        &mut self,
        now: Instant,
        task_id: &str,
        status: TaskStatus,
        code: Option<i64>,
    ) {
        if let Some(created) = self.tasks.ended(task_id) {
            self.out.audit.push(Audit::Task(McpTask {
                call_id: self.call_id.clone(),
                request_id: request_id::RequestId::new(&created.id)
                    .expect("a tracked id is strict JSON"),
                method: created.method,
                task_id: task_id.to_string(),
                status,
                error_code: code,
                duration_ms: millis(now.saturating_duration_since(created.started)),
            }));
        }
    }

    /// The guard diverted a server line over --max-message-bytes: under a
    /// policy by name, it may have been a `tools/list` result, which can
    /// neither be filtered nor told apart by id. Each `tools/list` waiting
    /// is answered refused (its late answer, if any, dropped), never left
    /// to wait for one the client will not get.
    pub(crate) fn on_server_overlong(&mut self, now: Instant) {
        if !self.gate.as_ref().is_some_and(|g| g.filters()) {
            return;
        }
        let mut lists: Vec<(u64, Key)> = self
            .in_flight
            .iter()
            .filter(|(_, entry)| &*entry.method == "tools/list")
            .map(|(key, entry)| (entry.seq, key.clone()))
            .collect();
        lists.sort();
        for (_, key) in lists {
            let Some((id, entry)) = self.remove(&key) else {
                continue;
            };
            let line = answer::tools_list_unreadable(&id);
            let bytes = line.len() as u64;
            self.to_client.extend(line);
            self.answered.insert(key.to_string());
            self.facts.tool_gate_mut().lists_refused += 1;
            self.finish(
                now,
                id,
                entry,
                End::error(Some(answer::SERVER_ERROR)),
                bytes,
            );
        }
    }

    /// A `tools/list` result under a policy by name or pins: the message
    /// with the tools they hide taken out of `result.tools` (every other
    /// byte as it came), None when nothing is hidden; refused (an error
    /// in its place) when it cannot be read.
    fn filter_tools(&mut self, id: &str, raw: &[u8], result: &str) -> Option<String> {
        self.gate.as_ref().filter(|g| g.filters())?;
        // The line parsed as JSON, so it is UTF-8 (if not: refused).
        let raw = std::str::from_utf8(raw).unwrap_or_default();
        let Some(listing) = Listing::read(raw, result) else {
            self.facts.tool_gate_mut().lists_refused += 1;
            let mut line = answer::tools_list_unreadable(id);
            if !raw.ends_with('\n') {
                line.pop();
            }
            return Some(String::from_utf8(line).expect("an answer is UTF-8"));
        };
        let pinned = self.pin_listing(id, &listing.tools, listing.more);
        let gate = self.gate.as_ref()?;
        let mut kept = Vec::with_capacity(listing.tools.len());
        for ((tool, name), pinned) in listing.tools.iter().zip(&listing.names).zip(pinned) {
            if pinned && gate.shows(name) {
                kept.push(*tool);
            }
        }
        let hidden = (listing.tools.len() - kept.len()) as u64;
        if hidden == 0 {
            return None;
        }
        self.facts.tool_gate_mut().tools_hidden += hidden;
        let span = listing.span;
        let tools = format!("[{}]", kept.join(","));
        Some(format!("{}{tools}{}", &raw[..span.start], &raw[span.end..]))
    }

    fn extend_deadline(&mut self, now: Instant, key: &str) {
        let Some(entry) = self.in_flight.get_mut(key) else {
            return;
        };
        if let (Some(at), Some(timeout)) = (entry.deadline, entry.timeout) {
            self.deadlines.remove(&(at, entry.seq));
            entry.deadline = now.checked_add(timeout);
            if let Some(at) = entry.deadline {
                self.deadlines.insert((at, entry.seq), Key::new(key));
            }
        }
    }
}

/// A `tools/list` result as the gate reads it.
struct Listing<'a> {
    /// Where `result.tools` is in the line.
    span: std::ops::Range<usize>,
    /// Each tool's text, and its name.
    tools: Vec<&'a str>,
    names: Vec<String>,
    /// The result names a `nextCursor`: more pages follow.
    more: bool,
}

impl<'a> Listing<'a> {
    /// None when `result.tools` is not an array of objects with a string
    /// `name`, or cannot be found in the line as it came.
    fn read(raw: &'a str, result: &'a str) -> Option<Listing<'a>> {
        #[derive(serde::Deserialize)]
        struct Tools<'a> {
            #[serde(borrow)]
            tools: &'a serde_json::value::RawValue,
            #[serde(rename = "nextCursor", default)]
            next_cursor: Option<serde_json::Value>,
        }
        #[derive(serde::Deserialize)]
        struct Tool<'a> {
            #[serde(borrow)]
            name: std::borrow::Cow<'a, str>,
        }
        // A key a Go or .NET client would read as `tools` or `nextCursor`
        // (another spelling, or the same twice): the listing cannot be
        // filtered for every client alike.
        let keys = super::fold::object_keys(result)?;
        let read: Vec<_> = keys
            .iter()
            .filter_map(|k| super::fold::folds_to(k, &["tools", "nextCursor"]).map(|t| (t, k)))
            .collect();
        let twice = (1..read.len()).any(|i| read[..i].iter().any(|(t, _)| *t == read[i].0));
        if twice || read.iter().any(|(target, key)| target != key) {
            return None;
        }
        let listing = serde_json::from_str::<Tools<'a>>(result).ok()?;
        let tools = listing.tools.get();
        let start = (tools.as_ptr() as usize).checked_sub(raw.as_ptr() as usize)?;
        let span = start..start + tools.len();
        (raw.get(span.clone())? == tools).then_some(())?;
        let list: Vec<&'a serde_json::value::RawValue> = serde_json::from_str(tools).ok()?;
        let mut names = Vec::with_capacity(list.len());
        for tool in &list {
            names.push(
                serde_json::from_str::<Tool<'_>>(tool.get())
                    .ok()?
                    .name
                    .into_owned(),
            );
        }
        Some(Listing {
            span,
            tools: list.iter().map(|t| t.get()).collect(),
            names,
            more: listing.next_cursor.is_some_and(|c| !c.is_null()),
        })
    }
}
