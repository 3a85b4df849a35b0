//! The taskwait policy: no deadlock with one worker, nested waits or deep recursion, and no
//! stack overflow from the tasks a waiting worker runs on top of its stack.

mod common;

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use common::{fib, fib_seq, runtime, runtime_with_stack, within};
use numatask_sched::data::Blocks;
use numatask_sched::{Runtime, Scope};

#[test]
fn taskwait_with_one_worker_does_not_deadlock() {
    within(60, || {
        let rt = runtime(1);
        assert_eq!(rt.scope(|s| fib(s, 18)), fib_seq(18));
        let hits = AtomicUsize::new(0);
        rt.scope(|s| {
            for _ in 0..10 {
                s.spawn(|s| {
                    s.spawn(|_| {
                        hits.fetch_add(1, Ordering::Relaxed);
                    });
                    s.taskwait();
                });
            }
            s.taskwait();
        });
        assert_eq!(hits.load(Ordering::Relaxed), 10);
    });
}

/// Nested taskwaits and taskgroups, `depth` levels, each level with a few children.
fn nested<'s>(s: &Scope<'s>, depth: u32, count: &'s AtomicUsize) {
    count.fetch_add(1, Ordering::Relaxed);
    if depth == 0 {
        return;
    }
    s.taskgroup(|s| {
        for _ in 0..2 {
            s.spawn(move |s| nested(s, depth - 1, count));
        }
        s.taskwait();
        s.spawn(move |s| {
            s.spawn(move |s| nested(s, depth - 1, count));
            s.taskwait();
        });
    });
    s.taskwait();
}

#[test]
fn nested_taskwaits_and_taskgroups_do_not_deadlock() {
    within(120, || {
        for workers in [1, 2, 4] {
            let rt = runtime(workers);
            let count = AtomicUsize::new(0);
            rt.scope(|s| nested(s, 6, &count));
            // Each level calls 3 children: (3^7 - 1) / 2 calls in all.
            assert_eq!(count.load(Ordering::Relaxed), 1093, "{workers} workers");
        }
    });
}

fn chain(s: &Scope<'_>, depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    let child = s.task().spawn_with_result(move |s| chain(s, depth - 1));
    s.taskwait();
    child.join() + 1
}

#[test]
fn recursion_1000_levels_deep_does_not_deadlock() {
    within(120, || {
        for workers in [1, 2] {
            let rt = runtime_with_stack(workers, 64 << 20);
            assert_eq!(rt.scope(|s| chain(s, 1000)), 1000, "{workers} workers");
        }
    });
}

/// Stack bytes each level of `padded_chain` holds while it waits.
const LEVEL_BYTES: usize = 64 << 10;

/// A chain whose levels pause before waiting, so that other workers steal the child and the
/// waiting worker, its own deque empty, goes stealing other chains' tasks; every level keeps
/// `LEVEL_BYTES` of its stack in use while it waits.
fn padded_chain(s: &Scope<'_>, depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    // Built in place and passed by reference: a debug build copies arrays passed by value,
    // which would hold the pad several times over.
    let mut pad = [depth as u8; LEVEL_BYTES];
    std::hint::black_box(&mut pad);
    let child = s
        .task()
        .spawn_with_result(move |s| padded_chain(s, depth - 1));
    thread::sleep(Duration::from_micros(50));
    s.taskwait();
    std::hint::black_box(&pad);
    child.join() + 1
}

/// Spawns two children, joins the first and waits for both, holding `pad` bytes of stack.
fn join_first_of_two(s: &Scope<'_>, pad: &mut [u8]) -> u32 {
    std::hint::black_box(&mut *pad);
    let first = s.task().spawn_with_result(|_| 1u32);
    let second = s.task().spawn_with_result(|_| 2u32);
    // The second child is on top of the deque: joining the first pops it first.
    let a = first.join();
    s.taskwait();
    std::hint::black_box(&*pad);
    a + second.join()
}

#[test]
fn a_worker_short_of_stack_still_runs_the_children_it_set_aside_while_joining() {
    // A waiting worker with less than a quarter of its stack free runs only descendants of
    // what it waits for. Joining `first` pops `second` (not a descendant of `first`) and sets
    // it aside; the taskwait that follows, as short of stack, must find it again: with one
    // worker nobody else will run it.
    within(60, || {
        let rt = runtime_with_stack(1, 512 << 10);
        for _ in 0..3 {
            let sum = rt.scope(|s| {
                s.task()
                    .spawn_with_result(|s| {
                        // About 420 KiB of the 512 KiB stack in use while waiting.
                        let mut pad = [0u8; 420 << 10];
                        join_first_of_two(s, &mut pad)
                    })
                    .join()
            });
            assert_eq!(sum, 3);
        }
    });
}

