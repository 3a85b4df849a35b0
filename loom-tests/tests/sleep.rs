//! Model checks of the idle/wake protocol in `numatask_sched::sleep`: a worker going to sleep
//! while a producer publishes work must end up running it. A lost wake-up leaves the worker
//! blocked forever, which loom reports as a deadlock. Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::thread;
use numatask_sched::__internals::{IdleState, Sleep};

/// The simplest work source: a bag of items, each a distinct bit, so that the model explores
/// the sleep protocol and not a queue's own spin loops (the queues have their own models).
#[derive(Default)]
struct Bag(AtomicU32);

impl Bag {
    fn push(&self, item: u32) {
        self.0.fetch_or(1 << item, Ordering::Release);
    }

    fn pop(&self) -> Option<u32> {
        let mut bits = self.0.load(Ordering::Acquire);
        while bits != 0 {
            let item = bits.trailing_zeros();
            match self.0.compare_exchange(
                bits,
                bits & !(1 << item),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(item),
                Err(now) => bits = now,
            }
        }
        None
    }

    fn is_empty(&self) -> bool {
        self.0.load(Ordering::Acquire) == 0
    }
}

/// A worker loop: runs items from `queue` until it has run `want` of them.
fn run_items(sleep: &Sleep, queue: &Bag, worker: usize, want: usize) -> Vec<u32> {
    let mut idle = IdleState::new();
    let mut ran = Vec::new();
    while ran.len() < want {
        match queue.pop() {
            Some(item) => {
                sleep.work_found(&mut idle);
                ran.push(item);
            }
            None => sleep.no_work_found(&mut idle, worker, || !queue.is_empty()),
        }
    }
    ran
}

#[test]
fn worker_going_to_sleep_while_work_is_pushed_runs_it() {
    numatask_loom_tests::model(|| {
        let sleep = Arc::new(Sleep::new(1));
        let queue = Arc::new(Bag::default());
        let worker = {
            let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
            thread::spawn(move || run_items(&sleep, &queue, 0, 1))
        };
        queue.push(7);
        sleep.new_work();
        assert_eq!(worker.join().expect("worker panicked"), vec![7]);
    });
}

#[test]
fn two_producers_wake_a_worker_for_each_item() {
    numatask_loom_tests::model(|| {
        let sleep = Arc::new(Sleep::new(1));
        let queue = Arc::new(Bag::default());
        let worker = {
            let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
            thread::spawn(move || run_items(&sleep, &queue, 0, 2))
        };
        let producer = {
            let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
            thread::spawn(move || {
                queue.push(1);
                sleep.new_work();
            })
        };
        queue.push(2);
        sleep.new_work();
        producer.join().expect("producer panicked");
        let mut ran = worker.join().expect("worker panicked");
        ran.sort_unstable();
        assert_eq!(ran, vec![1, 2]);
    });
}

#[test]
fn work_for_one_node_wakes_a_worker_of_that_node() {
    // Worker 1 is the only one that takes from `queue` (its node's queue); worker 0 belongs
    // to another node and only leaves when the pool shuts down.
    numatask_loom_tests::model(|| {
        let sleep = Arc::new(Sleep::new(2));
        let queue = Arc::new(Bag::default());
        let other_node = {
            let sleep = Arc::clone(&sleep);
            thread::spawn(move || {
                let mut idle = IdleState::new();
                while !sleep.is_terminated() {
                    sleep.no_work_found(&mut idle, 0, || false);
                }
            })
        };
        let this_node = {
            let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
            thread::spawn(move || run_items(&sleep, &queue, 1, 1))
        };
        queue.push(5);
        sleep.new_work_for(1..2);
        assert_eq!(this_node.join().expect("worker panicked"), vec![5]);
        sleep.notify_all();
        other_node.join().expect("worker panicked");
    });
}

#[test]
fn work_any_worker_may_take_wakes_a_worker_that_takes_it_not_a_picky_one() {
    // Worker 0 sleeps picky (it takes nothing of `queue`: a waiting worker short of stack);
    // worker 1 takes from `queue`. The producer's `new_work` must reach worker 1: a wake-up
    // spent on worker 0 would leave worker 1 asleep with the item, a deadlock for loom.
    numatask_loom_tests::model(|| {
        let sleep = Arc::new(Sleep::new(2));
        let queue = Arc::new(Bag::default());
        let picky = {
            let sleep = Arc::clone(&sleep);
            thread::spawn(move || {
                let mut idle = IdleState::new();
                while !sleep.is_terminated() {
                    sleep.no_work_found_picky(&mut idle, 0, || false);
                }
            })
        };
        let taker = {
            let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
            thread::spawn(move || run_items(&sleep, &queue, 1, 1))
        };
        queue.push(3);
        sleep.new_work();
        assert_eq!(taker.join().expect("worker panicked"), vec![3]);
        sleep.notify_all();
        picky.join().expect("worker panicked");
    });
}

#[test]
fn work_meant_for_a_picky_sleeper_wakes_it() {
    numatask_loom_tests::model(|| {
        let sleep = Arc::new(Sleep::new(1));
        let queue = Arc::new(Bag::default());
        let picky = {
            let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
            thread::spawn(move || {
                let mut idle = IdleState::new();
                loop {
                    if let Some(item) = queue.pop() {
                        return item;
                    }
                    sleep.no_work_found_picky(&mut idle, 0, || !queue.is_empty());
                }
            })
        };
        queue.push(4);
        sleep.new_work_for(0..1);
        assert_eq!(picky.join().expect("worker panicked"), 4);
    });
}

/// A task that prefers worker 0 (its *owner*) waits in a mailbox that worker 1 (a *taker*)
/// takes from only while the owner is busy (`Sleep::is_free`). The owner turns busy with
/// other work at the same time as the letter is posted, and never looks at its mailbox again
/// (a long task): the poster, seeing the owner busy, or the owner, seeing the letter after it
/// turned busy, must wake the taker. Were both to miss the other (the fence after the owner's
/// `free = false`, or the poster's test of `is_free`, removed), the taker would sleep with
/// the letter: a deadlock for loom.
#[test]
fn a_letter_for_an_owner_turning_busy_wakes_a_taker() {
    use loom::sync::atomic::fence;
    numatask_loom_tests::model(|| {
        let sleep = Arc::new(Sleep::new(2));
        let mailbox = Arc::new(Bag::default());
        let owner = {
            let (sleep, mailbox) = (Arc::clone(&sleep), Arc::clone(&mailbox));
            thread::spawn(move || {
                let mut idle = IdleState::new();
                sleep.begin_search(&mut idle, 0);
                // It found other work: busy from here on.
                if sleep.work_found(&mut idle) {
                    fence(Ordering::SeqCst);
                    if !mailbox.is_empty() {
                        sleep.new_work();
                    }
                }
            })
        };
        let taker = {
            let (sleep, mailbox) = (Arc::clone(&sleep), Arc::clone(&mailbox));
            thread::spawn(move || {
                let mut idle = IdleState::new();
                let takeable = || !sleep.is_free(0) && !mailbox.is_empty();
                loop {
                    if !sleep.is_free(0)
                        && let Some(letter) = mailbox.pop()
                    {
                        sleep.work_found(&mut idle);
                        return letter;
                    }
                    sleep.no_work_found(&mut idle, 1, takeable);
                }
            })
        };
        mailbox.push(6);
        if !sleep.new_work_for(0..1) && !sleep.is_free(0) {
            sleep.new_work();
        }
        owner.join().expect("owner panicked");
        assert_eq!(taker.join().expect("taker panicked"), 6);
    });
}
