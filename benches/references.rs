//! `cargo bench --bench references`: `find_symbol_references` through the
//! real server against reference engines, with the index ready.
//!
//! 1. **Python against jedi.** The bench makes a venv in
//!    `target/bench-references/` with jedi and parso pinned, downloads the
//!    source distribution of a real package from PyPI (rich, pinned) and
//!    unpacks it there. jedi lists every `def` and `class` of the package
//!    (special methods such as `__init__` left out: the language calls
//!    them, not their name); they are shuffled with a fixed seed, one per
//!    name, and taken in that order until 32 have a use in another file by
//!    jedi's project-wide `Script.get_references` from the definition site
//!    (`benches/references_jedi.py`). jedi's uses are its references less
//!    the names of `def`s and `class`es (imports count, as they do for the
//!    tool). Our side pages `find_symbol_references` to the end, asked for
//!    `Class.name` when jedi's definition is a method (its class as
//!    `find_symbol_definitions` reports it), else for the name.
//!    Matched on (file, line): recall is the share of jedi's lines we
//!    give, precision the share of ours jedi gives, so a same-named method
//!    of another class that jedi tells apart counts against us.
//! 2. **C against `rg -w`** (with `BENCH_UBOOT`, a u-boot tree): function
//!    names defined in `.c` files by universal-ctags, shuffled with the same
//!    seed, the first 32 with a use and at most 10,000 (the tool's deepest
//!    page); the reference is every line of a `.c` or `.h` file where
//!    `rg -w NAME` finds the name outside comments, string and character
//!    literals and `#include` names (decided by the small C lexer below,
//!    checked by `cargo test --bench references`), less the lines where
//!    ctags tags the name (any kind: function, macro, member …). Our lines
//!    in other files (other languages) are counted, not matched.
//! 3. **Time**: on u-boot, one `find_symbol_references(name)` call with the
//!    defaults per C name, p50 and p90, beside `rg -w NAME` over the same
//!    tree with the search's skip rules, in the same run.
//! 4. **Characters**: for ten "who calls X" tasks on u-boot, every page of
//!    `find_symbol_references(X)` against every page of
//!    `search_project_files(X)` (the defaults), the length of each JSON
//!    answer as the model reads it.
//!
//! Disagreements are printed per name (a few lines each) so that their
//! causes can be classified. Settings from the environment:
//! - `BENCH_UBOOT`: the C tree (default: the C part is skipped).
//! - `BENCH_SEED` (default 31), `BENCH_PY_NAMES`, `BENCH_C_NAMES`
//!   (default 32 each), `BENCH_SHOWN` (disagreements shown per name and
//!   side, default 4).
//! - `BENCH_PYTHON` (the interpreter the venv is made from, default
//!   `python3`), `BENCH_CTAGS` (default `ctags`), `BENCH_RG` (default `rg`),
//!   `BENCH_SERVER`, `BENCH_READY_SECS` (wait for "index ready", default 900).
//!
//! jedi's answers are kept in `target/bench-references/` by package, seed
//! and count, so a second run asks jedi nothing.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Session, load_average, ms, percentile};

const JEDI: &str = "jedi==0.20.1";
const PARSO: &str = "parso==0.8.7";
const PACKAGE: &str = "rich==15.0.0";
/// The tool's deepest `offset`: a name with more uses cannot be paged to
/// its end.
const MAX_OFFSET: usize = 10_000;
const PAGE: usize = 200;

/// The "who calls X" tasks: u-boot functions from start-up, environment,
/// images, commands, driver model, network, file systems, USB and MMC.
const TASKS: &[&str] = &[
    "board_init_r",
    "env_import",
    "fit_image_load",
    "run_command_list",
    "dm_init_and_scan",
    "net_loop",
    "fat_read_file",
    "usb_init",
    "mmc_init",
    "bootm_run_states",
];

/// A line: (file relative to the root with `/`, 1-based line).
type Line = (String, u64);

fn main() {
    let checked = c_lexer::self_test();
    println!("c lexer: {checked} passed, 0 failed");
    // `cargo test --benches` runs this without `--bench`: the lexer's
    // checks are its test.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let settings = Settings::from_env();
    println!("references bench, seed {}", settings.seed);
    println!("load average before: {}", load_average());
    let work = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-references");
    std::fs::create_dir_all(&work).expect("create target/bench-references");

    python_against_jedi(&settings, &work);
    match &settings.uboot {
        Some(tree) => c_against_rg(&settings, tree, &work),
        None => println!(
            "\nC: skipped (set BENCH_UBOOT to a u-boot tree, e.g. BENCH_UBOOT=/work/corpus/u-boot)"
        ),
    }
    println!("load average after: {}", load_average());
}

