//! Model checks of `numatask_sched::deque` with small capacities, so that the full-deque and
//! wrap-around paths are reached. Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use numatask_sched::__internals::{Steal, deque};

/// Steals until the deque reports `Empty` (a `Retry` means another thread took an item).
fn steal_one(s: &numatask_sched::__internals::Stealer<usize>) -> Option<usize> {
    loop {
        match s.steal() {
            Steal::Success(i) => return Some(i),
            Steal::Empty => return None,
            Steal::Retry => thread::yield_now(),
        }
    }
}

#[test]
fn last_item_goes_to_exactly_one_of_owner_and_thief() {
    numatask_loom_tests::model(|| {
        let (w, s) = deque::<usize>(2);
        w.push(7).expect("empty deque has room");
        let thief = thread::spawn(move || s.steal().success());
        let popped = w.pop();
        let stolen = thief.join().expect("thief panicked");
        assert!(
            popped.is_some() != stolen.is_some(),
            "popped {popped:?}, stolen {stolen:?}"
        );
        assert_eq!(popped.or(stolen), Some(7));
    });
}

#[test]
fn full_deque_returns_the_item_and_wraps_after_a_steal() {
    numatask_loom_tests::model(|| {
        let (w, s) = deque::<usize>(2);
        w.push(1).expect("room");
        w.push(2).expect("room");
        assert_eq!(w.push(3), Err(3));
        let thief = thread::spawn(move || steal_one(&s));
        // Index 2 reuses slot 0: the push may only succeed once the thief has moved item 1
        // out, and it must never overwrite an item that is still being read.
        let pushed = w.push(3).is_ok();
        let mut mine = Vec::new();
        while let Some(i) = w.pop() {
            mine.push(i);
        }
        let stolen = thief.join().expect("thief panicked");
        if let Some(i) = stolen {
            assert_eq!(i, 1, "the thief takes the oldest item");
            mine.push(i);
        }
        mine.sort_unstable();
        let expected = if pushed { vec![1, 2, 3] } else { vec![1, 2] };
        assert_eq!(mine, expected, "lost or duplicated items");
    });
}

#[test]
fn owner_pushes_and_pops_while_two_thieves_steal() {
    numatask_loom_tests::model(|| {
        let (w, s) = deque::<usize>(2);
        let seen = Arc::new(AtomicUsize::new(0));
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                let seen = Arc::clone(&seen);
                thread::spawn(move || {
                    if let Some(i) = steal_one(&s) {
                        // Each item is a distinct bit: a duplicate would be caught below.
                        let old = seen.fetch_or(1 << i, Ordering::Relaxed);
                        assert_eq!(old & (1 << i), 0, "item {i} taken twice");
                    }
                })
            })
            .collect();
        let mut inline = 0;
        for i in 0..3 {
            if w.push(i).is_err() {
                inline |= 1 << i;
            }
        }
        while let Some(i) = w.pop() {
            let old = seen.fetch_or(1 << i, Ordering::Relaxed);
            assert_eq!(old & (1 << i), 0, "item {i} taken twice");
        }
        for t in thieves {
            t.join().expect("thief panicked");
        }
        let seen = seen.load(Ordering::Relaxed);
        assert_eq!(seen & inline, 0, "an item handed back was also taken");
        assert_eq!(seen | inline, 0b111, "an item was lost");
    });
}

#[test]
fn owner_pop_and_repush_race_with_a_stale_thief() {
    // The owner pops an item and pushes a new one at the same index while a thief may hold
    // stale `top`/`bottom` values: the thief must get a whole item, never the old one twice.
    numatask_loom_tests::model(|| {
        let (w, s) = deque::<usize>(2);
        w.push(10).expect("room");
        w.push(11).expect("room");
        let thief = thread::spawn(move || {
            let a = steal_one(&s);
            let b = steal_one(&s);
            (a, b)
        });
        let first = w.pop();
        let pushed = w.push(12).is_ok();
        let mut mine: Vec<usize> = first.into_iter().collect();
        while let Some(i) = w.pop() {
            mine.push(i);
        }
        let (a, b) = thief.join().expect("thief panicked");
        mine.extend(a);
        mine.extend(b);
        mine.sort_unstable();
        let mut expected = vec![10, 11];
        if pushed {
            expected.push(12);
        }
        assert_eq!(mine, expected);
    });
}
