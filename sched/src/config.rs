//! Runtime settings from the environment, the way OpenMP runtimes read them.
//!
//! | variable | accepted values | default |
//! |---|---|---|
//! | `OMP_NUM_THREADS` | a positive integer up to 4096, or a comma-separated list of positive integers whose first (the one used: numatask has one level of parallelism) is at most 4096, or larger when an `OMP_THREAD_LIMIT` of at most 4096 caps it | one worker per core the process may run on (its CPU binding) and the places hold; one per hardware thread for `OMP_PLACES=threads` |
//! | `OMP_THREAD_LIMIT` | a positive integer of at most 18446744073709551615 | no limit beyond 4096 |
//! | `OMP_PROC_BIND` | `true`, `false`, or `close` (the same as `true` here), `spread`, `primary` (or its old name `master`); case-insensitive; of a comma-separated list of the last three, the first (see [`ProcBind`]) | `true` |
//! | `OMP_PLACES` | `cores`, `threads`, `ll_caches`, `numa_domains` or `sockets`, each optionally with a count (`cores(8)`: the first 8), or an explicit list of places of OS processor numbers (`{0,1},{2:2}`, `{0:4}:4:4`, `0,1,2`; intervals `start:length[:stride]`); case-insensitive (see [`Places`]) | `cores` |
//! | `OMP_STACKSIZE` | a size with an optional unit `B`, `K`, `M`, `G` (binary multiples); no unit means KiB, as in OpenMP; from 64K to 16G | 2M |
//! | `NUMATASK_SCHEDULER` | `ws` (work stealing; also `work-stealing`), `locality` (locality-aware; also `locality-aware`) | `ws` |
//! | `NUMATASK_VICINITY` | the largest OS distance (an integer from 10 to 4294967295, 10 = own node only) across which the locality-aware scheduler's workers steal any task (dealt or not), or `all` | `all` |
//! | `NUMATASK_EVEN_TOLERANCE` | a number from 0 to 100: the locality-aware scheduler keeps a task on its node when its footprint's standard deviation over the nodes is at most this fraction of the mean (see [`SchedulerKind::Locality`]); 0 is the paper's exact `stddev > 0` test | `0.1` |
//! | `OMP_WAIT_POLICY` | `active` (idle workers never sleep), `passive` (they sleep after a brief spin), or numatask's own `balanced` (they search for 200 µs, then sleep); case-insensitive (see [`WaitPolicy`]) | `balanced` |
//! | `OMP_MAX_TASK_PRIORITY` | a non-negative integer up to 2147483647 (a C `int`): the largest priority a task may have ([`TaskBuilder::priority`](crate::TaskBuilder::priority)); larger ones count as it, and with 0 priorities are ignored, as in OpenMP | `0` |
//! | `OMP_DISPLAY_ENV` | `true`, `false`, `verbose` (also `1`/`yes`/`on`, `0`/`no`/`off`) | `false` |
//! | `NUMATASK_TRACE` | a file to write a Chrome trace of every task to (see [`crate::trace`]); each later runtime of the process writes its own, `t.2.json`, `t.3.json`, ... beside `t.json` | no tracing |
//! | `OMP_DATA_DISTRIBUTION` | `standard`, `fine`, `coarse` (the allocator's policy, see `numatask_alloc`; checked here so that a runtime built from the environment refuses a bad value at start) | `standard` |
//!
//! A variable that is unset, empty or only blanks counts as unset. Any other value that is not
//! accepted is an error ([`BuildError::InvalidEnv`]) naming the variable, the value and what is
//! accepted; nothing here panics on what the environment holds.
//!
//! The topology itself comes from `NUMATASK_TOPOLOGY`, read by
//! [`Topology::current`](numatask_alloc::Topology::current).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use numatask_alloc::sched_support::{is_blank, trim_blanks};
use numatask_alloc::{DISTRIBUTION_ENV, Distribution};

use crate::error::BuildError;
use crate::scheduler::SchedulerKind;

/// `OMP_NUM_THREADS`: number of workers.
pub const NUM_THREADS_ENV: &str = "OMP_NUM_THREADS";
/// `OMP_PROC_BIND`: whether workers are pinned to cores.
pub const PROC_BIND_ENV: &str = "OMP_PROC_BIND";
/// `OMP_STACKSIZE`: stack size of each worker thread.
pub const STACKSIZE_ENV: &str = "OMP_STACKSIZE";
/// `NUMATASK_SCHEDULER`: the scheduling policy.
pub const SCHEDULER_ENV: &str = "NUMATASK_SCHEDULER";
/// `OMP_DISPLAY_ENV`: print the effective settings when a runtime starts.
pub const DISPLAY_ENV_ENV: &str = "OMP_DISPLAY_ENV";
/// `NUMATASK_VICINITY`: the largest OS distance the locality-aware scheduler's workers steal
/// tasks across (dealt or not).
pub const VICINITY_ENV: &str = "NUMATASK_VICINITY";
/// `NUMATASK_EVEN_TOLERANCE`: the coefficient of variation up to which the locality-aware
/// scheduler counts a footprint as even (see [`SchedulerKind::Locality`]).
pub const EVEN_TOLERANCE_ENV: &str = "NUMATASK_EVEN_TOLERANCE";
pub use crate::locality_policy::{DEFAULT_EVEN_TOLERANCE, MAX_EVEN_TOLERANCE};

/// `OMP_PLACES`: the places workers are bound to.
pub const PLACES_ENV: &str = "OMP_PLACES";

/// `OMP_WAIT_POLICY`: whether idle workers keep their cores or sleep.
pub const WAIT_POLICY_ENV: &str = "OMP_WAIT_POLICY";

/// `OMP_MAX_TASK_PRIORITY`: the largest task priority honoured (0: priorities ignored).
pub const MAX_TASK_PRIORITY_ENV: &str = "OMP_MAX_TASK_PRIORITY";

/// The largest `OMP_MAX_TASK_PRIORITY` accepted: the largest C `int`, as OpenMP's
/// `omp_get_max_task_priority` returns one.
pub const MAX_MAX_TASK_PRIORITY: u32 = i32::MAX as u32;
const MAX_TASK_PRIORITY_EXPECTED: &str = "a non-negative integer of at most 2147483647";

/// `OMP_THREAD_LIMIT`: the most workers a runtime starts, whatever `OMP_NUM_THREADS` or the
/// builder asks for.
pub const THREAD_LIMIT_ENV: &str = "OMP_THREAD_LIMIT";

/// Every variable [`Config::from_env`] reads and checks (besides
/// [`TRACE_ENV`](crate::trace::TRACE_ENV), a file name, which any value is).
pub const ENV_VARS: [&str; 12] = [
    NUM_THREADS_ENV,
    THREAD_LIMIT_ENV,
    MAX_TASK_PRIORITY_ENV,
    PROC_BIND_ENV,
    PLACES_ENV,
    STACKSIZE_ENV,
    SCHEDULER_ENV,
    DISPLAY_ENV_ENV,
    VICINITY_ENV,
    EVEN_TOLERANCE_ENV,
    WAIT_POLICY_ENV,
    DISTRIBUTION_ENV,
];

/// Worker stack size when `OMP_STACKSIZE` is unset (the same as Rust's default).
pub const DEFAULT_STACK_SIZE: usize = 2 << 20;
/// The smallest worker stack accepted: the worker loop, a task's frame and the unwinding
/// machinery need a few pages, and a smaller value would crash rather than fail.
pub const MIN_STACK_SIZE: usize = 64 << 10;