struct Settings {
    seed: u64,
    python_names: usize,
    c_names: usize,
    shown: usize,
    uboot: Option<PathBuf>,
    python: String,
    ctags: String,
    rg: String,
    ready_wait: Duration,
}

impl Settings {
    fn from_env() -> Settings {
        let text = |name: &str, default: &str| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        Settings {
            seed: setting("BENCH_SEED", 31),
            python_names: setting("BENCH_PY_NAMES", 32),
            c_names: setting("BENCH_C_NAMES", 32),
            shown: setting("BENCH_SHOWN", 4),
            uboot: std::env::var_os("BENCH_UBOOT")
                .filter(|value| !value.is_empty())
                .map(|tree| {
                    PathBuf::from(tree)
                        .canonicalize()
                        .expect("BENCH_UBOOT exists")
                }),
            python: text("BENCH_PYTHON", "python3"),
            ctags: text("BENCH_CTAGS", "ctags"),
            rg: text("BENCH_RG", "rg"),
            ready_wait: Duration::from_secs(setting("BENCH_READY_SECS", 900)),
        }
    }
}

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Runs a command that must succeed; its standard output.
fn run(command: &mut Command) -> Vec<u8> {
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        output.status
    );
    output.stdout
}

/// Fisher-Yates with splitmix64: the same order from the same seed on
/// every machine.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// A server on `root` with a private index cache, once its index is ready.
fn ready_server(root: &Path, work: &Path, ready_wait: Duration) -> Session {
    std::fs::create_dir_all(work).expect("create the server's folder");
    let cache = work.join("index-cache");
    let config = work.join("server.toml");
    std::fs::write(
        &config,
        format!("[index]\ncache_dir = {:?}\n", cache.to_string_lossy()),
    )
    .expect("write the server config");
    let config_arg = config.to_string_lossy().into_owned();
    let mut server = Session::start_logged(root, &["--config", &config_arg]);
    server.initialize();
    let waiting = Instant::now();
    let (ready_at, ready_line) = loop {
        if let Some(ready) = server.log_line("index ready") {
            break ready;
        }
        assert!(
            waiting.elapsed() < ready_wait,
            "no \"index ready\" within {ready_wait:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    println!(
        "index ready {:.1} s after start: {ready_line}",
        (ready_at - server.spawned).as_secs_f64()
    );
    server
}

/// One use the tool reported.
struct OurUse {
    text: String,
    within: Option<String>,
}

/// Every page of `find_symbol_references(name)`: the uses by line, the
/// files without a grammar, and whether the pages reached the end.
fn our_references(server: &mut Session, name: &str) -> (BTreeMap<Line, OurUse>, u64, bool) {
    let mut uses = BTreeMap::new();
    let mut offset = 0usize;
    loop {
        let page = server.call_tool(
            "find_symbol_references",
            &json!({ "name": name, "max_results": PAGE, "offset": offset }),
        );
        let references = page["references"].as_array().cloned().unwrap_or_default();
        for reference in &references {
            let file = reference["file"].as_str().unwrap_or_default().to_string();
            let line = reference["line"].as_u64().unwrap_or_default();
            uses.insert(
                (file, line),
                OurUse {
                    text: reference["text"].as_str().unwrap_or_default().to_string(),
                    within: reference["in"].as_str().map(str::to_string),
                },
            );
        }
        offset += references.len();
        let without_grammar = page["files_without_grammar"].as_u64().unwrap_or(0);
        if page["truncated"] != json!(true) || references.is_empty() {
            return (uses, without_grammar, true);
        }
        if offset > MAX_OFFSET {
            return (uses, without_grammar, false);
        }
    }
}

/// The name jedi's definition is asked as: `Class.name` for a method, as
/// find_symbol_definitions reports its parent (a user asks for the
/// method of one class, as jedi is asked from its definition), the name
/// for anything else.
fn asked_as(server: &mut Session, jedi: &JediName) -> String {
    let found = server.call_tool(
        "find_symbol_definitions",
        &json!({ "name": jedi.name, "max_results": 200 }),
    );
    let definitions = found["definitions"].as_array().cloned().unwrap_or_default();
    let parent = definitions
        .iter()
        .find(|definition| {
            definition["file"] == json!(jedi.file) && definition["line"] == json!(jedi.line)
        })
        .filter(|definition| definition["kind"] == json!("method"))
        .and_then(|definition| definition["parent"].as_str());
    match parent {
        Some(class) => format!("{class}.{}", jedi.name),
        None => jedi.name.clone(),
    }
}

/// The text of line `line` (1-based) of a file, trimmed, for a printed
/// disagreement.
fn line_of(root: &Path, file: &str, line: u64, files: &mut HashMap<String, Vec<u8>>) -> String {
    let source = files
        .entry(file.to_string())
        .or_insert_with(|| std::fs::read(root.join(file)).unwrap_or_default());
    source
        .split(|&byte| byte == b'\n')
        .nth(line.saturating_sub(1) as usize)
        .map(|text| {
            String::from_utf8_lossy(text)
                .trim()
                .chars()
                .take(160)
                .collect()
        })
        .unwrap_or_default()
}

/// Recall and precision over several names.
#[derive(Default)]
struct Tally {
    reference: usize,
    ours: usize,
    both: usize,
    names: usize,
    /// Names where both sides agree on every line.
    exact: usize,
}

impl Tally {
    fn add(&mut self, reference: usize, ours: usize, both: usize) {
        self.reference += reference;
        self.ours += ours;
        self.both += both;
        self.names += 1;
        self.exact += usize::from(reference == both && ours == both);
    }

    fn print(&self, label: &str) {
        let recall = ratio(self.both, self.reference);
        let precision = ratio(self.both, self.ours);
        println!(
            "{label}: {} names ({} exact), reference {} lines, ours {}, both {}: \
             recall {recall:.3} (target >= 0.95, {}), precision {precision:.3} (target >= 0.90, {})",
            self.names,
            self.exact,
            self.reference,
            self.ours,
            self.both,
            support::mark(recall >= 0.95),
            support::mark(precision >= 0.90),
        );
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// What one name's comparison prints: a line of figures, then up to
/// `shown` missed and extra lines with their text.
struct Disagreements<'a> {
    root: &'a Path,
    shown: usize,
    files: HashMap<String, Vec<u8>>,
}

impl Disagreements<'_> {
    fn print(
        &mut self,
        missed: &[&Line],
        extra: &[(&Line, &OurUse)],
        missed_note: impl Fn(&Line) -> &'static str,
    ) {
        for line in missed.iter().take(self.shown) {
            let text = line_of(self.root, &line.0, line.1, &mut self.files);
            println!(
                "    missed {}:{}{}  {text}",
                line.0,
                line.1,
                missed_note(line)
            );
        }
        if missed.len() > self.shown {
            println!("    … {} more missed", missed.len() - self.shown);
        }
        for (line, found) in extra.iter().take(self.shown) {
            let within = found.within.as_deref().unwrap_or("-");
            println!(
                "    extra  {}:{} (in {within})  {}",
                line.0,
                line.1,
                found.text.trim()
            );
        }
        if extra.len() > self.shown {
            println!("    … {} more extra", extra.len() - self.shown);
        }
    }
}

// ---------------------------------------------------------------- Python

/// The venv's interpreter, with jedi and parso at their pinned versions.
fn prepare_venv(settings: &Settings, work: &Path) -> PathBuf {
    let venv = work.join("venv");
    let python = venv.join("bin/python");
    let pinned = |name: &str, spec: &str| {
        let version = spec.split_once("==").map_or("", |(_, version)| version);
        format!("{name} {version}")
    };
    let wanted = format!("{}\n{}", pinned("jedi", JEDI), pinned("parso", PARSO));
    let installed = || {
        Command::new(&python)
            .args([
                "-c",
                "import jedi, parso; print('jedi', jedi.__version__); print('parso', parso.__version__)",
            ])
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    if installed().as_deref() != Some(wanted.as_str()) {
        println!("making the venv {} with {JEDI} {PARSO}", venv.display());
        run(Command::new(&settings.python)
            .args(["-m", "venv", "--clear"])
            .arg(&venv));
        run(Command::new(&python).args(["-m", "pip", "install", "--quiet", JEDI, PARSO]));
        assert_eq!(installed().as_deref(), Some(wanted.as_str()));
    }
    python
}

/// The unpacked source distribution of [`PACKAGE`]: its top folder.
fn prepare_package(python: &Path, work: &Path) -> PathBuf {
    let label = PACKAGE.replace("==", "-");
    let unpacked = work.join(format!("src-{label}"));
    let top = |unpacked: &Path| -> Option<PathBuf> {
        let mut folders = std::fs::read_dir(unpacked)
            .ok()?
            .filter_map(Result::ok)
            .filter(|entry| entry.path().is_dir())
            .map(|entry| entry.path());
        let first = folders.next()?;
        folders.next().is_none().then_some(first)
    };
    if let Some(root) = top(&unpacked) {
        return root;
    }
    let sdist = work.join(format!("sdist-{label}"));
    let _ = std::fs::remove_dir_all(&sdist);
    let _ = std::fs::remove_dir_all(&unpacked);
    println!("downloading the source distribution of {PACKAGE}");
    run(Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-binary",
            ":all:",
            "--no-deps",
            PACKAGE,
            "-d",
        ])
        .arg(&sdist));
    let archive = std::fs::read_dir(&sdist)
        .expect("the download folder")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.to_string_lossy().ends_with(".tar.gz"))
        .expect("a .tar.gz source distribution");
    run(Command::new(python)
        .args(["-m", "tarfile", "-e"])
        .arg(&archive)
        .arg(&unpacked));
    top(&unpacked).expect("the source distribution holds one top folder")
}

