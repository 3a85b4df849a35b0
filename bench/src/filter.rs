//! The rows a bench runs: `--only WORD` keeps the rows whose name contains it, `--skip W1,W2`
//! drops the rows whose name contains one of them.

use std::cell::Cell;

use crate::args::fail;

/// The rows `--only` and `--skip` keep; after the run, [`Filter::finish`] fails the bench if
/// they kept no row at all (a typo).
pub struct Filter<'a> {
    only: Option<&'a str>,
    skip: &'a [String],
    matched: Cell<bool>,
}

impl<'a> Filter<'a> {
    /// Keeps the rows named like `only` (all without it) and like none of `skip`.
    pub fn new(only: Option<&'a str>, skip: &'a [String]) -> Self {
        Filter {
            only,
            skip,
            matched: Cell::new(false),
        }
    }

    /// Whether row `name` runs.
    pub fn wants(&self, name: &str) -> bool {
        let yes = self.only.is_none_or(|o| name.contains(o))
            && !self.skip.iter().any(|k| name.contains(k.as_str()));
        if yes {
            self.matched.set(true);
        }
        yes
    }

    /// Marks that a row outside the filter (a C peer) ran.
    pub fn ran_peer(&self) {
        self.matched.set(true);
    }

    /// Ends bench `bench` with status 2 if no row was kept.
    pub fn finish(&self, bench: &str) {
        if !self.matched.get() {
            fail(
                bench,
                format!(
                    "no row is named like --only {}{}",
                    self.only.unwrap_or("(any)"),
                    if self.skip.is_empty() {
                        String::new()
                    } else {
                        format!(" without --skip {}", self.skip.join(","))
                    }
                ),
            );
        }
    }
}
