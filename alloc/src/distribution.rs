//! The data-distribution policies of the core paper (its Tables 1-3) and the process-wide policy
//! read from `OMP_DATA_DISTRIBUTION`.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::error::AllocError;

/// The environment variable holding the process-wide distribution policy.
pub const DISTRIBUTION_ENV: &str = "OMP_DATA_DISTRIBUTION";

/// How the pages of an allocation are spread over NUMA nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Left to the operating system: each page lands on the node of the thread that first
    /// touches it.
    #[default]
    Standard,
    /// Pages dealt round-robin over all nodes (the kernel's page interleave).
    Fine,
    /// The whole allocation on one node; successive coarse allocations take the nodes
    /// round-robin (see [`crate::reset_coarse_counter`]).
    Coarse,
}

impl Distribution {
    /// The three policies.
    pub const ALL: [Distribution; 3] = [
        Distribution::Standard,
        Distribution::Fine,
        Distribution::Coarse,
    ];

    /// The name used by `OMP_DATA_DISTRIBUTION`.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Standard => "standard",
            Distribution::Fine => "fine",
            Distribution::Coarse => "coarse",
        }
    }

    /// The process-wide policy: `OMP_DATA_DISTRIBUTION` (case-insensitive), `standard` when the
    /// variable is unset or empty. Read once; an invalid value is an error naming the variable,
    /// the value and the accepted values, returned on every call. [`omp_malloc`] places by
    /// it; a runtime reading its settings from elsewhere interprets a value with
    /// [`parse_env_value`](Self::parse_env_value), the same rule.
    ///
    /// [`omp_malloc`]: crate::omp_malloc
    pub fn from_env() -> Result<Distribution, AllocError> {
        static GLOBAL: OnceLock<Result<Distribution, AllocError>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| Self::parse_env_value(std::env::var_os(DISTRIBUTION_ENV)))
            .clone()
    }

    /// Interprets a value of `OMP_DATA_DISTRIBUTION` (`None` = unset) as
    /// [`from_env`](Self::from_env) does: a name in any case, blanks around it ignored,
    /// `standard` when unset or blank; anything else, a value that is not UTF-8 included, is
    /// an [`AllocError::InvalidEnv`] naming the variable, the value and the accepted names.
    ///
    /// ```
    /// use numatask_alloc::{AllocError, Distribution};
    ///
    /// assert_eq!(Distribution::parse_env_value(Some(" Fine ".into()))?, Distribution::Fine);
    /// assert_eq!(Distribution::parse_env_value(None)?, Distribution::Standard);
    /// let err = Distribution::parse_env_value(Some("interleave".into())).unwrap_err();
    /// assert!(matches!(err, AllocError::InvalidEnv { var: "OMP_DATA_DISTRIBUTION", .. }));
    /// # Ok::<(), AllocError>(())
    /// ```
    pub fn parse_env_value(value: Option<std::ffi::OsString>) -> Result<Distribution, AllocError> {
        let Some(value) = value else {
            return Ok(Distribution::Standard);
        };
        let invalid = |value: String| AllocError::InvalidEnv {
            var: DISTRIBUTION_ENV,
            value,
            expected: "standard, fine or coarse".into(),
        };
        let text = value
            .into_string()
            .map_err(|v| invalid(v.to_string_lossy().into_owned()))?;
        if crate::env::trim_blanks(&text).is_empty() {
            return Ok(Distribution::Standard);
        }
        text.parse().map_err(|_| invalid(text))
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Distribution {
    type Err = AllocError;

    /// Case-insensitive; the blanks around the name (C's `isspace`, as OpenMP runtimes skip
    /// them) are ignored.
    fn from_str(s: &str) -> Result<Self, AllocError> {
        let wanted = crate::env::trim_blanks(s);
        Distribution::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| AllocError::InvalidDistribution(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for d in Distribution::ALL {
            assert_eq!(d.to_string().parse::<Distribution>().unwrap(), d);
            assert_eq!(d.name().to_uppercase().parse::<Distribution>().unwrap(), d);
        }
        assert_eq!(
            " Coarse ".parse::<Distribution>().unwrap(),
            Distribution::Coarse
        );
    }

    #[test]
    fn unknown_name_is_an_error_listing_the_accepted_ones() {
        let err = "round-robin"
            .parse::<Distribution>()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("round-robin") && err.contains("standard, fine or coarse"),
            "{err}"
        );
    }

    #[test]
    fn env_value_unset_or_empty_means_standard() {
        assert_eq!(
            Distribution::parse_env_value(None).unwrap(),
            Distribution::Standard
        );
        assert_eq!(
            Distribution::parse_env_value(Some("".into())).unwrap(),
            Distribution::Standard
        );
        assert_eq!(
            Distribution::parse_env_value(Some("FINE".into())).unwrap(),
            Distribution::Fine
        );
    }

    #[test]
    fn env_value_that_is_not_utf8_is_refused_naming_the_variable() {
        use std::os::unix::ffi::OsStringExt;
        let err =
            Distribution::parse_env_value(Some(std::ffi::OsString::from_vec(vec![b'f', 0xff])))
                .unwrap_err();
        assert!(
            matches!(&err, AllocError::InvalidEnv { var: DISTRIBUTION_ENV, value, .. } if value == "f\u{fffd}"),
            "{err}"
        );
    }

    #[test]
    fn bogus_env_value_names_variable_value_and_accepted_values() {
        let err = Distribution::parse_env_value(Some("bogus".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "OMP_DATA_DISTRIBUTION='bogus': expected standard, fine or coarse"
        );
    }
}
