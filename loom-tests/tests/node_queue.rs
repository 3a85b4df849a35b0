//! Model checks of `numatask_sched::__internals::NodeQueue` with blocks of 1 and 3 slots, so
//! that block installation, the head's move to the next block and block destruction all
//! happen within a few operations. Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use numatask_sched::__internals::NodeQueue;

/// Checks that `got` (what each consumer received, in order) holds every `(producer, i)` for
/// `i < per_producer` exactly once, and that each consumer saw each producer's values in order.
fn check(got: &[Vec<(usize, usize)>], producers: usize, per_producer: usize) {
    let mut seen = vec![vec![false; per_producer]; producers];
    for values in got {
        let mut last = vec![None; producers];
        for &(p, i) in values {
            assert!(!seen[p][i], "({p}, {i}) popped twice");
            seen[p][i] = true;
            assert!(
                last[p] < Some(i),
                "producer {p}'s values out of order: {values:?}"
            );
            last[p] = Some(i);
        }
    }
    assert!(
        seen.iter().flatten().all(|&s| s),
        "a value was lost: {got:?}"
    );
}

fn producers_race_a_consumer(block_capacity: usize) {
    numatask_loom_tests::model(move || {
        let q = Arc::new(NodeQueue::with_block_capacity(block_capacity));
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let q = Arc::clone(&q);
                thread::spawn(move || {
                    q.push((p, 0));
                    q.push((p, 1));
                })
            })
            .collect();
        let mut mine = Vec::new();
        for _ in 0..2 {
            mine.extend(q.pop());
        }
        for p in producers {
            p.join().expect("producer panicked");
        }
        assert_eq!(q.len(), 4 - mine.len());
        mine.extend(std::iter::from_fn(|| q.pop()));
        check(&[mine], 2, 2);
        assert!(q.is_empty());
    });
}

#[test]
fn two_producers_and_a_consumer_with_one_slot_blocks() {
    producers_race_a_consumer(1);
}

#[test]
fn two_producers_and_a_consumer_with_three_slot_blocks() {
    producers_race_a_consumer(3);
}

/// One item is in the queue before the consumers start, the second is pushed while they pop.
/// (Two consumers that both spin, one on the other, while the producer is descheduled make
/// loom's search diverge, so the producer's pushes are not all concurrent here.)
fn consumers_race_a_producer(block_capacity: usize) {
    numatask_loom_tests::model(move || {
        let q = Arc::new(NodeQueue::with_block_capacity(block_capacity));
        q.push((0, 0));
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || q.pop().into_iter().collect::<Vec<_>>())
            })
            .collect();
        q.push((0, 1));
        let mut got: Vec<_> = consumers
            .into_iter()
            .map(|c| c.join().expect("consumer panicked"))
            .collect();
        got.push(std::iter::from_fn(|| q.pop()).collect());
        check(&got, 1, 2);
    });
}

#[test]
fn two_consumers_and_a_producer_with_one_slot_blocks() {
    consumers_race_a_producer(1);
}

#[test]
fn two_consumers_and_a_producer_with_three_slot_blocks() {
    consumers_race_a_producer(3);
}

#[test]
fn last_reader_of_a_block_hands_its_destruction_to_a_slower_reader() {
    // A block of 3 slots, full: three readers race, and whoever reads the last slot starts
    // freeing the block and must leave the rest to a reader still busy with slot 0 or 1 (the
    // `DESTROY` hand-off). A use after free or a double free is a loom failure.
    numatask_loom_tests::model(|| {
        let q = Arc::new(NodeQueue::with_block_capacity(3));
        for i in 0..3 {
            q.push((0, i));
        }
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || q.pop().into_iter().collect::<Vec<_>>())
            })
            .collect();
        let mut got = vec![q.pop().into_iter().collect::<Vec<_>>()];
        got.extend(
            consumers
                .into_iter()
                .map(|c| c.join().expect("consumer panicked")),
        );
        check(&got, 1, 3);
        assert!(q.is_empty());
    });
}

#[test]
fn dropping_a_queue_drops_the_values_left_in_it() {
    // Loom reports a leaked `Arc` at the end of an execution, so a value the queue forgot to
    // drop (or dropped twice) fails the model.
    numatask_loom_tests::model(|| {
        let q = Arc::new(NodeQueue::with_block_capacity(1));
        let value = Arc::new(());
        let producer = {
            let q = Arc::clone(&q);
            let value = Arc::clone(&value);
            thread::spawn(move || {
                q.push(Arc::clone(&value));
                q.push(value);
            })
        };
        drop(q.pop());
        producer.join().expect("producer panicked");
        drop(q);
        assert_eq!(Arc::strong_count(&value), 1);
    });
}