/// The largest worker stack (`OMP_STACKSIZE`, `stack_size`): 16 GiB, far beyond what any
/// recursion needs; a larger value is a typo that the system would refuse at thread start.
pub const MAX_STACK_SIZE: usize = 16 << 30;

/// The least vicinity (`NUMATASK_VICINITY`, `vicinity`): an OS distance of 10 is a node's own.
pub const MIN_VICINITY: u32 = 10;

const NUM_THREADS_EXPECTED: &str = "a number of workers from 1 to 4096, or a comma-separated \
     list of positive whole numbers, one per nesting level, of which the first is the number of \
     workers";
const NUM_THREADS_TOO_MANY: &str = "a number of workers from 1 to 4096; a larger count only \
     with an OMP_THREAD_LIMIT of at most 4096, which caps it";

/// The most workers a runtime starts (`OMP_NUM_THREADS`, `num_threads`): a mistyped count
/// would otherwise start that many threads, until the system refuses or aborts.
pub const MAX_NUM_THREADS: usize = 4096;
// The bound is u64::MAX, which `parse_thread_limit` parses into before it caps at usize::MAX.
const THREAD_LIMIT_EXPECTED: &str =
    "a positive integer of at most 18446744073709551615 (a limit above 4096 limits nothing)";
const PROC_BIND_EXPECTED: &str =
    "true, false, or a comma-separated list of close, spread and primary (or master)";
const STACKSIZE_EXPECTED: &str = "a size from 64K to 16G: a number with an optional unit B, K, M \
     or G (no unit means K)";
const SCHEDULER_EXPECTED: &str = "ws (work stealing) or locality (locality-aware)";
// The bound is u32::MAX.
const VICINITY_EXPECTED: &str =
    "an OS distance from 10 to 4294967295 (10 = the own node only) or all (no limit)";
// The 100 is MAX_EVEN_TOLERANCE.
const EVEN_TOLERANCE_EXPECTED: &str = "a number from 0 to 100, such as 0.1 (a footprint whose \
     standard deviation over the nodes is at most that fraction of its mean stays on its node; 0 \
     is the paper's exact test)";
const DISPLAY_ENV_EXPECTED: &str = "true, false or verbose (or 1, yes, on and 0, no, off)";
const DISTRIBUTION_EXPECTED: &str = "standard, fine or coarse";
const WAIT_POLICY_EXPECTED: &str = "active, passive or balanced";
const PLACES_EXPECTED: &str = "threads, cores, ll_caches, numa_domains or sockets, optionally \
     with a count such as cores(8), or a list of places of OS processor numbers such as \
     {0,1},{2:2}, {0:4}:4:4 or 0,1,2 (exclusions with ! are not supported)";
const PLACES_COUNT_EXPECTED: &str = "counts and lengths of at least 1, as in cores(8), {0:4} \
     or {0}:4";
const PLACES_NEGATIVE_EXPECTED: &str = "processor numbers from 0: an interval with a negative \
     stride, such as {3}:4:-1, must not reach below processor 0";
const PLACES_LIMIT_EXPECTED: &str = "a list naming at most 65536 processors in all, each \
     numbered below 65536";

/// What `OMP_DISPLAY_ENV` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DisplayEnv {
    /// Print nothing.
    #[default]
    False,
    /// Print the settings when the runtime starts.
    True,
    /// Print the settings and where every worker runs.
    Verbose,
}

impl FromStr for DisplayEnv {
    type Err = BuildError;

    fn from_str(s: &str) -> Result<Self, BuildError> {
        match trim_blanks(s).to_ascii_lowercase().as_str() {
            // OpenMP names true, false and verbose; LLVM's libomp reads these words too (and
            // more).
            "false" | "0" | "no" | "off" => Ok(Self::False),
            "true" | "1" | "yes" | "on" => Ok(Self::True),
            "verbose" => Ok(Self::Verbose),
            _ => Err(invalid(DISPLAY_ENV_ENV, s, DISPLAY_ENV_EXPECTED)),
        }
    }
}

impl fmt::Display for DisplayEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::False => "FALSE",
            Self::True => "TRUE",
            Self::Verbose => "VERBOSE",
        })
    }
}

pub use crate::sleep::WaitPolicy;

impl FromStr for WaitPolicy {
    type Err = BuildError;

    fn from_str(s: &str) -> Result<Self, BuildError> {
        match trim_blanks(s).to_ascii_lowercase().as_str() {
            "balanced" => Ok(Self::Balanced),
            "active" => Ok(Self::Active),
            "passive" => Ok(Self::Passive),
            _ => Err(invalid(WAIT_POLICY_ENV, s, WAIT_POLICY_EXPECTED)),
        }
    }
}

/// The configuration of a runtime before it is checked: every setting, `None` where neither
/// the environment nor the program gave one (the default applies).
///
/// [`Config::from_env`] reads every variable once; [`RuntimeBuilder`](crate::RuntimeBuilder)
/// holds one and its setters fill it in; [`build`](crate::RuntimeBuilder::build) checks it
/// into the [`Settings`](crate::Settings) the runtime runs with.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// `OMP_NUM_THREADS`.
    pub num_threads: Option<usize>,
    /// `OMP_THREAD_LIMIT`.
    pub thread_limit: Option<usize>,
    /// `OMP_MAX_TASK_PRIORITY`.
    pub max_task_priority: Option<u32>,
    /// `OMP_PROC_BIND`.
    pub proc_bind: Option<ProcBind>,
    /// `OMP_PLACES`.
    pub places: Option<Places>,
    /// `OMP_PLACES` as written (blanks around it trimmed), when the variable gave the places:
    /// what the errors found when the places are resolved against the machine quote.
    pub places_text: Option<String>,
    /// `OMP_STACKSIZE`, in bytes.
    pub stack_size: Option<usize>,
    /// `NUMATASK_SCHEDULER`.
    pub scheduler: Option<SchedulerKind>,
    /// `OMP_DISPLAY_ENV`.
    pub display_env: Option<DisplayEnv>,
    /// `NUMATASK_VICINITY`: `Some(None)` for `all`.
    pub vicinity: Option<Option<u32>>,
    /// `NUMATASK_EVEN_TOLERANCE`.
    pub even_tolerance: Option<f64>,
    /// `OMP_WAIT_POLICY`.
    pub wait_policy: Option<WaitPolicy>,
    /// `NUMATASK_TRACE`, or [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace).
    pub trace: Option<PathBuf>,
    /// Whether `trace` came from `NUMATASK_TRACE` (the error naming a file that cannot be
    /// created says so, and a second runtime of the process numbers its file).
    pub trace_from_env: bool,
    /// [`RuntimeBuilder::trace_summary`](crate::RuntimeBuilder::trace_summary) (no variable).
    pub trace_summary: Option<bool>,
    /// [`RuntimeBuilder::deque_capacity`](crate::RuntimeBuilder::deque_capacity) (no variable).
    pub deque_capacity: Option<usize>,
    /// Whether the environment was read ([`from_env`](Self::from_env),
    /// [`from_lookup`](Self::from_lookup)): if not, a runtime variable set in the environment
    /// goes unread, and starting the runtime says so.
    pub from_env: bool,
}