/// `join_first_of_two` `depth` levels deep, each level a task holding `LEVEL` bytes.
fn nested_joins(s: &Scope<'_>, depth: u32) -> u32 {
    const LEVEL: usize = 2 << 10;
    let mut pad = [depth as u8; LEVEL];
    if depth == 0 {
        return join_first_of_two(s, &mut pad);
    }
    let below = s
        .task()
        .spawn_with_result(move |s| nested_joins(s, depth - 1));
    let here = join_first_of_two(s, &mut pad);
    below.join() + here
}

#[test]
fn nested_joins_a_hundred_levels_deep_short_of_stack_do_not_deadlock() {
    // The scope's task holds 1.4 MiB of a 2 MiB stack, so that the inner levels of the
    // recursion (a few KiB each in a debug build) wait with less than a quarter of the stack
    // free, whatever the frame sizes of this build; 100 levels stay far from overflowing.
    within(120, || {
        let rt = runtime_with_stack(1, 2 << 20);
        for depth in [20, 60, 100] {
            let sum = rt.scope(|s| {
                s.task()
                    .spawn_with_result(move |s| {
                        let mut pad = [0u8; 1400 << 10];
                        std::hint::black_box(&mut pad);
                        let r = nested_joins(s, depth);
                        std::hint::black_box(&pad);
                        r
                    })
                    .join()
            });
            assert_eq!(sum, 3 * (depth + 1), "{depth} levels");
        }
    });
}

#[test]
fn many_deep_chains_on_small_stacks_do_not_overflow() {
    // Waiting workers run stolen tasks on top of their stacks; the guard stops them stealing
    // once less than a quarter of the stack is free. Each level of these chains holds 64 KiB of
    // stack while it waits (a chain about 1 MiB, more in a debug build, within the 2 MiB the
    // guard keeps free), and a waiting worker whose child was stolen steals other chains'
    // tasks: without the guard they pile up on one stack until it overflows and the process
    // dies. Checked by disabling the guard: 8 runs of 8 crashed (release and debug); with it,
    // none of 17, some under full CPU load.
    const DEPTH: u32 = 16;
    const ROOTS: usize = 64;
    within(120, || {
        let rt = runtime_with_stack(4, 8 << 20);
        for round in 0..20 {
            let total = AtomicUsize::new(0);
            rt.scope(|s| {
                for _ in 0..ROOTS {
                    s.spawn(|s| {
                        total.fetch_add(padded_chain(s, DEPTH) as usize, Ordering::Relaxed);
                    });
                }
            });
            assert_eq!(
                total.load(Ordering::Relaxed),
                ROOTS * DEPTH as usize,
                "round {round}"
            );
        }
    });
}

#[test]
fn taskwait_waits_for_grandchildren_and_taskgroup_not_for_earlier_tasks() {
    use std::sync::atomic::AtomicBool;
    within(60, || {
        let rt = runtime(2);
        // taskwait: a child that returns at once leaves a slow grandchild behind.
        let grandchild = AtomicBool::new(false);
        rt.scope(|s| {
            s.spawn(|s| {
                s.spawn(|_| {
                    thread::sleep(Duration::from_millis(50));
                    grandchild.store(true, Ordering::SeqCst);
                });
            });
            s.taskwait();
            assert!(
                grandchild.load(Ordering::SeqCst),
                "taskwait waited for the grandchild"
            );
        });
        // taskgroup: an earlier sibling that waits for the group's end would hang the group
        // if the group waited for it (`within` reports that).
        let group_ended = AtomicBool::new(false);
        let inside = AtomicUsize::new(0);
        rt.scope(|s| {
            s.spawn(|_| {
                while !group_ended.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
            });
            s.taskgroup(|s| {
                for _ in 0..4 {
                    s.spawn(|s| {
                        s.spawn(|_| {
                            inside.fetch_add(1, Ordering::SeqCst);
                        });
                    });
                }
            });
            assert_eq!(
                inside.load(Ordering::SeqCst),
                4,
                "the group waited for its own"
            );
            group_ended.store(true, Ordering::SeqCst);
        });
    });
}

#[test]
fn children_of_an_undeferred_task_are_the_callers_children() {
    within(60, || {
        let rt = runtime(2);
        let child = AtomicUsize::new(0);
        rt.scope(|s| {
            s.spawn(|s| {
                s.task().defer_if(false).spawn(|s| {
                    s.spawn(|_| {
                        thread::sleep(Duration::from_millis(50));
                        child.store(1, Ordering::SeqCst);
                    });
                });
                // The inline closure's child is this task's child: its taskwait waits.
                s.taskwait();
                assert_eq!(child.load(Ordering::SeqCst), 1);
            });
        });
    });
}