/// One name jedi answered for.
struct JediName {
    name: String,
    file: String,
    line: u64,
    /// Its uses by line, each marked when it is an import.
    uses: BTreeMap<Line, bool>,
}

/// jedi's answers for the first `wanted` names (in the seed's order) with
/// a use in another file, from the cache or from jedi.
fn jedi_names(settings: &Settings, python: &Path, root: &Path, work: &Path) -> Vec<JediName> {
    let label = PACKAGE.replace("==", "-");
    let kept = work.join(format!(
        "jedi-{label}-{}-seed{}-{}.jsonl",
        JEDI.replace("==", "-"),
        settings.seed,
        settings.python_names
    ));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/references_jedi.py");
    let answers = match std::fs::read_to_string(&kept) {
        Ok(answers) => {
            println!("jedi's answers from {}", kept.display());
            answers
        }
        Err(_) => {
            let started = Instant::now();
            let listed = run(Command::new(python)
                .arg(&script)
                .arg("candidates")
                .arg(root));
            let mut candidates: Vec<Value> = String::from_utf8_lossy(&listed)
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect();
            let definitions = candidates.len();
            shuffle(&mut candidates, settings.seed);
            let mut names = BTreeSet::new();
            candidates.retain(|candidate| {
                names.insert(candidate["name"].as_str().unwrap_or_default().to_string())
            });
            let mut child = Command::new(python)
                .arg(&script)
                .arg("references")
                .arg(root)
                .arg(settings.python_names.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start jedi");
            let mut stdin = child.stdin.take().expect("jedi's stdin");
            let feeder = std::thread::spawn(move || {
                for candidate in candidates {
                    // jedi stops reading once it has enough: a closed pipe ends this.
                    if writeln!(stdin, "{candidate}").is_err() {
                        return;
                    }
                }
            });
            let output = child.wait_with_output().expect("jedi's answers");
            let _ = feeder.join();
            assert!(output.status.success(), "jedi failed: {}", output.status);
            let answers = String::from_utf8_lossy(&output.stdout).into_owned();
            println!(
                "jedi: {definitions} definitions ({} names) listed, {} asked, in {:.0} s",
                names.len(),
                answers.lines().count(),
                started.elapsed().as_secs_f64()
            );
            std::fs::write(&kept, &answers).expect("keep jedi's answers");
            answers
        }
    };
    answers
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|answer| answer["cross_file"] == json!(true))
        .map(|answer| JediName {
            name: answer["name"].as_str().unwrap_or_default().to_string(),
            file: answer["file"].as_str().unwrap_or_default().to_string(),
            line: answer["line"].as_u64().unwrap_or_default(),
            uses: answer["uses"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|found| {
                    (
                        (
                            found["file"].as_str().unwrap_or_default().to_string(),
                            found["line"].as_u64().unwrap_or_default(),
                        ),
                        found["import"] == json!(true),
                    )
                })
                .collect(),
        })
        .collect()
}

