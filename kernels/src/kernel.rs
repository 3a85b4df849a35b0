//! Kernels: a name, typed parameters, and a work-group function that runs every work-item of
//! one group on the calling worker.
//!
//! A kernel is made either from a work-group function ([`Kernel::groups`]: the form a
//! compiler of kernels generates, with the group's ids, its arguments and its local memory) or,
//! for a kernel without barriers, from a closure over one work-item ([`Kernel::items`]), for
//! which the executor generates the loops over the group's work-items.

use std::any::{Any, TypeId, type_name};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::ops::Range;
use std::sync::Arc;

use crate::buffer::{Buffer, Element, RawBuffer};
use crate::compiled::{Carver, KernelInfo, LocalArray, OwnedMut, Scatter, Scratch, SharedMut};
use crate::ndrange::Geometry;

/// How a kernel uses a buffer argument: what creates the dependences between commands (as
/// SYCL's accessor modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Only read: commands that only read a buffer run at the same time.
    Read,
    /// Only written (each work-item its own element).
    Write,
    /// Read and written (each work-item its own element).
    ReadWrite,
}

impl Mode {
    /// Whether the kernel writes the buffer.
    pub fn writes(self) -> bool {
        !matches!(self, Mode::Read)
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::ReadWrite => "read-write",
        }
    }
}

/// An element type, as a parameter or argument names it.
#[derive(Clone, Copy)]
pub(crate) struct TypeInfo {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
    pub(crate) size: usize,
    pub(crate) align: usize,
}

impl TypeInfo {
    pub(crate) fn of<T: 'static>() -> Self {
        TypeInfo {
            id: TypeId::of::<T>(),
            name: type_name::<T>(),
            size: size_of::<T>(),
            align: align_of::<T>(),
        }
    }
}

impl PartialEq for TypeInfo {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

/// What kind of argument a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A [`Buffer`] used as the mode says.
    Buffer(Mode),
    /// A value, the same for every work-item.
    Scalar,
    /// Local memory: an array per work-group, shared by its work-items, of the length the
    /// argument gives ([`Local`]).
    Local,
}

/// One parameter of a kernel: a kind and an element type.
#[derive(Clone, Copy, PartialEq)]
pub struct Param {
    pub(crate) kind: ParamKind,
    pub(crate) elem: TypeInfo,
}

impl Param {
    /// A buffer of `T` used in `mode`.
    pub fn buffer<T: Element>(mode: Mode) -> Param {
        Param {
            kind: ParamKind::Buffer(mode),
            elem: TypeInfo::of::<T>(),
        }
    }

    /// A scalar `T`.
    pub fn scalar<T: Copy + Send + Sync + 'static>() -> Param {
        Param {
            kind: ParamKind::Scalar,
            elem: TypeInfo::of::<T>(),
        }
    }

    /// Local memory of `T`.
    pub fn local<T: Element>() -> Param {
        Param {
            kind: ParamKind::Local,
            elem: TypeInfo::of::<T>(),
        }
    }

    /// The kind.
    pub fn kind(&self) -> ParamKind {
        self.kind
    }

    /// The element type's name.
    pub fn type_name(&self) -> &'static str {
        self.elem.name
    }

    pub(crate) fn describe(&self) -> String {
        match self.kind {
            ParamKind::Buffer(m) => format!("a buffer of {} ({})", self.elem.name, m.name()),
            ParamKind::Scalar => format!("a scalar {}", self.elem.name),
            ParamKind::Local => format!("local memory of {}", self.elem.name),
        }
    }
}

impl fmt::Debug for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A kernel argument: a buffer, a scalar or a local-memory size. Made by `From` (`&buffer`,
/// `2.0f32`, `Local::<f32>::new(256)`), or [`Arg::scalar`] for a scalar of one's own type.
#[derive(Clone)]
pub struct Arg(pub(crate) ArgValue);

#[derive(Clone)]
pub(crate) enum ArgValue {
    Buffer(Arc<RawBuffer>),
    Scalar(Arc<dyn Any + Send + Sync>, TypeInfo),
    Local(TypeInfo, usize),
}

impl Arg {
    /// A scalar argument of any `Copy` type (a struct of the program's own, say).
    pub fn scalar<T: Copy + Send + Sync + 'static>(value: T) -> Arg {
        Arg(ArgValue::Scalar(Arc::new(value), TypeInfo::of::<T>()))
    }

    pub(crate) fn describe(&self) -> String {
        match &self.0 {
            ArgValue::Buffer(b) => format!("a buffer of {}", b.elem),
            ArgValue::Scalar(_, t) => format!("a scalar {}", t.name),
            ArgValue::Local(t, n) => format!("local memory of {n} {}", t.name),
        }
    }
}

impl fmt::Debug for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl<T: Element> From<&Buffer<T>> for Arg {
    fn from(b: &Buffer<T>) -> Self {
        Arg(ArgValue::Buffer(Arc::clone(&b.raw)))
    }
}

macro_rules! scalar_args {
    ($($t:ty),*) => { $(
        impl From<$t> for Arg {
            fn from(v: $t) -> Self {
                Arg::scalar(v)
            }
        }
    )* };
}
scalar_args!(
    f32, f64, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool
);

/// A local-memory argument: `len` elements of `T` per work-group (OpenCL's
/// `clSetKernelArg(kernel, i, size, NULL)`), zeroed when each group starts.
pub struct Local<T>(usize, PhantomData<fn() -> T>);

impl<T> Clone for Local<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Local<T> {}

impl<T> fmt::Debug for Local<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Local<{}>({})", type_name::<T>(), self.0)
    }
}

impl<T: Element> Local<T> {
    /// `len` elements per group.
    pub fn new(len: usize) -> Self {
        Local(len, PhantomData)
    }
}

impl<T: Element> From<Local<T>> for Arg {
    fn from(l: Local<T>) -> Self {
        Arg(ArgValue::Local(TypeInfo::of::<T>(), l.0))
    }
}

