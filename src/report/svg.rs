//! A session's timeline, drawn as SVG: a lane per call, its bar from
//! intent to terminal coloured by end state (an unfinished one runs to
//! the session's last moment, hatched), its requests as thin bars under
//! it coloured by outcome, each approval's wait marked before its
//! decision, each restart a line across the lane at its time, and the
//! debug windows opened flagged at the bar's end.
//! Every text is escaped; each element carries its facts as a tooltip.

use std::fmt::Write as _;

use super::collect::{CallBar, Session, Wait};
use crate::markup::escape;
use crate::units::short_duration as duration;

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 170.0;
const LANE: f64 = 22.0;
const TOP: f64 = 24.0;
/// Room on the right for a debug window's flag.
const RIGHT: f64 = 40.0;

/// A state or outcome as a CSS class: its letters only.
pub(super) fn class(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The session's span: its first intent to its last known moment.
fn span(session: &Session) -> (u64, u64) {
    let start = session.calls.iter().map(|c| c.start_ms).min().unwrap_or(0);
    let end = session
        .calls
        .iter()
        .flat_map(|c| {
            let requests = c
                .requests
                .iter()
                .map(|r| r.start_ms + r.duration_ms.unwrap_or(0));
            std::iter::once(c.start_ms + c.duration_ms.unwrap_or(0)).chain(requests)
        })
        .max()
        .unwrap_or(start);
    (start, end.max(start + 1))
}

struct Scale {
    start: u64,
    end: u64,
}

impl Scale {
    fn x(&self, ms: u64) -> f64 {
        let at = ms.clamp(self.start, self.end) - self.start;
        LEFT + at as f64 / (self.end - self.start) as f64 * (WIDTH - LEFT - RIGHT)
    }

    /// A bar from `from` lasting `ms`, at least 2 px wide.
    fn bar(&self, from: u64, ms: u64) -> (f64, f64) {
        let x = self.x(from);
        (x, (self.x(from.saturating_add(ms)) - x).max(2.0))
    }
}

fn wait(out: &mut String, scale: &Scale, wait: &Wait, y: f64, height: f64) {
    let (x, w) = scale.bar(wait.end_ms.saturating_sub(wait.waited_ms), wait.waited_ms);
    let _ = write!(
        out,
        "<rect class=\"wait\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{height:.1}\"><title>approval waited {}: {}</title></rect>",
        duration(wait.waited_ms),
        escape(&wait.decision)
    );
}

fn lane(out: &mut String, scale: &Scale, call: &CallBar, y: f64) {
    let state = call.state.as_deref().unwrap_or("unfinished");
    let label: String = call.call_id.chars().take(24).collect();
    let _ = write!(
        out,
        "<text class=\"label\" x=\"4\" y=\"{:.1}\">{}</text>",
        y + 14.0,
        escape(&label)
    );
    let length = call
        .duration_ms
        .unwrap_or(scale.end - call.start_ms.min(scale.end));
    let (x, w) = scale.bar(call.start_ms, length);
    let took = call.duration_ms.map_or("no end".to_string(), duration);
    let _ = write!(
        out,
        "<rect class=\"call s-{}\" data-call=\"{}\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"12\"><title>{}: {} after {took}: {}</title></rect>",
        class(state),
        escape(&call.call_id),
        y + 3.0,
        escape(&call.call_id),
        escape(state),
        escape(&call.argv)
    );
    if let Some(w) = call.wait.as_ref().filter(|w| w.waited_ms > 0) {
        wait(out, scale, w, y + 3.0, 12.0);
    }
    for request in &call.requests {
        let outcome = request.outcome.as_deref().unwrap_or("unanswered");
        let length = request.duration_ms.unwrap_or(0);
        let (x, w) = scale.bar(request.start_ms, length);
        let what = match &request.tool {
            Some(tool) => format!("{} {tool}", request.method),
            None => request.method.clone(),
        };
        let _ = write!(
            out,
            "<rect class=\"req o-{}\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"5\"><title>{} {}: {} in {}</title></rect>",
            class(outcome),
            y + 16.0,
            escape(&what),
            escape(&request.request_id),
            escape(outcome),
            duration(length)
        );
        if let Some(w) = request.wait.as_ref().filter(|w| w.waited_ms > 0) {
            wait(out, scale, w, y + 16.0, 5.0);
        }
    }
    for (at, attempt, after) in &call.marks.restarts {
        let x = scale.x(*at);
        let _ = write!(
            out,
            "<line class=\"restart\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"><title>restart {attempt}, after the last one {}</title></line>",
            y + 1.0,
            y + 21.0,
            escape(after)
        );
    }
    if let Some((count, open_ms)) = call.marks.debug_windows {
        let _ = write!(
            out,
            "<text class=\"debug\" x=\"{:.1}\" y=\"{:.1}\">⚑{count}<title>{count} debug windows, open {}</title></text>",
            x + w + 3.0,
            y + 13.0,
            duration(open_ms)
        );
    }
}

/// The session's timeline.
pub(super) fn timeline(session: &Session) -> String {
    let (start, end) = span(session);
    let scale = Scale { start, end };
    let height = TOP + LANE * session.calls.len() as f64 + 6.0;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height:.0}\" width=\"{WIDTH}\" height=\"{height:.0}\" role=\"img\" aria-label=\"timeline\">"
    );
    let _ = write!(
        out,
        "<text class=\"axis\" x=\"{LEFT}\" y=\"14\">0</text><text class=\"axis\" x=\"{:.0}\" y=\"14\" text-anchor=\"end\">{}</text><line class=\"axis\" x1=\"{LEFT}\" y1=\"18\" x2=\"{:.0}\" y2=\"18\"/>",
        WIDTH - RIGHT,
        duration(end - start),
        WIDTH - RIGHT
    );
    for (i, call) in session.calls.iter().enumerate() {
        lane(&mut out, &scale, call, TOP + LANE * i as f64);
    }
    out.push_str("</svg>");
    out
}