#[test]
fn wake_up_after_sleep_completes_the_work() {
    within(60, || {
        let rt = runtime(2);
        for round in 0..5u64 {
            // Long enough for every worker to fall asleep between rounds.
            thread::sleep(Duration::from_millis(30));
            assert_eq!(rt.scope(|s| fib(s, 10 + round)), fib_seq(10 + round));
            // A task waiting for a child that sleeps must be woken when the child ends.
            let v = rt.scope(|s| {
                let h = s.task().spawn_with_result(|_| {
                    thread::sleep(Duration::from_millis(20));
                    round
                });
                s.taskwait();
                h.join()
            });
            assert_eq!(v, round);
        }
    });
}

/// Spawns a writer of `data[0]`, then, in a taskgroup, a reader that depends on it and
/// stores what it saw in `seen`, holding `pad` bytes of stack while the group waits.
fn group_member_after_earlier_sibling<'s>(
    s: &Scope<'s>,
    data: &'s mut [u32],
    seen: &'s AtomicUsize,
    pad: &mut [u8],
) {
    std::hint::black_box(&mut *pad);
    let blocks = Blocks::new(data, 4).expect("blocks of 4");
    s.task()
        .writes(&blocks[0])
        .spawn(|_, (x,)| x[0] = 7)
        .expect("writer");
    s.taskgroup(|g| {
        g.task()
            .reads(&blocks[0])
            .spawn(|_, (x,)| seen.store(x[0] as usize, Ordering::Relaxed))
            .expect("reader");
    });
    std::hint::black_box(&*pad);
}

#[test]
fn a_taskgroup_short_of_stack_runs_the_earlier_sibling_its_member_depends_on() {
    // The group's reader waits for a writer spawned before the group: not a descendant of
    // the group, but of the task that owns it. A worker waiting short of stack at the group's
    // end must run it all the same (with one worker nobody else can); a priority limit makes
    // the one worker queue ready dependent tasks instead of running them at spawn.
    within(60, || {
        let rt = Runtime::builder()
            .num_threads(1)
            .proc_bind(false)
            .stack_size(512 << 10)
            .max_task_priority(1)
            .build()
            .expect("runtime starts");
        for _ in 0..3 {
            let mut data = [0u32; 8];
            let seen = AtomicUsize::new(0);
            rt.scope(|s| {
                s.spawn(|s| {
                    // About 420 KiB of the 512 KiB stack in use while waiting.
                    let mut pad = [0u8; 420 << 10];
                    group_member_after_earlier_sibling(s, &mut data, &seen, &mut pad);
                });
            });
            assert_eq!(seen.into_inner(), 7);
        }
    });
    // Two workers, both short of stack in such a group at once: neither may leave the
    // other's writer set aside.
    within(60, || {
        let rt = runtime_with_stack(2, 512 << 10);
        let both = Barrier::new(2);
        let (mut one, mut two) = ([0u32; 8], [0u32; 8]);
        let seen = [AtomicUsize::new(0), AtomicUsize::new(0)];
        rt.scope(|s| {
            for (data, seen) in [&mut one, &mut two].into_iter().zip(&seen) {
                let both = &both;
                s.spawn(move |s| {
                    let mut pad = [0u8; 420 << 10];
                    both.wait();
                    group_member_after_earlier_sibling(s, data, seen, &mut pad);
                });
            }
        });
        assert_eq!(seen.map(AtomicUsize::into_inner), [7, 7]);
    });
}

/// Set in the child process that [`in_child`] starts: the name of the test it runs.
const DEEP_CHILD: &str = "NUMATASK_DEEP_CHAIN_CHILD";

/// How deep the deep chains go: far beyond what one worker stack holds, so that a chain runs
/// to completion only if waiting workers get more stack when they need it.
const DEEP: u32 = 100_000;

/// Runs `chain` in a child process (this test binary, running `test` alone, with `env` set):
/// a chain that overflowed its stack would abort the process, harness included. In the child
/// it runs `chain` itself. The parent asserts that the child ran the test and it passed.
fn in_child(test: &str, env: &[(&str, &str)], chain: impl FnOnce()) {
    if std::env::var_os(DEEP_CHILD).is_some_and(|v| v == test) {
        chain();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(DEEP_CHILD, test)
        .envs(env.iter().copied())
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the chain failed in the child ({}): {stderr}",
        out.status
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test: {stdout}"
    );
}