/// Which elements of each buffer argument a run of consecutive work-groups touches: the
/// question a kernel's footprint function answers (see [`Kernel::with_footprint`]).
#[derive(Clone, Debug)]
pub struct FootprintQuery {
    /// The argument (a buffer).
    pub arg: usize,
    /// Its length, in elements.
    pub len: usize,
    /// The groups, as linear group ids (dimension 0 fastest).
    pub groups: Range<usize>,
    /// Groups in the launch.
    pub total_groups: usize,
    /// The launch's geometry.
    pub geometry: Geometry,
}

type GroupFn = dyn Fn(&WorkGroup<'_>, &GroupArgs<'_>) + Send + Sync;
/// A `#[kernel]`'s work-group function over a run of groups (the executor calls it once per
/// task), so that choosing its instruction set and calling it happen once per task, and the
/// loop over the groups runs inside the compiled function.
type GroupsFn = dyn Fn(&GroupRun<'_>) + Send + Sync;
/// The loops of an items kernel over a run of groups (the executor calls it once per task).
type ItemsFn = dyn Fn(&TaskArgs<'_>, &Geometry, Range<usize>) + Send + Sync;
type FootprintFn = dyn Fn(&FootprintQuery) -> Option<Range<usize>> + Send + Sync;

/// A kernel: its name, parameters and work-group function. Cheap to clone (shared).
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: Arc<KernelInner>,
}

pub(crate) struct KernelInner {
    pub(crate) name: &'static str,
    pub(crate) params: Vec<Param>,
    pub(crate) body: Arc<Body>,
    pub(crate) footprint: Option<Box<FootprintFn>>,
    /// A compiled kernel's (`#[kernel]`): its arena past the local arguments, its reference
    /// form and the macro's report.
    pub(crate) compiled: Option<Arc<Compiled>>,
}

/// What the `#[kernel]` macro gives besides the work-group function.
pub(crate) struct Compiled {
    pub(crate) scratch: Scratch,
    /// The same kernel, run with a thread per work-item and a real barrier.
    pub(crate) reference: Box<GroupFn>,
    pub(crate) info: &'static KernelInfo,
}

/// What runs a kernel's groups.
pub(crate) enum Body {
    /// A work-group function, called for each group.
    Groups(Box<GroupFn>),
    /// An items kernel's loops, called once per task with its groups: the arguments are
    /// checked and bound once per task, not per group.
    Items(Box<ItemsFn>),
    /// A `#[kernel]`'s work-group function, called once per task with its groups.
    Compiled(Box<GroupsFn>),
}

/// The groups of one task of a launch, for a `#[kernel]`'s work-group function to run:
/// [`GroupRun::for_each`] gives each group's ids and arguments in turn, its local memory
/// zeroed.
#[doc(hidden)]
pub struct GroupRun<'a> {
    pub(crate) geometry: &'a Geometry,
    pub(crate) groups: Range<usize>,
    pub(crate) args: &'a [ArgValue],
    pub(crate) modes: &'a [ParamKind],
    pub(crate) local: *mut u8,
    pub(crate) local_offsets: &'a [usize],
    pub(crate) scratch_offset: usize,
    pub(crate) arena_bytes: usize,
}

impl GroupRun<'_> {
    /// Whether every group of the run has one work-item in dimensions 1 and 2 (a launch of
    /// one dimension, or local sizes of 1 there): the `#[kernel]` code then runs a copy of the
    /// group function whose work-item loops are one loop.
    #[inline(always)]
    pub fn flat(&self) -> bool {
        self.geometry.local[1] == 1 && self.geometry.local[2] == 1
    }

    /// Calls `f` for each group of the run, in order.
    #[inline(always)]
    pub fn for_each(&self, mut f: impl FnMut(&WorkGroup<'_>, &GroupArgs<'_>)) {
        for g in self.groups.clone() {
            let id = self.geometry.group_id(g);
            let group = WorkGroup {
                geometry: self.geometry,
                id,
                size: self.geometry.group_size(id),
            };
            if self.arena_bytes > 0 {
                // SAFETY: the arena has `arena_bytes` bytes, this thread's while the run lasts;
                // zero is a valid value of every element type (`Element: Zeroable`).
                unsafe { self.local.write_bytes(0, self.arena_bytes) };
            }
            let args = GroupArgs {
                args: self.args,
                modes: self.modes,
                group: &group,
                local: self.local,
                local_offsets: self.local_offsets,
                scratch_offset: self.scratch_offset,
                arena_bytes: self.arena_bytes,
                taken: Cell::new(0),
            };
            f(&group, &args);
        }
    }
}

/// Keeps the binding methods of [`ItemParam`] to this crate: a view that hands out `&mut` to
/// work-items' elements must be made once per group, by the executor.
mod sealed {
    use super::{ArgValue, ParamKind, buffer_arg, scalar_arg};
    use crate::buffer::{Element, RawBuffer};

    /// Only this crate can make one.
    #[derive(Clone, Copy)]
    pub struct Token(pub(crate) ());

    /// The arguments of a launch, as a task of an items kernel binds them.
    pub struct TaskArgs<'a> {
        pub(crate) args: &'a [ArgValue],
        pub(crate) modes: &'a [ParamKind],
    }

    impl<'a> TaskArgs<'a> {
        pub(crate) fn buffer<T: Element>(&self, i: usize, writes: bool) -> &'a RawBuffer {
            let b = buffer_arg::<T>(self.args, i, "a buffer");
            let mode_writes = matches!(self.modes.get(i), Some(ParamKind::Buffer(m)) if m.writes());
            assert_eq!(
                mode_writes, writes,
                "argument {i}: the kernel's parameter and its view disagree on writing"
            );
            b
        }

        pub(crate) fn scalar<T: Copy + Send + Sync + 'static>(&self, i: usize) -> T {
            scalar_arg(self.args, i)
        }
    }
}
pub(crate) use sealed::{TaskArgs, Token};

