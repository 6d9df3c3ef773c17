//! `cargo bench --bench symbols [-- DIR ...]`: the definitions the symbols
//! core finds against universal-ctags on the same real files, per
//! language: recall and precision of functions, methods and classes
//! (matched on file, name and line, where the line may be our start or the
//! name's line), the disagreements printed, the time each side took, and
//! the time to outline 5,000 lines (wall clock and the thread's CPU time).
//!
//! Without folders it uses what this machine has: vendored crates in the
//! cargo registry (Rust), Python's standard library (pyenv), the evidence
//! clients' node_modules (JavaScript, TypeScript declarations), and any C
//! sources given. Settings from the environment:
//! - `BENCH_CTAGS`: the ctags binary (default `ctags`; Debian's
//!   `universal-ctags`).
//! - `BENCH_SHOWN`: disagreements printed per language and side (default 12).
//!
//! What is compared: our functions and methods (group `callable`) and our
//! classes, structs, interfaces and traits (`class`); ctags' function,
//! method, func, methodSpec (a Go interface's method), procedure, Python's
//! member, a C++ prototype declared in a type, and its class, struct,
//! interface and trait. The group is printed, not matched: the tools name
//! some kinds differently. The other kinds are not compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mcp_project_helper::cancel::Cancel;
use mcp_project_helper::symbols::{self, Language, ParseBudget, SymbolKind};

/// (file, name, line): what the two sides are matched on.
type Tag = (String, String, u64);
/// Each side's tags of one language, with the group each was reported in
/// (printed with the disagreements, not matched: ctags calls an ES5
/// constructor function a class, we call it a function).
type Tags = BTreeMap<Tag, &'static str>;
/// Our definitions whose name stands on a later line than their start (a C
/// return type on a line of its own), by that line: ctags reports the
/// name's line, we the start, and either is a match.
type NameLines = BTreeMap<Tag, u64>;

fn our_group(kind: SymbolKind) -> Option<&'static str> {
    match kind {
        SymbolKind::Function | SymbolKind::Method => Some("callable"),
        SymbolKind::Class | SymbolKind::Struct | SymbolKind::Interface | SymbolKind::Trait => {
            Some("class")
        }
        _ => None,
    }
}

/// ctags' kind names are per language: `member` is a Python method but a
/// C/C++ struct field, so it counts as callable for Python only; a C++
/// `prototype` is a method when it is declared in a type (`in_type`).
fn ctags_group(language: Language, kind: &str, in_type: bool) -> Option<&'static str> {
    match kind {
        "member" if language == Language::Python => Some("callable"),
        "prototype" if in_type => Some("callable"),
        "function" | "method" | "func" | "methodSpec" | "procedure" => Some("callable"),
        "class" | "struct" | "interface" | "trait" => Some("class"),
        _ => None,
    }
}

fn default_roots() -> Vec<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let mut roots = Vec::new();
    if let Ok(registries) = std::fs::read_dir(home.join(".cargo/registry/src")) {
        for registry in registries.flatten() {
            if let Ok(crates) = std::fs::read_dir(registry.path()) {
                let mut crates: Vec<PathBuf> = crates.flatten().map(|c| c.path()).collect();
                crates.sort();
                for prefix in [
                    "serde_json-",
                    "regex-syntax-",
                    "ignore-",
                    "globset-",
                    "clap_builder-",
                ] {
                    if let Some(found) = crates.iter().rev().find(|c| {
                        c.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(prefix))
                    }) {
                        roots.push(found.join("src"));
                    }
                }
            }
        }
    }
    for python in ["3.12.1", "3.11.7"] {
        let stdlib = home.join(format!(
            ".pyenv/versions/{python}/lib/python{}",
            &python[..4]
        ));
        if stdlib.is_dir() {
            for package in ["json", "email", "asyncio", "http", "logging"] {
                roots.push(stdlib.join(package));
            }
            break;
        }
    }
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence/node_modules");
    for package in ["commander/lib", "ajv/lib", "express/lib", "zod/lib"] {
        let path = modules.join(package);
        if path.is_dir() {
            roots.push(path);
        }
    }
    roots
}

fn files_under(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        if root.is_file() {
            out.push(root.to_path_buf());
        }
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else if path.to_str().and_then(Language::of_path).is_some() {
            out.push(path);
        }
    }
}

