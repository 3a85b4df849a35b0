//! The per-task child counter behind `taskwait`, taskgroups and scope ends: how many of a
//! frame's children are unfinished, counted without an atomic read-modify-write in the common
//! case. Its own file so that loom model-checks it (`loom-tests/tests/child_counter.rs`).
//!
//! # The counter
//!
//! Every task frame (and every scope root and taskgroup) counts its unfinished children in a
//! `ChildCounter`. A child is *finished* when its body returned **and** all of its own
//! children are finished, so a frame whose count reaches zero has a finished subtree; this is
//! what lets a scope or a taskgroup wait for all descendants without a shared counter: the
//! completion of a subtree climbs the tree one counter at a time, and spawning touches only
//! the spawning task's own frame. There is no counter that all tasks of a scope write.
//!
//! The counter is split so that the common case costs no atomic read-modify-write:
//!
//! - `spawned` and `local_done` are plain cells of the *owner*, the worker running the
//!   frame's body (or waiting at its scope or group end). The owner counts each spawn in
//!   `spawned`; a child that finishes on the owner's thread while `local_ok` is set counts in
//!   `local_done`.
//! - `pending` is the shared atomic. It starts at `BIAS` (`2^62` on 64-bit) and every other
//!   thread finishing a child subtracts 1. The owner *transfers* its untransferred count
//!   (`spawned - local_done`) into `pending` with one `fetch_add` before it might block, and
//!   at the end of the body adds that count minus `BIAS`.
//!
//! The owner's cells are 32 bits: every `SPAWNS_PER_FLUSH` (2^30) spawns the owner also moves them
//! into `pending` (a *flush*: like a transfer, but local completions go on counting locally),
//! so that a body spawning billions of tasks without ever waiting keeps `spawned - local_done`
//! within 32 bits although `pending` counts every remote completion in full.
//!
//! Invariant: `outstanding children = pending - BIAS + spawned - local_done` (wrapping, the
//! cells' difference read as a signed 32-bit number: after a flush, children spawned before it
//! may still finish locally, so `local_done` may exceed `spawned`).
//! Hence the owner's check "all children finished" is `pending == BIAS - (spawned -
//! local_done)`, one load. While the body runs, `pending <= BIAS + transferred`; it reaches
//! `0` only after the body-end transfer removed the bias, so the thread whose decrement moves
//! it from 1 to 0 finished the last piece of the subtree and owns the frame (it frees it and
//! reports to the parent). The decrement that moves it from `BIAS + 1` to `BIAS` is the last
//! child of a transfer made by a waiting owner: that thread wakes the owner if it sleeps (or,
//! rarely, the last child of a flush, whose wake-up of an owner that is not waiting for this
//! frame is spurious and harmless).
//! After a transfer `local_ok` is off until the wait is over, so that every completion of
//! the transferred children goes through `pending` and the `BIAS + 1` rule sees the last one.
//!
//! # Memory-ordering contract
//!
//! - A child finishing on another thread: `pending.fetch_sub(1, AcqRel)`. *Release* publishes
//!   everything the child's subtree did (writes through borrowed data, its result, a panic
//!   stored in the parent) to the owner's `Acquire` load of `pending`, and to the thread that
//!   eventually takes the frame (all these decrements are read-modify-writes of one atomic, so
//!   they form one release sequence). *Acquire* matters when it reads 1: that thread takes the
//!   frame and must see the body's and the other children's effects.
//! - The owner's body-end `fetch_add(.., AcqRel)`: *Release* publishes the body's effects to
//!   whoever takes the frame; *Acquire* gives the owner the children's effects when it finds
//!   them all finished (it then owns the frame).
//! - The owner's transfer `fetch_add(.., AcqRel)` is stronger than the protocol needs: its
//!   result is not read (the owner relies on the children's effects only after its own
//!   `Acquire` load of `pending` sees them finished), and the body goes on after it, to end
//!   with the body-end `fetch_add`, which publishes the body. The loom models
//!   (`loom-tests/tests/child_counter.rs`) pass with it `Relaxed`; it stays `AcqRel`, which
//!   costs the same `lock xadd` on x86-64, so that a later reader of the result needs no
//!   change here.
//! - The owner's check: `pending.load(Acquire)`, pairing with the children's `Release`.
//! - Local completions (`local_done`) happen on the owner's thread: program order suffices.
//! - Waking a sleeping owner: the last child does `fetch_sub` and then [`Sleep`]'s
//!   `fence(SeqCst)` before it looks for sleepers; the owner announces itself and does its own
//!   `fence(SeqCst)` before checking the counter again (see [`crate::sleep`]). One of the two
//!   sees the other, so the wake-up is not lost.
//!
//! A frame is never read by a child after its decrement: the decrement is the child's last
//! access (what it needs afterwards, the owner's index, is read before), because the owner may
//! return from its wait and free the frame at once.
//!
//! [`Sleep`]: crate::sleep::Sleep