impl Kernel {
    /// A kernel from its work-group function: `body` runs every work-item of one group (the
    /// form a kernel compiler generates). It reads its arguments through [`GroupArgs`] by
    /// position, as `params` declare them.
    ///
    /// ```
    /// use numatask_kernels::{Kernel, Mode, Param};
    ///
    /// // Doubles every element: each work-item its own, row by row of the group.
    /// let double = Kernel::groups(
    ///     "double",
    ///     vec![Param::buffer::<f32>(Mode::ReadWrite)],
    ///     |group, args| {
    ///         let mut y = args.items_mut::<f32>(0);
    ///         for z in 0..group.local_size(2) {
    ///             for row in 0..group.local_size(1) {
    ///                 for v in y.row_mut(row, z) {
    ///                     *v *= 2.0;
    ///                 }
    ///             }
    ///         }
    ///     },
    /// );
    /// assert_eq!(double.name(), "double");
    /// ```
    pub fn groups(
        name: &'static str,
        params: Vec<Param>,
        body: impl Fn(&WorkGroup<'_>, &GroupArgs<'_>) + Send + Sync + 'static,
    ) -> Kernel {
        Kernel {
            inner: Arc::new(KernelInner {
                name,
                params,
                body: Arc::new(Body::Groups(Box::new(body))),
                footprint: None,
                compiled: None,
            }),
        }
    }

    /// A kernel without barriers, from a closure over one work-item: the executor runs it for
    /// every work-item of a group in a loop (dimension 0 innermost), which the compiler
    /// vectorizes when the closure allows it.
    ///
    /// `P` lists the parameters, a tuple of [`Read<T>`] (the item gets `&[T]`, the whole
    /// buffer), [`Write<T>`] and [`ReadWrite<T>`] (the item gets `&mut T`, its own element:
    /// the one at its global linear id), and scalars (`f32`, `u32`, ...: the item gets the
    /// value).
    ///
    /// ```
    /// use numatask_kernels::{Kernel, Read, ReadWrite};
    ///
    /// let saxpy = Kernel::items::<(Read<f32>, ReadWrite<f32>, f32), _>(
    ///     "saxpy",
    ///     |item, (x, y, a)| *y += a * x[item.global_id(0)],
    /// );
    /// assert_eq!(saxpy.params().len(), 3);
    /// ```
    pub fn items<P, F>(name: &'static str, f: F) -> Kernel
    where
        P: ItemParams,
        F: for<'v> Fn(&Item, P::Views<'v>) + Send + Sync + 'static,
    {
        let body: Box<ItemsFn> = Box::new(move |args, geometry, groups| {
            run_items_isa::<P, F>(&f, args, geometry, groups)
        });
        Kernel {
            inner: Arc::new(KernelInner {
                name,
                params: P::params(),
                body: Arc::new(Body::Items(body)),
                footprint: None,
                compiled: None,
            }),
        }
    }

    /// The same kernel, whose tasks' footprints come from `f`: for a run of consecutive groups
    /// and one buffer argument, the elements they touch (`None`: none worth placing by). The
    /// default is a block partition of every buffer over the groups in linear order (group
    /// `g` of `G` touches elements `len * g / G .. len * (g + 1) / G`), right for kernels
    /// whose work-item `i` touches element `i`.
    pub fn with_footprint(
        self,
        f: impl Fn(&FootprintQuery) -> Option<Range<usize>> + Send + Sync + 'static,
    ) -> Kernel {
        let inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => {
                return Kernel::groups_from(&shared, Box::new(f));
            }
        };
        Kernel {
            inner: Arc::new(KernelInner {
                footprint: Some(Box::new(f)),
                ..inner
            }),
        }
    }

    fn groups_from(shared: &Arc<KernelInner>, f: Box<FootprintFn>) -> Kernel {
        Kernel {
            inner: Arc::new(KernelInner {
                name: shared.name,
                params: shared.params.clone(),
                body: Arc::clone(&shared.body),
                footprint: Some(f),
                compiled: shared.compiled.clone(),
            }),
        }
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.inner.name
    }

    /// Its parameters.
    pub fn params(&self) -> &[Param] {
        &self.inner.params
    }

    /// What the `#[kernel]` macro made of it (`None` for a kernel made otherwise).
    pub fn info(&self) -> Option<&'static KernelInfo> {
        self.inner.compiled.as_ref().map(|c| c.info)
    }

    /// A compiled kernel (the `#[kernel]` macro's output): the work-group function `group`,
    /// its reference form `reference` (the same signature: it runs each work-item on its own
    /// thread), the arena they need past the local arguments, and the macro's report.
    #[doc(hidden)]
    pub fn __compiled(
        info: &'static KernelInfo,
        params: Vec<Param>,
        local_arrays: &'static [usize],
        expanded: &'static [usize],
        groups: impl Fn(&GroupRun<'_>) + Send + Sync + 'static,
        reference: impl Fn(&WorkGroup<'_>, &GroupArgs<'_>) + Send + Sync + 'static,
    ) -> Kernel {
        if std::env::var_os("NUMATASK_KERNEL_INFO").is_some_and(|v| v == "1") {
            eprintln!(
                "numatask: {info} (running its {} version)",
                crate::isa::kernel_isa().name()
            );
        }
        Kernel {
            inner: Arc::new(KernelInner {
                name: info.name,
                params,
                body: Arc::new(Body::Compiled(Box::new(groups))),
                footprint: None,
                compiled: Some(Arc::new(Compiled {
                    scratch: Scratch {
                        fixed: local_arrays,
                        per_item: expanded,
                    },
                    reference: Box::new(reference),
                    info,
                })),
            }),
        }
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.inner.name)
            .field("params", &self.inner.params)
            .finish()
    }
}

