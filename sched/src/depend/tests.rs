//! One test per rule of the module documentation, driven step by step: submit, complete, and
//! check exactly which tasks each step makes ready.

use std::collections::HashMap;

use super::*;
use AccessKind::*;

/// A single-threaded driver: tasks are numbered, ready tasks wait in `handles` until the test
/// completes them.
struct Driver {
    tracker: DepTracker<u32>,
    handles: HashMap<u32, DepHandle<u32>>,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Ready,
    Deferred,
    Cancelled,
}

fn acc(addr: usize, len: usize, kind: AccessKind) -> Access {
    Access::new(addr, len, kind)
}

impl Driver {
    fn new() -> Self {
        Driver {
            tracker: DepTracker::new(),
            handles: HashMap::new(),
        }
    }

    fn submit(&mut self, id: u32, accesses: &[Access]) -> State {
        match self.tracker.submit(accesses, id) {
            Submitted::Ready(r) => {
                assert_eq!(r.payload, id);
                self.handles.insert(id, r.handle);
                State::Ready
            }
            Submitted::Deferred => State::Deferred,
            Submitted::Cancelled(p, released) => {
                assert_eq!(p, id);
                for r in released {
                    if let Released::Ready(r) = r {
                        self.handles.insert(r.payload, r.handle);
                    }
                }
                State::Cancelled
            }
        }
    }

    /// Completes `id`; returns the tasks that became ready, then those cancelled, sorted.
    fn finish(&mut self, id: u32, panicked: bool) -> (Vec<u32>, Vec<u32>) {
        let handle = self
            .handles
            .remove(&id)
            .expect("completing a task that is ready");
        let (mut ready, mut cancelled) = (Vec::new(), Vec::new());
        let mut sink = |r: Released<u32>| match r {
            Released::Ready(r) => {
                ready.push(r.payload);
                self.handles.insert(r.payload, r.handle);
            }
            Released::Cancelled(p) => cancelled.push(p),
        };
        if panicked {
            handle.complete_panicked(&mut sink);
        } else {
            handle.complete(&mut sink);
        }
        ready.sort_unstable();
        cancelled.sort_unstable();
        (ready, cancelled)
    }

    fn complete(&mut self, id: u32) -> Vec<u32> {
        let (ready, cancelled) = self.finish(id, false);
        assert!(
            cancelled.is_empty(),
            "nothing panicked, yet {cancelled:?} were cancelled"
        );
        ready
    }
}

/// A test's tasks still ready at its end are completed, and those they release, so that every
/// node is freed: a task left holding a `mutexinoutset` set while another waits for it would
/// keep both alive (the set queues the waiter, the waiter's node keeps the set), and under
/// Miri a leak then means a lost reference in the tracker, not a test cut short.
impl Drop for Driver {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        while let Some(&id) = self.handles.keys().min() {
            self.finish(id, false);
        }
    }
}

#[test]
fn readers_run_concurrently() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, In)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, In)]), State::Ready);
    assert_eq!(d.submit(3, &[acc(4, 8, In)]), State::Ready);
}

#[test]
fn reader_after_writer_waits() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, In)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
}

#[test]
fn writer_after_reader_waits() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, In)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, Out)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
}

#[test]
fn writer_after_writer_waits() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, InOut)]), State::Deferred);
    assert_eq!(d.submit(3, &[acc(0, 8, Out)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
    assert_eq!(d.complete(2), [3]);
}

#[test]
fn writer_waits_for_every_reader_since_the_last_writer() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, In)]), State::Deferred);
    assert_eq!(d.submit(3, &[acc(0, 8, In)]), State::Deferred);
    assert_eq!(d.submit(4, &[acc(0, 8, Out)]), State::Deferred);
    assert_eq!(d.complete(1), [2, 3]);
    assert!(d.complete(3).is_empty());
    assert_eq!(d.complete(2), [4]);
}

