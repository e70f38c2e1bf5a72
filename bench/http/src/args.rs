//! The drivers' command lines, read the same way by each: options in order, each followed by
//! its value; lists spelt `a,b,c`; and the five places every driver reads or writes (its JSON
//! report, its work directory, the seeded documents, the binaries, the wrk scripts).

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use serde_json::Value;

/// The arguments after the program name, and the driver's name for the error an unknown
/// option gets.
pub struct Args {
    driver: &'static str,
    rest: std::iter::Skip<std::env::Args>,
}

impl Args {
    pub fn new(driver: &'static str) -> Args {
        Args {
            driver,
            rest: std::env::args().skip(1),
        }
    }

    /// The next option (`None` after the last argument).
    pub fn option(&mut self) -> Option<String> {
        self.rest.next()
    }

    /// The value of an option that must have one; `what` (`--out FILE`) when it is missing.
    pub fn value(&mut self, what: &str) -> String {
        self.rest.next().unwrap_or_else(|| panic!("{what}"))
    }

    /// The value parsed, if there is one and it parses.
    pub fn parsed<T: FromStr>(&mut self) -> Option<T> {
        self.rest.next().and_then(|v| v.parse().ok())
    }

    /// The value as a number; `{option}: a number` when it is missing or is not one.
    pub fn number<T: FromStr>(&mut self, option: &str) -> T {
        self.parsed()
            .unwrap_or_else(|| panic!("{option}: a number"))
    }

    /// The value as a comma-separated list (empty when missing).
    pub fn list(&mut self) -> Vec<String> {
        self.rest
            .next()
            .unwrap_or_default()
            .split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The value as a comma-separated list of integers (`--conc 10,64`).
    pub fn integers(&mut self, option: &str) -> Vec<usize> {
        self.list()
            .iter()
            .map(|c| c.parse().unwrap_or_else(|_| panic!("{option}: integers")))
            .collect()
    }

    /// Ends the driver (exit 2) on an option it does not take.
    pub fn unknown(&self, option: &str) -> ! {
        eprintln!(
            "{}: unknown argument {option:?} (see the source header)",
            self.driver
        );
        std::process::exit(2);
    }
}

/// Where a driver writes its report and work files and reads documents, binaries and wrk
/// scripts: `--out FILE`, `--work DIR`, `--docs-dir DIR`, `--bin-dir DIR`, `--lua-dir DIR`.
pub struct Places {
    pub out: PathBuf,
    pub work: PathBuf,
    pub docs_dir: PathBuf,
    pub bin_dir: PathBuf,
    pub lua_dir: PathBuf,
}

impl Places {
    /// The defaults of the driver behind `bench/<name>.sh`: `bench/out/<name>.json`,
    /// `bench/out/<name>/`, the documents in `bench/out/docs`, the binaries in `bin_dir`.
    pub fn new(name: &str, bin_dir: &str) -> Places {
        Places {
            out: format!("bench/out/{name}.json").into(),
            work: format!("bench/out/{name}").into(),
            docs_dir: "bench/out/docs".into(),
            bin_dir: bin_dir.into(),
            lua_dir: "bench/http/lua".into(),
        }
    }

    /// Takes `option` (and its value) if it is one of the five; false for any other.
    pub fn take(&mut self, option: &str, args: &mut Args) -> bool {
        let (place, what) = match option {
            "--out" => (&mut self.out, "--out FILE"),
            "--work" => (&mut self.work, "--work DIR"),
            "--docs-dir" => (&mut self.docs_dir, "--docs-dir DIR"),
            "--bin-dir" => (&mut self.bin_dir, "--bin-dir DIR"),
            "--lua-dir" => (&mut self.lua_dir, "--lua-dir DIR"),
            _ => return false,
        };
        *place = args.value(what).into();
        true
    }

    /// Writes the JSON `report` to `--out` (making its folder) and says so, with the time
    /// since `started`.
    pub fn write_report(&self, report: &Value, started: Instant) {
        if let Some(dir) = self.out.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(&self.out, serde_json::to_vec_pretty(report).unwrap()).expect("write JSON");
        println!(
            "\nwrote {} in {:.0} s",
            self.out.display(),
            started.elapsed().as_secs_f64()
        );
    }
}