/// The work-group a work-group function runs: its ids and sizes (OpenCL's work-item
/// functions that do not depend on the work-item).
#[derive(Debug)]
pub struct WorkGroup<'a> {
    pub(crate) geometry: &'a Geometry,
    pub(crate) id: [usize; 3],
    pub(crate) size: [usize; 3],
}

impl WorkGroup<'_> {
    /// Dimensions of the NDRange (`get_work_dim`).
    #[inline]
    pub fn dims(&self) -> usize {
        self.geometry.dims
    }

    /// This group's id in dimension `d` (`get_group_id`); 0 past the NDRange's dimensions.
    #[inline]
    pub fn group_id(&self, d: usize) -> usize {
        self.id.get(d).copied().unwrap_or(0)
    }

    /// This group's actual size in dimension `d` (`get_local_size`): smaller than the
    /// enqueued one at the upper edge; 1 past the NDRange's dimensions.
    #[inline]
    pub fn local_size(&self, d: usize) -> usize {
        self.size.get(d).copied().unwrap_or(1)
    }

    /// The local size the launch was enqueued with (`get_enqueued_local_size`).
    #[inline]
    pub fn enqueued_local_size(&self, d: usize) -> usize {
        self.geometry.local.get(d).copied().unwrap_or(1)
    }

    /// Groups in dimension `d` (`get_num_groups`).
    #[inline]
    pub fn num_groups(&self, d: usize) -> usize {
        self.geometry.groups.get(d).copied().unwrap_or(1)
    }

    /// The global size in dimension `d` (`get_global_size`).
    #[inline]
    pub fn global_size(&self, d: usize) -> usize {
        self.geometry.global.get(d).copied().unwrap_or(1)
    }

    /// The global offset in dimension `d` (`get_global_offset`).
    #[inline]
    pub fn global_offset(&self, d: usize) -> usize {
        self.geometry.offset.get(d).copied().unwrap_or(0)
    }

    /// The global id of this group's work-item `local` (`get_global_id` in that item).
    #[inline]
    pub fn global_id(&self, local: [usize; 3]) -> [usize; 3] {
        let g = self.geometry;
        [
            g.offset[0] + self.id[0] * g.local[0] + local[0],
            g.offset[1] + self.id[1] * g.local[1] + local[1],
            g.offset[2] + self.id[2] * g.local[2] + local[2],
        ]
    }

    /// The global linear id of work-item `local` (`get_global_linear_id`): the element an
    /// item owns in a written buffer.
    #[inline]
    pub fn global_linear_id(&self, local: [usize; 3]) -> usize {
        let g = self.geometry;
        let x = self.id[0] * g.local[0] + local[0];
        let y = self.id[1] * g.local[1] + local[1];
        let z = self.id[2] * g.local[2] + local[2];
        x + g.global[0] * (y + g.global[1] * z)
    }

    /// This group's linear id (`get_group_id(0) + get_num_groups(0) * (...)`).
    #[inline]
    pub fn group_linear_id(&self) -> usize {
        let g = self.geometry;
        self.id[0] + g.groups[0] * (self.id[1] + g.groups[1] * self.id[2])
    }
}

/// The arguments of a launch, as one work-group sees them. Each accessor checks the argument
/// against the type asked for and panics if it differs (a bug of the work-group function,
/// which fails the launch's event).
pub struct GroupArgs<'a> {
    pub(crate) args: &'a [ArgValue],
    pub(crate) modes: &'a [ParamKind],
    pub(crate) group: &'a WorkGroup<'a>,
    /// The group's local memory, and each local argument's offset in it.
    pub(crate) local: *mut u8,
    pub(crate) local_offsets: &'a [usize],
    /// Where a compiled kernel's arrays start in the arena, and the arena's bytes.
    pub(crate) scratch_offset: usize,
    pub(crate) arena_bytes: usize,
    /// Arguments whose exclusive views were handed out (one bit each).
    pub(crate) taken: Cell<u64>,
}

/// Buffer argument `i` of `args`, checked to hold `T`s; panics naming `what` was asked for
/// otherwise (a bug of the kernel's code, which fails its launch).
#[inline]
fn buffer_arg<'a, T: Element>(args: &'a [ArgValue], i: usize, what: &str) -> &'a RawBuffer {
    match args.get(i) {
        Some(ArgValue::Buffer(b)) if b.type_id == TypeId::of::<T>() => b,
        _ => wrong_arg(args, i, what, type_name::<T>()),
    }
}

/// The panic of an argument asked for as what it is not (kept out of the callers' code).
#[cold]
#[inline(never)]
fn wrong_arg(args: &[ArgValue], i: usize, what: &str, type_name: &str) -> ! {
    match args.get(i) {
        Some(a) => panic!(
            "argument {i} is {}, asked for as {what} of {type_name}",
            Arg(a.clone()).describe(),
        ),
        None => panic!("argument {i} asked for; the kernel has {}", args.len()),
    }
}

/// Scalar argument `i` of `args`, checked to be a `T` (panics otherwise, as [`buffer_arg`]).
#[inline]
fn scalar_arg<T: Copy + Send + Sync + 'static>(args: &[ArgValue], i: usize) -> T {
    match args.get(i) {
        Some(ArgValue::Scalar(v, t)) if t.id == TypeId::of::<T>() => match v.downcast_ref::<T>() {
            Some(v) => *v,
            None => wrong_arg(args, i, "a scalar", type_name::<T>()),
        },
        _ => wrong_arg(args, i, "a scalar", type_name::<T>()),
    }
}

