//! Idle workers: spin, then sleep; producers wake one sleeper when they publish work.
//!
//! A worker that finds no work calls [`Sleep::no_work_found`] in its loop. The first calls back
//! off (spin, then yield); after that the worker *announces* itself as sleepy, checks for work
//! one last time, and blocks on its own condition variable. A thread that publishes work calls
//! [`Sleep::new_work`] (or [`Sleep::new_work_for`] to wake a worker of one NUMA node); when no
//! worker is sleepy that costs one `fence(SeqCst)` and one load of a counter nobody writes, and
//! takes no lock.
//!
//! # State
//!
//! - `sleepy`: how many workers are between their announcement and the end of their sleep. It
//!   only gates the producers' fast path.
//! - per worker, `state`: `AWAKE`, `SLEEPY` (announced, maybe blocked) or `NOTIFIED` (a producer
//!   chose it; it is waking up). Only the worker sets `AWAKE` and `SLEEPY`; a producer moves
//!   `SLEEPY -> NOTIFIED` by CAS, so each sleeper is chosen by at most one producer.
//! - per worker, a mutex and a condvar; the worker blocks while its state is `SLEEPY`.
//! - `terminated`: set by [`Sleep::notify_all`]; nobody sleeps after it.
//!
//! # Why no wake-up is lost
//!
//! The worker does `sleepy += 1; state = SLEEPY; fence(SeqCst); has_work()?`. The producer does
//! `publish work; fence(SeqCst); sleepy > 0? then scan the states`. The two `SeqCst` fences are
//! totally ordered (a Dekker pattern; `SeqCst` accesses alone would not be enough under loom,
//! and the fence is what the C++ model makes work):
//!
//! - if the producer's fence comes first, the worker's `has_work()` (after its fence) sees the
//!   published work (or a later state where someone took it), so it does not block;
//! - if the worker's fence comes first, the producer sees `sleepy > 0` and `state == SLEEPY` (or
//!   a later state). It CASes some `SLEEPY` worker to `NOTIFIED`, locks that worker's mutex and
//!   signals. The worker tests `state == SLEEPY` under the same mutex before each wait, so the
//!   signal cannot fall between its test and its wait. If the producer finds no `SLEEPY`
//!   worker, each worker it saw as sleepy is `NOTIFIED` by another producer, or awake again:
//!   either way it is awake, and before it can block again it announces itself anew and its
//!   next `has_work()` comes after the producer's fence in the order, so it sees the work.
//!
//! So every piece of published work is seen by a worker that is awake or will wake, provided
//! that the woken worker's `has_work` covers it: [`Sleep::new_work_for`] exists so that work
//! dealt to one NUMA node's queue wakes a worker of that node.
//!
//! A worker that would not take work any worker may take (a waiting worker short of stack)
//! sleeps in the state `PICKY` ([`Sleep::no_work_found_picky`]): [`Sleep::new_work`] skips
//! it, so that its wake-up goes to a worker that can use it rather than to one that would
//! sleep again with it; [`Sleep::new_work_for`] and [`Sleep::wake_all`] wake it as they wake
//! `SLEEPY` workers, and the argument above holds for them unchanged.
//!
//! # Free workers
//!
//! A worker is *free* while it searches for work, awake: from the first round of an idle
//! period (or its start) until it finds work or goes to sleep, and again from its wake-up
//! ([`Sleep::is_free`]). A free worker looks at its own queues within a round, so work meant
//! for it ([`TaskBuilder::prefer_worker`](crate::TaskBuilder::prefer_worker): a task in the
//! worker's mailbox) is left to it; a busy or sleeping one's may be taken by others (a
//! wake-up takes tens of microseconds, more than the cache it would save is worth to a short
//! task). The flag is set by the worker alone. A waiting worker short of stack (`PICKY`) never
//! counts as free: it runs only what it waits for, so others should take the rest.
//!
//! The flag joins a Dekker pair of its own, with the same fences: the producer of such work
//! does `publish; fence(SeqCst); is_free(owner)?` (the fence is [`Sleep::new_work_for`]'s, which
//! also wakes the owner if it sleeps), the owner ending its idle period
//! `free = false; fence(SeqCst); work for me?` ([`Sleep::work_found`] and [`Sleep::end_search`]
//! tell it that it ended one). One of them sees the other: a producer that finds the owner
//! busy wakes a worker that may take the work, and an owner that finds such work after it
//! turned busy does. An owner going to sleep clears the flag before its announcement and sees
//! the work in its last check, or is woken for it, as above.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use numatask_sched::__internals::NodeQueue;
//! use numatask_sched::__internals::{IdleState, Sleep};
//!
//! let sleep = Arc::new(Sleep::new(1));
//! let queue = Arc::new(NodeQueue::new());
//! let worker = {
//!     let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
//!     std::thread::spawn(move || {
//!         let mut idle = IdleState::new();
//!         let mut sum = 0;
//!         while !sleep.is_terminated() {
//!             match queue.pop() {
//!                 Some(x) => {
//!                     sleep.work_found(&mut idle);
//!                     sum += x;
//!                 }
//!                 None => sleep.no_work_found(&mut idle, 0, || !queue.is_empty()),
//!             }
//!         }
//!         sum + std::iter::from_fn(|| queue.pop()).sum::<u32>()
//!     })
//! };
//! for x in 1..=10 {
//!     queue.push(x);
//!     sleep.new_work();
//! }
//! sleep.notify_all(); // shut down
//! assert_eq!(worker.join().unwrap(), 55);
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::PoisonError;

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use crate::sync::{CachePadded, Condvar, Mutex, spin_loop, thread};

