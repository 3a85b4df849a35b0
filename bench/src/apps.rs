//! Kernels in the style of the Parboil and Rodinia suites, ported to `#[kernel]` Rust, each with
//! a serial Rust version that checks it and a rayon version: the applications the core paper of
//! the kernel layer compares CPU OpenCL runtimes on, whose work-items run loops inside a
//! region (over clusters and features, k-space samples, a row's non-zeros, a column of a grid,
//! the rows of a pyramid between barriers).
//!
//! | kernel | after | what a work-item does |
//! |---|---|---|
//! | [`kmeans`] | Rodinia k-means, `kmeans_kernel_c` | the nearest of `k` centres to its point, features stored feature-major |
//! | [`mriq`] | Parboil MRI-Q, `ComputeQ` | the sum over the k-space samples of `phi * (cos, sin)(2 pi k . x)` at its voxel |
//! | [`spmv`] | Parboil/SHOC SpMV, CSR, one row per work-item | the dot product of its row (a trip count that differs by work-item) with `x` |
//! | [`stencil`] | Parboil stencil, 7 points | its `(x, y)` column of the interior, every `z` in a loop |
//! | [`pathfinder`] | Rodinia pathfinder, `dynproc_kernel` | `h` rows of a minimal-path sum in local memory, a barrier per row |
//!
//! Each `*_serial` is the reference; each `*_rayon` runs the same loop over work-items with
//! rayon. The `kernel_apps` bench times all three, and `tests/kernel_apps.rs` checks the
//! kernels against the serial versions (and, for small sizes, the reference executor).

use numatask::kernels::kernel;
use rayon::prelude::*;

pub use host::*;

/// Rodinia's k-means assignment: work-item `p` (one per point) writes the index of the nearest
/// of the `k` centres (`centres[c * nf + f]`) to its point (`features[f * n + p]`, feature-major
/// as Rodinia's kernel reads them), the first of equals.
#[kernel]
pub fn kmeans(features: &[f32], centres: &[f32], membership: &mut [u32], n: u32, k: u32, nf: u32) {
    let p = global_id(0);
    let n = n as usize;
    let k = k as usize;
    let nf = nf as usize;
    if p < n {
        let mut best = 0u32;
        let mut min = f32::MAX;
        for c in 0..k {
            let mut d = 0.0f32;
            for f in 0..nf {
                let diff = features[f * n + p] - centres[c * nf + f];
                d += diff * diff;
            }
            if d < min {
                min = d;
                best = c as u32;
            }
        }
        membership[p] = best;
    }
}

/// [`kmeans`] for point `p`.
fn kmeans_point(features: &[f32], centres: &[f32], n: usize, k: usize, nf: usize, p: usize) -> u32 {
    let mut best = 0u32;
    let mut min = f32::MAX;
    for c in 0..k {
        let mut d = 0.0f32;
        for f in 0..nf {
            let diff = features[f * n + p] - centres[c * nf + f];
            d += diff * diff;
        }
        if d < min {
            min = d;
            best = c as u32;
        }
    }
    best
}

pub fn kmeans_serial(
    features: &[f32],
    centres: &[f32],
    membership: &mut [u32],
    k: usize,
    nf: usize,
) {
    let n = membership.len();
    for (p, m) in membership.iter_mut().enumerate() {
        *m = kmeans_point(features, centres, n, k, nf, p);
    }
}

pub fn kmeans_rayon(
    features: &[f32],
    centres: &[f32],
    membership: &mut [u32],
    k: usize,
    nf: usize,
) {
    let n = membership.len();
    membership
        .par_iter_mut()
        .enumerate()
        .for_each(|(p, m)| *m = kmeans_point(features, centres, n, k, nf, p));
}

/// Parboil's MRI-Q: work-item `i` (one per voxel at `(x[i], y[i], z[i])`) sums, over the
/// `num_k` k-space samples, `phi_mag[k] * cos(2 pi k . x)` into `qr[i]` and the same with `sin`
/// into `qi[i]`.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub fn mriq(
    kx: &[f32],
    ky: &[f32],
    kz: &[f32],
    phi_mag: &[f32],
    x: &[f32],
    y: &[f32],
    z: &[f32],
    qr: &mut [f32],
    qi: &mut [f32],
    num_k: u32,
) {
    let i = global_id(0);
    let xi = x[i];
    let yi = y[i];
    let zi = z[i];
    let mut sr = 0.0f32;
    let mut si = 0.0f32;
    for k in 0..num_k as usize {
        let arg = 2.0 * std::f32::consts::PI * (kx[k] * xi + ky[k] * yi + kz[k] * zi);
        sr += phi_mag[k] * arg.cos();
        si += phi_mag[k] * arg.sin();
    }
    qr[i] = sr;
    qi[i] = si;
}