impl<'a> GroupArgs<'a> {
    #[inline]
    fn buffer<T: Element>(&self, i: usize, what: &str) -> &'a RawBuffer {
        buffer_arg::<T>(self.args, i, what)
    }

    #[inline]
    fn take(&self, i: usize) {
        let bit = 1u64 << (i % 64);
        let taken = self.taken.get();
        assert!(
            taken & bit == 0,
            "argument {i}'s exclusive view was already taken by this group"
        );
        self.taken.set(taken | bit);
    }

    /// Buffer argument `i`, declared [`Mode::Read`]: the whole buffer.
    #[inline]
    pub fn read<T: Element>(&self, i: usize) -> &'a [T] {
        let b = self.buffer::<T>(i, "a read buffer");
        assert!(
            self.modes.get(i) == Some(&ParamKind::Buffer(Mode::Read)),
            "argument {i} is written by the kernel: its work-items reach it through items_mut"
        );
        // SAFETY: the buffer holds `len` initialised `T`s (checked type); the launch declared
        // it read-only, the launch checked that no argument that writes it is the same buffer,
        // and the commands' dependences keep writers of other commands away while it runs.
        unsafe { std::slice::from_raw_parts(b.ptr.cast_const().cast::<T>(), b.len) }
    }

    /// Buffer argument `i`, declared [`Mode::Write`] or [`Mode::ReadWrite`]: the elements this
    /// group's work-items own (each its global linear id). Once per group and argument.
    pub fn items_mut<T: Element>(&self, i: usize) -> ItemsMut<'a, T> {
        let b = self.buffer::<T>(i, "a written buffer");
        assert!(
            matches!(self.modes.get(i), Some(ParamKind::Buffer(m)) if m.writes()),
            "argument {i} is read-only for the kernel: read it with read()"
        );
        self.take(i);
        let g = self.group;
        ItemsMut {
            base: b.ptr.cast::<T>(),
            first: g.global_linear_id([0, 0, 0]),
            size: g.size,
            stride: [
                g.geometry.global[0],
                g.geometry.global[0] * g.geometry.global[1],
            ],
            _borrow: PhantomData,
        }
    }

    /// Buffer argument `i` as a raw pointer and length, for reading it by hand (a read-only
    /// argument's elements, or in a written argument the work-items' own).
    ///
    /// # Safety
    ///
    /// Reads stay within the length, and read no element that another work-item (of any group
    /// of the launch) writes while the launch runs, unless through atomics.
    pub unsafe fn raw<T: Element>(&self, i: usize) -> (*const T, usize) {
        let b = self.buffer::<T>(i, "a buffer");
        (b.ptr.cast_const().cast::<T>(), b.len)
    }

    /// Buffer argument `i`, declared [`Mode::Write`] or [`Mode::ReadWrite`], as a raw pointer
    /// and length, for work-items that write elements other than their own (a scatter, a
    /// histogram). Panics for a read-only argument: other commands and mappings may read it at
    /// the same time.
    ///
    /// # Safety
    ///
    /// Reads and writes stay within the length; while the launch runs, no element is written
    /// by one work-item and read or written by another (of any group), unless through atomics.
    #[inline]
    pub unsafe fn raw_mut<T: Element>(&self, i: usize) -> (*mut T, usize) {
        let b = self.buffer::<T>(i, "a written buffer");
        assert!(
            matches!(self.modes.get(i), Some(ParamKind::Buffer(m)) if m.writes()),
            "argument {i} is read-only for the kernel: raw_mut needs a written argument"
        );
        (b.ptr.cast::<T>(), b.len)
    }

    /// Scalar argument `i`.
    #[inline]
    pub fn scalar<T: Copy + Send + Sync + 'static>(&self, i: usize) -> T {
        scalar_arg(self.args, i)
    }

    /// Local argument `i`: this group's array, zeroed when the group started. Once per group
    /// and argument.
    #[inline]
    pub fn local<T: Element>(&self, i: usize) -> &'a mut [T] {
        let len = match self.args.get(i) {
            Some(ArgValue::Local(t, len)) if t.id == TypeId::of::<T>() => *len,
            Some(a) => panic!(
                "argument {i} is {}, asked for as local memory of {}",
                Arg(a.clone()).describe(),
                type_name::<T>()
            ),
            None => panic!("argument {i} asked for; the kernel has {}", self.args.len()),
        };
        self.take(i);
        // SAFETY: the arena holds this argument's `len` elements at its offset, aligned to 64
        // (at least `T`'s alignment, checked at launch), zeroed (a valid `T`: `Element` is
        // `Zeroable`); the group owns the arena while it runs and hands this part out once.
        unsafe {
            std::slice::from_raw_parts_mut(self.local.add(self.local_offsets[i]).cast::<T>(), len)
        }
    }
}

impl<'a> GroupArgs<'a> {
    /// Local argument `i` as an array of cells (a compiled kernel's view). Once per group and
    /// argument.
    #[doc(hidden)]
    #[inline]
    pub fn local_array<T: Element>(&self, i: usize) -> LocalArray<'a, T> {
        let slice = self.local::<T>(i);
        // `&mut [T]` to `&[Cell<T>]`: the same layout, and `Cell::from_mut` is this for one.
        LocalArray::from_cells(Cell::from_mut(slice).as_slice_of_cells())
    }

    /// The length of local argument `i` (the reference executor makes its own array of it).
    #[doc(hidden)]
    pub fn local_len(&self, i: usize) -> usize {
        match self.args.get(i) {
            Some(ArgValue::Local(_, len)) => *len,
            _ => panic!("argument {i} is not local memory"),
        }
    }

    /// The arena past the local arguments: a compiled kernel's local arrays and expanded
    /// variables. Once per group.
    #[doc(hidden)]
    #[inline]
    pub fn scratch(&self) -> Carver<'a> {
        self.take(MAX_SCRATCH_BIT);
        Carver {
            // SAFETY: `scratch_offset <= arena_bytes`, the arena's size (the launch sized it).
            next: unsafe { self.local.add(self.scratch_offset) },
            left: self.arena_bytes - self.scratch_offset,
            _arena: PhantomData,
        }
    }

    /// Written buffer argument `i`, accessed by each work-item only at its own element.
    ///
    /// # Safety
    ///
    /// Every access through the view, by every work-item of the launch, is at that
    /// work-item's own index, distinct from every other work-item's (its global linear id, or
    /// its global id in a launch whose global size is 1 past dimension 0).
    #[doc(hidden)]
    #[inline]
    pub unsafe fn owned_mut<T: Element>(&self, i: usize) -> OwnedMut<'a, T> {
        // SAFETY: the caller's contract.
        let (ptr, len) = unsafe { self.raw_mut::<T>(i) };
        self.take(i);
        OwnedMut {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }

    /// Written buffer argument `i`, any element of which any work-item may access (atomically).
    #[doc(hidden)]
    #[inline]
    pub fn shared_mut<T: Scatter>(&self, i: usize) -> SharedMut<'a, T> {
        // SAFETY: only the pointer and length are taken; every access through the view is a
        // relaxed atomic one, which races with nothing (`Scatter`).
        let (ptr, len) = unsafe { self.raw_mut::<T>(i) };
        self.take(i);
        SharedMut {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }
}