/// Idle rounds that spin (round `r` spins `2^r` times) before yielding.
const SPIN_ROUNDS: u32 = if cfg!(loom) { 1 } else { 6 };
/// Idle rounds (spinning ones included) before a worker goes to sleep.
const ROUNDS_UNTIL_SLEEP: u32 = if cfg!(loom) { 1 } else { 16 };
/// How long a worker searches (its idle rounds, spinning then yielding) before it sleeps, at
/// least: a wake-up costs the waker a system call and the sleeper tens of microseconds before
/// it runs, and programs whose tasks come in bursts (each step of a dependent task graph
/// releasing the next) would pay that on their critical path at every step. OpenMP runtimes
/// spin far longer (LLVM's libomp 200 ms by default).
#[cfg(not(loom))]
const SEARCH_TIME: std::time::Duration = std::time::Duration::from_micros(200);

const AWAKE: usize = 0;
const SLEEPY: usize = 1;
const NOTIFIED: usize = 2;
/// Asleep, and waking only for work meant for it ([`Sleep::new_work_for`]), not for work any
/// worker may take ([`Sleep::new_work`]): see [`Sleep::no_work_found_picky`].
const PICKY: usize = 3;

/// How idle workers wait for work (`OMP_WAIT_POLICY`).
///
/// A worker with nothing to run first spins for well under a microsecond; what it does next
/// is the policy's. A sleeping worker costs nothing, but waking it costs the thread that
/// publishes work a system call and the sleeper some microseconds before it runs; a worker
/// that yields its core instead answers at once but takes CPU time from whatever else the
/// machine runs. The outside thread waiting for a scope it entered is not a worker: it spins
/// briefly and then blocks, under every policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitPolicy {
    /// `balanced` (the default; numatask's own value, not OpenMP's): the worker searches,
    /// yielding its core between rounds, for 200 µs and then sleeps until work comes. Tasks
    /// that come in bursts (each step of a dependent task graph releasing the next) find
    /// workers awake, and an idle runtime uses next to no CPU.
    #[default]
    Balanced,
    /// `active`: idle workers never sleep; they search, yielding their cores between rounds,
    /// as long as the runtime lives. New work is taken up soonest, and each worker keeps its
    /// core busy while idle: for a machine the program has to itself.
    Active,
    /// `passive`: idle workers sleep as soon as their brief spin finds nothing. The least CPU
    /// time spent idle, and a wake-up on the path of each new burst of work.
    Passive,
}

