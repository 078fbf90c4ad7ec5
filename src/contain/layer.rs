//! A containment mechanism as the stack (`Family`) asks it: the same
//! questions for every mechanism, each answered by the one file that
//! knows it (process-wrap's `CommandWrapper` layers are the model). A
//! layer that cannot answer says so (`None`), and the layer under it
//! answers; the group is always at the bottom, and answers all.
//!
//! - `deliver`: one signal to everything it holds at once, or `None`
//!   when it cannot (a cgroup can deliver only KILL);
//! - `members`: the live processes it holds, or `None` when it cannot
//!   read them;
//! - `is_empty`: whether nothing live is left in it, or `None` when it
//!   cannot tell.
//!
//! What the helper joins as it starts is each layer's own (a cgroup's
//! `Entrance`, the group's strangers): `Contain::prepare` chooses the
//! layers in one match, and `child::spawn` builds the stack from them.

use std::collections::HashSet;

use crate::signals::Signal;
use crate::sys;

/// What a signal reached, as the record names it (`record::Target`
/// converts from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reached {
    /// The helper's process group, with killpg.
    Group,
    /// Members outside the layer that took it, one by one.
    Descendants,
    /// Every process in the cgroup at once (`cgroup.kill`).
    Cgroup,
    /// Every process in the helper's Job Object at once (Windows).
    Job,
}

/// What one layer did with one signal.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// How many signals went to the layer as a whole (its group, its
    /// `cgroup.kill`): one, or none when it was gone.
    pub(crate) to_layer: u32,
    /// Members signalled one by one (they left the group).
    pub(crate) one_by_one: u32,
    /// The processes the delivery reached as the layer's own (read before
    /// it, so a process that dies of it at once still counts): those left
    /// out need the layer under it.
    pub(crate) reached: HashSet<i32>,
}

/// One containment mechanism.
pub(crate) trait Layer: std::fmt::Debug + Send {
    /// What the record names, where this layer was signalled.
    fn target(&self) -> Reached;

    /// Send `signal` to everything it holds at once; `live` is the tree
    /// as the stack found it. `None`: this layer cannot send `signal`.
    fn deliver(&self, signal: Signal, live: &[sys::ProcInfo]) -> Option<Delivered>;

    /// The live processes it holds but the helper; `None` if it cannot
    /// read them.
    fn members(&self) -> Option<sys::Descendants>;

    /// Whether nothing live is left in it, the helper aside; `None` if it
    /// cannot tell.
    fn is_empty(&self) -> Option<bool>;

    /// A copy, for the stack of a restarted server's tree.
    fn boxed(&self) -> Box<dyn Layer>;
}

impl Clone for Box<dyn Layer> {
    fn clone(&self) -> Box<dyn Layer> {
        self.boxed()
    }
}