#[test]
fn overlapping_unequal_ranges_are_ordered() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 100, Out)]), State::Ready);
    // Starts inside, ends inside.
    assert_eq!(d.submit(2, &[acc(50, 10, In)]), State::Deferred);
    // Overlaps the last byte only.
    assert_eq!(d.submit(3, &[acc(99, 100, Out)]), State::Deferred);
    assert_eq!(d.complete(1), [2, 3]);
}

#[test]
fn disjoint_ranges_are_not_ordered_even_when_adjacent() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 100, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(100, 100, Out)]), State::Ready);
    assert_eq!(
        d.submit(3, &[acc(200, 1, InOut), acc(300, 1, In)]),
        State::Ready
    );
}

#[test]
fn partial_overlap_splits_the_history_of_a_range() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 100, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 50, In)]), State::Deferred);
    assert_eq!(d.submit(3, &[acc(50, 50, In)]), State::Deferred);
    assert_eq!(d.complete(1), [2, 3]);
    // [40, 60) straddles both readers' halves: it waits for both.
    assert_eq!(d.submit(4, &[acc(40, 20, Out)]), State::Deferred);
    // [60, 100) was only read by 3; [0, 10) only by 2.
    assert_eq!(d.submit(5, &[acc(60, 40, Out)]), State::Deferred);
    assert_eq!(d.submit(6, &[acc(0, 10, Out)]), State::Deferred);
    assert_eq!(d.complete(2), [6]);
    assert_eq!(d.complete(3), [4, 5]);
    // Reading [0, 100) now waits for 4, 5 and 6, each once, whatever the splits.
    assert_eq!(d.submit(7, &[acc(0, 100, In)]), State::Deferred);
    assert!(d.complete(4).is_empty());
    assert!(d.complete(6).is_empty());
    assert_eq!(d.complete(5), [7]);
}

#[test]
fn an_access_covering_several_segments_and_gaps_waits_for_each_task_once() {
    let mut d = Driver::new();
    assert_eq!(
        d.submit(1, &[acc(10, 10, Out), acc(40, 10, Out)]),
        State::Ready
    );
    assert_eq!(d.submit(2, &[acc(0, 100, InOut)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
    assert_eq!(d.submit(3, &[acc(25, 1, In)]), State::Deferred);
    assert_eq!(d.complete(2), [3]);
}

#[test]
fn mutexinoutset_members_are_unordered_but_exclusive() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(100, 8, Out)]), State::Ready);
    // 2 is a member that also reads what 1 writes, so it cannot run yet.
    assert_eq!(
        d.submit(2, &[acc(0, 8, MutexInOutSet), acc(100, 8, In)]),
        State::Deferred
    );
    // 3 is a later member of the same set: it does not wait for 2.
    assert_eq!(d.submit(3, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    // 2's dependences are satisfied, but 3 holds the set.
    assert!(d.complete(1).is_empty());
    assert_eq!(d.complete(3), [2]);
}

#[test]
fn mutexinoutset_members_take_the_set_one_at_a_time() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.submit(3, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.submit(4, &[acc(4, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.submit(5, &[acc(0, 8, In)]), State::Deferred);
    let first = d.complete(1);
    assert_eq!(first.len(), 1, "one member at a time, got {first:?}");
    let second = d.complete(first[0]);
    assert_eq!(second.len(), 1, "one member at a time, got {second:?}");
    let third = d.complete(second[0]);
    assert_eq!(third.len(), 1, "one member at a time, got {third:?}");
    let mut members = [first[0], second[0], third[0]];
    members.sort_unstable();
    assert_eq!(members, [2, 3, 4]);
    // The reader waits for the whole set.
    assert_eq!(d.complete(third[0]), [5]);
}

#[test]
fn mutexinoutset_run_is_ordered_after_earlier_readers() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, In)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, In)]), State::Ready);
    assert_eq!(d.submit(3, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.submit(4, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert!(d.complete(1).is_empty());
    let got = d.complete(2);
    assert_eq!(got.len(), 1, "{got:?}");
}

#[test]
fn members_of_overlapping_mutexinoutsets_exclude_each_other() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 10, MutexInOutSet)]), State::Ready);
    // Overlaps 1 on [5, 10): same run there, so exclusive with 1.
    assert_eq!(d.submit(2, &[acc(5, 10, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
}

#[test]
fn inoutset_members_run_concurrently_and_are_ordered_with_other_kinds() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, In)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, InOutSet)]), State::Deferred);
    assert_eq!(d.submit(3, &[acc(0, 8, InOutSet)]), State::Deferred);
    assert_eq!(d.submit(4, &[acc(0, 8, In)]), State::Deferred);
    assert_eq!(d.submit(5, &[acc(0, 8, InOutSet)]), State::Deferred);
    assert_eq!(d.complete(1), [2, 3]);
    assert!(d.complete(3).is_empty());
    assert_eq!(d.complete(2), [4]);
    // 5 starts a new run after the reader 4.
    assert_eq!(d.complete(4), [5]);
}

