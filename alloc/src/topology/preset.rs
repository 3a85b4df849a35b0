//! [`Preset`]: the named machines shipped with numatask, each an hwloc synthetic description
//! with its distance matrix.

use crate::env::trim_blanks;
use crate::error::AllocError;

/// Named topologies shipped with numatask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// The core paper's machine: four AMD Opteron 6172 (Magny-Cours) processors, two dies per
    /// package, each die one NUMA node with six cores, a 5 MiB L3 and (here) 16 GiB of memory:
    /// 8 nodes x 6 cores.
    ///
    /// The distance matrix is the SLIT of a four-socket Opteron 6100 server: 10 local, 16 for the
    /// other die of the package and for dies one HyperTransport hop away, 22 for two hops. Its
    /// maximum, 22, is the maximum the paper reports for its machine (Figure 1).
    ///
    /// ```text
    ///        0   1   2   3   4   5   6   7
    ///   0:  10  16  16  22  16  22  16  22
    ///   1:  16  10  22  16  16  22  22  16
    ///   2:  16  22  10  16  16  16  16  16
    ///   3:  22  16  16  10  16  16  22  22
    ///   4:  16  16  16  16  10  16  16  22
    ///   5:  22  22  16  16  16  10  22  16
    ///   6:  16  22  16  22  16  22  10  16
    ///   7:  22  16  16  22  22  16  16  10
    /// ```
    Opteron6172,
}

impl Preset {
    /// Every preset, for error messages and documentation.
    pub const ALL: [Preset; 1] = [Preset::Opteron6172];

    /// The preset's name as accepted by `NUMATASK_TOPOLOGY=preset:<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Opteron6172 => "opteron6172",
        }
    }

    pub(super) fn synthetic(self) -> &'static str {
        match self {
            Preset::Opteron6172 => {
                "pack:4 numa:2(memory=17179869184) l3:1(size=5242880) core:6 pu:1"
            }
        }
    }

    pub(super) fn distances(self) -> Vec<u32> {
        match self {
            Preset::Opteron6172 => vec![
                10, 16, 16, 22, 16, 22, 16, 22, //
                16, 10, 22, 16, 16, 22, 22, 16, //
                16, 22, 10, 16, 16, 16, 16, 16, //
                22, 16, 16, 10, 16, 16, 22, 22, //
                16, 16, 16, 16, 10, 16, 16, 22, //
                22, 22, 16, 16, 16, 10, 22, 16, //
                16, 22, 16, 22, 16, 22, 10, 16, //
                22, 16, 16, 22, 22, 16, 16, 10, //
            ],
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = AllocError;

    fn from_str(s: &str) -> Result<Self, AllocError> {
        let wanted = trim_blanks(s).to_ascii_lowercase().replace(['-', '_'], "");
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == wanted)
            .ok_or_else(|| AllocError::InvalidTopology {
                spec: s.to_owned(),
                reason: format!(
                    "unknown preset '{}': the presets are {}",
                    crate::env::shown(trim_blanks(s)),
                    Preset::ALL.map(Preset::name).join(", ")
                ),
            })
    }
}
