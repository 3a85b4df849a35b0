//! Where do the pages go? Allocates with each distribution policy and prints pages per NUMA node,
//! on this machine and on the core paper's 8-node machine (a synthetic preset).
//!
//! ```text
//! cargo run --release --example placement
//! OMP_DATA_DISTRIBUTION=coarse cargo run --release --example placement
//! NUMATASK_TOPOLOGY=preset:opteron6172 cargo run --release --example placement
//! ```
//! It takes no arguments: the environment chooses (`OMP_DATA_DISTRIBUTION` for `omp_malloc`,
//! `NUMATASK_TOPOLOGY` for one topology in place of this machine and the preset).

use std::process::ExitCode;

use numatask::alloc::TOPOLOGY_ENV;
use numatask::alloc::{
    DISTRIBUTION_ENV, Distribution, NodeBytes, Topology, node_bytes, omp_free, omp_malloc,
    omp_malloc_specific, page_size, reset_coarse_counter, resident_nodes,
};

/// Set in the child process that shows the preset.
const CHILD_FLAG: &str = "--preset-child";
const USAGE: &str = "usage: placement (no arguments; the environment chooses)
  OMP_DATA_DISTRIBUTION=standard|fine|coarse: the policy of omp_malloc (default standard)
  NUMATASK_TOPOLOGY=system|preset:opteron6172|synthetic:...|xml:FILE: that topology alone
    (unset: this machine, then the paper's 8-node preset)";
const ALLOCATIONS: usize = 4;
const PAGES: usize = 256;

#[path = "common/sigpipe.rs"]
mod sigpipe;

fn main() -> ExitCode {
    sigpipe::restore_default();
    // Arguments that are not UTF-8 are refused as unknown, not a panic of `std::env::args`.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let is_child = match parse_args(args) {
        Ok(is_child) => is_child,
        Err(e) => {
            eprintln!("placement: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(is_child) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("placement: {e}");
            ExitCode::from(2)
        }
    }
}

/// Whether this is the child process that shows the preset: the one argument accepted.
fn parse_args(args: Vec<String>) -> Result<bool, String> {
    let mut is_child = false;
    for arg in args {
        match arg.as_str() {
            CHILD_FLAG => is_child = true,
            other if other.starts_with('-') => return Err(format!("unknown option '{other}'")),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    Ok(is_child)
}

fn run(is_child: bool) -> Result<(), Box<dyn std::error::Error>> {
    // Fail early and clearly on a bad OMP_DATA_DISTRIBUTION, before printing anything.
    let global = Distribution::from_env()?;
    show(global)?;
    // An empty or blank NUMATASK_TOPOLOGY counts as unset, as every variable does.
    let topology_set =
        std::env::var_os(TOPOLOGY_ENV).is_some_and(|v| !v.to_string_lossy().trim().is_empty());
    if !is_child && !topology_set {
        // The allocator follows one process-wide topology, so the preset runs in a child process.
        println!();
        let status = std::process::Command::new(std::env::current_exe()?)
            .arg(CHILD_FLAG)
            .env(TOPOLOGY_ENV, "preset:opteron6172")
            .status()?;
        if !status.success() {
            return Err(format!("the preset run failed: {status}").into());
        }
    }
    Ok(())
}

fn show(global: Distribution) -> Result<(), Box<dyn std::error::Error>> {
    let topo = Topology::current()?;
    let n = topo.num_nodes();
    println!(
        "== {} ({}): {} NUMA node(s), {} cores, LLC {} KiB, distances {}",
        topo.source(),
        if topo.is_synthetic() {
            "synthetic: placement recorded, not enforced"
        } else {
            "real machine"
        },
        n,
        topo.num_cores(),
        topo.llc_bytes() / 1024,
        topo.distance_source()
    );
    print!("{:<46}", "allocation (256 pages each), pages on");
    for node in 0..n {
        print!("{:>6}", format!("n{node}"));
    }
    println!("{:>9}{:>14}", "unknown", "kernel agrees");
    let ps = page_size();
    let len = PAGES * ps;
    let mut rows: Vec<(String, Distribution)> = Distribution::ALL
        .iter()
        .flat_map(|&d| (0..ALLOCATIONS).map(move |k| (format!("omp_malloc_specific({d}) #{k}"), d)))
        .collect();
    rows.push((format!("omp_malloc ({DISTRIBUTION_ENV}={global})"), global));
    reset_coarse_counter();
    for (label, d) in rows {
        let p = if label.starts_with("omp_malloc ") {
            omp_malloc(len)?
        } else {
            omp_malloc_specific(len, d)?
        };
        // First touch from this thread: standard pages land on this thread's node.
        // SAFETY: `p` holds `len` bytes and nothing else refers to them.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 1, len) };
        let d = node_bytes(p.as_ptr(), len);
        print!("{label:<46}");
        for node in 0..n {
            print!("{:>6}", d.on(node) as usize / ps);
        }
        print!("{:>9}", d.unknown() as usize / ps);
        println!("{:>14}", kernel_agreement(&topo, &d, p.as_ptr(), len)?);
        // SAFETY: allocated above; no reference into it remains.
        unsafe { omp_free(p.as_ptr()) }?;
    }
    Ok(())
}

/// On the real machine, compares the registry with the kernel's page locations.
fn kernel_agreement(
    topo: &Topology,
    d: &NodeBytes,
    p: *const u8,
    len: usize,
) -> Result<&'static str, Box<dyn std::error::Error>> {
    if topo.is_synthetic() {
        return Ok("-");
    }
    let mut kernel = NodeBytes::new(topo.num_nodes());
    for (page, node) in resident_nodes(p, len)?.into_iter().enumerate() {
        let bytes = page_size().min(len - page * page_size()) as u64;
        let index = node.and_then(|os| topo.nodes().iter().position(|n| n.os_index == os));
        kernel.add(&match index {
            Some(i) => {
                let mut v = vec![0; topo.num_nodes()];
                v[i] = bytes;
                NodeBytes::from_bytes(v)
            }
            None => return Ok("no (not resident)"),
        });
    }
    Ok(if kernel.per_node() == d.per_node() {
        "yes"
    } else {
        "NO"
    })
}

#[cfg(test)]
mod tests {
    use super::{CHILD_FLAG, parse_args};

    fn parse(line: &str) -> Result<bool, String> {
        parse_args(line.split_whitespace().map(String::from).collect())
    }

    #[test]
    fn only_the_child_flag_is_accepted() {
        assert_eq!(parse(""), Ok(false));
        assert_eq!(parse(CHILD_FLAG), Ok(true));
        for (line, says) in [
            ("--bogus-flag", "unknown option '--bogus-flag'"),
            ("coarse", "unexpected argument 'coarse'"),
            ("--preset-child extra", "unexpected argument 'extra'"),
        ] {
            assert_eq!(parse(line).err().as_deref(), Some(says), "{line}");
        }
    }
}