#[test]
fn runs_of_different_set_kinds_are_ordered() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, InOutSet)]), State::Deferred);
    assert_eq!(d.submit(3, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
    assert_eq!(d.complete(2), [3]);
}

#[test]
fn conflicting_declarations_of_one_task_act_as_inout() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, In)]), State::Ready);
    // `in` and `out` on overlapping bytes: waits for the earlier reader like a writer.
    assert_eq!(
        d.submit(2, &[acc(0, 8, In), acc(4, 8, Out)]),
        State::Deferred
    );
    // A later reader of the bytes declared both ways waits for it like for a writer...
    assert_eq!(d.submit(3, &[acc(4, 2, In)]), State::Deferred);
    // ...but bytes it only declared `in` stay read-only.
    assert_eq!(d.submit(4, &[acc(0, 2, In)]), State::Ready);
    assert_eq!(d.complete(1), [2]);
    assert_eq!(d.complete(2), [3]);
}

#[test]
fn zero_length_accesses_order_nothing() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(4, 0, Out)]), State::Ready);
    assert_eq!(
        d.submit(3, &[acc(4, 0, InOut), acc(100, 4, In)]),
        State::Ready
    );
    assert_eq!(d.handles[&2].accesses(), &[acc(4, 0, Out)]);
}

#[test]
fn a_task_without_accesses_is_ready() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[]), State::Ready);
    assert!(d.complete(1).is_empty());
}

#[test]
fn handles_keep_the_declared_accesses_and_the_intensive_one() {
    let mut d = Driver::new();
    let declared = [
        acc(0, 8, In),
        acc(64, 64, InOut).intensive(),
        acc(4, 8, Out),
        acc(512, 8, InOutSet),
    ];
    assert_eq!(d.submit(1, &declared), State::Ready);
    let h = &d.handles[&1];
    assert_eq!(h.accesses(), &declared);
    assert_eq!(h.intensive(), Some(&declared[1]));
}

#[test]
fn panic_cancels_dependent_tasks_transitively() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(
        d.submit(2, &[acc(0, 8, In), acc(8, 8, Out)]),
        State::Deferred
    );
    assert_eq!(d.submit(3, &[acc(8, 8, In)]), State::Deferred);
    assert_eq!(d.submit(4, &[acc(100, 8, In)]), State::Ready);
    let (ready, cancelled) = d.finish(1, true);
    assert!(ready.is_empty());
    assert_eq!(cancelled, [2, 3]);
    // Unrelated tasks are not affected.
    assert!(d.complete(4).is_empty());
    assert_eq!(d.submit(5, &[acc(100, 8, Out)]), State::Ready);
}

#[test]
fn panic_poison_stays_on_the_bytes_for_later_tasks() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.finish(1, true), (vec![], vec![]));
    // Submitted after the panic: still cancelled, as it would have been if submitted before.
    assert_eq!(d.submit(2, &[acc(4, 1, In)]), State::Cancelled);
    assert_eq!(d.submit(3, &[acc(0, 8, Out)]), State::Cancelled);
    assert_eq!(d.submit(4, &[acc(8, 8, Out)]), State::Ready);
    // Pruning keeps poisoned ranges.
    d.tracker.prune();
    assert_eq!(d.submit(5, &[acc(0, 1, In)]), State::Cancelled);
}