/// The samples of k-space and the voxels of [`mriq`].
pub struct MriQ<'a> {
    pub k: [&'a [f32]; 3],
    pub phi_mag: &'a [f32],
    pub x: [&'a [f32]; 3],
}

impl MriQ<'_> {
    fn voxel(&self, i: usize) -> (f32, f32) {
        let (mut sr, mut si) = (0.0f32, 0.0f32);
        for k in 0..self.phi_mag.len() {
            let arg = 2.0
                * std::f32::consts::PI
                * (self.k[0][k] * self.x[0][i]
                    + self.k[1][k] * self.x[1][i]
                    + self.k[2][k] * self.x[2][i]);
            sr += self.phi_mag[k] * arg.cos();
            si += self.phi_mag[k] * arg.sin();
        }
        (sr, si)
    }

    pub fn serial(&self, qr: &mut [f32], qi: &mut [f32]) {
        for (i, (r, im)) in qr.iter_mut().zip(qi.iter_mut()).enumerate() {
            (*r, *im) = self.voxel(i);
        }
    }

    pub fn rayon(&self, qr: &mut [f32], qi: &mut [f32]) {
        qr.par_iter_mut()
            .zip(qi.par_iter_mut())
            .enumerate()
            .for_each(|(i, (r, im))| (*r, *im) = self.voxel(i));
    }
}

/// Sparse matrix times vector, the matrix in CSR (`row_ptr`, `cols`, `vals`): work-item `r`
/// (one per row) writes the dot product of row `r` with `x` into `y[r]`.
#[kernel]
pub fn spmv(row_ptr: &[u32], cols: &[u32], vals: &[f32], x: &[f32], y: &mut [f32], rows: u32) {
    let r = global_id(0);
    if r < rows as usize {
        let mut sum = 0.0f32;
        for j in row_ptr[r] as usize..row_ptr[r + 1] as usize {
            sum += vals[j] * x[cols[j] as usize];
        }
        y[r] = sum;
    }
}

/// A matrix in CSR.
pub struct Csr {
    pub row_ptr: Vec<u32>,
    pub cols: Vec<u32>,
    pub vals: Vec<f32>,
}

impl Csr {
    fn row(&self, x: &[f32], r: usize) -> f32 {
        let mut sum = 0.0f32;
        for j in self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize {
            sum += self.vals[j] * x[self.cols[j] as usize];
        }
        sum
    }

    pub fn serial(&self, x: &[f32], y: &mut [f32]) {
        for (r, v) in y.iter_mut().enumerate() {
            *v = self.row(x, r);
        }
    }

    pub fn rayon(&self, x: &[f32], y: &mut [f32]) {
        y.par_iter_mut()
            .enumerate()
            .for_each(|(r, v)| *v = self.row(x, r));
    }

    /// A random `rows` x `rows` matrix with 1 to `2 * mean - 1` non-zeros per row (rows of
    /// different lengths, as in the suites' inputs), from `seed`.
    pub fn random(rows: usize, mean: usize, seed: u64) -> Csr {
        let mut rng = Lcg(seed);
        let mut row_ptr = vec![0u32];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for _ in 0..rows {
            let len = 1 + rng.below(2 * mean.max(1) - 1);
            for _ in 0..len {
                cols.push(rng.below(rows) as u32);
                vals.push(rng.unit());
            }
            row_ptr.push(cols.len() as u32);
        }
        Csr {
            row_ptr,
            cols,
            vals,
        }
    }
}

