//! Panic payloads the runtime drops on a user's behalf (built under loom too: the dependence
//! tracker, which loom checks, drops them as well).

use std::any::Any;

/// A panic payload, as `catch_unwind` returns it.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// Drops a panic payload that nobody will see (a later panic of a frame that already holds
/// one, or a payload destructor's panic the dependence tracker contains). The payload is a
/// user value (`panic_any(x)`), whose destructor may itself panic: that panic is caught, and
/// its own payload leaked, because it would otherwise unwind through the runtime's bookkeeping
/// (the frame's counter would never be decremented).
pub(crate) fn drop_payload(payload: Payload) {
    if let Err(again) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(payload))) {
        std::mem::forget(again);
    }
}

/// Drops a user value (a task's result, a panic payload) before a panic is resumed: a
/// panicking destructor would otherwise run while unwinding and abort the process, or, caught
/// here, replace the panic being resumed. Its panic is contained as [`drop_payload`]'s is.
#[cfg(not(loom))]
pub(crate) fn drop_contained<T>(value: T) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(value))) {
        drop_payload(payload);
    }
}
