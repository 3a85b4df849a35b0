//! hwloc synthetic descriptions (`pack:2 numa:2 core:4 pu:1`) read as hwloc reads them: the
//! size check that refuses one too large to simulate before hwloc spends minutes on it, whether
//! it declares its nodes' memory, and the hint added to hwloc's refusal of a malformed one.

/// hwloc's refusal of a synthetic description (which gives no reason), with the likeliest
/// one when the description shows it: a last level that is not of processing units.
pub(super) fn with_synthetic_hint(description: &str, refusal: String) -> String {
    let last_type = synthetic_levels(description)
        .pop()
        .and_then(|(word, _)| Some(word.split_once(':')?.0.to_ascii_lowercase()));
    match last_type {
        // hwloc reads `pu...` and `proc...` as processing units.
        Some(kind) if !kind.starts_with("pu") && !kind.starts_with("proc") => format!(
            "{refusal} (its last level, {kind}, must be pu: processing units, as in \
             'numa:2 core:2 pu:1')"
        ),
        _ => refusal,
    }
}

/// The most NUMA nodes a synthetic topology may have.
pub(super) const MAX_SYNTHETIC_NODES: u64 = 256;

/// The most processing units a synthetic topology may have (four times the most workers a
/// runtime starts).
pub(super) const MAX_SYNTHETIC_PUS: u64 = 16384;

/// The most children of one object at one level of a synthetic topology.
const MAX_SYNTHETIC_ARITY: u64 = 4096;

/// Refuses a synthetic description too large to simulate before hwloc builds it: hwloc takes
/// over a minute for 1,024 NUMA nodes side by side or 16,384 cores under one parent (a typo
/// such as `numa:20000` would otherwise hang the program). Levels are `type:arity` words, or a
/// bare arity; the arity is read as hwloc reads it (C's `strtoul` in base 0: `0x` hexadecimal,
/// a leading `0` octal), and one it cannot read is refused here; attributes in parentheses are
/// skipped. A level is a NUMA level when its type is one hwloc reads as a NUMA node (a prefix of
/// `numanode` or `node` of at least two letters, the name read up to its first character that
/// is not a letter or `-`); a memory child in brackets (`[numa]`) adds one NUMA node per object
/// of the level above it (times its arity, which hwloc 2.9 ignores: a count that errs on the
/// safe side); levels without types get NUMA nodes where hwloc puts them (see below).
pub(super) fn check_synthetic_size(description: &str) -> Result<(), String> {
    let levels = synthetic_levels(description);
    let (mut objects, mut nodes) = (1u64, 0u64);
    // The arities of the levels without a type: hwloc (2.9) names such levels itself and puts
    // one NUMA node under each object of one of them (below), `2 3 4 5` being `Package:2
    // Group:3 [NUMANode] Core:4 PU:5`. (It refuses a description mixing levels with and
    // without a type.)
    let mut untyped: Vec<u64> = Vec::new();
    for (word, _) in &levels {
        let memory_child = word.starts_with('[');
        let word = word.trim_matches(|c| c == '[' || c == ']');
        let (kind, arity) = match word.split_once(':') {
            Some((kind, arity)) => (Some(kind), arity),
            None if word.starts_with(|c: char| c.is_ascii_digit()) => (None, word),
            None => (Some(word), "1"),
        };
        let arity = c_arity(arity).ok_or_else(|| {
            format!("cannot read the number of objects '{arity}' at level '{word}'")
        })?;
        if arity > MAX_SYNTHETIC_ARITY {
            return Err(format!(
                "{arity} objects under one parent at level '{word}': at most \
                 {MAX_SYNTHETIC_ARITY} are simulated"
            ));
        }
        let level = objects.saturating_mul(arity);
        if kind.is_none() && !memory_child {
            untyped.push(arity);
            objects = level;
            continue;
        }
        let numa = kind.is_some_and(is_numa_type);
        if memory_child {
            nodes = nodes.saturating_add(level);
        } else {
            objects = level;
            if numa {
                nodes = nodes.max(objects);
            }
        }
    }
    // Without a memory child in brackets, hwloc adds its NUMA level under the untyped level
    // it names Group or Package: none for one level, under the first of two, then under the
    // second, and from nine levels on under the sixth from the end (`2 2 2 2 2 2 2 2 2 2` is
    // `Group:2 Group:2 Package:2 Group:2 [NUMANode] L3Cache:2 ... Core:2 PU:2`).
    if !levels.iter().any(|(word, _)| word.starts_with('[')) {
        let above_numa = match untyped.len() {
            0 | 1 => 0,
            2 => 1,
            n => n.saturating_sub(6).max(2),
        };
        nodes = nodes.max(
            untyped[..above_numa]
                .iter()
                .fold(1, |product: u64, &a| product.saturating_mul(a)),
        );
    }
    if nodes > MAX_SYNTHETIC_NODES || objects > MAX_SYNTHETIC_PUS {
        return Err(format!(
            "{nodes} NUMA node(s) and {objects} processing units: at most \
             {MAX_SYNTHETIC_NODES} nodes and {MAX_SYNTHETIC_PUS} processing units are simulated"
        ));
    }
    Ok(())
}

/// Whether hwloc reads `kind` as a NUMA node: it reads a type's name up to the first character
/// that is not a letter or `-` (`numa_node`, `node2` and `nu1` are NUMA levels to it), and
/// takes any prefix of `numanode` or `node` of at least two letters.
fn is_numa_type(kind: &str) -> bool {
    let k: String = kind
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    k.len() >= 2 && ("numanode".starts_with(&k) || "node".starts_with(&k))
}