/// Parboil's 7-point stencil on an `nx` x `ny` x `nz` grid (x fastest): work-item `(i, j)` of
/// the interior's columns writes `c1 * (sum of the 6 neighbours) - c0 * centre` at every
/// interior `z` of its column. Each column is one work-item's: declared disjoint.
#[kernel(unsafe(disjoint(next)))]
pub fn stencil(a: &[f32], next: &mut [f32], nx: u32, ny: u32, nz: u32, c0: f32, c1: f32) {
    let nx = nx as usize;
    let ny = ny as usize;
    let nz = nz as usize;
    let i = global_id(0) + 1;
    let j = global_id(1) + 1;
    for k in 1..nz - 1 {
        let c = (k * ny + j) * nx + i;
        next[c] = c1
            * (a[c - 1] + a[c + 1] + a[c - nx] + a[c + nx] + a[c - nx * ny] + a[c + nx * ny])
            - c0 * a[c];
    }
}

pub fn stencil_serial(a: &[f32], next: &mut [f32], n: [usize; 3], c: [f32; 2]) {
    let [nx, ny, nz] = n;
    for k in 1..nz - 1 {
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let x = (k * ny + j) * nx + i;
                next[x] = c[1]
                    * (a[x - 1]
                        + a[x + 1]
                        + a[x - nx]
                        + a[x + nx]
                        + a[x - nx * ny]
                        + a[x + nx * ny])
                    - c[0] * a[x];
            }
        }
    }
}

/// [`stencil_serial`] with rayon, one task per `z` plane (the planes' writes are disjoint).
pub fn stencil_rayon(a: &[f32], next: &mut [f32], n: [usize; 3], c: [f32; 2]) {
    let [nx, ny, nz] = n;
    next.par_chunks_mut(nx * ny)
        .enumerate()
        .filter(|&(k, _)| k >= 1 && k < nz - 1)
        .for_each(|(k, plane)| {
            for j in 1..ny - 1 {
                for i in 1..nx - 1 {
                    let x = (k * ny + j) * nx + i;
                    plane[j * nx + i] = c[1]
                        * (a[x - 1]
                            + a[x + 1]
                            + a[x - nx]
                            + a[x + nx]
                            + a[x - nx * ny]
                            + a[x + nx * ny])
                        - c[0] * a[x];
                }
            }
        });
}

/// Rodinia's pathfinder (`dynproc_kernel`): advances the minimal path sums `src` (one per column)
/// by `h` rows of `wall` (rows `start + 1` to `start + h` of a grid `cols` wide), each group of
/// `B` work-items (at most 256) computing `B - 2 h` columns from a window `h` columns wider on
/// each side, one row per step in local memory with a barrier between the rows.
#[kernel(unsafe(disjoint(dst)))]
pub fn pathfinder(wall: &[i32], src: &[i32], dst: &mut [i32], cols: u32, start: u32, h: u32) {
    let prev = local_array::<i32, 256>();
    let result = local_array::<i32, 256>();
    let block = local_size(0) as isize;
    let tx = local_id(0) as isize;
    let cols = cols as isize;
    let start = start as isize;
    let h = h as isize;
    let small = block - 2 * h;
    let blk_x = small * group_id(0) as isize - h;
    let blk_x_max = blk_x + block - 1;
    let x: isize = blk_x + tx;
    let valid_min = if blk_x < 0 { -blk_x } else { 0 };
    let valid_max = if blk_x_max > cols - 1 {
        block - 1 - (blk_x_max - cols + 1)
    } else {
        block - 1
    };
    let w: isize = if tx - 1 < valid_min {
        valid_min
    } else {
        tx - 1
    };
    let e: isize = if tx + 1 > valid_max {
        valid_max
    } else {
        tx + 1
    };
    let valid: bool = tx >= valid_min && tx <= valid_max;
    if x >= 0 && x < cols {
        prev[tx as usize] = src[x as usize];
    }
    barrier();
    let mut computed: bool = false;
    for i in 0..h {
        computed = false;
        if tx > i && tx < block - i - 1 && valid {
            computed = true;
            let shortest = prev[w as usize]
                .min(prev[tx as usize])
                .min(prev[e as usize]);
            result[tx as usize] = shortest + wall[(cols * (start + i + 1) + x) as usize];
        }
        barrier();
        if i + 1 < h {
            if computed {
                prev[tx as usize] = result[tx as usize];
            }
            barrier();
        }
    }
    if computed {
        dst[x as usize] = result[tx as usize];
    }
}

/// The next row of minimal path sums: `dst[c] = wall[c] + min(src[c - 1], src[c], src[c + 1])`
/// over the neighbours that exist.
fn pathfinder_row(src: &[i32], wall: &[i32], c: usize) -> i32 {
    let mut m = src[c];
    if c > 0 {
        m = m.min(src[c - 1]);
    }
    if c + 1 < src.len() {
        m = m.min(src[c + 1]);
    }
    m + wall[c]
}