fn ours(files: &[PathBuf]) -> (BTreeMap<Language, Tags>, NameLines, Duration) {
    let mut tags: BTreeMap<Language, Tags> = BTreeMap::new();
    let mut name_lines = NameLines::new();
    let mut spent = Duration::ZERO;
    for file in files {
        let Some(language) = file.to_str().and_then(Language::of_path) else {
            continue;
        };
        let Ok(source) = std::fs::read(file) else {
            continue;
        };
        if source.len() as u64 > symbols::MAX_FILE_BYTES {
            continue;
        }
        let started = Instant::now();
        let parsed_as = language.for_source(&source);
        let Ok(found) =
            symbols::definitions(parsed_as, &source, &ParseBudget::for_call(&Cancel::never()))
        else {
            eprintln!("not parsed: {}", file.display());
            continue;
        };
        spent += started.elapsed();
        let entry = tags.entry(language).or_default();
        let path = file.display().to_string();
        for symbol in found {
            if let Some(group) = our_group(symbol.kind) {
                if symbol.name_line != symbol.line {
                    name_lines.insert(
                        (path.clone(), symbol.name.clone(), symbol.name_line),
                        symbol.line,
                    );
                }
                entry.insert((path.clone(), symbol.name, symbol.line), group);
            }
        }
    }
    (tags, name_lines, spent)
}

fn ctags(files: &[PathBuf]) -> (BTreeMap<Language, Tags>, Duration) {
    let program = std::env::var("BENCH_CTAGS").unwrap_or_else(|_| "ctags".to_string());
    let list = std::env::temp_dir().join(format!("symbols-bench-{}.txt", std::process::id()));
    let names: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
    std::fs::write(&list, names).expect("file list");
    let started = Instant::now();
    let output = Command::new(&program)
        // Prototypes too: a member function declared in its class is one
        // of its methods (free prototypes are not compared, see below).
        .args([
            "--output-format=json",
            "--fields=+nK",
            "--kinds-C=+p",
            "--kinds-C++=+p",
            // ctags 5.9 has no TSX parser; its TypeScript one reads the
            // definitions around the markup.
            "--map-TypeScript=+.tsx",
            "-f",
            "-",
            "-L",
        ])
        .arg(&list)
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run {program}: {error} (apt-get install universal-ctags)")
        });
    let spent = started.elapsed();
    let _ = std::fs::remove_file(&list);
    let mut tags: BTreeMap<Language, Tags> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(tag) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(path), Some(name), Some(line), Some(kind)) = (
            tag["path"].as_str(),
            tag["name"].as_str(),
            tag["line"].as_u64(),
            tag["kind"].as_str(),
        ) else {
            continue;
        };
        let Some(language) = Language::of_path(path) else {
            continue;
        };
        let in_type = matches!(
            tag["scopeKind"].as_str(),
            Some("class" | "struct" | "union")
        );
        let Some(group) = ctags_group(language, kind, in_type) else {
            continue;
        };
        // Names ctags makes up for what has none (`AnonymousFunction1a2b…`,
        // `__anon1a2b…`): nothing a search by name could ask for.
        if name.starts_with("AnonymousFunction") || name.starts_with("__anon") {
            continue;
        }
        // C# explicit interface implementations are named with their
        // interface by ctags (`IEnumerable.GetEnumerator`), by the method's
        // own name here (what a search for the method gives).
        // C++ operators: `operator ()` there, `operator()` as written here.
        let name = match language {
            Language::CSharp => name.rsplit('.').next().unwrap_or(name).to_string(),
            _ if name.starts_with("operator") => name.replace(' ', ""),
            _ => name.to_string(),
        };
        tags.entry(language)
            .or_default()
            .insert((path.to_string(), name, line), group);
    }
    (tags, spent)
}