use std::cell::Cell;

use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// The bias that keeps a running frame's `pending` away from zero (see the module docs).
pub const BIAS: usize = 1 << (usize::BITS - 2);

/// What a finished child's decrement means for its parent frame.
#[derive(Debug, PartialEq, Eq)]
pub enum ChildDone {
    /// Nothing more to do.
    Pending,
    /// The parent's whole subtree is finished: the caller owns the parent frame now.
    Complete,
    /// The last child of a waiting owner's transfer finished: wake worker `owner`.
    WakeOwner(usize),
}

/// A frame's count of unfinished children (see the module docs).
///
/// The owner's counts are `u32` with wrapping arithmetic: only their difference must stay
/// within `±2^31`. It is at most the spawns since the last transfer or flush (fewer than
/// `SPAWNS_PER_FLUSH`) and at least minus the children alive at that moment (2^31 of them
/// would take more than 256 GiB of task frames).
///
/// Layout: the owner's cells first, then what the other threads touch (`pending`, and `owner`,
/// which a finishing child reads just before its decrement). A task frame's header (`job::Header`)
/// places the two parts on different cache lines (`PENDING_OFFSET`): a task that spawns while
/// other workers finish its earlier children (one thread creating every task of SparseLU)
/// would otherwise take the line back from them on every spawn, to count the spawn. For the
/// same reason a spawn does not read the parent's `owner` (a new frame's owner is set when it
/// runs): with one worker creating empty tasks and another running them, that read alone took
/// a spawn from 84 - 110 ns to 160 - 194 (2-core VM).
#[repr(C)]
pub struct ChildCounter {
    // The owner's cells: only the owner's thread touches them.
    spawned: Cell<u32>,
    local_done: Cell<u32>,
    local_ok: Cell<bool>,
    pending: AtomicUsize,
    /// Index of the worker that runs the body; set before any child exists.
    owner: AtomicU32,
}

/// Every this many spawns without a wait, the owner flushes its counts into `pending` (see
/// the module docs).
pub const SPAWNS_PER_FLUSH: u32 = 1 << 30;

/// Where `pending` lies in a [`ChildCounter`].
#[cfg_attr(loom, allow(dead_code))]
pub const PENDING_OFFSET: usize = std::mem::offset_of!(ChildCounter, pending);