impl Config {
    /// Reads the process environment, each variable once. `OMP_DATA_DISTRIBUTION`, the
    /// allocator's, is checked by the allocator's own parser
    /// ([`Distribution::parse_env_value`]), so that a bad value is refused when the runtime
    /// starts rather than at the first allocation.
    pub fn from_env() -> Result<Self, BuildError> {
        for var in ENV_VARS {
            if let Some(value) = std::env::var_os(var)
                && value.to_str().is_none()
            {
                return Err(BuildError::InvalidEnv {
                    var,
                    value: value.to_string_lossy().into_owned(),
                    expected: "a UTF-8 value",
                });
            }
        }
        let mut config = Self::from_lookup(|var| std::env::var(var).ok())?;
        // A file name need not be UTF-8.
        config.trace = crate::trace::Tracer::path_from_env();
        config.trace_from_env = config.trace.is_some();
        Ok(config)
    }

    /// Reads the variables through `lookup` (which returns a variable's value, or `None` when
    /// it is unset): the environment without touching the process's, for tests and embedding.
    ///
    /// ```
    /// use numatask_sched::config::Config;
    /// let config = Config::from_lookup(|var| match var {
    ///     "OMP_NUM_THREADS" => Some("4,2".into()),
    ///     "OMP_STACKSIZE" => Some("16M".into()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(config.num_threads, Some(4));
    /// assert_eq!(config.stack_size, Some(16 << 20));
    /// assert_eq!(config.proc_bind, None);
    ///
    /// let err = Config::from_lookup(|var| (var == "OMP_NUM_THREADS").then(|| "zero".into()))
    ///     .unwrap_err();
    /// assert!(err.to_string().starts_with("OMP_NUM_THREADS='zero': expected a number of workers"));
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, BuildError> {
        let config = Self::read(&lookup)?;
        Distribution::parse_env_value(lookup(DISTRIBUTION_ENV).map(Into::into))
            .map_err(distribution_error)?;
        Ok(config)
    }

    /// The runtime's variables through `lookup` (not the allocator's).
    fn read(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, BuildError> {
        let get = |var: &str| lookup(var).filter(|v| !trim_blanks(v).is_empty());
        let thread_limit = get(THREAD_LIMIT_ENV)
            .map(|v| parse_thread_limit(&v))
            .transpose()?;
        let trace = get(crate::trace::TRACE_ENV).map(PathBuf::from);
        Ok(Config {
            // More than the most workers a runtime starts is accepted when the thread limit
            // brings it within (as OpenMP would start the limit's number).
            num_threads: get(NUM_THREADS_ENV)
                .map(|v| match thread_limit {
                    Some(limit @ ..=MAX_NUM_THREADS) => {
                        parse_num_threads_uncapped(&v).map(|n| n.min(limit))
                    }
                    _ => parse_num_threads(&v),
                })
                .transpose()?,
            thread_limit,
            max_task_priority: get(MAX_TASK_PRIORITY_ENV)
                .map(|v| parse_max_task_priority(&v))
                .transpose()?,
            proc_bind: get(PROC_BIND_ENV)
                .map(|v| parse_proc_bind(&v))
                .transpose()?,
            places: get(PLACES_ENV).map(|v| parse_places(&v)).transpose()?,
            places_text: get(PLACES_ENV).map(|v| trim_blanks(&v).to_owned()),
            stack_size: get(STACKSIZE_ENV)
                .map(|v| parse_stack_size(&v))
                .transpose()?,
            scheduler: get(SCHEDULER_ENV)
                .map(|v| {
                    v.parse::<SchedulerKind>()
                        .map_err(|_| invalid(SCHEDULER_ENV, &v, SCHEDULER_EXPECTED))
                })
                .transpose()?,
            display_env: get(DISPLAY_ENV_ENV).map(|v| v.parse()).transpose()?,
            vicinity: get(VICINITY_ENV).map(|v| parse_vicinity(&v)).transpose()?,
            even_tolerance: get(EVEN_TOLERANCE_ENV)
                .map(|v| parse_even_tolerance(&v))
                .transpose()?,
            wait_policy: get(WAIT_POLICY_ENV).map(|v| v.parse()).transpose()?,
            trace_from_env: trace.is_some(),
            trace,
            trace_summary: None,
            deque_capacity: None,
            from_env: true,
        })
    }
}

/// The allocator's refusal of `OMP_DATA_DISTRIBUTION`, as this crate reports a variable.
fn distribution_error(e: numatask_alloc::AllocError) -> BuildError {
    match e {
        numatask_alloc::AllocError::InvalidEnv { var, value, .. } => {
            invalid(var, &value, DISTRIBUTION_EXPECTED)
        }
        other => BuildError::Alloc(other),
    }
}

fn invalid(var: &'static str, value: &str, expected: &'static str) -> BuildError {
    BuildError::InvalidEnv {
        var,
        value: value.to_owned(),
        expected,
    }
}

/// Parses an `OMP_NUM_THREADS` value: a positive integer, or a comma-separated list of them
/// (OpenMP's per-nesting-level list) of which the first is returned.
pub fn parse_num_threads(value: &str) -> Result<usize, BuildError> {
    match parse_num_threads_uncapped(value)? {
        n @ ..=MAX_NUM_THREADS => Ok(n),
        _ => Err(invalid(NUM_THREADS_ENV, value, NUM_THREADS_TOO_MANY)),
    }
}

/// [`parse_num_threads`] without the cap of [`MAX_NUM_THREADS`] (for a count that
/// `OMP_THREAD_LIMIT` brings within it).
fn parse_num_threads_uncapped(value: &str) -> Result<usize, BuildError> {
    let err = || invalid(NUM_THREADS_ENV, value, NUM_THREADS_EXPECTED);
    let mut items = value
        .split(',')
        .map(|item| match trim_blanks(item).parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(err()),
        });
    // The first item is this runtime's worker count; the others (the counts of nested
    // levels, which numatask does not start) need only be well formed, as in libgomp.
    let first = items.next().unwrap_or_else(|| Err(err()))?;
    items.try_for_each(|item| item.map(drop))?;
    Ok(first)
}

/// Parses an `OMP_THREAD_LIMIT` value: a positive integer of at most `u64::MAX`. A limit
/// above [`MAX_NUM_THREADS`] is accepted and limits nothing.
///
/// ```
/// use numatask_sched::config::parse_thread_limit;
/// assert_eq!(parse_thread_limit(" 8 "), Ok(8));
/// assert_eq!(parse_thread_limit("100000"), Ok(100_000));
/// assert!(parse_thread_limit("0").unwrap_err().to_string().starts_with("OMP_THREAD_LIMIT='0'"));
/// ```
pub fn parse_thread_limit(value: &str) -> Result<usize, BuildError> {
    match trim_blanks(value).parse::<u64>() {
        // Beyond usize (a 32-bit target), as far beyond MAX_NUM_THREADS as u64::MAX is.
        Ok(n) if n > 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(invalid(THREAD_LIMIT_ENV, value, THREAD_LIMIT_EXPECTED)),
    }
}

/// Parses an `OMP_MAX_TASK_PRIORITY` value: a non-negative integer of at most
/// [`MAX_MAX_TASK_PRIORITY`].
///
/// ```
/// use numatask_sched::config::parse_max_task_priority;
/// assert_eq!(parse_max_task_priority(" 3 "), Ok(3));
/// assert_eq!(parse_max_task_priority("0"), Ok(0));
/// assert!(parse_max_task_priority("-1").is_err());
/// // Up to the largest C int, as OpenMP's `omp_get_max_task_priority` returns one.
/// assert_eq!(parse_max_task_priority("2147483647"), Ok(2_147_483_647));
/// let err = parse_max_task_priority("2147483648").unwrap_err().to_string();
/// assert!(err.starts_with("OMP_MAX_TASK_PRIORITY='2147483648'"), "{err}");
/// ```
pub fn parse_max_task_priority(value: &str) -> Result<u32, BuildError> {
    match trim_blanks(value).parse::<u32>() {
        Ok(n) if n <= MAX_MAX_TASK_PRIORITY => Ok(n),
        _ => Err(invalid(
            MAX_TASK_PRIORITY_ENV,
            value,
            MAX_TASK_PRIORITY_EXPECTED,
        )),
    }
}