fn python_against_jedi(settings: &Settings, work: &Path) {
    let python = prepare_venv(settings, work);
    let root = prepare_package(&python, work);
    let (files, bytes) = support::corpus_size(&root);
    println!(
        "\nPython: {PACKAGE} ({files} files, {} KB) against {JEDI}",
        bytes / 1000
    );
    let names = jedi_names(settings, &python, &root, work);
    let mut server = ready_server(&root, &work.join("python"), settings.ready_wait);
    let mut tally = Tally::default();
    let (mut missed_imports, mut extra_attributes) = (0usize, 0usize);
    let mut shown = Disagreements {
        root: &root,
        shown: settings.shown,
        files: HashMap::new(),
    };
    for jedi in &names {
        let asked = asked_as(&mut server, jedi);
        let (ours, _, complete) = our_references(&mut server, &asked);
        let missed: Vec<&Line> = jedi
            .uses
            .keys()
            .filter(|line| !ours.contains_key(*line))
            .collect();
        let extra: Vec<(&Line, &OurUse)> = ours
            .iter()
            .filter(|(line, _)| !jedi.uses.contains_key(*line))
            .collect();
        let both = ours.len() - extra.len();
        tally.add(jedi.uses.len(), ours.len(), both);
        missed_imports += missed.iter().filter(|line| jedi.uses[**line]).count();
        let attribute = format!(".{}", jedi.name);
        extra_attributes += extra
            .iter()
            .filter(|(_, found)| found.text.contains(&attribute))
            .count();
        println!(
            "  {asked} ({}:{}): jedi {}, ours {}{}, both {both}: recall {:.2}, precision {:.2}",
            jedi.file,
            jedi.line,
            jedi.uses.len(),
            ours.len(),
            if complete { "" } else { " (pages cut)" },
            ratio(both, jedi.uses.len()),
            ratio(both, ours.len()),
        );
        shown.print(&missed, &extra, |line| {
            if jedi.uses[line] { " (import)" } else { "" }
        });
    }
    tally.print("Python against jedi");
    println!(
        "  of the disagreements: {missed_imports} missed lines are imports; {} of {} extra lines \
         use the name as an attribute (`.{{name}}`), where jedi tied the use to another definition \
         or could not infer the object",
        extra_attributes,
        tally.ours - tally.both
    );
}

