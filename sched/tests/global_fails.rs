//! A process-wide runtime that cannot start: the `try_` forms return the error, every call the
//! same, and the plain forms panic with its message, which names the variable. One test, as
//! the global runtime is made once per process.

use numatask_sched::{BuildError, Runtime, join, scope, try_join, try_scope};

/// The message of the panic `f` ends with.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("a panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .expect("a text payload")
}

#[test]
fn a_global_runtime_that_cannot_start_is_an_error_of_the_try_forms_and_a_panic_naming_the_variable()
{
    // SAFETY: this binary holds this one test, which runs before any other thread reads the
    // environment.
    unsafe { std::env::set_var("OMP_NUM_THREADS", "zero") };

    let err = Runtime::try_global().expect_err("OMP_NUM_THREADS=zero");
    assert!(
        matches!(
            &err,
            BuildError::InvalidEnv {
                var: "OMP_NUM_THREADS",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(try_scope(|_| 1).expect_err("the same error"), err);
    assert_eq!(try_join(|| 1, || 2).expect_err("the same error"), err);

    for message in [
        panic_message(|| {
            Runtime::global();
        }),
        panic_message(|| scope(|_| ())),
        panic_message(|| {
            join(|| 1, || 2);
        }),
    ] {
        assert!(
            message.contains("OMP_NUM_THREADS='zero'"),
            "the panic names the variable and its value: {message}"
        );
    }
}