/// The minimal path sums from the first row of `wall` (`cols` wide) to its last.
pub fn pathfinder_serial(wall: &[i32], cols: usize) -> Vec<i32> {
    let mut src = wall[..cols].to_vec();
    let mut dst = vec![0; cols];
    for row in wall.chunks(cols).skip(1) {
        for (c, d) in dst.iter_mut().enumerate() {
            *d = pathfinder_row(&src, row, c);
        }
        std::mem::swap(&mut src, &mut dst);
    }
    src
}

/// [`pathfinder_serial`] with rayon: each row in parallel chunks of 4096 columns.
pub fn pathfinder_rayon(wall: &[i32], cols: usize) -> Vec<i32> {
    let mut src = wall[..cols].to_vec();
    let mut dst = vec![0; cols];
    for row in wall.chunks(cols).skip(1) {
        dst.par_chunks_mut(4096).enumerate().for_each(|(b, part)| {
            for (i, d) in part.iter_mut().enumerate() {
                *d = pathfinder_row(&src, row, b * 4096 + i);
            }
        });
        std::mem::swap(&mut src, &mut dst);
    }
    src
}

/// A small deterministic generator for the inputs (the same on every side of a comparison).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn bits(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// In `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.bits() % n as u64) as usize
    }

    /// In `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.bits() % (1 << 24)) as f32 / (1 << 24) as f32
    }

    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unit()).collect()
    }
}

/// What the bench and the tests do on the host side: buffers, launches, reading back.
mod host {
    use numatask::kernels::{Arg, Buffer, Context, Element, Kernel, NdRange, Queue};

    use super::pathfinder;

    /// A buffer holding `data`.
    pub fn buffer<T: Element>(ctx: &Context, q: &Queue, data: &[T]) -> Result<Buffer<T>, String> {
        let b = ctx.buffer::<T>(data.len()).map_err(|e| e.to_string())?;
        q.write(&b, 0, data).map_err(|e| e.to_string())?;
        Ok(b)
    }

