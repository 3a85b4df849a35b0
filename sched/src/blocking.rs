//! [`BlockingLatch`]: the one-shot latch a thread outside the pool waits on while a worker
//! runs the scope it entered (`Runtime::scope` from a plain thread). Written against the
//! [`sync`](crate::sync) facade and model-checked with loom (`loom-tests/tests/blocking.rs`).
//!
//! # Protocol
//!
//! The waiter checks the latch for a while (spinning, then yielding: a short scope, such as a
//! time step of an iterative program, ends within microseconds, and a futex round trip on each
//! side costs more than that), then blocks on a condition variable. The setter wakes it only
//! if it blocks: a store-load (Dekker) pair with a `SeqCst` fence on each side
//!
//! - setter: `done = true`; fence; read `blocked`, and if set, lock and notify;
//! - waiter, holding the lock: `blocked = true`; fence; read `done`, and if clear, wait
//!   (which releases the lock);
//!
//! so at least one of the two reads sees the other's store: either the setter sees `blocked`
//! and notifies (under the lock, hence after the waiter is waiting, or after it has seen
//! `done`), or the waiter sees `done` and does not wait. No wake-up is lost, and the setter of
//! a latch whose waiter never blocked makes no system call (the waiter may have yielded its
//! core, for up to 100 us from the start of its wait, between its spin and its block).

use std::sync::PoisonError;

use crate::sync::atomic::{AtomicBool, Ordering, fence};
use crate::sync::{Condvar, Mutex};
#[cfg(not(loom))]
use crate::sync::{spin_loop, thread};

/// How long the waiter spins (by the clock: a pause hint takes from 10 to 140 cycles depending
/// on the CPU; 2 us covers a scope on awake workers, about 1 us, and longer spins delayed a
/// sleeping worker's wake-up on a machine with no core to spare: 10 us added 7 us to
/// `bench/benches/wakeup.rs`'s `one` on 2 cores); then it polls between yields (which give the core
/// to a worker when the machine has none to spare for the waiter) until [`POLL_FOR`] has
/// passed, before it blocks. Neither under loom: loom runs
/// the other threads to a standstill at a yield (its model of a spin too), so the waiter
/// would always find the latch set and the blocking path, where the protocol is, would go
/// unexplored. Both phases only poll `is_set`.
#[cfg(not(loom))]
const SPIN_FOR: std::time::Duration = std::time::Duration::from_micros(2);
/// How long, counted from the start of the wait, the waiter polls between yields of its core
/// before it blocks: a scope of tens of microseconds (a loop of a few hundred chunks on many
/// cores) ends within it, where a block would add the waiter's own wake-up, tens of
/// microseconds more on the virtual machines measured (64 yields, the earlier bound, lasted
/// about as long as such a loop, and its time doubled or tripled whenever the loop took
/// longer; docs/sleep.md).
#[cfg(not(loom))]
const POLL_FOR: std::time::Duration = std::time::Duration::from_micros(100);

/// A one-shot latch: [`set`](Self::set) once, [`wait`](Self::wait) until it is.
#[derive(Debug, Default)]
pub struct BlockingLatch {
    done: AtomicBool,
    /// Whether the waiter blocks, or is about to, on `cond`: the setter notifies only then.
    blocked: AtomicBool,
    lock: Mutex<()>,
    cond: Condvar,
}

impl BlockingLatch {
    /// An unset latch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the latch is set (and what the setter wrote before is visible).
    #[inline]
    pub fn is_set(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Sets the latch, waking the waiter if it blocks.
    pub fn set(&self) {
        self.done.store(true, Ordering::Release);
        fence(Ordering::SeqCst);
        if self.blocked.load(Ordering::Relaxed) {
            // Under the lock: the waiter holds it from its announcement until it waits.
            let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.cond.notify_all();
        }
    }

    /// Spins, then yields, then blocks until the latch is set.
    pub fn wait(&self) {
        #[cfg(not(loom))]
        {
            let start = std::time::Instant::now();
            loop {
                if self.is_set() {
                    return;
                }
                if start.elapsed() >= SPIN_FOR {
                    break;
                }
                for _ in 0..32 {
                    spin_loop();
                }
            }
            while start.elapsed() < POLL_FOR {
                if self.is_set() {
                    return;
                }
                thread::yield_now();
            }
        }
        self.block();
    }

    /// Blocks until the latch is set: the protocol's side of the waiter.
    fn block(&self) {
        let mut held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.blocked.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        while !self.is_set() {
            held = self.cond.wait(held).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_waiter_is_woken_whether_it_polls_or_blocks() {
        // The setter runs after delays from none to well past the polling phases, and every
        // other round the waiter blocks at once, so that the blocking path runs whatever the
        // load; a lost wake-up hangs, which the timeout reports.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rounds = if cfg!(miri) { 12 } else { 600u64 };
            for round in 0..rounds {
                let latch = Arc::new(BlockingLatch::new());
                let setter = {
                    let latch = Arc::clone(&latch);
                    std::thread::spawn(move || {
                        match round % 3 {
                            0 => {}
                            1 => std::thread::sleep(Duration::from_micros(round % 50)),
                            _ => std::thread::sleep(Duration::from_micros(200 + round % 300)),
                        }
                        latch.set();
                    })
                };
                if round % 2 == 0 {
                    latch.block();
                } else {
                    latch.wait();
                }
                assert!(latch.is_set());
                setter.join().unwrap();
            }
            tx.send(()).unwrap();
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(()) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("a waiter of a blocking latch was never woken")
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the waiting thread panicked")
            }
        }
    }
}