/// Whether a synthetic description gives its NUMA nodes their memory (`numa:2(memory=16GB)`,
/// `[numa(memory=1GB)]`): hwloc gives each 1 GiB otherwise, and ignores `memory` on other
/// levels.
pub(super) fn declares_node_memory(description: &str) -> bool {
    synthetic_levels(description)
        .iter()
        .any(|(word, attributes)| {
            let word = word.trim_start_matches('[');
            let kind = word.split_once(':').map_or(word, |(kind, _)| kind);
            is_numa_type(kind) && attributes.to_ascii_lowercase().contains("memory=")
        })
}

/// The levels of a synthetic description as hwloc splits them: each word (`type:arity`, a bare
/// arity, or a memory child, kept with its opening `[`) with the text of its attributes, in
/// parentheses after it. A memory child is a word of its own, spaces around its brackets or
/// not (`pack:2[numa]core:1` is `pack:2 [numa] core:1` to hwloc).
fn synthetic_levels(description: &str) -> Vec<(String, String)> {
    let mut levels = Vec::new();
    let mut level = (String::new(), String::new());
    let mut end_level = |level: &mut (String, String)| {
        if !level.0.is_empty() || !level.1.is_empty() {
            levels.push(std::mem::take(level));
        }
    };
    let mut depth = 0usize;
    for c in description.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => level.1.push(c),
            '[' => {
                end_level(&mut level);
                level.0.push('[');
            }
            ']' => end_level(&mut level),
            c if c.is_whitespace() => end_level(&mut level),
            c => level.0.push(c),
        }
    }
    end_level(&mut level);
    levels
}

/// A synthetic level's arity as hwloc reads it, C's `strtoul(text, _, 0)` over the whole
/// text: decimal, `0x` hexadecimal or `0` octal; `None` for anything else (or an overflow).
fn c_arity(text: &str) -> Option<u64> {
    let text = text.strip_prefix('+').unwrap_or(text);
    let (digits, radix) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (hex, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use crate::topology::*;

    #[test]
    fn a_synthetic_description_not_ending_in_processing_units_is_refused_saying_so() {
        let err = TopologyBuilder::synthetic("node:2 core:2")
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("its last level, core, must be pu"), "{err}");
        // Other refusals get no such hint.
        let err = TopologyBuilder::synthetic("numa:2 core:2 pu:x")
            .build()
            .unwrap_err()
            .to_string();
        assert!(!err.contains("must be pu"), "{err}");
    }

    #[test]
    fn synthetic_topologies_too_large_to_simulate_are_refused_before_hwloc_builds_them() {
        for (description, says) in [
            (
                "NUMANode:20000 Core:1 PU:1",
                "20000 objects under one parent",
            ),
            ("pack:64 numa:8 core:2 pu:1", "512 NUMA node(s)"),
            ("pack:64 [numa] core:64 pu:8", "32768 processing units"),
            // Arities as hwloc reads them (hexadecimal, octal, a bare number), NUMA levels
            // under hwloc's other names, and several memory children per object.
            ("pack:1 core:0x4000 pu:1", "16384 objects under one parent"),
            ("numa:0x400 pu:1", "1024 NUMA node(s)"),
            ("numa:02000 pu:1", "1024 NUMA node(s)"),
            ("node:1024 pu:1", "1024 NUMA node(s)"),
            ("NUMANode:300 pu:1", "300 NUMA node(s)"),
            ("1024 1", "1024 NUMA node(s)"),
            // Type names as hwloc reads them, up to a character other than a letter or `-`;
            // memory children without spaces around them; a `+` before an arity.
            ("numa_node:300 pu:1", "300 NUMA node(s)"),
            ("node2:300 pu:1", "300 NUMA node(s)"),
            ("pack:2 nu1:200 pu:1", "400 NUMA node(s)"),
            ("pack:300[numa]core:1 pu:1", "300 NUMA node(s)"),
            ("numa:+300 pu:1", "300 NUMA node(s)"),
            // hwloc puts NUMA nodes under the second of the levels without a type, from
            // nine levels on under the sixth from the end.
            ("17 16 2 2", "272 NUMA node(s)"),
            ("16 16 16 1 1 1 1 1 1 1", "4096 NUMA node(s)"),
            ("1 16 1024 1 1 1 1 1 1 1", "16384 NUMA node(s)"),
            ("pack:200 [numa] [numa] core:1 pu:1", "400 NUMA node(s)"),
            (
                "numa:4(memory=1GB) core:4096 pu:2",
                "32768 processing units",
            ),
        ] {
            let err = TopologyBuilder::synthetic(description)
                .build()
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{description}: {err}");
            assert!(err.contains("are simulated"), "{err}");
        }
        for (fits, nodes) in [
            ("pack:16 [numa] core:4 pu:1", 16),
            ("numa:256 core:1 pu:1", 256),
            ("pack:0x2 node:0x3 core:02 pu:1", 6),
            ("pack:2 [numa] [numa] core:2 pu:1", 4),
            ("300", 1),
            ("2 300", 2),
            ("2 3 4 5", 6),
            ("16 16 2 2", 256),
            ("2 2 2 2 2 2 2 2 2 2", 16),
            // A memory child in brackets: no NUMA level of hwloc's own.
            ("[numa] 300 2", 1),
            ("pack:2[numa]core:1 pu:1", 2),
            ("numa_node:3 pu:1", 3),
            ("pack:+2 [numa] core:1 pu:1", 2),
            ("2 [numa] 200 2 1", 2),
        ] {
            let t = TopologyBuilder::synthetic(fits).build().unwrap();
            assert_eq!(t.num_nodes(), nodes, "{fits}");
        }
        let err = TopologyBuilder::synthetic("numa:2x core:1 pu:1")
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot read the number of objects '2x' at level 'numa:2x'"),
            "{err}"
        );
    }
}