/// The bit of `GroupArgs::taken` of the arena past the local arguments (arguments take bits
/// below [`MAX_ARGS`](crate::MAX_ARGS), which leaves this one free only if a compiled kernel
/// has fewer parameters: the macro checks).
const MAX_SCRATCH_BIT: usize = 63;

/// The elements of a written buffer that one work-group's work-items own (each the element at
/// its global linear id): rows along dimension 0, one per `(local y, local z)`.
pub struct ItemsMut<'a, T> {
    base: *mut T,
    first: usize,
    size: [usize; 3],
    stride: [usize; 2],
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T> fmt::Debug for ItemsMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemsMut")
            .field("first", &self.first)
            .field("size", &self.size)
            .finish()
    }
}

impl fmt::Debug for GroupArgs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupArgs")
            .field("args", &self.args.len())
            .field("group", &self.group.id)
            .finish()
    }
}

impl<T> ItemsMut<'_, T> {
    /// The elements of the work-items whose local ids are `(0.., y, z)`.
    #[inline]
    pub fn row_mut(&mut self, y: usize, z: usize) -> &mut [T] {
        assert!(
            y < self.size[1] && z < self.size[2],
            "row ({y}, {z}) outside the group"
        );
        let start = self.first + y * self.stride[0] + z * self.stride[1];
        // SAFETY: the launch checked that the buffer has an element per work-item; the row's
        // work-items own these elements, no other group's items do, and `&mut self` keeps
        // rows from overlapping in time.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(start), self.size[0]) }
    }

    /// The element of work-item `local`.
    #[inline]
    pub fn get_mut(&mut self, local: [usize; 3]) -> &mut T {
        assert!(
            local[0] < self.size[0],
            "work-item {local:?} outside the group"
        );
        &mut self.row_mut(local[1], local[2])[local[0]]
    }
}

/// A written buffer argument as a task of an items kernel holds it.
#[doc(hidden)]
pub struct BoundMut<'a, T> {
    base: *mut T,
    _borrow: PhantomData<&'a mut [T]>,
}

/// The elements of `group`'s work-items in the buffer at `base` (which has one per work-item
/// of the launch: checked at enqueue).
#[inline(always)]
fn items_of<'a, T>(base: *mut T, group: &WorkGroup<'_>) -> ItemsMut<'a, T> {
    let g = group.geometry;
    ItemsMut {
        base,
        first: group.global_linear_id([0, 0, 0]),
        size: group.size,
        stride: [g.global[0], g.global[0] * g.global[1]],
        _borrow: PhantomData,
    }
}

/// One work-item, as a closure of [`Kernel::items`] sees it (OpenCL's work-item functions).
#[derive(Debug)]
pub struct Item<'a> {
    group: &'a WorkGroup<'a>,
    /// The global id of the group's first work-item (kept here, in registers, so that the
    /// work-item loop computes ids without loads).
    base: [usize; 3],
    local: [usize; 3],
}

impl Item<'_> {
    /// Its global id in dimension `d` (`get_global_id`); 0 past the NDRange's dimensions.
    #[inline(always)]
    pub fn global_id(&self, d: usize) -> usize {
        if d < 3 {
            self.base[d] + self.local[d]
        } else {
            0
        }
    }

    /// Its local id in dimension `d` (`get_local_id`).
    #[inline(always)]
    pub fn local_id(&self, d: usize) -> usize {
        self.local.get(d).copied().unwrap_or(0)
    }

    /// Its global linear id (`get_global_linear_id`): the element it owns in written buffers.
    #[inline(always)]
    pub fn global_linear_id(&self) -> usize {
        self.group.global_linear_id(self.local)
    }

    /// Its group.
    #[inline(always)]
    pub fn group(&self) -> &WorkGroup<'_> {
        self.group
    }
}

/// A parameter of a [`Kernel::items`] closure, and the view of its argument a work-item gets.
pub trait ItemParam: 'static {
    /// What a task holds of the argument (checked once per task).
    type Bound<'a>;
    /// What one group holds of the argument.
    type Group<'a>;
    /// What one row of the group (work-items `(0.., y, z)`) holds.
    type Row<'r>;
    /// What one work-item gets.
    type View<'v>;
    /// The parameter.
    fn param() -> Param;
    /// Argument `i`, for a task (the executor's alone: the token cannot be made elsewhere).
    #[doc(hidden)]
    fn bind<'a>(args: &TaskArgs<'a>, i: usize, token: Token) -> Self::Bound<'a>;
    /// The part of a group (the executor's alone, once per group).
    #[doc(hidden)]
    fn group<'a>(bound: &Self::Bound<'a>, group: &WorkGroup<'_>, token: Token) -> Self::Group<'a>;
    /// Row `(y, z)` of the group's part.
    fn row<'r>(group: &'r mut Self::Group<'_>, y: usize, z: usize) -> Self::Row<'r>;
    /// Work-item `x` of the row.
    fn view<'v>(row: &'v mut Self::Row<'_>, x: usize) -> Self::View<'v>;
    /// Whether the argument has at least `end` elements (lets the compiler drop the bounds
    /// checks of work-items that index it by their global id in dimension 0).
    #[inline(always)]
    fn covers(_group: &Self::Group<'_>, _end: usize) -> bool {
        true
    }
}