impl fmt::Display for WaitPolicy {
    /// As OpenMP runtimes print it in `OMP_DISPLAY_ENV`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Balanced => "BALANCED",
            Self::Active => "ACTIVE",
            Self::Passive => "PASSIVE",
        })
    }
}

/// One worker's sleeping place.
struct WorkerSleep {
    state: AtomicUsize,
    /// Whether the worker is free (module docs); written by the worker alone.
    free: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

/// The idle and wake-up protocol shared by a pool's workers and the threads that give them
/// work. See the module docs for the protocol and why no wake-up is lost.
pub struct Sleep {
    /// Workers between announcing themselves and waking up.
    sleepy: CachePadded<AtomicUsize>,
    /// Workers awake and looking for work (in their back-off rounds): a task pushed now will be
    /// found by one of them, so a push need not wake a sleeper ([`Sleep::should_wake_for_push`]).
    searching: CachePadded<AtomicUsize>,
    terminated: AtomicBool,
    /// Where the next scan for a sleeper starts, so that wake-ups rotate over the workers.
    next_scan: AtomicUsize,
    workers: Box<[CachePadded<WorkerSleep>]>,
    /// When an idle worker may sleep (`OMP_WAIT_POLICY`).
    policy: WaitPolicy,
}

/// A worker's count of consecutive idle rounds; one per worker, kept across its loop.
#[derive(Debug, Default, Clone)]
pub struct IdleState {
    rounds: u32,
    /// Whether this worker counts itself in `Sleep::searching`, and is free (module docs).
    searching: bool,
    /// The worker this idle state is of (set when its search begins).
    worker: usize,
    /// When the current idle period began (its first round).
    #[cfg(not(loom))]
    since: Option<std::time::Instant>,
}

impl IdleState {
    /// Whether the worker searched long enough to sleep, past its spinning rounds, under
    /// `policy`.
    fn may_sleep(&self, policy: WaitPolicy) -> bool {
        match policy {
            WaitPolicy::Active => return false,
            WaitPolicy::Passive => return true,
            WaitPolicy::Balanced => {}
        }
        if self.rounds < ROUNDS_UNTIL_SLEEP {
            return false;
        }
        #[cfg(not(loom))]
        if self.since.is_some_and(|t| t.elapsed() < SEARCH_TIME) {
            return false;
        }
        true
    }

    /// A worker that has just found work (or just started).
    pub fn new() -> Self {
        IdleState::default()
    }
}

impl Sleep {
    /// Sleep state for workers `0..n_workers`, under the default [`WaitPolicy::Balanced`].
    pub fn new(n_workers: usize) -> Self {
        Self::with_policy(n_workers, WaitPolicy::default())
    }

    /// Sleep state for workers `0..n_workers` whose idle rounds follow `policy`.
    pub fn with_policy(n_workers: usize, policy: WaitPolicy) -> Self {
        Sleep {
            policy,
            sleepy: CachePadded::new(AtomicUsize::new(0)),
            searching: CachePadded::new(AtomicUsize::new(0)),
            terminated: AtomicBool::new(false),
            next_scan: AtomicUsize::new(0),
            workers: (0..n_workers)
                .map(|_| {
                    CachePadded::new(WorkerSleep {
                        state: AtomicUsize::new(AWAKE),
                        // A worker starts by looking for work.
                        free: AtomicBool::new(true),
                        lock: Mutex::new(()),
                        wake: Condvar::new(),
                    })
                })
                .collect(),
        }
    }

    /// Number of workers this was created for.
    pub fn n_workers(&self) -> usize {
        self.workers.len()
    }

    /// Resets the worker's idle count; call when it found work. Returns whether this ended
    /// an idle period (the worker was free and is busy now: see the module docs for what
    /// the caller then checks).
    #[inline]
    pub fn work_found(&self, idle: &mut IdleState) -> bool {
        idle.rounds = 0;
        if !idle.searching {
            return false;
        }
        // The last searcher found work: there may be more, and pushes do not wake sleepers
        // while someone searches, so hand the search on to a sleeper (as tokio's scheduler
        // does). Parallelism ramps up one wake-up per successful search, not one per push.
        if self.end_idle(idle) && self.sleepy.load(Ordering::Relaxed) != 0 {
            self.new_work();
        }
        true
    }

