//! The command lines of the bench programs: one [`Parser`] reads flags and their values for
//! every program, so that each program's parser is only its `match` over its own flags, and
//! every program says the same thing about the same mistake (`--reps 'x': expected a whole
//! number from 1 to 1000`).
//!
//! A value follows its flag after a blank or an equals sign (`--reps 3`, `--reps=3`). The
//! harness-less benches end their `match` with [`Parser::other`]: `--bench`, which `cargo bench`
//! passes, is accepted, `-h`/`--help` prints the usage, anything else is an error.

use std::fmt::Display;
use std::str::FromStr;

/// Ends the program with status 2 after `program bench: message` (bad arguments or environment).
pub fn fail(program: &str, message: impl Display) -> ! {
    eprintln!("{program} bench: {message}");
    std::process::exit(2)
}

/// Whether this is a smoke run: `cargo bench` passes `--bench`, `cargo test --bench NAME` does
/// not; then a bench makes one quick run of every row, checking its results.
pub fn smoke() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

/// One thread count: every core of the machine.
pub fn all_cores() -> Vec<usize> {
    vec![std::thread::available_parallelism().map_or(1, |n| n.get())]
}

/// `value` of `flag` if it lies in `lo..=hi`, else an error naming the flag and the range.
pub fn in_range(flag: &str, value: usize, lo: usize, hi: usize) -> Result<usize, String> {
    if (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{flag} {value}: expected {lo} to {hi}"))
    }
}

/// The arguments of one program, read flag by flag.
pub struct Parser {
    usage: &'static str,
    rest: std::vec::IntoIter<String>,
    /// The flag [`Parser::next`] returned last, for the errors about its value.
    flag: String,
    /// A value given after an equals sign, not yet taken.
    inline: Option<String>,
}

impl Parser {
    /// The process's arguments; `usage` is what `--help` prints.
    pub fn new(usage: &'static str) -> Parser {
        Parser::of(usage, std::env::args().skip(1))
    }

    /// `args` (without the program's name).
    pub fn of(usage: &'static str, args: impl IntoIterator<Item = String>) -> Parser {
        Parser {
            usage,
            rest: args.into_iter().collect::<Vec<_>>().into_iter(),
            flag: String::new(),
            inline: None,
        }
    }

