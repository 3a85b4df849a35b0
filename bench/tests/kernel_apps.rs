//! The Parboil/Rodinia-style kernels of `numatask_bench::apps` against their serial versions,
//! at several sizes (edge groups included), compiled and in the reference form (a thread per
//! work-item, real barriers) where the sizes are small.

use std::sync::Arc;

use numatask::kernels::{Buffer, Context, Element, Queue};
use numatask::sched::Runtime;
use numatask_bench::apps::{self, Csr, Lcg, MriQ};

fn queue() -> (Context, Queue) {
    let rt = Arc::new(Runtime::builder().num_threads(2).build().expect("runtime"));
    let ctx = Context::new(rt).expect("context");
    let q = ctx.queue();
    (ctx, q)
}

fn buffer<T: Element>(ctx: &Context, q: &Queue, data: &[T]) -> Buffer<T> {
    apps::buffer(ctx, q, data).expect("buffer")
}

fn read<T: Element>(q: &Queue, b: &Buffer<T>) -> Vec<T> {
    apps::read(q, b).expect("read")
}

fn close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

#[test]
fn kmeans_assigns_every_point_its_nearest_centre() {
    let (ctx, q) = queue();
    for (n, k, nf, reference) in [
        (37, 3, 2, true),
        (1000, 5, 34, false),
        (4096 + 5, 8, 16, false),
    ] {
        let mut rng = Lcg(n as u64);
        let features = rng.vec(n * nf);
        let centres = rng.vec(k * nf);
        let mut want = vec![0u32; n];
        apps::kmeans_serial(&features, &centres, &mut want, k, nf);
        let mut par = vec![0u32; n];
        apps::kmeans_rayon(&features, &centres, &mut par, k, nf);
        assert_eq!(par, want);
        let l = apps::kmeans_ready(&ctx, &q, &features, &centres, nf, 256).expect("buffers");
        l.run(&q, reference).expect("kernel");
        assert_eq!(read(&q, &l.out), want, "n={n} k={k} nf={nf}");
    }
}

#[test]
fn mriq_sums_every_sample_at_every_voxel() {
    let (ctx, q) = queue();
    for (voxels, samples, reference) in [(64, 10, true), (3 * 256, 300, false)] {
        let mut rng = Lcg(voxels as u64 + 7);
        let k: Vec<Vec<f32>> = (0..3).map(|_| rng.vec(samples)).collect();
        let phi = rng.vec(samples);
        let x: Vec<Vec<f32>> = (0..3).map(|_| rng.vec(voxels)).collect();
        let m = MriQ {
            k: [&k[0], &k[1], &k[2]],
            phi_mag: &phi,
            x: [&x[0], &x[1], &x[2]],
        };
        let (mut qr, mut qi) = (vec![0.0; voxels], vec![0.0; voxels]);
        m.serial(&mut qr, &mut qi);
        let (mut pr, mut pi) = (vec![0.0; voxels], vec![0.0; voxels]);
        m.rayon(&mut pr, &mut pi);
        assert_eq!((&pr, &pi), (&qr, &qi));
        let l = apps::mriq_ready(&ctx, &q, &m, 64).expect("buffers");
        l.run(&q, reference).expect("kernel");
        close("mriq real", &read(&q, &l.out[0]), &qr, 1e-4);
        close("mriq imaginary", &read(&q, &l.out[1]), &qi, 1e-4);
    }
}

#[test]
fn spmv_multiplies_rows_of_every_length() {
    let (ctx, q) = queue();
    for (rows, mean, reference) in [(50, 3, true), (5000, 12, false)] {
        let m = Csr::random(rows, mean, rows as u64);
        let x = Lcg(3).vec(rows);
        let mut want = vec![0.0; rows];
        m.serial(&x, &mut want);
        let mut par = vec![0.0; rows];
        m.rayon(&x, &mut par);
        assert_eq!(par, want);
        let l = apps::spmv_ready(&ctx, &q, &m, &x, 128).expect("buffers");
        l.run(&q, reference).expect("kernel");
        close("spmv", &read(&q, &l.out), &want, 1e-5);
    }
}

#[test]
fn stencil_updates_the_interior_and_nothing_else() {
    let (ctx, q) = queue();
    for (n, local, reference) in [([10, 7, 5], [4, 5], true), ([66, 34, 20], [16, 8], false)] {
        let len = n.iter().product();
        let a = Lcg(len as u64).vec(len);
        let c = [0.5f32, 1.0 / 6.0];
        let mut want = vec![-1.0f32; len];
        apps::stencil_serial(&a, &mut want, n, c);
        let mut par = vec![-1.0f32; len];
        apps::stencil_rayon(&a, &mut par, n, c);
        assert_eq!(par, want);
        let l = apps::stencil_ready(&ctx, &q, &a, n, c, local, -1.0).expect("buffers");
        l.run(&q, reference).expect("kernel");
        close("stencil", &read(&q, &l.out), &want, 1e-5);
    }
}

#[test]
fn pathfinder_finds_the_minimal_path_sums() {
    let (ctx, q) = queue();
    for (cols, rows, h, block, reference) in [
        (40, 9, 3, 16, true),
        (1000, 50, 10, 256, false),
        (300, 12, 20, 64, false),
    ] {
        let mut rng = Lcg(cols as u64);
        let wall: Vec<i32> = (0..cols * rows).map(|_| rng.below(10) as i32).collect();
        let want = apps::pathfinder_serial(&wall, cols);
        assert_eq!(apps::pathfinder_rayon(&wall, cols), want);
        let w = buffer(&ctx, &q, &wall);
        let src = buffer(&ctx, &q, &wall[..cols]);
        let dst = buffer(&ctx, &q, &vec![0i32; cols]);
        let last = apps::pathfinder_launches(&q, &w, &src, &dst, cols, rows, h, block, reference)
            .expect("pathfinder");
        assert_eq!(
            read(&q, last),
            want,
            "cols={cols} rows={rows} h={h} block={block}"
        );
    }
}