    /// What `b` holds once the commands before it ended.
    pub fn read<T: Element>(q: &Queue, b: &Buffer<T>) -> Result<Vec<T>, String> {
        q.read(b, 0..b.len())
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())
    }

    /// Launches `k` over `range` with `args` (in its reference form: a thread per work-item)
    /// and waits for it.
    pub fn launch(
        q: &Queue,
        k: &Kernel,
        range: NdRange,
        args: Vec<Arg>,
        reference: bool,
    ) -> Result<(), String> {
        let mut l = q.launch(k, range);
        for a in args {
            l = l.arg(a);
        }
        if reference {
            l = l.reference();
        }
        l.enqueue()
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())
    }

    /// A launch of one of the kernels with its buffers made, to run as often as wanted.
    pub struct Ready<O> {
        kernel: Kernel,
        range: NdRange,
        args: Vec<Arg>,
        /// What the kernel writes.
        pub out: O,
    }

    impl<O> Ready<O> {
        /// Runs it (in its reference form: a thread per work-item) and waits for it.
        pub fn run(&self, q: &Queue, reference: bool) -> Result<(), String> {
            launch(
                q,
                &self.kernel,
                self.range.clone(),
                self.args.clone(),
                reference,
            )
        }
    }

    /// [`kmeans`](super::kmeans) of the `features.len() / nf` points in groups of `local`;
    /// `out` is the membership.
    pub fn kmeans_ready(
        ctx: &Context,
        q: &Queue,
        features: &[f32],
        centres: &[f32],
        nf: usize,
        local: usize,
    ) -> Result<Ready<Buffer<u32>>, String> {
        let (n, k) = (features.len() / nf, centres.len() / nf);
        let (f, c) = (buffer(ctx, q, features)?, buffer(ctx, q, centres)?);
        let out = buffer(ctx, q, &vec![u32::MAX; n])?;
        let args = vec![
            (&f).into(),
            (&c).into(),
            (&out).into(),
            (n as u32).into(),
            (k as u32).into(),
            (nf as u32).into(),
        ];
        Ok(Ready {
            kernel: (*super::kmeans).clone(),
            range: NdRange::new([n.next_multiple_of(local)]).local([local]),
            args,
            out,
        })
    }

    /// [`mriq`](super::mriq) of `m` in groups of `local` (which divides the voxels); `out`
    /// is the real and imaginary parts.
    pub fn mriq_ready(
        ctx: &Context,
        q: &Queue,
        m: &super::MriQ<'_>,
        local: usize,
    ) -> Result<Ready<[Buffer<f32>; 2]>, String> {
        let voxels = m.x[0].len();
        let mut args = Vec::new();
        for data in m.k.iter().chain([&m.phi_mag]).chain(m.x.iter()) {
            args.push((&buffer(ctx, q, data)?).into());
        }
        let out = [
            buffer(ctx, q, &vec![0.0f32; voxels])?,
            buffer(ctx, q, &vec![0.0f32; voxels])?,
        ];
        args.extend([
            (&out[0]).into(),
            (&out[1]).into(),
            (m.phi_mag.len() as u32).into(),
        ]);
        Ok(Ready {
            kernel: (*super::mriq).clone(),
            range: NdRange::new([voxels]).local([local]),
            args,
            out,
        })
    }

    /// [`spmv`](super::spmv) of `m` times `x` in groups of `local`; `out` is the product.
    pub fn spmv_ready(
        ctx: &Context,
        q: &Queue,
        m: &super::Csr,
        x: &[f32],
        local: usize,
    ) -> Result<Ready<Buffer<f32>>, String> {
        let rows = m.row_ptr.len() - 1;
        let out = buffer(ctx, q, &vec![0.0f32; rows])?;
        let args = vec![
            (&buffer(ctx, q, &m.row_ptr)?).into(),
            (&buffer(ctx, q, &m.cols)?).into(),
            (&buffer(ctx, q, &m.vals)?).into(),
            (&buffer(ctx, q, x)?).into(),
            (&out).into(),
            (rows as u32).into(),
        ];
        Ok(Ready {
            kernel: (*super::spmv).clone(),
            range: NdRange::new([rows.next_multiple_of(local)]).local([local]),
            args,
            out,
        })
    }

    /// [`stencil`](super::stencil) of `a` (an `n[0]` x `n[1]` x `n[2]` grid) with the
    /// coefficients `c`, in groups of `local` (dividing the interior's sides); `out` is the
    /// next grid, `fill` where the stencil does not write.
    pub fn stencil_ready(
        ctx: &Context,
        q: &Queue,
        a: &[f32],
        n: [usize; 3],
        c: [f32; 2],
        local: [usize; 2],
        fill: f32,
    ) -> Result<Ready<Buffer<f32>>, String> {
        let out = buffer(ctx, q, &vec![fill; a.len()])?;
        let args = vec![
            (&buffer(ctx, q, a)?).into(),
            (&out).into(),
            (n[0] as u32).into(),
            (n[1] as u32).into(),
            (n[2] as u32).into(),
            c[0].into(),
            c[1].into(),
        ];
        Ok(Ready {
            kernel: (*super::stencil).clone(),
            range: NdRange::new([n[0] - 2, n[1] - 2]).local(local),
            args,
            out,
        })
    }

    /// Runs [`pathfinder`] over the `rows` rows of `wall` (`cols` wide), `h` rows a launch in
    /// groups of `block`, from the first row in `a`; returns the buffer holding the last row's
    /// sums (`a` or `b`).
    #[allow(clippy::too_many_arguments)]
    pub fn pathfinder_launches<'b>(
        q: &Queue,
        wall: &Buffer<i32>,
        mut a: &'b Buffer<i32>,
        mut b: &'b Buffer<i32>,
        cols: usize,
        rows: usize,
        h: usize,
        block: usize,
        reference: bool,
    ) -> Result<&'b Buffer<i32>, String> {
        let mut start = 0;
        while start + 1 < rows {
            let step = h.min(rows - 1 - start).min((block - 1) / 2).max(1);
            let groups = cols.div_ceil(block - 2 * step);
            launch(
                q,
                &pathfinder,
                NdRange::new([groups * block]).local([block]),
                vec![
                    wall.into(),
                    a.into(),
                    b.into(),
                    (cols as u32).into(),
                    (start as u32).into(),
                    (step as u32).into(),
                ],
                reference,
            )?;
            std::mem::swap(&mut a, &mut b);
            start += step;
        }
        Ok(a)
    }
}
