//! Sub-devices: one per NUMA node, whose queues run their commands on that node's workers,
//! ordered with the context's other queues through shared buffers and events. On a synthetic
//! 2-node topology (the workers time-share the real cores; what is checked is which worker,
//! and so which node, ran each work-group).

mod common;

use std::sync::Arc;

use common::within;
use numatask_alloc::TopologyBuilder;
use numatask_kernels::{Context, Kernel, NdRange, Read, Write};
use numatask_sched::{Runtime, SchedulerKind};

fn two_node_context(kind: SchedulerKind) -> Context {
    let topology = TopologyBuilder::synthetic("pack:2 numa:1 core:2 pu:1")
        .build()
        .expect("synthetic topology");
    let rt = Runtime::builder()
        .topology(Arc::new(topology))
        .proc_bind(false)
        .scheduler(kind)
        .build()
        .expect("runtime");
    Context::new(Arc::new(rt)).expect("context")
}

#[test]
fn each_sub_device_runs_its_groups_on_its_node_and_shares_the_context_order() {
    within(120, || {
        for kind in SchedulerKind::ALL {
            let ctx = two_node_context(kind);
            let subs = ctx.sub_devices().expect("sub-devices");
            assert_eq!(subs.iter().map(|s| s.node()).collect::<Vec<_>>(), [0, 1]);
            assert!(subs.iter().all(|s| s.runtime().num_workers() == 2));
            let n = 4096;
            let input = ctx.buffer::<u32>(n).unwrap();
            let main = ctx.queue();
            // Written through the context's queue, read by the sub-devices' launches: the
            // buffer orders them.
            main.fill(&input, 7, 0..n).unwrap();
            let where_ran = Kernel::items::<(Read<u32>, Write<u32>), _>("where", |item, (x, o)| {
                let node = numatask_sched::current_worker().map_or(u32::MAX, |w| w.node as u32);
                *o = node * 100 + x[item.global_id(0)];
            });
            for sub in subs {
                let out = ctx.buffer::<u32>(n).unwrap();
                let q = if sub.node() == 0 {
                    sub.queue()
                } else {
                    sub.out_of_order_queue()
                };
                q.launch(&where_ran, NdRange::new([n]).local([64]))
                    .arg(&input)
                    .arg(&out)
                    .enqueue()
                    .unwrap();
                let got = main.read(&out, 0..n).unwrap().wait().unwrap();
                let want = sub.node() as u32 * 100 + 7;
                assert!(
                    got.iter().all(|&v| v == want),
                    "{kind:?} node {}: {:?}",
                    sub.node(),
                    &got[..8]
                );
            }
            // The same sub-devices on a second call.
            assert!(std::ptr::eq(subs, ctx.sub_devices().unwrap()));
        }
    });
}