    /// Ends an idle period without work found (e.g. the awaited tasks finished): the worker
    /// leaves the searching count and is busy again. Call it before dropping an
    /// [`IdleState`] that may count. Returns whether it ended an idle period, as
    /// [`work_found`](Self::work_found) does.
    #[inline]
    pub fn end_search(&self, idle: &mut IdleState) -> bool {
        idle.rounds = 0;
        if !idle.searching {
            return false;
        }
        let _ = self.end_idle(idle);
        true
    }

    /// Starts an idle period of `worker` at once, without the round that finds nothing:
    /// for a worker that begins by looking for work (it counts as searching and free until
    /// [`work_found`](Self::work_found)).
    pub fn begin_search(&self, idle: &mut IdleState, worker: usize) {
        if !idle.searching {
            self.start_searching(idle, worker);
        }
    }

    /// Whether `worker` is free (module docs): awake and searching for work. `false` for an
    /// index out of range.
    ///
    /// Pairs with the fence after the worker's change to busy: a thread that published work
    /// for `worker` and then passed a `fence(SeqCst)` (any of the `new_work` calls) either
    /// reads `false` here or is seen by the worker's check after it turned busy.
    #[inline]
    pub fn is_free(&self, worker: usize) -> bool {
        self.workers
            .get(worker)
            .is_some_and(|place| place.free.load(Ordering::SeqCst))
    }

    /// Joins the searching count, and marks the worker free.
    fn start_searching(&self, idle: &mut IdleState, worker: usize) {
        idle.searching = true;
        idle.worker = worker;
        self.searching.fetch_add(1, Ordering::Relaxed);
        if let Some(place) = self.workers.get(worker) {
            // Nothing is ordered by this store: a producer that reads the worker as busy a
            // moment longer only wakes a worker that may take its work.
            place.free.store(true, Ordering::Relaxed);
        }
    }

    /// Marks the worker of `idle` busy and leaves the searching count (the caller checked
    /// that it counts); true if it was the last searcher.
    #[inline]
    fn end_idle(&self, idle: &mut IdleState) -> bool {
        if let Some(place) = self.workers.get(idle.worker) {
            // `SeqCst`, with the load of whatever gates the owner's fence after it (the
            // mailboxes' first use, `crate::mailbox`), so that the two cannot both read old
            // values.
            place.free.store(false, Ordering::SeqCst);
        }
        self.stop_searching(idle)
    }

    /// Leaves the searching count; true if this worker was the last searcher.
    #[inline]
    fn stop_searching(&self, idle: &mut IdleState) -> bool {
        if idle.searching {
            idle.searching = false;
            self.searching.fetch_sub(1, Ordering::Relaxed) == 1
        } else {
            false
        }
    }

    /// Called by worker `worker` each time it looked for work and found none: backs off for
    /// the first rounds, then announces itself, checks `has_work` once more and, if that is
    /// still false, blocks until a producer wakes it or [`notify_all`](Self::notify_all) is
    /// called. Returns when the worker should look for work again.
    ///
    /// `has_work` must return true when any work this worker would take is published
    /// (typically: its own deque or node queue is not empty). It is called after the
    /// announcement, which is what makes the protocol free of lost wake-ups.
    ///
    /// After termination this returns at once. A `worker` index out of range never sleeps (it
    /// yields instead).
    pub fn no_work_found(&self, idle: &mut IdleState, worker: usize, has_work: impl Fn() -> bool) {
        self.idle_round(idle, worker, has_work, SLEEPY);
    }