/// p50 of parsing one 5,000-line file: the first 5,000 lines of the sample's
/// Rust, Python and C files, joined (per language).
fn outline_time(files: &[PathBuf]) {
    for language in [Language::Rust, Language::Python, Language::C] {
        let mut text = String::new();
        for file in files
            .iter()
            .filter(|f| f.to_str().and_then(Language::of_path) == Some(language))
        {
            if let Ok(source) = std::fs::read_to_string(file) {
                text.push_str(&source);
                text.push('\n');
            }
            if text.lines().count() >= 5_000 {
                break;
            }
        }
        let text: String = text
            .lines()
            .take(5_000)
            .map(|line| format!("{line}\n"))
            .collect();
        if text.lines().count() < 5_000 {
            continue;
        }
        // C++ headers joined are parsed as C++, as the tools would.
        let parsed_as = language.for_source(text.as_bytes());
        let mut times = Vec::with_capacity(21);
        let mut cpu_times = Vec::with_capacity(21);
        for _ in 0..21 {
            let cpu = thread_cpu_time();
            let started = Instant::now();
            let found = symbols::definitions(
                parsed_as,
                text.as_bytes(),
                &ParseBudget::for_call(&Cancel::never()),
            );
            times.push(started.elapsed());
            cpu_times.push(thread_cpu_time().zip(cpu).map(|(end, start)| end - start));
            assert!(found.is_ok());
        }
        times.sort();
        let mut cpu_times: Vec<Duration> = cpu_times.into_iter().flatten().collect();
        cpu_times.sort();
        let cpu_p50 = cpu_times
            .get(cpu_times.len() / 2)
            .map_or("-".to_string(), |p50| {
                format!("{:.1} ms", p50.as_secs_f64() * 1000.0)
            });
        println!(
            "outline of a 5,000-line {} file ({} KB): p50 {:.1} ms, max {:.1} ms (21 runs); \
             CPU time of the parsing thread p50 {cpu_p50}",
            parsed_as.name(),
            text.len() / 1000,
            times[10].as_secs_f64() * 1000.0,
            times[20].as_secs_f64() * 1000.0
        );
    }
}

/// CPU time this thread has run: on a shared machine the wall-clock time
/// includes waiting for a core, this does not.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `now` is.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0).then(|| Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

fn main() {
    let roots: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    let roots = if roots.is_empty() {
        default_roots()
    } else {
        roots
    };
    let shown: usize = std::env::var("BENCH_SHOWN")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(12);
    let mut files = Vec::new();
    for root in &roots {
        files_under(root, &mut files);
    }
    println!(
        "symbols bench: {} files under {} folders",
        files.len(),
        roots.len()
    );
    outline_time(&files);
    let (mine, name_lines, my_time) = ours(&files);
    let (theirs, their_time) = ctags(&files);
    println!(
        "time: ours {:.0} ms (parse and walk, one thread), ctags {:.0} ms (one process)",
        my_time.as_secs_f64() * 1000.0,
        their_time.as_secs_f64() * 1000.0
    );
    println!("| language | files | ctags | ours | both | recall | precision |");
    println!("|---|---|---|---|---|---|---|");
    let languages: BTreeSet<Language> = mine.keys().chain(theirs.keys()).copied().collect();
    let empty = Tags::new();
    let mut disagreements = Vec::new();
    for language in languages {
        let a = mine.get(&language).unwrap_or(&empty);
        // ctags' tag at a name's line stands for ours at the start line.
        let b: Tags = theirs
            .get(&language)
            .unwrap_or(&empty)
            .iter()
            .map(|(tag, group)| match name_lines.get(tag) {
                Some(&start) if !a.contains_key(tag) => {
                    ((tag.0.clone(), tag.1.clone(), start), *group)
                }
                _ => (tag.clone(), *group),
            })
            .collect();
        let b = &b;
        let both = a.keys().filter(|tag| b.contains_key(*tag)).count();
        let count = files
            .iter()
            .filter(|f| f.to_str().and_then(Language::of_path) == Some(language))
            .count();
        let ratio = |part: usize, whole: usize| {
            if whole == 0 {
                "-".to_string()
            } else {
                format!("{:.1} %", 100.0 * part as f64 / whole as f64)
            }
        };
        println!(
            "| {} | {count} | {} | {} | {both} | {} | {} |",
            language.name(),
            b.len(),
            a.len(),
            ratio(both, b.len()),
            ratio(both, a.len())
        );
        let only = |from: &Tags, other: &Tags| -> Vec<(Tag, &'static str)> {
            from.iter()
                .filter(|(tag, _)| !other.contains_key(*tag))
                .take(shown)
                .map(|(tag, group)| (tag.clone(), *group))
                .collect()
        };
        let only_ctags = only(b, a);
        let only_ours = only(a, b);
        disagreements.push((language, only_ctags, only_ours));
    }
    for (language, only_ctags, only_ours) in disagreements {
        for (side, tags) in [("only ctags", only_ctags), ("only ours", only_ours)] {
            for ((file, name, line), group) in tags {
                println!("{} {side}: {file}:{line} {group} {name}", language.name());
            }
        }
    }
}
