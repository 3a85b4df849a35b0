//! hwloc's own variables (`HWLOC_FSROOT`, `HWLOC_CPUID_PATH`, `HWLOC_SYNTHETIC`,
//! `HWLOC_XMLFILE`), which make it describe another topology when asked for the machine's:
//! which are set, and why a topology built under them is refused as the real machine.

use super::synthetic::check_synthetic_size;

/// hwloc's variables that make it read another topology than the machine's when asked for the
/// machine's, in the order it looks at them.
const HWLOC_REDIRECTS: [&str; 4] = [
    "HWLOC_FSROOT",
    "HWLOC_CPUID_PATH",
    "HWLOC_SYNTHETIC",
    "HWLOC_XMLFILE",
];

/// hwloc's redirecting variables set to something, with their values (hwloc passes over an
/// empty one, and over one it cannot use: an `HWLOC_FSROOT` it cannot open, then reading the
/// next).
pub(super) fn hwloc_variables() -> Vec<(&'static str, String)> {
    HWLOC_REDIRECTS
        .into_iter()
        .filter_map(|var| {
            let value = std::env::var_os(var)?;
            (!value.is_empty()).then(|| (var, value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// The refusal of an `HWLOC_SYNTHETIC` too large to simulate, whenever it is set: hwloc may
/// read it in place of the machine (an earlier variable it cannot use does not stop it), and
/// would take minutes over a typo.
pub(super) fn oversized_hwloc_synthetic() -> Option<String> {
    let value = std::env::var_os("HWLOC_SYNTHETIC").filter(|v| !v.is_empty())?;
    let value = value.to_string_lossy();
    check_synthetic_size(&value)
        .err()
        .map(|why| format!("HWLOC_SYNTHETIC='{value}' is set: {why}"))
}

/// Variables and values as `VAR='value'` words joined with commas.
pub(super) fn named(set: &[(&str, String)]) -> String {
    set.iter()
        .map(|(var, value)| format!("{var}='{value}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a topology hwloc built when asked for the machine's is not the machine's: the
/// redirecting variables set to something (hwloc passes over an empty or unusable one, and
/// the root's `Backend` information cannot tell: an XML file exported from a synthetic
/// topology keeps saying `Synthetic`), or `HWLOC_THISSYSTEM`.
pub(super) fn not_this_system() -> String {
    let set = hwloc_variables();
    let cause = match set.as_slice() {
        [(var, value)] => format!("{var}='{value}' is set, so hwloc describes that"),
        [] => match std::env::var_os("HWLOC_THISSYSTEM") {
            Some(v) => format!(
                "hwloc describes a topology it does not take for this machine's \
                 (HWLOC_THISSYSTEM='{}')",
                v.to_string_lossy()
            ),
            None => "hwloc describes another topology".into(),
        },
        _ => format!("hwloc describes the topology one of {} names", named(&set)),
    };
    format!(
        "{cause} instead of this machine: unset it, or simulate that topology with \
         NUMATASK_TOPOLOGY=synthetic:<hwloc string> or xml:<file>"
    )
}