    /// [`no_work_found`](Self::no_work_found) for a worker that would not take work any worker
    /// may take (a waiting worker short of stack runs only its own descendants): it sleeps
    /// without answering [`new_work`](Self::new_work), which then wakes another sleeper
    /// instead of one that would go back to sleep with the wake-up.
    /// [`new_work_for`](Self::new_work_for) a range holding it, and
    /// [`wake_all`](Self::wake_all), still wake it; `has_work` need only cover the work those
    /// announce.
    pub fn no_work_found_picky(
        &self,
        idle: &mut IdleState,
        worker: usize,
        has_work: impl Fn() -> bool,
    ) {
        self.idle_round(idle, worker, has_work, PICKY);
    }

    fn idle_round(
        &self,
        idle: &mut IdleState,
        worker: usize,
        has_work: impl Fn() -> bool,
        sleep_state: usize,
    ) {
        if self.is_terminated() {
            return;
        }
        // A picky worker does not search for work others may take: counted as a searcher it
        // would stop pushes from waking a worker that does (`should_wake_for_push`).
        let searches = sleep_state != PICKY;
        if searches && !idle.searching {
            self.start_searching(idle, worker);
        }
        #[cfg(not(loom))]
        if idle.rounds == 0 {
            idle.since = Some(std::time::Instant::now());
        }
        if idle.rounds < SPIN_ROUNDS {
            for _ in 0..1u32 << idle.rounds {
                spin_loop();
            }
            idle.rounds += 1;
            return;
        }
        if !idle.may_sleep(self.policy) {
            thread::yield_now();
            idle.rounds = idle.rounds.saturating_add(1);
            return;
        }
        if idle.searching
            && let Some(place) = self.workers.get(worker)
        {
            // Asleep it is not free: until it searches again, another worker may take what
            // prefers it rather than wait for its wake-up (module docs). The fence before its
            // last check orders this store for the producers that pair with it.
            place.free.store(false, Ordering::Relaxed);
        }
        let _ = self.stop_searching(idle);
        match self.workers.get(worker) {
            Some(place) => self.sleep(place, has_work, sleep_state),
            None => thread::yield_now(),
        }
        idle.rounds = 0;
        // A woken worker searches: when its first steal succeeds, `work_found` hands the search
        // on to the next sleeper, so a burst of tasks wakes the workers one after the other
        // (without this, pushes saw a searcher and woke nobody, and the chain stopped).
        if searches && !self.is_terminated() {
            self.start_searching(idle, worker);
        }
    }

