//! The conveniences that panic where `Vec` and slices would (building a [`NumaVec`] from an
//! iterator, asking a [`Topology`] for the distance to a node it lacks) report the caller's
//! line, not a line inside numatask: the panic message then points at the code to fix. One test in its own
//! binary, because the panic hook it installs is process-wide.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use numatask_alloc::{NumaVec, Preset, Topology};

/// The file and line of the last panic the hook saw.
static REPORTED: Mutex<Option<(String, u32)>> = Mutex::new(None);

/// Runs `f`, which must panic, and returns where the panic was reported.
fn panic_location(f: impl FnOnce()) -> (String, u32) {
    *REPORTED.lock().unwrap() = None;
    let previous = panic::take_hook();
    panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| (l.file().to_owned(), l.line()));
        *REPORTED.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }));
    // Unwinding leaves nothing half-done that the test reads afterwards.
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    panic::set_hook(previous);
    assert!(outcome.is_err(), "the call was expected to panic");
    REPORTED
        .lock()
        .unwrap()
        .take()
        .expect("the panic has a location")
}

#[test]
fn panics_of_the_conveniences_point_at_the_callers_line() {
    // More elements than memory can hold: the allocation fails and collecting panics, as
    // `Vec`'s does. (Through `Iterator::collect` the panic names a line of the standard
    // library's, whose `collect` does not pass its caller's location on; `from_iter` called
    // directly names the caller's.)
    let mut expected = 0;
    let at = panic_location(|| {
        expected = line!() + 1;
        let v = <NumaVec<u64> as FromIterator<u64>>::from_iter((0..usize::MAX / 4).map(|_| 0));
        drop(v);
    });
    assert_eq!(at, (file!().to_owned(), expected), "from_iter");

    let topology = Topology::preset(Preset::Opteron6172).expect("the preset");
    let at = panic_location(|| {
        expected = line!() + 1;
        std::hint::black_box(topology.distance(0, 8));
    });
    assert_eq!(at, (file!().to_owned(), expected), "distance");
}