#[test]
fn a_cancelled_task_waits_for_all_its_predecessors() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(8, 8, Out)]), State::Ready);
    assert_eq!(d.submit(3, &[acc(0, 16, In)]), State::Deferred);
    assert_eq!(d.finish(1, true), (vec![], vec![]));
    assert_eq!(d.finish(2, false), (vec![], vec![3]));
}

#[test]
fn a_panicking_mutexinoutset_member_poisons_the_set_for_the_members_after_it() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    // A member that would take the set after a panicking one would see what it left
    // half-written: cancelled, as on a poisoned `Mutex`.
    assert_eq!(d.finish(1, true), (vec![], vec![2]));
    // So is a member submitted later, and what comes after the set.
    assert_eq!(d.submit(3, &[acc(0, 8, MutexInOutSet)]), State::Cancelled);
    assert_eq!(d.submit(4, &[acc(0, 8, In)]), State::Cancelled);
    // A member that ran before the panic is not affected; the set's poison reaches only the
    // members after it.
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.complete(1), [2]);
    assert_eq!(d.finish(2, true), (vec![], vec![]));
    assert_eq!(d.submit(3, &[acc(0, 8, MutexInOutSet)]), State::Cancelled);
}

#[test]
fn a_member_cancelled_at_a_poisoned_set_hands_on_the_sets_it_took_before() {
    let mut d = Driver::new();
    // Sets are taken in creation order: Y (at 0, started by 2) before X (at 100, started by
    // 1). 3 takes Y and waits for X; 4 waits for Y.
    assert_eq!(d.submit(2, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(d.submit(1, &[acc(100, 8, MutexInOutSet)]), State::Ready);
    assert!(d.complete(2).is_empty());
    assert_eq!(
        d.submit(3, &[acc(0, 8, MutexInOutSet), acc(100, 8, MutexInOutSet)]),
        State::Deferred
    );
    assert_eq!(d.submit(4, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    // 1 panics holding X: 3 takes X after it and is cancelled, handing Y on to 4, whose set
    // is clean.
    assert_eq!(d.finish(1, true), (vec![4], vec![3]));
    assert!(d.complete(4).is_empty());
    // Y is free and clean, X poisoned.
    assert_eq!(d.submit(5, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(d.submit(6, &[acc(100, 8, MutexInOutSet)]), State::Cancelled);
}

#[test]
fn a_panic_poisons_the_whole_set_object_even_bytes_the_member_did_not_touch() {
    // One task that starts runs on two ranges gives them one set object (module docs of
    // `mutex_set`): a member of either that panics poisons both, conservatively.
    let mut d = Driver::new();
    assert_eq!(
        d.submit(1, &[acc(0, 8, MutexInOutSet), acc(100, 8, MutexInOutSet)]),
        State::Ready
    );
    assert!(d.complete(1).is_empty());
    assert_eq!(d.submit(2, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(d.submit(3, &[acc(100, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.finish(2, true), (vec![], vec![3]));
}

#[test]
fn a_cancelled_mutexinoutset_member_does_not_take_the_set() {
    let mut d = Driver::new();
    assert_eq!(d.submit(1, &[acc(100, 8, Out)]), State::Ready);
    assert_eq!(d.submit(2, &[acc(0, 8, MutexInOutSet)]), State::Ready);
    assert_eq!(
        d.submit(3, &[acc(0, 8, MutexInOutSet), acc(100, 8, In)]),
        State::Deferred
    );
    assert_eq!(d.submit(4, &[acc(0, 8, MutexInOutSet)]), State::Deferred);
    assert_eq!(d.finish(1, true), (vec![], vec![3]));
    assert_eq!(d.complete(2), [4]);
}

#[test]
fn memory_follows_the_ranges_in_use_when_streaming() {
    use super::range_map::MIN_PRUNE;
    let mut d = Driver::new();
    let n = 3 * MIN_PRUNE as u32;
    for i in 0..n {
        let addr = i as usize * 16;
        assert_eq!(d.submit(i, &[acc(addr, 8, Out)]), State::Ready);
        assert!(d.complete(i).is_empty());
    }
    let tracked = d.tracker.tracked_ranges();
    assert!(
        tracked <= 2 * MIN_PRUNE,
        "{tracked} ranges remembered after {n} distinct finished ones"
    );
    d.tracker.prune();
    assert_eq!(d.tracker.tracked_ranges(), 0);
    // Pruned bytes behave as never accessed.
    assert_eq!(d.submit(n, &[acc(0, 16 * n as usize, In)]), State::Ready);
}

#[test]
fn ranges_used_again_and_again_are_kept() {
    use super::range_map::MIN_PRUNE;
    let mut d = Driver::new();
    let blocks = MIN_PRUNE + MIN_PRUNE / 4;
    let mut id = 0;
    for _sweep in 0..3 {
        for b in 0..blocks {
            assert_eq!(d.submit(id, &[acc(b * 16, 8, InOut)]), State::Ready);
            assert!(d.complete(id).is_empty());
            id += 1;
        }
    }
    assert_eq!(d.tracker.tracked_ranges(), blocks);
    // Their history was dropped, their ordering is intact.
    assert_eq!(d.submit(id, &[acc(0, 8, Out)]), State::Ready);
    assert_eq!(d.submit(id + 1, &[acc(4, 8, In)]), State::Deferred);
    assert_eq!(d.complete(id), [id + 1]);
}

#[test]
fn many_readers_then_a_writer() {
    let mut d = Driver::new();
    assert_eq!(d.submit(0, &[acc(0, 8, Out)]), State::Ready);
    for i in 1..=100 {
        assert_eq!(d.submit(i, &[acc(0, 8, In)]), State::Deferred);
    }
    let released = d.complete(0);
    assert_eq!(released, (1..=100).collect::<Vec<_>>());
    // Finished readers are dropped from the reader list as it grows.
    for i in 1..=90 {
        assert!(d.complete(i).is_empty());
    }
    for i in 101..=200 {
        assert_eq!(d.submit(i, &[acc(0, 8, In)]), State::Ready);
        assert!(d.complete(i).is_empty());
    }
    assert_eq!(d.submit(201, &[acc(0, 8, Out)]), State::Deferred);
    for i in 91..100 {
        assert!(d.complete(i).is_empty());
    }
    assert_eq!(d.complete(100), [201]);
}

#[test]
fn dropping_the_tracker_drops_parked_payloads_without_deep_recursion() {
    use std::sync::Arc as StdArc;
    let tracker = DepTracker::new();
    let token = StdArc::new(());
    let first = match tracker.submit(&[acc(0, 8, InOut)], StdArc::clone(&token)) {
        Submitted::Ready(r) => r,
        other => panic!("expected ready, got {other:?}"),
    };
    for _ in 0..(if cfg!(miri) { 2_000 } else { 100_000 }) {
        let s = tracker.submit(&[acc(0, 8, InOut)], StdArc::clone(&token));
        assert!(matches!(s, Submitted::Deferred));
    }
    drop(tracker);
    drop(first);
    assert_eq!(StdArc::strong_count(&token), 1);
}

#[test]
fn tracker_and_handles_are_send_and_sync() {
    fn send_sync<X: Send + Sync>() {}
    send_sync::<DepTracker<Box<dyn FnOnce() + Send>>>();
    send_sync::<DepHandle<Box<dyn FnOnce() + Send>>>();
    fn send<X: Send>() {}
    send::<Ready<Box<dyn FnOnce() + Send>>>();
}

/// Tasks of two and three pieces that are each exactly one segment take the tracker's
/// one-lookup path; a task with a fresh or a partially overlapping piece takes the general
/// one. Both order the same.
#[test]
fn tasks_of_several_blocks_accessed_again_wait_per_block() {
    let mut d = Driver::new();
    let (a, b, c, e) = (0, 16, 32, 48);
    // Fresh blocks: the general path.
    assert_eq!(
        d.submit(0, &[acc(a, 8, Out), acc(b, 8, Out), acc(c, 8, Out)]),
        State::Ready
    );
    // Every piece an existing segment: the one-lookup path, two and three pieces.
    assert_eq!(
        d.submit(1, &[acc(b, 8, In), acc(a, 8, In)]),
        State::Deferred
    );
    assert_eq!(
        d.submit(2, &[acc(c, 8, InOut), acc(a, 8, In)]),
        State::Deferred
    );
    assert_eq!(
        d.submit(3, &[acc(b, 8, Out), acc(c, 8, In), acc(a, 8, In)]),
        State::Deferred
    );
    assert_eq!(d.complete(0), [1, 2]);
    // Task 3 writes b after reader 1 and reads c after writer 2.
    assert!(d.complete(1).is_empty());
    assert_eq!(d.complete(2), [3]);
    // One existing segment and one fresh block: the general path; a is only read so far.
    assert_eq!(d.submit(4, &[acc(a, 8, In), acc(e, 8, Out)]), State::Ready);
    // A piece that cuts segment b: the general path; waits for reader 4 of a and writer 3 of b.
    assert_eq!(
        d.submit(5, &[acc(a, 8, Out), acc(b, 4, In)]),
        State::Deferred
    );
    assert!(d.complete(4).is_empty());
    assert_eq!(d.complete(3), [5]);
    // After the cut, b's first half is its own segment: the one-lookup path again.
    assert_eq!(
        d.submit(6, &[acc(b, 4, Out), acc(a, 8, In)]),
        State::Deferred
    );
    assert_eq!(d.complete(5), [6]);
}

/// A payload whose destructor panics (a user type of the public tracker) and which is dropped
/// inside `submit`, when a later task replaces the last reference to its parked node: the panic
/// stays inside the tracker, which goes on ordering tasks, and dropping it is quiet too.
#[test]
fn a_payload_destructor_panicking_inside_submit_leaves_the_tracker_consistent() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    struct Boom(u32);
    impl Drop for Boom {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            if self.0 == 1 {
                panic!("payload 1 refuses to go");
            }
        }
    }
    let tracker = DepTracker::new();
    let (r, s) = (0x1000, 0x2000);
    let Submitted::Ready(first) = tracker.submit(&[acc(r, 16, Out)], Boom(0)) else {
        panic!("the first writer is ready");
    };
    assert!(matches!(
        tracker.submit(&[acc(r, 16, Out)], Boom(1)),
        Submitted::Deferred
    ));
    // The first writer's handle goes without completing: task 1 stays parked, and the map now
    // holds the only reference to its node.
    let Ready { payload, handle } = first;
    drop((payload, handle));
    let dropped = DROPPED.load(Ordering::Relaxed);
    // Replacing task 1 in the map drops its node, and the panicking payload, inside `submit`.
    let third = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tracker.submit(&[acc(r, 8, InOut), acc(r + 8, 8, Out)], Boom(2))
    }))
    .expect("the payload's panic stays inside the tracker");
    assert_eq!(
        DROPPED.load(Ordering::Relaxed),
        dropped + 1,
        "payload 1 dropped"
    );
    // Task 2 waits for the writer that never completed (left parked, by the caller's choice).
    assert!(matches!(third, Submitted::Deferred));
    // The tracker goes on: a disjoint range is ready at once, an overlapping writer after it.
    let Submitted::Ready(four) = tracker.submit(&[acc(s, 8, Out)], Boom(4)) else {
        panic!("a task on a fresh range is ready");
    };
    assert!(matches!(
        tracker.submit(&[acc(s, 8, In)], Boom(5)),
        Submitted::Deferred
    ));
    let mut released = Vec::new();
    four.handle.complete(|r| released.push(r));
    assert!(matches!(released.as_slice(), [Released::Ready(r)] if r.payload.0 == 5));
    drop(released);
    drop(tracker);
}