    fn sleep(&self, place: &WorkerSleep, has_work: impl Fn() -> bool, sleep_state: usize) {
        self.sleepy.fetch_add(1, Ordering::SeqCst);
        place.state.store(sleep_state, Ordering::SeqCst);
        // Pairs with the fence in `wake_one_in` (see the module docs).
        fence(Ordering::SeqCst);
        if !has_work() {
            let mut guard = place.lock.lock().unwrap_or_else(PoisonError::into_inner);
            while matches!(place.state.load(Ordering::Acquire), SLEEPY | PICKY)
                && !self.terminated.load(Ordering::Acquire)
            {
                guard = place
                    .wake
                    .wait(guard)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        // Either we found work, a producer chose us (`NOTIFIED`), or we are shutting down.
        // `swap` rather than `store`: a producer may be CASing `SLEEPY -> NOTIFIED` (or
        // `PICKY`) right now, which only costs it a signal nobody waits for.
        place.state.swap(AWAKE, Ordering::AcqRel);
        self.sleepy.fetch_sub(1, Ordering::SeqCst);
    }

    /// Call after publishing work that any worker may take: wakes one sleeping worker, if any.
    /// Returns whether it woke one. Lock-free and cheap when no worker sleeps.
    #[inline]
    pub fn new_work(&self) -> bool {
        self.wake_one_in(0..self.workers.len(), false)
    }

    /// The same as [`new_work`](Self::new_work).
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.new_work()
    }

    /// Call after publishing work that only workers in `workers` take (e.g. the workers of the
    /// NUMA node whose queue received a task): wakes one of them if any sleeps. If it returns
    /// false, none of them sleeps for good (each is awake or will see the work), but workers
    /// outside the range were not woken; call [`new_work`](Self::new_work) as well if they
    /// should help (e.g. when the queue is long enough to be stolen from).
    #[inline]
    pub fn new_work_for(&self, workers: Range<usize>) -> bool {
        let end = workers.end.min(self.workers.len());
        self.wake_one_in(workers.start.min(end)..end, true)
    }

    /// [`new_work_for`](Self::new_work_for) for work that any worker in `workers` may take
    /// (a task in a deque they may steal from): it wakes no picky sleeper, which would not
    /// take it and would go back to sleep with the wake-up.
    #[inline]
    pub fn new_work_among(&self, workers: Range<usize>) -> bool {
        let end = workers.end.min(self.workers.len());
        self.wake_one_in(workers.start.min(end)..end, false)
    }

    /// Wakes one sleeper in `workers`; `picky` ones only if `wake_picky`.
    fn wake_one_in(&self, workers: Range<usize>, wake_picky: bool) -> bool {
        // Pairs with the fence in `sleep` (see the module docs).
        fence(Ordering::SeqCst);
        if self.sleepy.load(Ordering::Relaxed) == 0 || workers.is_empty() {
            return false;
        }
        let len = workers.len();
        let start = self.next_scan.fetch_add(1, Ordering::Relaxed) % len;
        (0..len)
            .map(|i| workers.start + (start + i) % len)
            .any(|worker| self.wake(worker, wake_picky))
    }

    /// Wakes `worker` if it is `SLEEPY` (or `PICKY`, if `wake_picky`).
    fn wake(&self, worker: usize, wake_picky: bool) -> bool {
        let Some(place) = self.workers.get(worker) else {
            return false;
        };
        let notified = |from| {
            place
                .state
                .compare_exchange(from, NOTIFIED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        };
        if !(notified(SLEEPY) || (wake_picky && notified(PICKY))) {
            return false;
        }
        // Taking the lock orders the signal after the worker's test of its state.
        let _guard = place.lock.lock().unwrap_or_else(PoisonError::into_inner);
        place.wake.notify_one();
        true
    }

    /// Wakes every sleeping worker (without terminating). Returns how many it woke.
    pub fn wake_all(&self) -> usize {
        fence(Ordering::SeqCst);
        if self.sleepy.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        (0..self.workers.len())
            .filter(|&w| self.wake(w, true))
            .count()
    }

    /// Shutdown: marks the pool terminated and wakes every worker. From then on
    /// [`no_work_found`](Self::no_work_found) returns at once and
    /// [`is_terminated`](Self::is_terminated) is true.
    pub fn notify_all(&self) {
        self.terminated.store(true, Ordering::SeqCst);
        for place in self.workers.iter() {
            // A worker tests `terminated` under its lock before each wait: after we have
            // taken and released the lock it either saw the flag or is waiting and gets
            // the signal.
            let _guard = place.lock.lock().unwrap_or_else(PoisonError::into_inner);
            place.wake.notify_all();
        }
    }

    /// Whether [`notify_all`](Self::notify_all) was called.
    #[inline]
    pub fn is_terminated(&self) -> bool {
        self.terminated.load(Ordering::Acquire)
    }

    /// Approximate number of workers announced as sleepy or asleep (a `Relaxed` load).
    ///
    /// Testing it before [`new_work`](Self::new_work) saves the fence when nobody sleeps,
    /// but without the fence it may miss a worker that is announcing itself right now. That
    /// is only safe for work that a thread which is awake will run anyway (such as a task in
    /// the pusher's own deque); otherwise call `new_work` directly.
    #[inline]
    pub fn sleepy_workers(&self) -> usize {
        self.sleepy.load(Ordering::Relaxed)
    }

    /// Whether a push of work that an awake thread runs anyway (see
    /// [`sleepy_workers`](Self::sleepy_workers)) should wake a sleeper: only when some worker
    /// sleeps and none is awake and searching, since a searching worker will find the work.
    /// Without this throttle a producer whose tasks are stolen at once wakes a sleeper, a
    /// system call, on every push (measured: 2 µs per spawn with 31 idle workers).
    #[inline]
    pub fn should_wake_for_push(&self) -> bool {
        self.sleepy.load(Ordering::Relaxed) != 0 && self.searching.load(Ordering::Relaxed) == 0
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("n_workers", &self.workers.len())
            .field("sleepy", &self.sleepy_workers())
            .field("terminated", &self.is_terminated())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::node_queue::NodeQueue;
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Fails (instead of hanging) if `f` does not finish within `limit`.
    fn with_watchdog<R: Send + 'static>(
        limit: Duration,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> R {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit)
            .expect("watchdog: sleep/wake test hung (lost wake-up?)")
    }

    #[test]
    fn a_passive_worker_sleeps_right_after_its_spin() {
        with_watchdog(Duration::from_secs(60), || {
            let sleep = Arc::new(Sleep::with_policy(1, WaitPolicy::Passive));
            let calls = Arc::new(AtomicUsize::new(0));
            let worker = {
                let (sleep, calls) = (Arc::clone(&sleep), Arc::clone(&calls));
                std::thread::spawn(move || {
                    let mut idle = IdleState::new();
                    while !sleep.is_terminated() {
                        calls.fetch_add(1, Ordering::SeqCst);
                        sleep.no_work_found(&mut idle, 0, || false);
                    }
                })
            };
            while sleep.sleepy_workers() < 1 {
                std::thread::yield_now();
            }
            // The spinning rounds, then the call that sleeps: no yielding rounds between.
            assert_eq!(calls.load(Ordering::SeqCst), SPIN_ROUNDS as usize + 1);
            sleep.notify_all();
            worker.join().unwrap();
        });
    }

    #[test]
    fn an_active_worker_never_sleeps() {
        with_watchdog(Duration::from_secs(60), || {
            let sleep = Sleep::with_policy(1, WaitPolicy::Active);
            let mut idle = IdleState::new();
            let start = std::time::Instant::now();
            let mut rounds = 0u32;
            // Well past the balanced policy's search time and round count: a sleep here would
            // block for good (nobody wakes this worker) and trip the watchdog.
            while start.elapsed() < SEARCH_TIME * 10 || rounds < 10 * ROUNDS_UNTIL_SLEEP {
                sleep.no_work_found(&mut idle, 0, || false);
                assert_eq!(sleep.sleepy_workers(), 0);
                rounds += 1;
            }
            sleep.end_search(&mut idle);
        });
    }

    #[test]
    fn out_of_range_worker_index_never_blocks() {
        let sleep = Sleep::new(1);
        let mut idle = IdleState::new();
        for _ in 0..100 {
            sleep.no_work_found(&mut idle, 7, || false);
        }
        assert_eq!(sleep.sleepy_workers(), 0);
    }

    #[test]
    fn a_picky_worker_does_not_count_as_searching_for_others_work() {
        with_watchdog(Duration::from_secs(60), || {
            let sleep = Arc::new(Sleep::new(2));
            let sleeper = {
                let sleep = Arc::clone(&sleep);
                std::thread::spawn(move || {
                    let mut idle = IdleState::new();
                    while !sleep.is_terminated() {
                        sleep.no_work_found(&mut idle, 1, || false);
                    }
                })
            };
            while sleep.sleepy_workers() < 1 {
                std::thread::yield_now();
            }
            // The sleeper left the searching count before it counted itself sleepy (a
            // release): acquire it, or a weak memory model (Miri's) may show this thread an
            // older searching count.
            std::sync::atomic::fence(Ordering::Acquire);
            // Worker 0, short of stack, spins without finding what it waits for: a push of
            // work it would not take must still wake worker 1.
            let mut idle = IdleState::new();
            for _ in 0..3 {
                sleep.no_work_found_picky(&mut idle, 0, || false);
            }
            assert!(
                sleep.should_wake_for_push(),
                "the picky spinner hid the sleeper"
            );
            // An ordinary searcher does hide it (it will find the work itself).
            let mut searcher = IdleState::new();
            sleep.no_work_found(&mut searcher, 0, || false);
            assert!(!sleep.should_wake_for_push());
            sleep.end_search(&mut searcher);
            sleep.notify_all();
            sleeper.join().unwrap();
        });
    }

    #[test]
    fn work_among_a_range_skips_picky_sleepers_and_work_for_it_does_not() {
        with_watchdog(Duration::from_secs(60), || {
            let sleep = Arc::new(Sleep::new(1));
            let picky = {
                let sleep = Arc::clone(&sleep);
                std::thread::spawn(move || {
                    let mut idle = IdleState::new();
                    let mut woken = 0;
                    while !sleep.is_terminated() {
                        sleep.no_work_found_picky(&mut idle, 0, || false);
                        woken += 1;
                    }
                    woken
                })
            };
            // The sleeper counts itself sleepy before it marks itself picky: wait for the mark.
            while sleep.workers[0].state.load(Ordering::SeqCst) != PICKY {
                std::thread::yield_now();
            }
            assert!(
                !sleep.new_work_among(0..1),
                "a picky sleeper takes no stealable work"
            );
            assert!(
                sleep.new_work_for(0..1),
                "work meant for its range wakes it"
            );
            sleep.notify_all();
            assert!(picky.join().unwrap() > 0);
        });
    }

    #[test]
    fn new_work_without_sleepers_wakes_nobody() {
        let sleep = Sleep::new(4);
        assert!(!sleep.new_work());
        assert!(!sleep.new_work_for(1..3));
        assert!(!sleep.new_work_for(9..12));
        assert_eq!(sleep.wake_all(), 0);
    }

    #[test]
    fn notify_all_releases_sleeping_workers() {
        with_watchdog(Duration::from_secs(60), || {
            let sleep = Arc::new(Sleep::new(3));
            let workers: Vec<_> = (0..3)
                .map(|w| {
                    let sleep = Arc::clone(&sleep);
                    std::thread::spawn(move || {
                        let mut idle = IdleState::new();
                        while !sleep.is_terminated() {
                            sleep.no_work_found(&mut idle, w, || false);
                        }
                    })
                })
                .collect();
            while sleep.sleepy_workers() < 3 {
                std::thread::yield_now();
            }
            sleep.notify_all();
            for w in workers {
                w.join().unwrap();
            }
        });
    }

    #[test]
    fn many_sleep_wake_cycles_run_every_item() {
        const WORKERS: usize = 4;
        const ITEMS: u64 = if cfg!(miri) { 1_000 } else { 20_000 };
        let total = with_watchdog(Duration::from_secs(120), || {
            let sleep = Arc::new(Sleep::new(WORKERS));
            let queue = Arc::new(NodeQueue::new());
            let workers: Vec<_> = (0..WORKERS)
                .map(|w| {
                    let (sleep, queue) = (Arc::clone(&sleep), Arc::clone(&queue));
                    std::thread::spawn(move || {
                        let mut idle = IdleState::new();
                        let mut sum = 0u64;
                        let mut count = 0u64;
                        loop {
                            if let Some(x) = queue.pop() {
                                sleep.work_found(&mut idle);
                                sum += x;
                                count += 1;
                            } else if sleep.is_terminated() {
                                return (sum, count);
                            } else {
                                sleep.no_work_found(&mut idle, w, || !queue.is_empty());
                            }
                        }
                    })
                })
                .collect();
            for x in 1..=ITEMS {
                queue.push(x);
                sleep.new_work();
                if x % 500 == 0 {
                    // Let every worker fall asleep so the next pushes must wake them.
                    while sleep.sleepy_workers() < WORKERS && !queue.is_empty() {
                        std::thread::yield_now();
                    }
                    while sleep.sleepy_workers() < WORKERS {
                        std::thread::yield_now();
                    }
                }
            }
            // Every item must be run by the (possibly sleeping) workers before shutdown.
            while !queue.is_empty() {
                std::thread::yield_now();
            }
            sleep.notify_all();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        assert_eq!(total, (ITEMS * (ITEMS + 1) / 2, ITEMS));
    }
}