/// Parses a `NUMATASK_VICINITY` value: an OS distance (`Some`), or `all` (`None`: no limit).
///
/// ```
/// use numatask_sched::config::parse_vicinity;
/// assert_eq!(parse_vicinity("16"), Ok(Some(16)));
/// assert_eq!(parse_vicinity(" ALL "), Ok(None));
/// assert!(parse_vicinity("near").unwrap_err().to_string().starts_with("NUMATASK_VICINITY='near'"));
/// ```
pub fn parse_vicinity(value: &str) -> Result<Option<u32>, BuildError> {
    let v = trim_blanks(value);
    if v.eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    match v.parse::<u32>() {
        Ok(d) if d >= MIN_VICINITY => Ok(Some(d)),
        _ => Err(invalid(VICINITY_ENV, value, VICINITY_EXPECTED)),
    }
}

/// Parses a `NUMATASK_EVEN_TOLERANCE` value: a number from 0 to
/// [`MAX_EVEN_TOLERANCE`] (a decimal, as `0.1`, `.25` or `1e-2`).
///
/// ```
/// use numatask_sched::config::parse_even_tolerance;
/// assert_eq!(parse_even_tolerance(" 0.25 "), Ok(0.25));
/// assert_eq!(parse_even_tolerance("0"), Ok(0.0));
/// let err = parse_even_tolerance("-0.1").unwrap_err().to_string();
/// assert!(err.starts_with("NUMATASK_EVEN_TOLERANCE='-0.1': expected a number from 0 to 100"), "{err}");
/// ```
pub fn parse_even_tolerance(value: &str) -> Result<f64, BuildError> {
    match trim_blanks(value).parse::<f64>() {
        // `+ 0.0`: "-0" is 0.
        Ok(t) if (0.0..=MAX_EVEN_TOLERANCE).contains(&t) => Ok(t + 0.0),
        _ => Err(invalid(EVEN_TOLERANCE_ENV, value, EVEN_TOLERANCE_EXPECTED)),
    }
}

/// How workers are bound to places (`OMP_PROC_BIND`). The places are those of
/// [`Places`] (by default the cores the process may run on,
/// [`Topology::usable_cores`](numatask_alloc::Topology::usable_cores), numbered node by
/// node); with `T` workers and `n` places (more workers than places: runs of consecutive
/// workers share each place, worker `i` on place `i * n / T`, under every policy but
/// `Primary`):
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcBind {
    /// `false`: workers are not pinned (each still counts as on the node of the place `Close`
    /// would give it, for the scheduler).
    False,
    /// `true` (the default): as `Close`.
    True,
    /// `close`: worker `i` on place `i`: workers fill one node before the next.
    Close,
    /// `spread`: worker `i` on place `i * n / T`: fewer workers than places spread evenly
    /// over the places, and so over every node.
    Spread,
    /// `primary` (`master` in OpenMP before 5.1): every worker on the place of the core the
    /// thread that starts the runtime runs on at that moment (bind that thread first for a
    /// core of your choice); placed as `Close` when that core cannot be told. On a synthetic
    /// topology, the first place.
    Primary,
}

impl ProcBind {
    /// Whether workers are pinned.
    pub fn pins(self) -> bool {
        self != ProcBind::False
    }

    /// The index among the `n` places of worker `index` of `workers`, for the placements
    /// that depend only on the worker (not `Primary`). With more workers than places, every
    /// policy puts runs of consecutive workers on each place, as OpenMP says (`close` and
    /// `spread` alike): worker `i` on place `i * n / workers`.
    pub fn place_of(self, index: usize, workers: usize, n: usize) -> usize {
        match self {
            _ if workers > n => index * n / workers.max(1),
            ProcBind::Spread => index * n / workers.max(1),
            _ => index,
        }
    }
}

impl fmt::Display for ProcBind {
    /// As OpenMP runtimes print it in `OMP_DISPLAY_ENV`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProcBind::False => "FALSE",
            ProcBind::True => "TRUE",
            ProcBind::Close => "CLOSE",
            ProcBind::Spread => "SPREAD",
            ProcBind::Primary => "PRIMARY",
        })
    }
}

impl FromStr for ProcBind {
    type Err = BuildError;

    fn from_str(s: &str) -> Result<Self, BuildError> {
        parse_proc_bind(s)
    }
}

impl From<bool> for ProcBind {
    /// `true`: [`ProcBind::True`]; `false`: [`ProcBind::False`] (as `OMP_PROC_BIND` reads).
    fn from(pin: bool) -> Self {
        if pin { ProcBind::True } else { ProcBind::False }
    }
}

/// Parses an `OMP_PROC_BIND` value (case-insensitive): `true`, `false`, or a comma-separated
/// list of `close`, `spread` and `primary` (or `master`), one policy per nesting level in
/// OpenMP, of which the first counts: numatask has one level. As OpenMP says, `true` and
/// `false` stand alone, and every item of a list must be a policy.
///
/// ```
/// use numatask_sched::config::{ProcBind, parse_proc_bind};
/// assert_eq!(parse_proc_bind("Spread,close"), Ok(ProcBind::Spread));
/// assert_eq!(parse_proc_bind("master"), Ok(ProcBind::Primary));
/// assert!(parse_proc_bind("spread,bogus").is_err());
/// assert!(parse_proc_bind("false,spread").is_err());
/// ```
pub fn parse_proc_bind(value: &str) -> Result<ProcBind, BuildError> {
    let err = || invalid(PROC_BIND_ENV, value, PROC_BIND_EXPECTED);
    let policy = |item: &str| match trim_blanks(item).to_ascii_lowercase().as_str() {
        "close" => Some(ProcBind::Close),
        "spread" => Some(ProcBind::Spread),
        "primary" | "master" => Some(ProcBind::Primary),
        _ => None,
    };
    if !value.contains(',') {
        return match trim_blanks(value).to_ascii_lowercase().as_str() {
            "true" => Ok(ProcBind::True),
            "false" => Ok(ProcBind::False),
            _ => policy(value).ok_or_else(err),
        };
    }
    let mut items = value.split(',').map(policy);
    let first = items.next().flatten().ok_or_else(err)?;
    match items.all(|p| p.is_some()) {
        true => Ok(first),
        false => Err(err()),
    }
}

/// The places workers are bound to (`OMP_PLACES`), with [`ProcBind`] choosing each
/// worker's place. A place is a set of processing units (hardware threads) a worker may run
/// on; a runtime resolves these against its topology and the process's CPU binding when it
/// starts (an explicit processor the topology lacks is an error then).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Places {
    /// `cores` (the default): one place per core the process may run on. A count keeps the
    /// first places only (`cores(8)`), here and for the other abstract names.
    #[default]
    Cores,
    /// `cores(n)`.
    CoresN(usize),
    /// `threads`: one place per hardware thread the process may run on; the default worker
    /// count becomes one per hardware thread.
    Threads,
    /// `threads(n)`.
    ThreadsN(usize),
    /// `numa_domains`: one place per NUMA node, holding its cores the process may run on:
    /// workers stay on their node and the OS moves them among its cores.
    NumaDomains,
    /// `numa_domains(n)`.
    NumaDomainsN(usize),
    /// `sockets`: one place per package, holding its cores the process may run on.
    Sockets,
    /// `sockets(n)`.
    SocketsN(usize),
    /// `ll_caches`: one place per last-level cache, holding the cores that share it (the
    /// process may run on): on a machine whose nodes hold several L3 caches (chiplets), finer
    /// than `numa_domains`.
    LlCaches,
    /// `ll_caches(n)`.
    LlCachesN(usize),
    /// An explicit list: each place a set of OS processor numbers, as OpenMP writes them.
    /// The default worker count is one per core the places hold, and at least one per place;
    /// a place spanning nodes counts as on the node holding most of its processors.
    List(Vec<Vec<usize>>),
}

