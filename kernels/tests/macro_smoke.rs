use std::sync::Arc;

use numatask_kernels::{Context, Local, NdRange, kernel};
use numatask_sched::Runtime;

#[kernel]
fn reduce(input: &[f32], out: &mut [f32], scratch: Local<f32>, n: u32) {
    let lid = local_id(0);
    let gid = global_id(0);
    scratch[lid] = if gid < n as usize { input[gid] } else { 0.0 };
    barrier();
    let mut s = local_size(0) / 2;
    while s > 0 {
        if lid < s {
            scratch[lid] += scratch[lid + s];
        }
        barrier();
        s /= 2;
    }
    if lid == 0 {
        out[group_id(0)] = scratch[0];
    }
}

#[kernel]
fn saxpy(x: &[f32], y: &mut [f32], a: f32) {
    let i = global_id(0);
    y[i] = a * x[i] + y[i];
}

#[kernel]
fn rotate(input: &[u32], out: &mut [u32]) {
    let tile = local_array::<u32, 64>();
    let lid = local_id(0);
    let v: u32 = input[global_id(0)] * 2;
    tile[lid] = v;
    barrier();
    let n = local_size(0);
    out[global_linear_id()] = tile[(lid + 1) % n] + v;
}

#[test]
fn smoke() {
    let rt = Arc::new(Runtime::builder().num_threads(2).build().unwrap());
    let ctx = Context::new(rt).unwrap();
    let q = ctx.queue();
    let n = 1000usize;
    let x = ctx.buffer::<f32>(n).unwrap();
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    q.write(&x, 0, &data).unwrap();
    let out = ctx.buffer::<f32>(4).unwrap();
    q.launch(&reduce, NdRange::new([1024]).local([256]))
        .arg(&x)
        .arg(&out)
        .arg(Local::<f32>::new(256))
        .arg(n as u32)
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    let got = q.read(&out, 0..4).unwrap().wait().unwrap();
    let out2 = ctx.buffer::<f32>(4).unwrap();
    q.launch(&reduce, NdRange::new([1024]).local([256]))
        .arg(&x)
        .arg(&out2)
        .arg(Local::<f32>::new(256))
        .arg(n as u32)
        .reference()
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    let want = q.read(&out2, 0..4).unwrap().wait().unwrap();
    eprintln!("{}", reduce::INFO);
    assert_eq!(got, want);
    assert_eq!(got.iter().sum::<f32>(), (0..n).sum::<usize>() as f32);

    let y = ctx.buffer::<f32>(n).unwrap();
    q.fill(&y, 1.0, 0..n).unwrap();
    q.launch(&saxpy, NdRange::new([n]))
        .arg(&x)
        .arg(&y)
        .arg(2.0f32)
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    let got = q.read(&y, 0..n).unwrap().wait().unwrap();
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, &v)| v == 2.0 * i as f32 + 1.0)
    );
    eprintln!("{}", saxpy::INFO);

    let inp = ctx.buffer::<u32>(128).unwrap();
    q.write(&inp, 0, &(0..128u32).collect::<Vec<_>>()).unwrap();
    let o1 = ctx.buffer::<u32>(128).unwrap();
    let o2 = ctx.buffer::<u32>(128).unwrap();
    q.launch(&rotate, NdRange::new([128]).local([64]))
        .arg(&inp)
        .arg(&o1)
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    q.launch(&rotate, NdRange::new([128]).local([64]))
        .arg(&inp)
        .arg(&o2)
        .reference()
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    let a = q.read(&o1, 0..128).unwrap().wait().unwrap();
    let b = q.read(&o2, 0..128).unwrap().wait().unwrap();
    eprintln!("{}", rotate::INFO);
    assert_eq!(a, b);
    assert_eq!(a[0], 2 * 1 + 0);
}
