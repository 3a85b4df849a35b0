//! `OMP_DISPLAY_ENV` output of a runtime built in code while `OMP_DATA_DISTRIBUTION` holds a
//! bad value (which such a runtime does not refuse: it reads no variable). Alone in its test
//! binary: it sets a variable of the process before anything reads it.

use numatask_sched::Runtime;

#[test]
fn an_invalid_distribution_is_shown_as_one_name_value_line() {
    // SAFETY: this binary's only test sets the variable before any thread reads the
    // environment.
    unsafe { std::env::set_var("OMP_DATA_DISTRIBUTION", "bo'gus") };
    let rt = Runtime::builder()
        .num_threads(1)
        .proc_bind(false)
        .build()
        .expect("a runtime built in code reads no variable");
    let shown = rt.display_env();
    let line = shown
        .lines()
        .find(|l| l.starts_with("  OMP_DATA_DISTRIBUTION = "))
        .unwrap_or_else(|| panic!("no OMP_DATA_DISTRIBUTION line in\n{shown}"));
    assert_eq!(
        line,
        "  OMP_DATA_DISTRIBUTION = 'invalid: bo\\'gus (expected standard, fine or coarse; \
         omp_malloc refuses it)'"
    );
}
