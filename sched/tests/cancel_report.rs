//! A cancelled task's panic is reported by the panic hook where it resumes: the task never
//! ran, so no hook saw it before, and uncaught it would end the program without a word. (Its
//! own test binary: it replaces the process's panic hook.)

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use numatask_sched::__internals::CANCELLED;
use numatask_sched::Runtime;
use numatask_sched::data::Blocks;

#[test]
fn a_cancellation_resumed_at_a_taskwait_goes_through_the_panic_hook() {
    let reported: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let hook_log = Arc::clone(&reported);
    panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|m| m.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let place = info
            .location()
            .map(|l| l.file().to_owned())
            .unwrap_or_default();
        hook_log.lock().unwrap().push((message, place));
    }));
    let rt = Runtime::builder().num_threads(2).build().expect("runtime");
    let mut data = vec![0u32; 8];
    let second = rt.scope(|s| {
        let b = Blocks::new(&mut data, 4).expect("blocks");
        s.task()
            .updates(&b[0])
            .spawn(|_, _| panic!("boom"))
            .expect("spawn");
        let first = panic::catch_unwind(AssertUnwindSafe(|| s.taskwait()));
        assert!(
            first.is_err(),
            "the first task's panic resumes at the taskwait"
        );
        // Behind the panicked task: cancelled, reported at the next taskwait.
        s.task()
            .writes(&b[0])
            .spawn(|_, (x,)| x.fill(7))
            .expect("spawn");
        panic::catch_unwind(AssertUnwindSafe(|| s.taskwait()))
    });
    let first_run: Vec<(String, String)> = reported.lock().unwrap().drain(..).collect();

    // Uncaught, the cancellation unwinds through the taskwait, the taskgroup's end and the
    // scope's end: reported once, by the first.
    let mut more = vec![0u32; 8];
    let uncaught = panic::catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.taskgroup(|g| {
                let b = Blocks::new(&mut more, 4).expect("blocks");
                g.task()
                    .updates(&b[1])
                    .spawn(|_, _| panic!("bang"))
                    .expect("spawn");
                let _ = panic::catch_unwind(AssertUnwindSafe(|| g.taskwait()));
                g.task().reads(&b[1]).spawn(|_, _| ()).expect("spawn");
                g.taskwait();
            });
        });
    }));
    let _ = panic::take_hook();
    let payload = uncaught.expect_err("the cancellation reaches the scope's caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&CANCELLED));
    let messages: Vec<String> = reported.lock().unwrap().drain(..).map(|(m, _)| m).collect();
    assert_eq!(messages, ["bang", CANCELLED], "each reported once");

    let payload = second.expect_err("the cancellation resumes at the second taskwait");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&CANCELLED),
        "same payload"
    );
    let reported = first_run;
    let messages: Vec<&str> = reported.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        messages,
        ["boom", CANCELLED],
        "each reported once, in order"
    );
    assert!(
        reported[1].1.ends_with("cancel_report.rs"),
        "reported at the caller's taskwait, not inside the runtime: {:?}",
        reported[1]
    );
    assert_eq!(data, [0; 8], "the cancelled task did not run");
}