/// A buffer the work-items read ([`Mode::Read`]); each gets the whole buffer, `&[T]`.
pub struct Read<T>(PhantomData<fn() -> T>);
/// A buffer the work-items write ([`Mode::Write`]); each gets its own element, `&mut T`.
pub struct Write<T>(PhantomData<fn() -> T>);
/// A buffer the work-items read and write ([`Mode::ReadWrite`]); each gets its own element,
/// `&mut T`.
pub struct ReadWrite<T>(PhantomData<fn() -> T>);

impl<T: Element> ItemParam for Read<T> {
    type Bound<'a> = &'a [T];
    type Group<'a> = &'a [T];
    type Row<'r> = &'r [T];
    type View<'v> = &'v [T];
    fn param() -> Param {
        Param::buffer::<T>(Mode::Read)
    }
    #[inline(always)]
    fn bind<'a>(args: &TaskArgs<'a>, i: usize, _: Token) -> &'a [T] {
        let b = args.buffer::<T>(i, false);
        // SAFETY: the buffer holds `len` initialised `T`s (checked type); the launch declared
        // it read-only, the launch checked that no argument that writes it is the same buffer,
        // and the commands' dependences keep writers of other commands away while it runs.
        unsafe { std::slice::from_raw_parts(b.ptr.cast_const().cast::<T>(), b.len) }
    }
    #[inline(always)]
    fn group<'a>(bound: &Self::Bound<'a>, _: &WorkGroup<'_>, _: Token) -> Self::Group<'a> {
        bound
    }
    #[inline(always)]
    fn row<'r>(group: &'r mut &[T], _: usize, _: usize) -> &'r [T] {
        group
    }
    #[inline(always)]
    fn view<'v>(row: &'v mut &[T], _: usize) -> &'v [T] {
        row
    }
    #[inline(always)]
    fn covers(group: &&[T], end: usize) -> bool {
        group.len() >= end
    }
}

macro_rules! owned_param {
    ($p:ident, $mode:expr) => {
        impl<T: Element> ItemParam for $p<T> {
            type Bound<'a> = BoundMut<'a, T>;
            type Group<'a> = ItemsMut<'a, T>;
            type Row<'r> = &'r mut [T];
            type View<'v> = &'v mut T;
            fn param() -> Param {
                Param::buffer::<T>($mode)
            }
            #[inline(always)]
            fn bind<'a>(args: &TaskArgs<'a>, i: usize, _: Token) -> BoundMut<'a, T> {
                BoundMut {
                    base: args.buffer::<T>(i, true).ptr.cast::<T>(),
                    _borrow: PhantomData,
                }
            }
            #[inline(always)]
            fn group<'a>(
                bound: &Self::Bound<'a>,
                group: &WorkGroup<'_>,
                _: Token,
            ) -> Self::Group<'a> {
                items_of(bound.base, group)
            }
            #[inline(always)]
            fn row<'r>(group: &'r mut ItemsMut<'_, T>, y: usize, z: usize) -> &'r mut [T] {
                group.row_mut(y, z)
            }
            #[inline(always)]
            fn view<'v>(row: &'v mut &mut [T], x: usize) -> &'v mut T {
                &mut row[x]
            }
        }
    };
}
owned_param!(Write, Mode::Write);
owned_param!(ReadWrite, Mode::ReadWrite);

macro_rules! scalar_params {
    ($($t:ty),*) => { $(
        impl ItemParam for $t {
            type Bound<'a> = $t;
            type Group<'a> = $t;
            type Row<'r> = $t;
            type View<'v> = $t;
            fn param() -> Param {
                Param::scalar::<$t>()
            }
            #[inline(always)]
            fn bind<'a>(args: &TaskArgs<'a>, i: usize, _: Token) -> $t {
                args.scalar::<$t>(i)
            }
            #[inline(always)]
            fn group<'a>(bound: &Self::Bound<'a>, _: &WorkGroup<'_>, _: Token) -> Self::Group<'a> {
                *bound
            }
            #[inline(always)]
            fn row(group: &mut $t, _: usize, _: usize) -> $t {
                *group
            }
            #[inline(always)]
            fn view(row: &mut $t, _: usize) -> $t {
                *row
            }
        }
    )* };
}
scalar_params!(
    f32, f64, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool
);

/// The parameter list of a [`Kernel::items`] closure: a tuple of [`ItemParam`]s.
pub trait ItemParams: 'static {
    /// What a task holds.
    type Bounds<'a>;
    /// What the group holds.
    type Groups<'a>;
    /// What a row holds.
    type Rows<'r>;
    /// What one work-item gets: a tuple of the parameters' views.
    type Views<'v>;
    /// The parameters.
    fn params() -> Vec<Param>;
    /// Binds every argument for a task.
    #[doc(hidden)]
    fn bind<'a>(args: &TaskArgs<'a>, token: Token) -> Self::Bounds<'a>;
    /// Every argument's part of a group.
    #[doc(hidden)]
    fn groups<'a>(
        bounds: &Self::Bounds<'a>,
        group: &WorkGroup<'_>,
        token: Token,
    ) -> Self::Groups<'a>;
    /// Row `(y, z)`.
    fn rows<'r>(groups: &'r mut Self::Groups<'_>, y: usize, z: usize) -> Self::Rows<'r>;
    /// Work-item `x` of the row.
    fn views<'v>(rows: &'v mut Self::Rows<'_>, x: usize) -> Self::Views<'v>;
    /// Whether every read buffer has at least `end` elements.
    fn covers(groups: &Self::Groups<'_>, end: usize) -> bool;
}