    /// The next flag or operand, `None` at the end; an error if the previous flag was given a
    /// value (`--flag=value`) that it does not take.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<String>, String> {
        if let Some(v) = self.inline.take() {
            return Err(format!("{} takes no value (got '{v}')", self.flag));
        }
        let Some(arg) = self.rest.next() else {
            return Ok(None);
        };
        self.flag = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                self.inline = Some(value.to_owned());
                flag.to_owned()
            }
            _ => arg,
        };
        Ok(Some(self.flag.clone()))
    }

    /// The current flag's value.
    pub fn value(&mut self) -> Result<String, String> {
        self.inline
            .take()
            .or_else(|| self.rest.next())
            .ok_or_else(|| format!("{} needs a value", self.flag))
    }

    /// The current flag's value, parsed.
    pub fn parse<T: FromStr>(&mut self) -> Result<T, String>
    where
        T::Err: Display,
    {
        let v = self.value()?;
        v.parse().map_err(|e| format!("{} '{v}': {e}", self.flag))
    }

    /// The current flag's value, a whole number from `lo` to `hi`.
    pub fn whole(&mut self, lo: usize, hi: usize) -> Result<usize, String> {
        let v = self.value()?;
        v.parse()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| {
                format!(
                    "{} '{v}': expected a whole number from {lo} to {hi}",
                    self.flag
                )
            })
    }

    /// The current flag's value, a finite number from `lo` to `hi`.
    pub fn number(&mut self, lo: f64, hi: f64) -> Result<f64, String> {
        let v = self.value()?;
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && (lo..=hi).contains(x))
            .ok_or_else(|| format!("{} '{v}': expected a number from {lo} to {hi}", self.flag))
    }

    /// The current flag's value, a comma-separated list, each item parsed.
    pub fn list<T: FromStr>(&mut self) -> Result<Vec<T>, String>
    where
        T::Err: Display,
    {
        let v = self.value()?;
        v.split(',')
            .map(|item| {
                item.trim()
                    .parse()
                    .map_err(|e| format!("{} '{item}': {e}", self.flag))
            })
            .collect()
    }

    /// The current flag's value, worker counts (`--threads 1,2,4`), each from 1 to the
    /// runtime's limit.
    pub fn threads(&mut self) -> Result<Vec<usize>, String> {
        let max = numatask::sched::config::MAX_NUM_THREADS;
        let threads: Vec<usize> = self.list()?;
        match threads.iter().find(|&&t| !(1..=max).contains(&t)) {
            Some(t) => Err(format!("{} {t}: expected 1 to {max}", self.flag)),
            None => Ok(threads),
        }
    }

    /// The current flag's value, a C/OpenMP peer program (`--omp BIN`), which must exist: a
    /// typo fails before any row runs.
    pub fn peer(&mut self) -> Result<String, String> {
        let bin = self.value()?;
        match std::fs::metadata(&bin) {
            Ok(m) if m.is_file() => Ok(bin),
            Ok(_) => Err(format!("{} {bin}: not a file", self.flag)),
            Err(e) => Err(format!("{} {bin}: {e}", self.flag)),
        }
    }

    /// The end of every bench's `match`, after its own flags: `--bench` is accepted, `-h` or
    /// `--help` prints the usage and ends the program with status 0, anything else is an
    /// error followed by the usage.
    pub fn other(&self) -> Result<(), String> {
        match self.flag.as_str() {
            "--bench" => Ok(()),
            "-h" | "--help" => {
                print!("{}", self.usage);
                std::process::exit(0)
            }
            other => Err(format!("unknown argument {other}\n\n{}", self.usage)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Parser;

    fn parser(line: &str) -> Parser {
        Parser::of("usage\n", line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn a_value_follows_its_flag_after_a_blank_or_an_equals_sign() {
        let mut p = parser("--reps 3 --n=27 --threads=1,2");
        assert_eq!(p.next().unwrap().as_deref(), Some("--reps"));
        assert_eq!(p.whole(1, 10), Ok(3));
        assert_eq!(p.next().unwrap().as_deref(), Some("--n"));
        assert_eq!(p.whole(0, 40), Ok(27));
        assert_eq!(p.next().unwrap().as_deref(), Some("--threads"));
        assert_eq!(p.threads(), Ok(vec![1, 2]));
        assert_eq!(p.next(), Ok(None));
    }

    #[test]
    fn errors_name_the_flag_its_value_and_what_is_accepted() {
        let mut p = parser("--reps 0 --size");
        p.next().unwrap();
        assert_eq!(
            p.whole(1, 1000),
            Err("--reps '0': expected a whole number from 1 to 1000".to_owned())
        );
        p.next().unwrap();
        assert_eq!(p.value(), Err("--size needs a value".to_owned()));
        let mut p = parser("--threads 0,2");
        p.next().unwrap();
        let max = numatask::sched::config::MAX_NUM_THREADS;
        assert_eq!(
            p.threads(),
            Err(format!("--threads 0: expected 1 to {max}"))
        );
    }

    #[test]
    fn a_flag_without_a_value_refuses_one_after_an_equals_sign() {
        let mut p = parser("--model=3");
        p.next().unwrap();
        assert_eq!(p.next(), Err("--model takes no value (got '3')".to_owned()));
    }

    #[test]
    fn an_unknown_flag_is_an_error_with_the_usage_and_bench_is_accepted() {
        let mut p = parser("--bench --frobnicate");
        p.next().unwrap();
        assert_eq!(p.other(), Ok(()));
        p.next().unwrap();
        assert_eq!(
            p.other(),
            Err("unknown argument --frobnicate\n\nusage\n".to_owned())
        );
    }
}