/// A worker index as stored in a frame (indices beyond `u32` never occur: they would need
/// four billion threads; `usize::MAX`, "no owner", maps to `u32::MAX`).
#[inline]
fn narrow(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

impl ChildCounter {
    /// A counter with no children, owned by worker `owner`.
    pub fn new(owner: usize) -> Self {
        ChildCounter {
            pending: AtomicUsize::new(BIAS),
            owner: AtomicU32::new(narrow(owner)),
            spawned: Cell::new(0),
            local_done: Cell::new(0),
            local_ok: Cell::new(true),
        }
    }

    /// Initialises the counter at `at` field by field, like [`new`](Self::new). (A frame is
    /// written in place: building it on the stack and copying it makes wide loads of narrow
    /// stores, which the CPU cannot forward, a stall on every spawn.)
    ///
    /// # Safety
    ///
    /// `at` is valid for writes and properly aligned.
    #[inline(always)]
    pub unsafe fn init_at(at: *mut Self, owner: usize) {
        // SAFETY: the caller's promise; each field is written once, in place.
        unsafe {
            (&raw mut (*at).pending).write(AtomicUsize::new(BIAS));
            (&raw mut (*at).owner).write(AtomicU32::new(narrow(owner)));
            (&raw mut (*at).spawned).write(Cell::new(0));
            (&raw mut (*at).local_done).write(Cell::new(0));
            (&raw mut (*at).local_ok).write(Cell::new(true));
        }
    }

    /// The owner's index.
    #[inline]
    pub fn owner(&self) -> usize {
        self.owner.load(Ordering::Relaxed) as usize
    }

    /// Sets the owner: the body is about to run on worker `owner` (before any child exists,
    /// so the children's reads of it are ordered after this by their own publication).
    #[inline]
    pub fn set_owner(&self, owner: usize) {
        self.owner.store(narrow(owner), Ordering::Relaxed);
    }

    /// Owner only: one more child.
    #[inline]
    pub fn on_spawn(&self) {
        let spawned = self.spawned.get().wrapping_add(1);
        self.spawned.set(spawned);
        if spawned == SPAWNS_PER_FLUSH {
            self.flush();
        }
    }

    /// Owner only: moves the local counts into `pending`, which keeps the invariant, and
    /// leaves local completions counting locally (unlike [`transfer`](Self::transfer), this
    /// is not a wait). Should the children of the flush all finish remotely meanwhile, the
    /// last one's decrement to `BIAS` reports [`ChildDone::WakeOwner`]: a spurious wake-up.
    #[cold]
    fn flush(&self) {
        let n = self.untransferred();
        self.spawned.set(0);
        self.local_done.set(0);
        self.pending.fetch_add(n, Ordering::AcqRel);
    }

    /// `spawned - local_done`, as a signed number (negative after a flush, when children
    /// spawned before it finished locally), in `pending`'s wrapping arithmetic.
    #[inline]
    fn untransferred(&self) -> usize {
        self.spawned.get().wrapping_sub(self.local_done.get()) as i32 as isize as usize
    }

    /// Owner only: whether every child spawned so far is finished.
    #[inline]
    pub fn all_done(&self) -> bool {
        self.pending.load(Ordering::Acquire) == BIAS.wrapping_sub(self.untransferred())
    }

    /// Owner only, before it may block waiting: moves the local counts into `pending` so that
    /// the last child wakes the owner. Idempotent until [`end_wait`](Self::end_wait).
    #[inline]
    pub fn transfer(&self) {
        if !self.local_ok.get() {
            return;
        }
        let n = self.untransferred();
        self.spawned.set(0);
        self.local_done.set(0);
        self.local_ok.set(false);
        self.pending.fetch_add(n, Ordering::AcqRel);
    }

    /// Owner only, once [`all_done`](Self::all_done) returned true after a wait: children
    /// finishing on the owner's thread may count locally again.
    #[inline]
    pub fn end_wait(&self) {
        debug_assert!(self.all_done());
        if !self.local_ok.get() {
            self.local_ok.set(true);
        }
    }

    /// Owner only, at the end of the body: returns true when the subtree is finished, in which
    /// case the caller owns the frame; otherwise the last child will take it.
    #[inline]
    pub fn finish(&self) -> bool {
        self.local_ok.set(false);
        let n = self.untransferred();
        if self.pending.load(Ordering::Acquire) == BIAS.wrapping_sub(n) {
            // Every child is finished, so nothing else will touch `pending`.
            return true;
        }
        let delta = n.wrapping_sub(BIAS);
        self.pending
            .fetch_add(delta, Ordering::AcqRel)
            .wrapping_add(delta)
            == 0
    }

    /// A child of this frame finished, on worker `me`. `owner` is [`owner`](Self::owner),
    /// read by the caller before anything that might let the frame be freed.
    ///
    /// # Safety
    ///
    /// The frame must be alive (it is until this call returns: the finishing child is
    /// counted), and this must be the child's last access to it.
    #[inline]
    pub unsafe fn child_done(&self, me: usize, owner: usize) -> ChildDone {
        if owner == me && self.local_ok.get() {
            // The owner's own thread: the cells are ours.
            self.local_done.set(self.local_done.get().wrapping_add(1));
            return ChildDone::Pending;
        }
        match self.pending.fetch_sub(1, Ordering::AcqRel) {
            1 => ChildDone::Complete,
            p if p == BIAS + 1 && owner != me => ChildDone::WakeOwner(owner),
            _ => ChildDone::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_finishes_a_leaf_without_children() {
        let c = ChildCounter::new(0);
        assert!(c.all_done());
        assert!(c.finish());
    }

    #[test]
    fn local_completions_need_no_transfer() {
        let c = ChildCounter::new(3);
        c.on_spawn();
        c.on_spawn();
        assert!(!c.all_done());
        // SAFETY: the counter lives on this stack and outlives the calls.
        unsafe {
            assert_eq!(c.child_done(3, 3), ChildDone::Pending);
            assert!(!c.all_done());
            assert_eq!(c.child_done(3, 3), ChildDone::Pending);
        }
        assert!(c.all_done());
        assert!(c.finish());
    }

    #[test]
    fn remote_last_child_after_transfer_wakes_the_owner() {
        let c = ChildCounter::new(0);
        c.on_spawn();
        c.on_spawn();
        c.transfer();
        // SAFETY: as above.
        unsafe {
            assert_eq!(c.child_done(1, 0), ChildDone::Pending);
            assert!(!c.all_done());
            // After a transfer, even the owner's own completions go through `pending`.
            assert_eq!(c.child_done(0, 0), ChildDone::Pending);
        }
        assert!(c.all_done());
        c.end_wait();
        c.on_spawn();
        c.transfer();
        // SAFETY: as above.
        unsafe { assert_eq!(c.child_done(1, 0), ChildDone::WakeOwner(0)) };
        c.end_wait();
        assert!(c.finish());
    }

    #[test]
    fn last_child_after_the_body_takes_the_frame() {
        let c = ChildCounter::new(0);
        c.on_spawn();
        c.on_spawn();
        // SAFETY: as above.
        unsafe { assert_eq!(c.child_done(1, 0), ChildDone::Pending) };
        assert!(!c.finish());
        // SAFETY: as above.
        unsafe { assert_eq!(c.child_done(0, 0), ChildDone::Complete) };
    }

    #[test]
    fn billions_of_children_finishing_elsewhere_without_a_wait_are_all_counted() {
        // Five rounds of 2^30 spawns (1.25 * 2^32 in all), every child finishing on
        // another worker, the owner never waiting: the spawns but the last of each round are
        // counted in bulk, and their remote completions subtracted from `pending` in bulk.
        let c = ChildCounter::new(0);
        for _ in 0..5 {
            let bulk = SPAWNS_PER_FLUSH - 1;
            c.spawned.set(c.spawned.get().wrapping_add(bulk));
            c.pending.fetch_sub(bulk as usize, Ordering::AcqRel);
            c.on_spawn();
            assert!(!c.all_done(), "one child still running");
            // The last child of the flush: whether it wakes the owner (spuriously, see
            // `flush`) does not matter; that every child is counted does.
            // SAFETY: the frame is alive; the child's last access.
            assert_ne!(unsafe { c.child_done(1, 0) }, ChildDone::Complete);
            assert!(c.all_done());
        }
        c.transfer();
        assert!(c.all_done());
        c.end_wait();
        // A child spawned before a flush that finishes on the owner's thread after it.
        let c2 = ChildCounter::new(0);
        c2.on_spawn();
        c2.spawned.set(SPAWNS_PER_FLUSH - 1);
        c2.pending
            .fetch_sub(SPAWNS_PER_FLUSH as usize - 2, Ordering::AcqRel);
        c2.on_spawn();
        // SAFETY: as above.
        assert_eq!(unsafe { c2.child_done(0, 0) }, ChildDone::Pending);
        assert!(!c2.all_done(), "one child of the flush still running");
        // SAFETY: as above.
        assert_eq!(unsafe { c2.child_done(1, 0) }, ChildDone::Pending);
        assert!(c2.all_done());
        assert!(
            c.finish() && c2.finish(),
            "the body's end finds every child finished"
        );
    }
}
