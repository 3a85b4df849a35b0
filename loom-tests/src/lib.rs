//! Model checks of the runtime's concurrent data structures (see `tests/`).

/// The fewest preemptions [`model`] explores, whatever `LOOM_MAX_PREEMPTIONS` says. The
/// deque's one real ordering bug found so far (pop's relaxed `bottom` stores racing with a
/// thief's read of an item) needed 3, and the scheduler's models stay well within the time
/// budget at 3.
#[cfg(loom)]
pub const MIN_PREEMPTIONS: usize = 3;

/// `loom::model` with a preemption bound of at least [`MIN_PREEMPTIONS`] (more if
/// `LOOM_MAX_PREEMPTIONS` asks for more).
#[cfg(loom)]
pub fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(
        builder
            .preemption_bound
            .map_or(MIN_PREEMPTIONS, |n| n.max(MIN_PREEMPTIONS)),
    );
    builder.check(f);
}