/// One unpinned worker with the default stack.
fn one_worker() -> Runtime {
    Runtime::builder()
        .num_threads(1)
        .proc_bind(false)
        .build()
        .expect("runtime starts")
}

/// A task that spawns a child doing the same, `depth` levels, each waiting at a taskwait.
fn spawn_chain(s: &Scope<'_>, depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    let child = s
        .task()
        .spawn_with_result(move |s| spawn_chain(s, depth - 1));
    s.taskwait();
    child.join() + 1
}

/// [`spawn_chain`] with plain spawns, the count kept in `levels`.
fn plain_chain<'s>(s: &Scope<'s>, depth: u32, levels: &'s AtomicUsize) {
    levels.fetch_add(1, Ordering::Relaxed);
    if depth > 0 {
        s.spawn(move |s| plain_chain(s, depth - 1, levels));
        s.taskwait();
    }
}

/// Each level writes the first element of `data` in a dependent child, which goes on with
/// the rest, and waits for it.
fn dependent_chain<'s>(s: &Scope<'s>, data: &'s mut [u32]) {
    let Some((first, rest)) = data.split_first_mut() else {
        return;
    };
    let blocks = Blocks::new(std::slice::from_mut(first), 1).expect("one block");
    s.task()
        .writes(&blocks[0])
        .spawn(move |s, (x,)| {
            x[0] = 1;
            dependent_chain(s, rest);
        })
        .expect("a dependent child");
    s.taskwait();
}

/// `s.join` `depth` levels deep through its first closure (the one run as a task).
fn join_chain(s: &Scope<'_>, depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    let (below, here) = s.join(move |s| join_chain(s, depth - 1), |_| 1);
    below + here
}

/// Taskgroups `depth` levels deep, each ending with a wait for a task that goes one deeper.
fn group_chain<'s>(s: &Scope<'s>, depth: u32, levels: &'s AtomicUsize) {
    levels.fetch_add(1, Ordering::Relaxed);
    if depth > 0 {
        s.taskgroup(|g| g.spawn(move |s| group_chain(s, depth - 1, levels)));
    }
}

#[test]
fn a_deep_chain_of_taskwaits_on_one_worker_runs_to_completion() {
    in_child(
        "a_deep_chain_of_taskwaits_on_one_worker_runs_to_completion",
        &[],
        || {
            let rt = one_worker();
            assert_eq!(rt.scope(|s| spawn_chain(s, DEEP)), DEEP);
            let levels = AtomicUsize::new(0);
            rt.scope(|s| plain_chain(s, DEEP, &levels));
            assert_eq!(levels.into_inner(), DEEP as usize + 1);
        },
    );
}

#[test]
fn a_deep_chain_of_taskwaits_runs_to_completion_on_small_stacks() {
    // The smallest stack the runtime accepts.
    in_child(
        "a_deep_chain_of_taskwaits_runs_to_completion_on_small_stacks",
        &[("OMP_STACKSIZE", "64K")],
        || {
            for workers in [1, 2] {
                let rt = numatask_sched::RuntimeBuilder::from_env()
                    .expect("the environment is valid")
                    .num_threads(workers)
                    .proc_bind(false)
                    .build()
                    .expect("runtime starts");
                assert_eq!(rt.settings().stack_size, 64 << 10);
                assert_eq!(rt.scope(|s| spawn_chain(s, DEEP)), DEEP, "{workers}");
            }
        },
    );
}

#[test]
fn a_deep_chain_of_dependent_tasks_waiting_for_each_other_runs_to_completion() {
    in_child(
        "a_deep_chain_of_dependent_tasks_waiting_for_each_other_runs_to_completion",
        &[],
        || {
            let mut data = vec![0u32; DEEP as usize];
            one_worker().scope(|s| dependent_chain(s, &mut data));
            assert!(data.iter().all(|&x| x == 1));
        },
    );
}

#[test]
fn a_deep_chain_of_joins_runs_to_completion() {
    in_child("a_deep_chain_of_joins_runs_to_completion", &[], || {
        assert_eq!(one_worker().scope(|s| join_chain(s, DEEP)), DEEP);
    });
}

#[test]
fn a_deep_chain_of_taskgroups_runs_to_completion() {
    in_child("a_deep_chain_of_taskgroups_runs_to_completion", &[], || {
        let levels = AtomicUsize::new(0);
        one_worker().scope(|s| group_chain(s, DEEP, &levels));
        assert_eq!(levels.into_inner(), DEEP as usize + 1);
    });
}