impl Places {
    /// The count of an abstract name (`cores(8)`: 8), if any.
    pub fn count(&self) -> Option<usize> {
        match *self {
            Places::CoresN(n)
            | Places::ThreadsN(n)
            | Places::NumaDomainsN(n)
            | Places::SocketsN(n)
            | Places::LlCachesN(n) => Some(n),
            _ => None,
        }
    }
}

impl FromStr for Places {
    type Err = BuildError;

    fn from_str(s: &str) -> Result<Self, BuildError> {
        parse_places(s)
    }
}

impl fmt::Display for Places {
    /// As written in `OMP_PLACES` (an explicit list with every place's numbers spelled out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Places::Cores => f.write_str("cores"),
            Places::CoresN(n) => write!(f, "cores({n})"),
            Places::Threads => f.write_str("threads"),
            Places::ThreadsN(n) => write!(f, "threads({n})"),
            Places::NumaDomains => f.write_str("numa_domains"),
            Places::NumaDomainsN(n) => write!(f, "numa_domains({n})"),
            Places::Sockets => f.write_str("sockets"),
            Places::SocketsN(n) => write!(f, "sockets({n})"),
            Places::LlCaches => f.write_str("ll_caches"),
            Places::LlCachesN(n) => write!(f, "ll_caches({n})"),
            Places::List(places) => write_place_list(f, places),
        }
    }
}

/// Writes places as OpenMP runtimes list them (libgomp's form): `{0:2},{4:4},{0:3,8:3},{5}`,
/// each run of two or more consecutive numbers within a place as `start:length`.
pub fn write_place_list(f: &mut impl fmt::Write, places: &[Vec<usize>]) -> fmt::Result {
    for (i, place) in places.iter().enumerate() {
        if i > 0 {
            f.write_char(',')?;
        }
        f.write_char('{')?;
        let mut rest = place.as_slice();
        let mut first = true;
        while let [start, ..] = rest {
            // The run of consecutive numbers that `rest` starts with.
            let len = 1 + rest
                .windows(2)
                .take_while(|w| w[0].checked_add(1) == Some(w[1]))
                .count();
            if !std::mem::take(&mut first) {
                f.write_char(',')?;
            }
            match len {
                1 => write!(f, "{start}")?,
                _ => write!(f, "{start}:{len}")?,
            }
            rest = &rest[len..];
        }
        f.write_char('}')?;
    }
    Ok(())
}

/// The bound on an explicit `OMP_PLACES` list: its processor numbers lie below it, and it
/// names fewer in all (repeats counted): far beyond any machine, small enough that a
/// mistyped length cannot exhaust memory.
const MAX_PLACE_PROCESSORS: usize = 1 << 16;

/// A count of abstract places: a whole number, one too large for a `usize` counting as
/// `usize::MAX`, since a count beyond the machine's places means all of them anyway
/// (`cores(8)` on 2 cores is both cores).
fn parse_count(n: &str) -> Option<usize> {
    match n.parse::<usize>() {
        Ok(n) => Some(n),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Some(usize::MAX),
        Err(_) => None,
    }
}

/// Parses an `OMP_PLACES` value (see [`Places`]): an abstract name with an optional count,
/// or an explicit list. In a list, `{0,1,2,3}` and `{0:4}` are the same place (an interval
/// `start:length[:stride]`, the stride 1 by default and possibly negative), a bare number is
/// a place of one processor (`0,1` is `{0},{1}`), and a place followed by `:count[:stride]`
/// is repeated `count` times, each copy's numbers moved on by `stride` (1 by default, as
/// OpenMP says). Blanks may stand between the parts, not within a number or a name.
///
/// ```
/// use numatask_sched::config::{Places, parse_places};
/// assert_eq!(parse_places("Cores(4)"), Ok(Places::CoresN(4)));
/// assert_eq!(
///     parse_places("{0:2}:3:4"),
///     Ok(Places::List(vec![vec![0, 1], vec![4, 5], vec![8, 9]]))
/// );
/// assert_eq!(parse_places("0:3"), parse_places("{0},{1},{2}"));
/// assert_eq!(parse_places("Sockets"), Ok(Places::Sockets));
/// assert!(parse_places("chiplets").unwrap_err().to_string().starts_with("OMP_PLACES='chiplets'"));
/// ```
pub fn parse_places(value: &str) -> Result<Places, BuildError> {
    let err = |expected| invalid(PLACES_ENV, value, expected);
    let trimmed = trim_blanks(value);
    let starts_list = trimmed.starts_with(|c: char| c == '{' || c == '+' || c.is_ascii_digit());
    if !starts_list {
        let lower = trimmed.to_ascii_lowercase();
        let (name, count) = match lower.split_once('(') {
            Some((name, rest)) => {
                let n: usize = rest
                    .trim_end_matches(is_blank)
                    .strip_suffix(')')
                    .and_then(|n| parse_count(trim_blanks(n)))
                    .ok_or_else(|| err(PLACES_EXPECTED))?;
                if n == 0 {
                    return Err(err(PLACES_COUNT_EXPECTED));
                }
                (name.trim_end_matches(is_blank), Some(n))
            }
            None => (lower.as_str(), None),
        };
        return match (name, count) {
            ("cores", None) => Ok(Places::Cores),
            ("cores", Some(n)) => Ok(Places::CoresN(n)),
            ("threads", None) => Ok(Places::Threads),
            ("threads", Some(n)) => Ok(Places::ThreadsN(n)),
            ("numa_domains", None) => Ok(Places::NumaDomains),
            ("numa_domains", Some(n)) => Ok(Places::NumaDomainsN(n)),
            ("sockets", None) => Ok(Places::Sockets),
            ("sockets", Some(n)) => Ok(Places::SocketsN(n)),
            ("ll_caches", None) => Ok(Places::LlCaches),
            ("ll_caches", Some(n)) => Ok(Places::LlCachesN(n)),
            _ => Err(err(PLACES_EXPECTED)),
        };
    }
    let mut parser = PlaceParser {
        text: trimmed.as_bytes(),
        at: 0,
        named: 0,
    };
    parser.place_list().map(Places::List).map_err(err)
}

/// A recursive-descent reader of an explicit `OMP_PLACES` list. Its errors are what the
/// message says is expected.
struct PlaceParser<'a> {
    text: &'a [u8],
    at: usize,
    /// Processor numbers in the places made so far (bounded by [`MAX_PLACE_PROCESSORS`]).
    named: usize,
}

type Parsed<T> = Result<T, &'static str>;