macro_rules! item_params {
    ($($p:ident $i:tt),+) => {
        impl<$($p: ItemParam),+> ItemParams for ($($p,)+) {
            type Bounds<'a> = ($($p::Bound<'a>,)+);
            type Groups<'a> = ($($p::Group<'a>,)+);
            type Rows<'r> = ($($p::Row<'r>,)+);
            type Views<'v> = ($($p::View<'v>,)+);
            fn params() -> Vec<Param> {
                vec![$($p::param()),+]
            }
            #[inline(always)]
            fn bind<'a>(args: &TaskArgs<'a>, token: Token) -> Self::Bounds<'a> {
                ($($p::bind(args, $i, token),)+)
            }
            #[inline(always)]
            fn groups<'a>(
                bounds: &Self::Bounds<'a>,
                group: &WorkGroup<'_>,
                token: Token,
            ) -> Self::Groups<'a> {
                ($($p::group(&bounds.$i, group, token),)+)
            }
            #[inline(always)]
            fn rows<'r>(groups: &'r mut Self::Groups<'_>, y: usize, z: usize) -> Self::Rows<'r> {
                ($($p::row(&mut groups.$i, y, z),)+)
            }
            #[inline(always)]
            fn views<'v>(rows: &'v mut Self::Rows<'_>, x: usize) -> Self::Views<'v> {
                ($($p::view(&mut rows.$i, x),)+)
            }
            #[inline(always)]
            fn covers(groups: &Self::Groups<'_>, end: usize) -> bool {
                true $(&& $p::covers(&groups.$i, end))+
            }
        }
    };
}
item_params!(A 0);
item_params!(A 0, B 1);
item_params!(A 0, B 1, C 2);
item_params!(A 0, B 1, C 2, D 3);
item_params!(A 0, B 1, C 2, D 3, E 4);
item_params!(A 0, B 1, C 2, D 3, E 4, F 5);
item_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
item_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// [`run_items`] compiled for the best instruction set the processor has (see [`Isa`]): the
/// work-item closure is inlined into each version, so that its loop vectorizes as wide as the
/// processor allows, as a `#[kernel]`'s work-group function does.
///
/// [`Isa`]: crate::Isa
fn run_items_isa<P, F>(f: &F, args: &TaskArgs<'_>, geometry: &Geometry, groups: Range<usize>)
where
    P: ItemParams,
    F: for<'v> Fn(&Item, P::Views<'v>),
{
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx,avx2,fma,bmi1,bmi2,f16c,lzcnt,movbe")]
        fn v3<P, F>(f: &F, args: &TaskArgs<'_>, geometry: &Geometry, groups: Range<usize>)
        where
            P: ItemParams,
            F: for<'v> Fn(&Item, P::Views<'v>),
        {
            run_items::<P, F>(f, args, geometry, groups)
        }
        #[target_feature(
            enable = "avx,avx2,fma,bmi1,bmi2,f16c,lzcnt,movbe,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
        )]
        fn v4<P, F>(f: &F, args: &TaskArgs<'_>, geometry: &Geometry, groups: Range<usize>)
        where
            P: ItemParams,
            F: for<'v> Fn(&Item, P::Views<'v>),
        {
            run_items::<P, F>(f, args, geometry, groups)
        }
        match crate::isa::kernel_isa() {
            // SAFETY: `kernel_isa` returns V4 only where CPUID reports every feature `v4` is
            // compiled with.
            crate::isa::Isa::V4 => unsafe { v4::<P, F>(f, args, geometry, groups) },
            // SAFETY: as above, for V3 and `v3`'s features.
            crate::isa::Isa::V3 => unsafe { v3::<P, F>(f, args, geometry, groups) },
            crate::isa::Isa::Baseline => run_items::<P, F>(f, args, geometry, groups),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    run_items::<P, F>(f, args, geometry, groups)
}

/// The work-item loops of an items kernel for the groups `groups` of one task: the arguments
/// bound once, then each group's loops.
#[inline(always)]
fn run_items<P, F>(f: &F, args: &TaskArgs<'_>, geometry: &Geometry, groups: Range<usize>)
where
    P: ItemParams,
    F: for<'v> Fn(&Item, P::Views<'v>),
{
    let token = Token(());
    let bounds = P::bind(args, token);
    if groups.is_empty() {
        return;
    }
    let mut id = geometry.group_id(groups.start);
    for _ in groups {
        let group = WorkGroup {
            geometry,
            id,
            size: geometry.group_size(id),
        };
        let mut parts = P::groups(&bounds, &group, token);
        let [sx, sy, sz] = group.size;
        let base = group.global_id([0, 0, 0]);
        let end0 = base[0] + sx;
        // Two copies of one loop: in the first, the compiler knows that every read buffer
        // covers the group's global ids in dimension 0, and drops the bounds checks of
        // `x[global_id(0)]`, which lets the loop vectorize.
        #[allow(clippy::if_same_then_else)]
        if P::covers(&parts, end0) {
            items_loop::<P, F>(f, &group, &mut parts, base, [sx, sy, sz]);
        } else {
            items_loop::<P, F>(f, &group, &mut parts, base, [sx, sy, sz]);
        }
        // The next group in linear order, dimension 0 fastest.
        id[0] += 1;
        if id[0] == geometry.groups[0] {
            id[0] = 0;
            id[1] += 1;
            if id[1] == geometry.groups[1] {
                id[1] = 0;
                id[2] += 1;
            }
        }
    }
}

#[inline(always)]
fn items_loop<P, F>(
    f: &F,
    group: &WorkGroup<'_>,
    groups: &mut P::Groups<'_>,
    base: [usize; 3],
    size: [usize; 3],
) where
    P: ItemParams,
    F: for<'v> Fn(&Item, P::Views<'v>),
{
    for z in 0..size[2] {
        for y in 0..size[1] {
            let mut rows = P::rows(groups, y, z);
            for x in 0..size[0] {
                let item = Item {
                    group,
                    base,
                    local: [x, y, z],
                };
                f(&item, P::views(&mut rows, x));
            }
        }
    }
}
