//! A process bound to some CPUs (`taskset`, `numactl --physcpubind`, an MPI launcher) gets
//! workers on those CPUs only: one per bound core by default, each pinned inside the binding,
//! as OpenMP runtimes respect the affinity the process starts with.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex};

mod common;

use common::affinity;
use numatask_alloc::TopologyBuilder;
use numatask_sched::Runtime;

/// Set in the child process, to the CPU it was bound to.
const CHILD: &str = "NUMATASK_AFFINITY_CHILD";

/// Binds the calling thread to `cpu` alone.
fn bind_to(cpu: usize) {
    // SAFETY: as above; the set is read, not kept.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let r = libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            r,
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
fn workers_stay_within_the_cpus_the_process_is_bound_to() {
    if let Some(cpu) = std::env::var_os(CHILD) {
        let cpu: usize = cpu.to_str().and_then(|c| c.parse().ok()).expect("a CPU");
        child(cpu);
        return;
    }
    // The last CPU this process may use: on a machine of several cores, not core 0, where
    // worker 0 went when the binding was ignored.
    let cpu = *affinity().last().expect("some CPU");
    // The child inherits the binding of the thread that starts it.
    let out = std::thread::spawn(move || {
        bind_to(cpu);
        Command::new(std::env::current_exe().expect("this test binary"))
            .args([
                "workers_stay_within_the_cpus_the_process_is_bound_to",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, cpu.to_string())
            .output()
            .expect("the child runs")
    })
    .join()
    .expect("the binding thread");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("child checked the binding"),
        "the child ran the checks:\n{stdout}"
    );
}

fn child(cpu: usize) {
    assert_eq!(affinity(), BTreeSet::from([cpu]), "the child starts bound");
    // The real machine, whatever NUMATASK_TOPOLOGY says, and the builder's defaults.
    let topology = Arc::new(TopologyBuilder::system().build().expect("the machine"));
    let core = topology
        .cores()
        .find(|c| c.pus.contains(&cpu))
        .expect("the bound CPU is on a core")
        .index;
    assert_eq!(topology.usable_cores(), [core]);
    for threads in [None, Some(3)] {
        let mut builder = Runtime::builder().topology(topology.clone());
        if let Some(n) = threads {
            builder = builder.num_threads(n);
        }
        let rt = builder.build().expect("the runtime starts");
        // By default one worker per bound core: here one.
        assert_eq!(rt.num_workers(), threads.unwrap_or(1));
        assert!(
            rt.workers().iter().all(|p| p.core == core),
            "{:?}",
            rt.workers()
        );
        assert!(
            rt.pinning().iter().all(|p| matches!(p, Some(Ok(_)))),
            "{:?}",
            rt.pinning()
        );
        // Every worker runs on the bound CPU only.
        let seen = Mutex::new(BTreeSet::new());
        rt.scope(|s| {
            for _ in 0..64 {
                s.spawn(|s| {
                    seen.lock().unwrap().insert((s.worker_index(), affinity()));
                });
            }
        });
        for (worker, cpus) in seen.into_inner().unwrap() {
            assert_eq!(cpus, BTreeSet::from([cpu]), "worker {worker}");
        }
    }
    println!("child checked the binding");
}
