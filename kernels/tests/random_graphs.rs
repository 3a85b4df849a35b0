//! Randomized command graphs checked against a sequential oracle: kernels, writes, fills,
//! copies, reads, markers and barriers on in-order and out-of-order queues, with random wait
//! lists and a user event holding part of the graph back. Commands that conflict on a buffer
//! run in the order they were enqueued, so the result is that of running every command in
//! enqueue order, one at a time.

mod common;

use common::{context, within};
use numatask_kernels::{Event, Kernel, NdRange, Read, ReadWrite};
use numatask_sched::SchedulerKind;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, len: usize) -> std::ops::Range<usize> {
        let a = self.below(len + 1);
        let b = self.below(len + 1);
        a.min(b)..a.max(b)
    }
}

const BUFFERS: usize = 4;
const LEN: usize = 48;

fn affine() -> Kernel {
    Kernel::items::<(ReadWrite<u32>, Read<u32>, u32, u32), _>("affine", |item, (d, s, a, b)| {
        *d = d
            .wrapping_mul(a)
            .wrapping_add(s[item.global_id(0)])
            .wrapping_add(b)
    })
}

fn run(seed: u64, kind: SchedulerKind, commands: usize) {
    let mut rng = Rng(seed);
    let ctx = context(2, kind);
    let queues = [
        ctx.queue(),
        ctx.out_of_order_queue(),
        ctx.out_of_order_queue(),
    ];
    let bufs: Vec<_> = (0..BUFFERS)
        .map(|_| ctx.buffer::<u32>(LEN).unwrap())
        .collect();
    let mut shadow = vec![vec![0u32; LEN]; BUFFERS];
    let gate = ctx.user_event();
    let mut events: Vec<Event> = vec![gate.event().clone()];
    let mut reads = Vec::new();
    let k = affine();
    for c in 0..commands {
        let q = &queues[rng.below(queues.len())];
        let mut wait = Vec::new();
        for _ in 0..rng.below(3) {
            wait.push(events[rng.below(events.len())].clone());
        }
        let after = q.after(&wait);
        let event = match rng.below(8) {
            0 | 1 => {
                let d = rng.below(BUFFERS);
                let s = (d + 1 + rng.below(BUFFERS - 1)) % BUFFERS;
                let (a, b) = (rng.next() as u32 | 1, rng.next() as u32);
                let n = 1 + rng.below(LEN);
                let local = 1 + rng.below(8);
                let src = shadow[s].clone();
                for (v, &x) in shadow[d][..n].iter_mut().zip(&src) {
                    *v = v.wrapping_mul(a).wrapping_add(x).wrapping_add(b);
                }
                after
                    .launch(&k, NdRange::new([n]).local([local]))
                    .arg(&bufs[d])
                    .arg(&bufs[s])
                    .arg(a)
                    .arg(b)
                    .tasks(1 + rng.below(4))
                    .enqueue()
                    .unwrap()
            }
            2 => {
                let d = rng.below(BUFFERS);
                let r = rng.range(LEN);
                let data: Vec<u32> = r.clone().map(|_| rng.next() as u32).collect();
                shadow[d][r.clone()].copy_from_slice(&data);
                after.write(&bufs[d], r.start, &data).unwrap()
            }
            3 => {
                let d = rng.below(BUFFERS);
                let r = rng.range(LEN);
                let v = rng.next() as u32;
                shadow[d][r.clone()].fill(v);
                after.fill(&bufs[d], v, r).unwrap()
            }
            4 => {
                let s = rng.below(BUFFERS);
                let d = rng.below(BUFFERS);
                let from = rng.range(LEN);
                let len = from.end - from.start;
                let to = rng.below(LEN - len + 1);
                if s == d && from.start < to + len && to < from.end {
                    continue; // overlapping copies within a buffer are refused
                }
                let part = shadow[s][from.clone()].to_vec();
                shadow[d][to..to + len].copy_from_slice(&part);
                after.copy(&bufs[s], from, &bufs[d], to).unwrap()
            }
            5 => {
                let s = rng.below(BUFFERS);
                let r = rng.range(LEN);
                reads.push((
                    c,
                    shadow[s][r.clone()].to_vec(),
                    after.read(&bufs[s], r).unwrap(),
                ));
                reads.last().unwrap().2.event().clone()
            }
            6 => after.marker().unwrap(),
            _ => after.barrier().unwrap(),
        };
        events.push(event);
    }
    gate.complete();
    for (c, want, reading) in reads {
        assert_eq!(
            reading.wait().unwrap(),
            want,
            "seed {seed}: read of command {c}"
        );
    }
    for q in &queues {
        q.finish().unwrap();
    }
    for (i, b) in bufs.iter().enumerate() {
        let got = queues[0].read(b, 0..LEN).unwrap().wait().unwrap();
        assert_eq!(got, shadow[i], "seed {seed}: buffer {i}");
    }
}

#[test]
fn random_command_graphs_match_the_sequential_oracle() {
    within(300, || {
        for seed in 1..=40u64 {
            let kind = SchedulerKind::ALL[seed as usize % SchedulerKind::ALL.len()];
            run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), kind, 150);
        }
    });
}