impl PlaceParser<'_> {
    fn place_list(&mut self) -> Parsed<Vec<Vec<usize>>> {
        let mut places = Vec::new();
        loop {
            let place = self.place()?;
            // A place interval: `place:count[:stride]`.
            let (count, stride) = self.interval_tail()?;
            for k in 0..count {
                let shift = stride.checked_mul(k as i64).ok_or(PLACES_LIMIT_EXPECTED)?;
                self.named += place.len();
                if self.named > MAX_PLACE_PROCESSORS {
                    return Err(PLACES_LIMIT_EXPECTED);
                }
                let moved = place
                    .iter()
                    .map(|&pu| number_at(pu, shift))
                    .collect::<Parsed<Vec<usize>>>()?;
                places.push(moved);
            }
            if !self.eat(b',') {
                break;
            }
        }
        self.skip_blanks();
        if self.at == self.text.len() {
            Ok(places)
        } else {
            Err(PLACES_EXPECTED)
        }
    }

    /// `{res,res,...}` where `res` is `start[:length[:stride]]`, or a bare number; sorted,
    /// without repeats.
    fn place(&mut self) -> Parsed<Vec<usize>> {
        if !self.eat(b'{') {
            return Ok(vec![self.unsigned()?]);
        }
        let mut pus = Vec::new();
        loop {
            let start = self.unsigned()?;
            let (length, stride) = self.interval_tail()?;
            if pus.len() + length > MAX_PLACE_PROCESSORS {
                return Err(PLACES_LIMIT_EXPECTED);
            }
            for k in 0..length {
                let shift = stride.checked_mul(k as i64).ok_or(PLACES_LIMIT_EXPECTED)?;
                pus.push(number_at(start, shift)?);
            }
            if !self.eat(b',') {
                break;
            }
        }
        if !self.eat(b'}') {
            return Err(PLACES_EXPECTED);
        }
        pus.sort_unstable();
        pus.dedup();
        Ok(pus)
    }

    /// An optional `:length[:stride]`: `(1, 1)` when absent. The length is at least 1.
    fn interval_tail(&mut self) -> Parsed<(usize, i64)> {
        if !self.eat(b':') {
            return Ok((1, 1));
        }
        let length = self.unsigned()?;
        if length == 0 {
            return Err(PLACES_COUNT_EXPECTED);
        }
        let stride = if self.eat(b':') { self.signed()? } else { 1 };
        Ok((length, stride))
    }

    fn skip_blanks(&mut self) {
        while self
            .text
            .get(self.at)
            .is_some_and(|&b| is_blank(char::from(b)))
        {
            self.at += 1;
        }
    }

    /// The next token, after blanks, if it is `byte`.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_blanks();
        let hit = self.text.get(self.at) == Some(&byte);
        self.at += usize::from(hit);
        hit
    }

    /// A number below [`MAX_PLACE_PROCESSORS`], after blanks and an optional `+`.
    fn unsigned(&mut self) -> Parsed<usize> {
        self.eat(b'+');
        self.digits()
    }

    /// A number with an optional sign, `-` or `+`.
    fn signed(&mut self) -> Parsed<i64> {
        if self.eat(b'-') {
            Ok(-(self.digits()? as i64))
        } else {
            Ok(self.unsigned()? as i64)
        }
    }

    /// Digits, after blanks: a number below [`MAX_PLACE_PROCESSORS`].
    fn digits(&mut self) -> Parsed<usize> {
        self.skip_blanks();
        let start = self.at;
        while self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        if start == self.at {
            return Err(PLACES_EXPECTED);
        }
        let digits =
            std::str::from_utf8(&self.text[start..self.at]).map_err(|_| PLACES_EXPECTED)?;
        match digits.parse::<usize>() {
            Ok(n) if n < MAX_PLACE_PROCESSORS => Ok(n),
            _ => Err(PLACES_LIMIT_EXPECTED),
        }
    }
}

/// `base + shift` as a processor number: an error below 0 or from [`MAX_PLACE_PROCESSORS`].
fn number_at(base: usize, shift: i64) -> Parsed<usize> {
    let n = (base as i64)
        .checked_add(shift)
        .ok_or(PLACES_LIMIT_EXPECTED)?;
    match usize::try_from(n) {
        Ok(n) if n < MAX_PLACE_PROCESSORS => Ok(n),
        Ok(_) => Err(PLACES_LIMIT_EXPECTED),
        Err(_) => Err(PLACES_NEGATIVE_EXPECTED),
    }
}

/// Parses an `OMP_STACKSIZE` value into bytes: `<number>[B|K|M|G]`, blanks allowed between the
/// number and the unit, case-insensitive, no unit meaning KiB (the OpenMP rule).
pub fn parse_stack_size(value: &str) -> Result<usize, BuildError> {
    let err = || invalid(STACKSIZE_ENV, value, STACKSIZE_EXPECTED);
    let s = trim_blanks(value);
    // A sign, as C's `strtoul` (which libgomp uses) takes it.
    let s = s.strip_prefix('+').unwrap_or(s);
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(digits);
    let number: usize = number.parse().map_err(|_| err())?;
    let shift = match trim_blanks(unit).to_ascii_lowercase().as_str() {
        "b" => 0,
        "" | "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => return Err(err()),
    };
    let bytes = number.checked_mul(1 << shift).ok_or_else(err)?;
    if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&bytes) {
        return Err(err());
    }
    Ok(bytes)
}

