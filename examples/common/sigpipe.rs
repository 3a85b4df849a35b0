//! Shared by the examples and the bench crate's `paper` program and `kernels` bench (each
//! includes it with `#[path]`): output into a closed pipe (`... | head`) ends the program
//! quietly, as it ends a C program, rather than as a panic of
//! `println!`.

/// Restores the default action of SIGPIPE. Call it first thing in `main`.
pub fn restore_default() {
    // SAFETY: called at the start of `main`, before the program starts any thread, so no
    // other thread can be changing or relying on the signal's disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}