// ---------------------------------------------------------------- C

/// Whether a path is a file the reference covers (C's endings).
fn is_c_file(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".c") || lower.ends_with(".h")
}

/// ctags' tags of the tree: every tagged line by name (any kind, C files),
/// and the names of functions defined in `.c` files.
fn ctags_tags(
    settings: &Settings,
    tree: &Path,
    work: &Path,
) -> (HashMap<String, BTreeSet<Line>>, BTreeSet<String>) {
    let tags_file = work.join("uboot.tags");
    let started = Instant::now();
    run(Command::new(&settings.ctags)
        .args(["-R", "--excmd=number", "--fields=+K", "-f"])
        .arg(&tags_file)
        .arg(".")
        .current_dir(tree)
        .stdout(Stdio::null()));
    let tags = std::fs::read(&tags_file).expect("read the tags");
    let tags = String::from_utf8_lossy(&tags);
    let mut tagged: HashMap<String, BTreeSet<Line>> = HashMap::new();
    let mut functions = BTreeSet::new();
    for tag in tags.lines().filter(|line| !line.starts_with('!')) {
        let mut fields = tag.split('\t');
        let (Some(name), Some(file), Some(address)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let file = file.strip_prefix("./").unwrap_or(file);
        let Some(line) = address
            .strip_suffix(";\"")
            .and_then(|number| number.parse().ok())
        else {
            continue;
        };
        if !is_c_file(file) {
            continue;
        }
        if fields.next() == Some("function") && file.ends_with(".c") {
            functions.insert(name.to_string());
        }
        tagged
            .entry(name.to_string())
            .or_default()
            .insert((file.to_string(), line));
    }
    println!(
        "ctags: {} names tagged in C files, {} functions defined in .c files, in {:.1} s",
        tagged.len(),
        functions.len(),
        started.elapsed().as_secs_f64()
    );
    (tagged, functions)
}

/// `rg -w NAME` over the tree with the search's skip rules, only in
/// `globs` when any are given; output with file names NUL-terminated.
fn rg_words(rg: &str, tree: &Path, name: &str, globs: &[&str]) -> Command {
    let mut command = Command::new(rg);
    command.args([
        "--no-config",
        "--hidden",
        "--no-ignore-parent",
        "--no-require-git",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--max-filesize",
        "2M",
        "--line-number",
        "--no-heading",
        "--null",
        "--color",
        "never",
        "--fixed-strings",
        "--word-regexp",
    ]);
    for glob in globs {
        command.args(["--iglob", glob]);
    }
    for glob in support::EXCLUDES {
        command.args(["-g", glob]);
    }
    command
        .args(["-e", name, "."])
        .current_dir(tree)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// One C file as the reference reads it.
struct LexedFile {
    source: Vec<u8>,
    /// Which bytes are code (see [`c_lexer::code_mask`]).
    code: Vec<bool>,
    /// Where each line starts.
    line_starts: Vec<usize>,
}

/// The lexed C files the reference has looked at.
#[derive(Default)]
struct LexedFiles {
    files: HashMap<String, LexedFile>,
}

impl LexedFiles {
    /// Whether line `line` of `file` spells `name` as a word in code.
    fn uses_in_code(&mut self, tree: &Path, file: &str, line: u64, name: &str) -> bool {
        let lexed = self.files.entry(file.to_string()).or_insert_with(|| {
            let source = std::fs::read(tree.join(file)).unwrap_or_default();
            LexedFile {
                code: c_lexer::code_mask(&source),
                line_starts: std::iter::once(0)
                    .chain(memchr::memchr_iter(b'\n', &source).map(|newline| newline + 1))
                    .collect(),
                source,
            }
        });
        let Some(&start) = lexed.line_starts.get(line.saturating_sub(1) as usize) else {
            return false;
        };
        let end = (lexed.line_starts.get(line as usize).copied()).unwrap_or(lexed.source.len());
        c_lexer::word_in_code(&lexed.source, &lexed.code, start..end, name.as_bytes())
    }
}

/// The reference's lines for `name` (C files, code only, tags left out).
fn rg_reference(
    settings: &Settings,
    tree: &Path,
    name: &str,
    tags: &BTreeSet<Line>,
    lexed: &mut LexedFiles,
) -> BTreeSet<Line> {
    let output = run(&mut rg_words(&settings.rg, tree, name, &["*.c", "*.h"]));
    let mut lines = BTreeSet::new();
    for hit in output.split(|&byte| byte == b'\n') {
        let Some(nul) = memchr::memchr(0, hit) else {
            continue;
        };
        let file = String::from_utf8_lossy(&hit[..nul]);
        let file = file.strip_prefix("./").unwrap_or(&file).to_string();
        let rest = &hit[nul + 1..];
        let Some(line) = memchr::memchr(b':', rest)
            .and_then(|colon| std::str::from_utf8(&rest[..colon]).ok())
            .and_then(|number| number.parse::<u64>().ok())
        else {
            continue;
        };
        let at = (file, line);
        if !tags.contains(&at) && lexed.uses_in_code(tree, &at.0, line, name) {
            lines.insert(at);
        }
    }
    lines
}

fn c_against_rg(settings: &Settings, tree: &Path, work: &Path) {
    let (files, bytes) = support::corpus_size(tree);
    println!(
        "\nC: {} ({files} files, {} MB) against rg -w outside comments and literals",
        tree.display(),
        bytes / 1_000_000
    );
    println!("{}", support::tool_version(&settings.rg));
    let (tagged, functions) = ctags_tags(settings, tree, work);
    let none = BTreeSet::new();
    let mut lexed = LexedFiles::default();
    let mut candidates: Vec<&String> = functions.iter().collect();
    shuffle(&mut candidates, settings.seed);
    let mut picked: Vec<(String, BTreeSet<Line>)> = Vec::new();
    let (mut unused, mut too_many) = (0usize, 0usize);
    for name in candidates {
        if picked.len() >= settings.c_names {
            break;
        }
        let tags = tagged.get(name.as_str()).unwrap_or(&none);
        let reference = rg_reference(settings, tree, name, tags, &mut lexed);
        if reference.is_empty() {
            unused += 1;
        } else if reference.len() > MAX_OFFSET {
            too_many += 1;
        } else {
            picked.push((name.clone(), reference));
        }
    }
    println!(
        "picked {} names; passed over {unused} without a use and {too_many} with more than \
         {MAX_OFFSET}",
        picked.len()
    );

    assert!(
        !picked.is_empty(),
        "no C function of {} has a use",
        tree.display()
    );
    let mut server = ready_server(tree, &work.join("c"), settings.ready_wait);
    let mut tally = Tally::default();
    let mut other_languages = 0usize;
    let mut shown = Disagreements {
        root: tree,
        shown: settings.shown,
        files: HashMap::new(),
    };
    for (name, reference) in &picked {
        let (all, without_grammar, complete) = our_references(&mut server, name);
        let (ours, others): (BTreeMap<_, _>, BTreeMap<_, _>) =
            all.into_iter().partition(|(line, _)| is_c_file(&line.0));
        other_languages += others.len();
        let missed: Vec<&Line> = reference
            .iter()
            .filter(|line| !ours.contains_key(*line))
            .collect();
        let extra: Vec<(&Line, &OurUse)> = ours
            .iter()
            .filter(|(line, _)| !reference.contains(*line))
            .collect();
        let both = ours.len() - extra.len();
        tally.add(reference.len(), ours.len(), both);
        println!(
            "  {name}: rg {}, ours {}{} (+{} in other languages, {without_grammar} files \
             without grammar), both {both}: recall {:.3}, precision {:.3}",
            reference.len(),
            ours.len(),
            if complete { "" } else { " (pages cut)" },
            others.len(),
            ratio(both, reference.len()),
            ratio(both, ours.len()),
        );
        shown.print(&missed, &extra, |_| "");
    }
    tally.print("C against rg -w");
    println!("  our lines in files of other languages (not compared): {other_languages}");

    time_calls(settings, tree, &mut server, &picked);
    characters(&mut server);
}

/// p50 and p90 of one references call per name (the defaults: the first
/// page), beside `rg -w` over the same tree.
fn time_calls(
    settings: &Settings,
    tree: &Path,
    server: &mut Session,
    picked: &[(String, BTreeSet<Line>)],
) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for (name, _) in picked {
        let (time, answer) = server.timed_call("find_symbol_references", &json!({ "name": name }));
        assert!(
            answer["count"].as_u64().is_some_and(|count| count > 0),
            "{name}: {answer}"
        );
        ours.push(time);
        let started = Instant::now();
        let mut child = rg_words(&settings.rg, tree, name, &[])
            .spawn()
            .expect("start rg");
        support::count_lines(child.stdout.take().expect("rg's stdout"));
        let status = child.wait().expect("wait for rg");
        assert!(matches!(status.code(), Some(0 | 1)), "rg failed: {status}");
        theirs.push(started.elapsed());
    }
    let (p50, p90) = (percentile(ours.clone(), 50), percentile(ours, 90));
    let (rg50, rg90) = (percentile(theirs.clone(), 50), percentile(theirs, 90));
    println!(
        "\nfind_symbol_references on {}, {} names, first page: p50 {:.1} ms, p90 {:.1} ms \
         (target p50 <= 30 ms, {}); rg -w p50 {:.1} ms, p90 {:.1} ms; p50 ratio {:.2}",
        tree.display(),
        picked.len(),
        ms(p50),
        ms(p90),
        support::mark(p50 <= Duration::from_millis(30)),
        ms(rg50),
        ms(rg90),
        p50.as_secs_f64() / rg50.as_secs_f64()
    );
}

/// Every page of a tool's answer: (characters, items).
fn all_pages(server: &mut Session, tool: &str, name: &str, items: &str) -> (usize, usize) {
    let (mut chars, mut count, mut offset) = (0usize, 0usize, 0usize);
    loop {
        let page = server.call_tool(
            tool,
            &json!({ "query": name, "name": name, "offset": offset }),
        );
        chars += page.to_string().chars().count();
        let got = page[items].as_array().map_or(0, Vec::len);
        count += got;
        offset += got;
        if page["truncated"] != json!(true) || got == 0 || offset > MAX_OFFSET {
            return (chars, count);
        }
    }
}

/// The characters an agent receives for "who calls X", both ways.
fn characters(server: &mut Session) {
    println!();
    println!("| who calls | references (lines, chars) | search (matches, chars) | ratio |");
    println!("|---|---|---|---|");
    let (mut ours, mut theirs) = (0usize, 0usize);
    for name in TASKS {
        let (our_chars, our_lines) =
            all_pages(server, "find_symbol_references", name, "references");
        let (search_chars, matches) = all_pages(server, "search_project_files", name, "matches");
        ours += our_chars;
        theirs += search_chars;
        println!(
            "| `{name}` | {our_lines}, {our_chars} | {matches}, {search_chars} | {:.1} % |",
            100.0 * our_chars as f64 / search_chars.max(1) as f64
        );
    }
    println!(
        "| all | {ours} | {theirs} | {:.1} % |",
        100.0 * ours as f64 / theirs.max(1) as f64
    );
}

/// Which bytes of a C file are code: not in a comment, a string or
/// character literal, or the header name of an `#include`. Lines are
/// spliced first (a backslash before a line break joins the lines, as the
/// preprocessor does), so a `//` comment or a string goes on past its
/// line's end when that ends with a backslash.
mod c_lexer {
    use std::ops::Range;

    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        LineComment,
        BlockComment,
        Literal(u8),
        HeaderName,
    }

    /// `true` for each byte of `source` that is code.
    pub fn code_mask(source: &[u8]) -> Vec<bool> {
        // The bytes left once line splices are taken out, with where each is.
        let mut logical: Vec<(u8, usize)> = Vec::with_capacity(source.len());
        let mut at = 0;
        while at < source.len() {
            let splice = match &source[at..] {
                [b'\\', b'\n', ..] => 2,
                [b'\\', b'\r', b'\n', ..] => 3,
                _ => 0,
            };
            if splice > 0 {
                at += splice;
                continue;
            }
            logical.push((source[at], at));
            at += 1;
        }
        let mut code = vec![false; source.len()];
        let mut state = State::Code;
        // Where the current (logical) line starts.
        let mut line_start = 0;
        let byte_at = |i: usize| logical.get(i).map(|&(byte, _)| byte);
        let mut i = 0;
        while let Some((byte, original)) = logical.get(i).copied() {
            let next = byte_at(i + 1);
            match state {
                State::Code => {
                    if byte == b'/' && (next == Some(b'/') || next == Some(b'*')) {
                        state = if next == Some(b'/') {
                            State::LineComment
                        } else {
                            State::BlockComment
                        };
                        i += 2;
                        continue;
                    }
                    if byte == b'"' || byte == b'\'' {
                        state = State::Literal(byte);
                    } else if byte == b'<' && is_include(&logical[line_start..i]) {
                        state = State::HeaderName;
                    } else {
                        code[original] = true;
                    }
                }
                State::LineComment => {
                    if byte == b'\n' {
                        state = State::Code;
                    }
                }
                State::BlockComment => {
                    if byte == b'*' && next == Some(b'/') {
                        state = State::Code;
                        i += 2;
                        continue;
                    }
                }
                State::Literal(quote) => {
                    if byte == b'\\' && next != Some(b'\n') {
                        i += 2;
                        continue;
                    }
                    // An unterminated literal ends with its line.
                    if byte == quote || byte == b'\n' {
                        state = State::Code;
                    }
                }
                State::HeaderName => {
                    if byte == b'>' || byte == b'\n' {
                        state = State::Code;
                    }
                }
            }
            if byte == b'\n' {
                line_start = i + 1;
            }
            i += 1;
        }
        code
    }

    /// Whether a line so far is `#include` (or `#include_next`, `#import`),
    /// blanks allowed around the `#`.
    fn is_include(line: &[(u8, usize)]) -> bool {
        let text: Vec<u8> = line
            .iter()
            .map(|&(byte, _)| byte)
            .filter(|byte| !byte.is_ascii_whitespace())
            .collect();
        matches!(text.as_slice(), b"#include" | b"#include_next" | b"#import")
    }

    fn is_word_byte(byte: u8) -> bool {
        byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
    }

    /// Whether `name` stands as a whole word in code within `range`.
    pub fn word_in_code(source: &[u8], code: &[bool], range: Range<usize>, name: &[u8]) -> bool {
        let Some(text) = source.get(range.clone()) else {
            return false;
        };
        memchr::memmem::find_iter(text, name).any(|found| {
            let at = range.start + found;
            let end = at + name.len();
            let before = at.checked_sub(1).and_then(|i| source.get(i));
            let after = source.get(end);
            !before.is_some_and(|&b| is_word_byte(b))
                && !after.is_some_and(|&b| is_word_byte(b))
                && code.get(at) == Some(&true)
        })
    }

    /// Each case: a source, and for every line (1-based) whether `foo`
    /// stands on it in code. Returns the number of cases checked; panics
    /// on the first that fails.
    pub fn self_test() -> usize {
        const CASES: &[(&str, &[bool])] = &[
            ("foo(); // foo", &[true]),
            ("// foo\nfoo();", &[false, true]),
            ("/* foo */ x = 1;", &[false]),
            ("/* a */ foo /* b */", &[true]),
            ("/*\n * foo\n */\nfoo();", &[false, false, false, true]),
            ("s = \"foo\";", &[false]),
            ("s = \"a \\\" foo\";", &[false]),
            ("s = \"a \\\\\"; foo();", &[true]),
            ("c = '\"'; foo();", &[true]),
            ("c = '\\''; foo();", &[true]),
            ("s = L\"foo\";", &[false]),
            ("s = \"// not a comment\"; foo();", &[true]),
            ("s = \"/* not a comment\"; foo();", &[true]),
            ("x = a / b; foo();", &[true]),
            ("// comment \\\nfoo();\nfoo();", &[false, false, true]),
            ("s = \"abc\\\nfoo\";\nfoo();", &[false, false, true]),
            ("/\\\n/ foo\nfoo();", &[false, false, true]),
            ("#include <foo.h>\nfoo();", &[false, true]),
            ("#include \"foo.h\"\nfoo();", &[false, true]),
            ("  #  include <foo/bar.h>", &[false]),
            ("#define FOO(x) foo(x) /* foo */", &[true]),
            ("#define M \\\n\tfoo()", &[false, true]),
            ("if (a < foo) b = c > d;", &[true]),
            ("#if X < foo\n#endif", &[true, false]),
            ("#error don't use\nfoo();", &[false, true]),
            ("foobar(); barfoo(); foo_x();", &[false]),
            ("x = foo;\r\ny = 2; // foo\r\n", &[true, false]),
        ];
        for (source, expected) in CASES {
            let bytes = source.as_bytes();
            let code = code_mask(bytes);
            let mut start = 0;
            for (index, want) in expected.iter().enumerate() {
                let end = bytes[start..]
                    .iter()
                    .position(|&byte| byte == b'\n')
                    .map_or(bytes.len(), |newline| start + newline + 1);
                let got = word_in_code(bytes, &code, start..end, b"foo");
                assert_eq!(
                    got,
                    *want,
                    "c lexer: line {} of {source:?}: expected foo {}",
                    index + 1,
                    if *want { "in code" } else { "not in code" }
                );
                start = end;
            }
        }
        CASES.len()
    }
}