/// Formats a byte count the way `OMP_STACKSIZE` is written, in the largest unit that divides
/// it (`2G`, `16M`, `2047K`, `100B`).
pub fn format_size(bytes: usize) -> String {
    if bytes != 0 && bytes.is_multiple_of(1 << 30) {
        format!("{}G", bytes >> 30)
    } else if bytes != 0 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else if bytes.is_multiple_of(1 << 10) {
        format!("{}K", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_count_beyond_the_cap_is_accepted_when_the_thread_limit_brings_it_within() {
        let env = |vars: &'static [(&str, &str)]| {
            Config::from_lookup(|var| {
                vars.iter()
                    .find(|(v, _)| *v == var)
                    .map(|(_, value)| value.to_string())
            })
        };
        let capped = env(&[(NUM_THREADS_ENV, "5000"), (THREAD_LIMIT_ENV, "3")]).unwrap();
        assert_eq!(
            (capped.num_threads, capped.thread_limit),
            (Some(3), Some(3))
        );
        for vars in [
            &[(NUM_THREADS_ENV, "5000")][..],
            &[(NUM_THREADS_ENV, "5000"), (THREAD_LIMIT_ENV, "5000")][..],
        ] {
            let vars: &'static [(&str, &str)] = vars;
            let err = env(vars).unwrap_err().to_string();
            assert!(err.starts_with("OMP_NUM_THREADS='5000': expected"), "{err}");
        }
    }

    #[test]
    fn num_threads_takes_the_first_of_a_list() {
        assert_eq!(parse_num_threads("8"), Ok(8));
        assert_eq!(parse_num_threads(" 4 , 2"), Ok(4));
        assert_eq!(parse_num_threads("4096"), Ok(4096));
        assert_eq!(parse_num_threads("+4"), Ok(4));
        // Only the first item is this runtime's count: the cap is not the others' business.
        assert_eq!(parse_num_threads("4,5000"), Ok(4));
        assert_eq!(
            parse_num_threads("\x0b4\t"),
            Ok(4),
            "C's blanks around the value"
        );
        for bad in ["0", "-1", "four", "4,", "4,0", "", "1.5", "4\u{a0}"] {
            let err = parse_num_threads(bad).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("OMP_NUM_THREADS='{bad}': expected {NUM_THREADS_EXPECTED}")
            );
        }
        // A well-formed count that is too large says what would allow it.
        for bad in ["4097", "100000", "5000,4"] {
            let err = parse_num_threads(bad).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!(
                    "OMP_NUM_THREADS='{bad}': expected a number of workers from 1 to 4096; \
                     a larger count only with an OMP_THREAD_LIMIT"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn stack_size_follows_the_openmp_units() {
        assert_eq!(parse_stack_size("512K"), Ok(512 << 10));
        assert_eq!(parse_stack_size("16M"), Ok(16 << 20));
        assert_eq!(parse_stack_size("16 m"), Ok(16 << 20));
        assert_eq!(parse_stack_size("1G"), Ok(1 << 30));
        assert_eq!(parse_stack_size("65536B"), Ok(65536));
        assert_eq!(parse_stack_size("100"), Ok(100 << 10));
        assert_eq!(parse_stack_size("16G"), Ok(MAX_STACK_SIZE));
        assert_eq!(parse_stack_size(" +2M "), Ok(2 << 20));
        for bad in [
            "+-2M",
            "++2M",
            "",
            "K",
            "12Q",
            "4K",
            "-5M",
            "99999999999999999999G",
            "1.5M",
            "17G",
        ] {
            let err = parse_stack_size(bad).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with(&format!("OMP_STACKSIZE='{bad}': expected a size")),
                "{err}"
            );
        }
    }

    #[test]
    fn proc_bind_accepts_the_openmp_policies() {
        assert_eq!(parse_proc_bind("TRUE"), Ok(ProcBind::True));
        assert_eq!(parse_proc_bind("close,spread"), Ok(ProcBind::Close));
        assert_eq!(parse_proc_bind(" spread "), Ok(ProcBind::Spread));
        assert_eq!(parse_proc_bind("Primary"), Ok(ProcBind::Primary));
        assert_eq!(parse_proc_bind("master"), Ok(ProcBind::Primary));
        assert_eq!(parse_proc_bind("false"), Ok(ProcBind::False));
        assert_eq!(
            parse_proc_bind("primary, Spread ,close"),
            Ok(ProcBind::Primary)
        );
        for bad in [
            "yes",
            "1",
            "cores",
            "",
            "spread,bogus",
            "false,spread",
            "close,true",
            "close,",
        ] {
            let err = parse_proc_bind(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "OMP_PROC_BIND='{bad}': expected true, false, or a comma-separated list of \
                     close, spread and primary (or master)"
                )
            );
        }
    }

    #[test]
    fn spread_places_few_workers_evenly_and_many_in_runs() {
        let places = |bind: ProcBind, workers, n| -> Vec<usize> {
            (0..workers).map(|i| bind.place_of(i, workers, n)).collect()
        };
        assert_eq!(places(ProcBind::Spread, 4, 16), [0, 4, 8, 12]);
        assert_eq!(places(ProcBind::Spread, 3, 8), [0, 2, 5]);
        assert_eq!(places(ProcBind::Spread, 6, 3), [0, 0, 1, 1, 2, 2]);
        assert_eq!(places(ProcBind::Close, 4, 16), [0, 1, 2, 3]);
        assert_eq!(
            places(ProcBind::True, 5, 3),
            [0, 0, 1, 1, 2],
            "runs, as OpenMP says"
        );
        assert_eq!(places(ProcBind::Close, 8, 2), [0, 0, 0, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn blank_variables_count_as_unset() {
        let env = Config::from_lookup(|_| Some("  ".into())).unwrap();
        assert_eq!(
            env,
            Config {
                from_env: true,
                ..Config::default()
            }
        );
    }

    #[test]
    fn every_variable_is_named_in_its_error() {
        for var in ENV_VARS {
            let err = Config::from_lookup(|v| (v == var).then(|| "bogus".into())).expect_err(var);
            match err {
                BuildError::InvalidEnv {
                    var: named, value, ..
                } => {
                    assert_eq!(named, var);
                    assert_eq!(value, "bogus");
                }
                other => panic!("{var}: unexpected error {other:?}"),
            }
        }
    }

    #[test]
    fn display_env_and_scheduler_parse_case_insensitively() {
        let env = Config::from_lookup(|v| match v {
            DISPLAY_ENV_ENV => Some("Verbose".into()),
            SCHEDULER_ENV => Some("WS".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(env.display_env, Some(DisplayEnv::Verbose));
        assert_eq!(env.scheduler, Some(SchedulerKind::WorkStealing));
        let env = Config::from_lookup(|v| (v == SCHEDULER_ENV).then(|| "Locality".into()));
        assert_eq!(env.unwrap().scheduler, Some(SchedulerKind::Locality));
        // libomp's words for true and false.
        for (word, display) in [
            ("1", DisplayEnv::True),
            ("On", DisplayEnv::True),
            ("no", DisplayEnv::False),
            ("0", DisplayEnv::False),
        ] {
            assert_eq!(word.parse::<DisplayEnv>().unwrap(), display, "{word}");
        }
        let err = "2".parse::<DisplayEnv>().unwrap_err().to_string();
        assert!(
            err.contains("OMP_DISPLAY_ENV='2'") && err.contains("verbose"),
            "{err}"
        );
    }

    #[test]
    fn the_even_tolerance_is_a_number_from_0_to_100() {
        let env = Config::from_lookup(|v| (v == EVEN_TOLERANCE_ENV).then(|| " 0.25 ".into()));
        assert_eq!(env.unwrap().even_tolerance, Some(0.25));
        for (text, value) in [
            ("0", 0.0),
            ("-0", 0.0),
            ("1e-2", 0.01),
            (".5", 0.5),
            ("100", 100.0),
        ] {
            let t = parse_even_tolerance(text).unwrap();
            assert_eq!(t, value, "{text}");
            assert!(t.is_sign_positive(), "{text}");
        }
        for bad in ["-0.1", "100.01", "nan", "inf", "0.1.2", "tenth"] {
            let err = parse_even_tolerance(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("NUMATASK_EVEN_TOLERANCE='{bad}': expected {EVEN_TOLERANCE_EXPECTED}")
            );
        }
    }

    #[test]
    fn vicinity_is_a_distance_or_all_and_trace_is_a_path() {
        let env = Config::from_lookup(|v| match v {
            VICINITY_ENV => Some(" 16 ".into()),
            crate::trace::TRACE_ENV => Some("out.json".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(env.vicinity, Some(Some(16)));
        assert_eq!(env.trace, Some(PathBuf::from("out.json")));
        assert_eq!(parse_vicinity("all"), Ok(None));
        assert_eq!(parse_vicinity("10"), Ok(Some(10)));
        assert_eq!(parse_vicinity("4294967295"), Ok(Some(u32::MAX)));
        // Beyond u32 too: a number of at least 10, so the message gives the upper bound.
        for bad in [
            "0",
            "9",
            "-3",
            "near",
            "16.5",
            "4294967296",
            "99999999999999999999",
        ] {
            let err = parse_vicinity(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("NUMATASK_VICINITY='{bad}': expected {VICINITY_EXPECTED}")
            );
        }
    }

    #[test]
    fn wait_policy_parses_case_insensitively_and_names_what_it_accepts() {
        let env = Config::from_lookup(|v| (v == WAIT_POLICY_ENV).then(|| " Active ".into()));
        assert_eq!(env.unwrap().wait_policy, Some(WaitPolicy::Active));
        for (text, policy) in [
            ("PASSIVE", WaitPolicy::Passive),
            ("balanced", WaitPolicy::Balanced),
        ] {
            assert_eq!(text.parse::<WaitPolicy>(), Ok(policy));
            // What `OMP_DISPLAY_ENV` prints reads back as the same policy.
            assert_eq!(policy.to_string().parse::<WaitPolicy>(), Ok(policy));
        }
        assert_eq!(
            "spin".parse::<WaitPolicy>().unwrap_err().to_string(),
            "OMP_WAIT_POLICY='spin': expected active, passive or balanced"
        );
    }

    #[test]
    fn places_parse_abstract_names_with_counts_and_explicit_lists() {
        for (text, places) in [
            ("cores", Places::Cores),
            (" Threads ", Places::Threads),
            ("NUMA_DOMAINS", Places::NumaDomains),
            ("cores(8)", Places::CoresN(8)),
            ("threads (2)", Places::ThreadsN(2)),
            ("numa_domains(1)", Places::NumaDomainsN(1)),
            ("sockets", Places::Sockets),
            ("SOCKETS(2)", Places::SocketsN(2)),
            ("ll_caches", Places::LlCaches),
            ("ll_caches (3)", Places::LlCachesN(3)),
            // A count past usize is as many places as there are, like any count past them.
            ("cores(99999999999999999999)", Places::CoresN(usize::MAX)),
            ("{0,1},{2,3}", Places::List(vec![vec![0, 1], vec![2, 3]])),
            ("{0:4}", Places::List(vec![vec![0, 1, 2, 3]])),
            ("{0:3:2}", Places::List(vec![vec![0, 2, 4]])),
            ("{6:3:-2}", Places::List(vec![vec![2, 4, 6]])),
            ("{1,0,1}", Places::List(vec![vec![0, 1]])),
            (
                "{0:2}:3:4, {20}",
                Places::List(vec![vec![0, 1], vec![4, 5], vec![8, 9], vec![20]]),
            ),
            (
                "{0}:4",
                Places::List(vec![vec![0], vec![1], vec![2], vec![3]]),
            ),
            ("{8}:3:-4", Places::List(vec![vec![8], vec![4], vec![0]])),
            // Bare numbers are places of one processor; blanks between the parts.
            ("0,1,2", Places::List(vec![vec![0], vec![1], vec![2]])),
            ("0:3", Places::List(vec![vec![0], vec![1], vec![2]])),
            ("{0}, 1", Places::List(vec![vec![0], vec![1]])),
            (
                " { 0 : 2 } , { 4 } : 2 : 2 ",
                Places::List(vec![vec![0, 1], vec![4], vec![6]]),
            ),
            ("{65535}", Places::List(vec![vec![65535]])),
        ] {
            assert_eq!(parse_places(text), Ok(places.clone()), "{text}");
            // What `OMP_DISPLAY_ENV` prints reads back as the same places.
            assert_eq!(parse_places(&places.to_string()), Ok(places), "{text}");
        }
        assert_eq!(
            Places::List(vec![vec![0, 1, 2, 3], vec![4, 6], vec![7, 8]]).to_string(),
            "{0:4},{4,6},{7:2}"
        );
        // Runs within a place, as libgomp prints them; read back as the same places.
        let runs = Places::List(vec![vec![0, 1, 2, 8, 9, 10, 12], vec![3, 5]]);
        assert_eq!(runs.to_string(), "{0:3,8:3,12},{3,5}");
        assert_eq!(parse_places(&runs.to_string()), Ok(runs));
        // Built in code rather than parsed: no overflow on a number next to the largest.
        assert_eq!(
            Places::List(vec![vec![usize::MAX, 1]]).to_string(),
            format!("{{{},1}}", usize::MAX)
        );
        for bad in [
            "chiplets",
            "l3_caches",
            "cores(",
            "cores(x)",
            "{}",
            "{0",
            "{0:2:x}",
            "{0},",
            "!{0}",
            "{0},!{1}",
            "{1 0}",
            "c o r e s",
            "cores(8",
            "-1",
            "{+-1}",
            "{0:-+1}",
        ] {
            let err = parse_places(bad).expect_err(bad);
            assert_eq!(
                err.to_string(),
                format!("OMP_PLACES='{bad}': expected {PLACES_EXPECTED}"),
            );
        }
        // Well formed, but a count of 0 or an interval reaching below processor 0: the
        // message says so rather than repeating the syntax.
        for (bad, expected) in [
            ("sockets(0)", PLACES_COUNT_EXPECTED),
            ("cores( 0 )", PLACES_COUNT_EXPECTED),
            ("{0:0}", PLACES_COUNT_EXPECTED),
            ("{0}:0", PLACES_COUNT_EXPECTED),
            ("{2:3:-2}", PLACES_NEGATIVE_EXPECTED),
            ("{0}:2:-1", PLACES_NEGATIVE_EXPECTED),
        ] {
            let err = parse_places(bad).expect_err(bad);
            assert_eq!(
                err.to_string(),
                format!("OMP_PLACES='{bad}': expected {expected}")
            );
        }
        // Signs as C's number parsing takes them, and C's blanks (the vertical tab too).
        assert_eq!(parse_places("{+0}:+2:+1"), parse_places("{0},{1}"));
        assert_eq!(parse_places("+0,+1"), parse_places("{0},{1}"));
        assert_eq!(parse_places("{0},\x0b{1}"), parse_places("{0},{1}"));
        // A control character the parser refuses shows in the message.
        assert_eq!(
            parse_places("{0}\x1b{1}").unwrap_err().to_string(),
            format!("OMP_PLACES='{{0}}\\u{{1b}}{{1}}': expected {PLACES_EXPECTED}")
        );
        // Beyond the bound: the message names it.
        for big in [
            "{0:99999999999}",
            "{65535:2}",
            "{65536}",
            "{0:40000}:40000",
            "{0:32769}:2",
            "{0}:65537:0",
            "{0:65537}",
        ] {
            let err = parse_places(big).expect_err(big);
            assert_eq!(
                err.to_string(),
                format!("OMP_PLACES='{big}': expected {PLACES_LIMIT_EXPECTED}"),
            );
        }
        // The bound itself (a failure here would print the whole list: only a bool is shown).
        let at_bound = |text: &str| match parse_places(text) {
            Ok(Places::List(l)) => l.iter().map(Vec::len).sum::<usize>(),
            _ => 0,
        };
        assert_eq!(at_bound("{0:32768}:2"), 65536, "65536 in all");
        assert_eq!(at_bound("{1:65535}"), 65535, "processors 1 to 65535");
    }

    #[test]
    fn thread_limit_is_a_positive_integer_and_says_its_bound() {
        assert_eq!(parse_thread_limit("+4"), Ok(4));
        let max = usize::try_from(u64::MAX).unwrap_or(usize::MAX);
        assert_eq!(parse_thread_limit("18446744073709551615"), Ok(max));
        // A positive integer beyond u64: the message must not just say "a positive integer".
        for bad in [
            "0",
            "-1",
            "1.5",
            "four",
            "18446744073709551616",
            "99999999999999999999",
        ] {
            let err = parse_thread_limit(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("OMP_THREAD_LIMIT='{bad}': expected {THREAD_LIMIT_EXPECTED}")
            );
            assert!(
                err.to_string().contains("at most 18446744073709551615"),
                "{err}"
            );
        }
    }

    #[test]
    fn sizes_format_in_the_largest_exact_unit() {
        assert_eq!(format_size(16 << 30), "16G");
        assert_eq!(format_size(1025 << 20), "1025M");
        assert_eq!(format_size(2 << 20), "2M");
        assert_eq!(format_size(512 << 10), "512K");
        assert_eq!(format_size(1000), "1000B");
    }
}
