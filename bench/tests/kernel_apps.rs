//! The Parboil/Rodinia-style kernels of `numatask_bench::apps` against their serial versions,
//! at several sizes (edge groups included), compiled and in the reference form (a thread per
//! work-item, real barriers) where the sizes are small.

use std::sync::Arc;

use numatask::kernels::{Arg, Buffer, Context, Element, Kernel, NdRange, Queue};
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

fn launch(q: &Queue, k: &Kernel, range: NdRange, args: Vec<Arg>, reference: bool) {
    apps::launch(q, k, range, args, reference).expect("kernel");
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
        let (f, c) = (buffer(&ctx, &q, &features), buffer(&ctx, &q, &centres));
        let m = buffer(&ctx, &q, &vec![u32::MAX; n]);
        let global = n.next_multiple_of(256);
        launch(
            &q,
            &apps::kmeans,
            NdRange::new([global]).local([256]),
            vec![
                (&f).into(),
                (&c).into(),
                (&m).into(),
                (n as u32).into(),
                (k as u32).into(),
                (nf as u32).into(),
            ],
            reference,
        );
        assert_eq!(read(&q, &m), want, "n={n} k={k} nf={nf}");
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
        let kb: Vec<Buffer<f32>> = k.iter().map(|v| buffer(&ctx, &q, v)).collect();
        let xb: Vec<Buffer<f32>> = x.iter().map(|v| buffer(&ctx, &q, v)).collect();
        let pb = buffer(&ctx, &q, &phi);
        let (r, i) = (
            buffer(&ctx, &q, &vec![0.0f32; voxels]),
            buffer(&ctx, &q, &vec![0.0f32; voxels]),
        );
        launch(
            &q,
            &apps::mriq,
            NdRange::new([voxels]).local([64]),
            vec![
                (&kb[0]).into(),
                (&kb[1]).into(),
                (&kb[2]).into(),
                (&pb).into(),
                (&xb[0]).into(),
                (&xb[1]).into(),
                (&xb[2]).into(),
                (&r).into(),
                (&i).into(),
                (samples as u32).into(),
            ],
            reference,
        );
        close("mriq real", &read(&q, &r), &qr, 1e-4);
        close("mriq imaginary", &read(&q, &i), &qi, 1e-4);
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
        let bufs = (
            buffer(&ctx, &q, &m.row_ptr),
            buffer(&ctx, &q, &m.cols),
            buffer(&ctx, &q, &m.vals),
            buffer(&ctx, &q, &x),
            buffer(&ctx, &q, &vec![0.0f32; rows]),
        );
        launch(
            &q,
            &apps::spmv,
            NdRange::new([rows.next_multiple_of(128)]).local([128]),
            vec![
                (&bufs.0).into(),
                (&bufs.1).into(),
                (&bufs.2).into(),
                (&bufs.3).into(),
                (&bufs.4).into(),
                (rows as u32).into(),
            ],
            reference,
        );
        close("spmv", &read(&q, &bufs.4), &want, 1e-5);
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
        let (ab, nb) = (buffer(&ctx, &q, &a), buffer(&ctx, &q, &vec![-1.0f32; len]));
        launch(
            &q,
            &apps::stencil,
            NdRange::new([n[0] - 2, n[1] - 2]).local(local),
            vec![
                (&ab).into(),
                (&nb).into(),
                (n[0] as u32).into(),
                (n[1] as u32).into(),
                (n[2] as u32).into(),
                c[0].into(),
                c[1].into(),
            ],
            reference,
        );
        close("stencil", &read(&q, &nb), &want, 1e-5);
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
