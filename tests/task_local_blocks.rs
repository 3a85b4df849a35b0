//! Data local to a task gets dependent children through a scope of its own inside the task
//! (the README's pattern): the inner scope waits for them before the data goes.

use numatask::prelude::Blocks;
#[test]
fn a_task_local_buffer_gets_dependent_children_through_a_nested_scope()
-> Result<(), numatask::BuildError> {
    let rt = numatask::Runtime::builder().num_threads(2).build()?;
    let mut out = vec![0.0f64; 4];
    rt.scope(|s| {
        for o in out.iter_mut() {
            s.spawn(move |_| {
                let mut tmp = vec![1.0f64; 64];
                numatask::scope(|s2| {
                    let b = Blocks::new(&mut tmp, 16)?;
                    for r in b.iter() {
                        s2.task()
                            .updates(r)
                            .spawn(|_, (x,)| x.iter_mut().for_each(|v| *v *= 2.0))?;
                    }
                    Ok::<_, numatask::DependError>(())
                })
                .expect("inner scope");
                *o = tmp.iter().sum();
            });
        }
    });
    assert_eq!(out, [128.0; 4]);
    Ok(())
}
