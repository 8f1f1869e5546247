//! `pmx events fetch` against a tiny HTTP server on 127.0.0.1 that serves
//! the copy of Intel's perfmon repository in `../shared/data/intel-perfmon`
//! (or `$PMX_SHARED_DIR/data/intel-perfmon`), or Linux perf's x86 tables in
//! `../shared/data/linux-perf-events/x86` with directory pages as
//! git.kernel.org's cgit writes them, optionally misbehaving: a connection
//! dropped halfway through a file, a missing file.

use pmx_testkit::shared::{intel_perfmon, linux_perf_events};
use pmx_testkit::text;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The SKX files mapfile.csv lists for GenuineIntel-6-55-4.
const SKX_FILES: [&str; 5] = [
    "SKX/events/skylakex_core.json",
    "SKX/events/skylakex_fp_arith_inst.json",
    "SKX/events/skylakex_uncore.json",
    "SKX/events/skylakex_uncore_experimental.json",
    "SKX/metrics/skylakex_metrics.json",
];

/// How the server misbehaves.
#[derive(Clone, Default)]
struct Faults {
    /// Announce the full length of this file, send half, close.
    truncate: Option<String>,
    /// Answer 404 for this file.
    missing: Option<String>,
}

/// A one-thread HTTP/1.1 server; each connection gets one answer and is
/// closed. It stops when dropped, after 500 connections, or after two
/// minutes, whichever comes first.
struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(root: &Path, faults: Faults) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (root, stop2, requests2) = (root.to_path_buf(), stop.clone(), requests.clone());
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut served = 0;
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline && served < 500 {
                match listener.accept() {
                    Ok((conn, _)) => {
                        served += 1;
                        let _ = serve(conn, &root, &faults, &requests2);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => break,
                }
            }
        });
        Server {
            port,
            stop,
            requests,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The paths requested so far, without the leading `/`.
    fn requested(&self) -> BTreeSet<String> {
        self.requests.lock().unwrap().iter().cloned().collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    mut conn: TcpStream,
    root: &Path,
    faults: &Faults,
    requests: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        if conn.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split_whitespace().nth(1).unwrap_or("/");
    let rel = target.trim_start_matches('/').to_string();
    requests.lock().unwrap().push(rel.clone());
    let file = root.join(&rel);
    let dir_page = rel.ends_with('/') && file.is_dir();
    let body = if faults.missing.as_deref() == Some(rel.as_str()) {
        None
    } else if dir_page {
        Some(cgit_plain_dir(&file, &rel))
    } else if rel.split('/').any(|p| p == ".." || p.is_empty()) {
        None
    } else {
        std::fs::read(&file).ok()
    };
    let Some(body) = body else {
        let msg = b"404: Not Found";
        write!(
            conn,
            "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            msg.len()
        )?;
        conn.write_all(msg)?;
        return Ok(());
    };
    write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if faults.truncate.as_deref() == Some(rel.as_str()) {
        conn.write_all(&body[..body.len() / 2])?;
        conn.flush()?;
        // Close with the body half sent.
        return conn.shutdown(std::net::Shutdown::Both);
    }
    conn.write_all(&body)?;
    conn.flush()
}

/// A directory's page as cgit's `plain/` view writes it (cgit ui-plain.c,
/// `print_dir` and `print_dir_entry`): a list of absolute links into the
/// repository's plain view, with the branch as a query, the name as text.
fn cgit_plain_dir(dir: &Path, rel: &str) -> Vec<u8> {
    let prefix =
        "/pub/scm/linux/kernel/git/torvalds/linux.git/plain/tools/perf/pmu-events/arch/x86/";
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut page = format!(
        "<html><head><title>/tools/perf/pmu-events/arch/x86/{rel}</title></head>\n<body>\n\
         <h2>/tools/perf/pmu-events/arch/x86/{rel}</h2>\n<ul>\n\
         <li><a href='{prefix}?h=master'>../</a></li>\n"
    );
    for n in names {
        page.push_str(&format!(
            "  <li><a href='{prefix}{rel}{n}?h=master'>{n}</a></li>\n"
        ));
    }
    page.push_str(" </ul>\n</body></html>\n");
    page.into_bytes()
}

/// Run pmx with a clean environment: no proxies, no events dir, and HOME
/// and XDG_CACHE_HOME inside `home` so nothing touches the real cache.
fn pmx(args: &[&str], home: &Path, extra_env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pmx"));
    cmd.args(args)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("PMX_EVENTS_DIR");
    for v in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().expect("run pmx")
}

/// Every file under `dir`, relative, with `/` separators.
fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn expected_files() -> BTreeSet<String> {
    std::iter::once("mapfile.csv")
        .chain(SKX_FILES)
        .map(String::from)
        .collect()
}

fn skx_fetch(server: &Server, dest: &Path, home: &Path) -> Output {
    pmx(
        &[
            "events",
            "fetch",
            "--cpu",
            "GenuineIntel-6-55-4",
            "--from",
            &server.url(),
            "--events-dir",
            dest.to_str().unwrap(),
        ],
        home,
        &[],
    )
}

#[test]
fn fetches_exactly_the_skx_files_byte_for_byte() {
    let Some(data) = intel_perfmon() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("events");
    let server = Server::start(&data, Faults::default());
    let out = skx_fetch(&server, &dest, tmp.path());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "pmx failed: {stderr}\n{stdout}");
    assert_eq!(files_under(&dest), expected_files());
    assert_eq!(server.requested(), expected_files());
    for rel in expected_files() {
        let got = std::fs::read(dest.join(&rel)).unwrap();
        let want = std::fs::read(data.join(&rel)).unwrap();
        assert!(got == want, "{rel}: differs from the original");
    }
    // The summary names the files with sizes, the directory, and how to use it.
    for rel in SKX_FILES {
        assert!(stdout.contains(rel), "summary lacks {rel}:\n{stdout}");
    }
    assert!(stdout.contains("KiB") || stdout.contains("MiB"), "{stdout}");
    let dir = dest.to_str().unwrap();
    assert!(stdout.contains(&format!("--events-dir {dir}")), "{stdout}");
    assert!(
        stdout.contains(&format!("PMX_EVENTS_DIR={dir}")),
        "{stdout}"
    );
    // Not a terminal: plain progress lines naming the URLs.
    assert!(
        stderr.contains(&format!("{}mapfile.csv", server.url())),
        "{stderr}"
    );
}

#[test]
fn all_fetches_every_file_the_mapfile_lists() {
    let Some(data) = intel_perfmon() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("events");
    let server = Server::start(&data, Faults::default());
    let url = server.url();
    let args = [
        "events",
        "fetch",
        "--all",
        "--tables",
        "intel",
        "--from",
        &url,
        "--events-dir",
        dest.to_str().unwrap(),
    ];
    let out = pmx(&args, tmp.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mapfile = std::fs::read_to_string(data.join("mapfile.csv")).unwrap();
    let mut want: BTreeSet<String> = mapfile
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(2))
        .map(|f| f.trim_start_matches('/').to_string())
        .collect();
    want.insert("mapfile.csv".to_string());
    assert_eq!(files_under(&dest), want);
    for rel in &want {
        let same = std::fs::read(dest.join(rel)).unwrap() == std::fs::read(data.join(rel)).unwrap();
        assert!(same, "{rel}: differs from the original");
    }
}

#[test]
fn default_destination_is_the_cache_and_env_overrides_it() {
    let Some(data) = intel_perfmon() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&data, Faults::default());
    let base = ["events", "fetch", "--cpu", "GenuineIntel-6-55-4", "--from"];
    let url = server.url();
    let args: Vec<&str> = base.iter().copied().chain([url.as_str()]).collect();

    let out = pmx(&args, tmp.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cache = tmp.path().join("cache/pmx/events");
    assert_eq!(files_under(&cache), expected_files());
    assert!(
        text(&out.stdout).contains("by default"),
        "{}",
        text(&out.stdout)
    );

    let env_dir = tmp.path().join("env-events");
    let out = pmx(&args, tmp.path(), &[("PMX_EVENTS_DIR", &env_dir)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(files_under(&env_dir), expected_files());
    assert!(
        text(&out.stdout).contains("PMX_EVENTS_DIR"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn dropped_connection_leaves_no_partial_file_and_keeps_old_copies() {
    let Some(data) = intel_perfmon() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let victim = "SKX/events/skylakex_uncore_experimental.json";
    let faults = Faults {
        truncate: Some(victim.to_string()),
        ..Faults::default()
    };

    // Into an empty directory: nothing at all is left.
    let fresh = tmp.path().join("fresh");
    let server = Server::start(&data, faults.clone());
    let out = skx_fetch(&server, &fresh, tmp.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}{victim}", server.url())),
        "{stderr}"
    );
    assert!(stderr.contains("bytes"), "{stderr}");
    assert_eq!(files_under(&fresh), BTreeSet::new(), "files left behind");

    // Over a previous copy: every old file is untouched, no temp files.
    let dest = tmp.path().join("events");
    for rel in expected_files() {
        let p = dest.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("old copy of {rel}")).unwrap();
    }
    let out = skx_fetch(&server, &dest, tmp.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        files_under(&dest),
        expected_files(),
        "temporary files left behind"
    );
    for rel in expected_files() {
        let now = std::fs::read_to_string(dest.join(&rel)).unwrap();
        assert_eq!(now, format!("old copy of {rel}"), "{rel} was replaced");
    }
}

#[test]
fn http_404_is_a_clear_error() {
    let Some(data) = intel_perfmon() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let missing = "SKX/events/skylakex_uncore.json";
    let server = Server::start(
        &data,
        Faults {
            missing: Some(missing.to_string()),
            ..Faults::default()
        },
    );
    let dest = tmp.path().join("events");
    let out = skx_fetch(&server, &dest, tmp.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("HTTP 404"), "{stderr}");
    assert!(
        stderr.contains(&format!("{}{missing}", server.url())),
        "{stderr}"
    );
    assert!(stderr.contains("--from"), "no advice: {stderr}");
    assert_eq!(files_under(&dest), BTreeSet::new());

    // A wrong base URL: mapfile.csv itself is missing.
    let out = pmx(
        &[
            "events",
            "fetch",
            "--cpu",
            "GenuineIntel-6-55-4",
            "--from",
            &format!("{}nowhere", server.url()),
            "--events-dir",
            dest.to_str().unwrap(),
        ],
        tmp.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nowhere/mapfile.csv") && stderr.contains("404"),
        "{stderr}"
    );
}

#[test]
fn cpu_not_in_mapfile_fails_and_writes_nothing() {
    let Some(data) = intel_perfmon() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&data, Faults::default());
    let dest = tmp.path().join("events");
    let out = pmx(
        &[
            "events",
            "fetch",
            "--cpu",
            "GenuineIntel-6-1-1",
            "--from",
            &server.url(),
            "--events-dir",
            dest.to_str().unwrap(),
        ],
        tmp.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("GenuineIntel-6-1-1") && stderr.contains("no tables"),
        "{stderr}"
    );
    assert!(files_under(&dest).is_subset(&["mapfile.csv".to_string()].into()));
}

#[test]
fn intel_tables_for_an_amd_cpu_are_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("events");
    let out = pmx(
        &[
            "events",
            "fetch",
            "--tables",
            "intel",
            "--cpu",
            "AuthenticAMD-25-11-1",
            "--from",
            "http://127.0.0.1:9/",
            "--events-dir",
            dest.to_str().unwrap(),
        ],
        tmp.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("only cover Intel CPUs") && stderr.contains("perf's"),
        "{stderr}"
    );
    assert!(!dest.exists());
}

/// The Zen 5 directory of perf's tables as the server has it.
fn zen5_files(x86: &Path) -> BTreeSet<String> {
    let mut want: BTreeSet<String> = std::fs::read_dir(x86.join("amdzen5"))
        .unwrap()
        .flatten()
        .map(|e| format!("x86/amdzen5/{}", e.file_name().to_string_lossy()))
        .collect();
    want.insert("x86/mapfile.csv".to_string());
    want
}

/// perf's tables for a Zen 5 into the default cache, from a server that
/// lists directories as git.kernel.org does; then `pmx explain`, `list` and
/// `tma` on that CPU read them from the cache with no --events-dir.
#[test]
fn perf_tables_for_zen5_fill_the_cache_and_serve_list_explain_tma() {
    let Some(data) = linux_perf_events() else {
        return;
    };
    let x86 = data.join("x86");
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&x86, Faults::default());
    let url = server.url();
    let zen5 = "AuthenticAMD-26-2-1";
    let out = pmx(
        &["events", "fetch", "--cpu", zen5, "--from", &url],
        tmp.path(),
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let cache = tmp.path().join("cache/pmx/events");
    assert_eq!(files_under(&cache), zen5_files(&x86));
    for rel in zen5_files(&x86) {
        let same = std::fs::read(cache.join(&rel)).unwrap()
            == std::fs::read(x86.join(rel.trim_start_matches("x86/"))).unwrap();
        assert!(same, "{rel}: differs from the original");
    }
    // Asked: the mapfile, the directory's page, its files; nothing else.
    let mut asked: BTreeSet<String> = zen5_files(&x86)
        .iter()
        .map(|r| r.trim_start_matches("x86/").to_string())
        .collect();
    asked.insert("amdzen5/".to_string());
    assert_eq!(server.requested(), asked);
    assert!(
        stdout.contains("Linux perf's x86 event tables for AuthenticAMD-26-2-1 (Zen 5"),
        "{stdout}"
    );
    assert!(stdout.contains("by default"), "{stdout}");

    let run = |args: &[&str]| pmx(args, tmp.path(), &[]);
    let o = run(&["explain", "--cpu", zen5, "--no-libpfm", "ex_ret_instr"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(out.contains("perf-json (amdzen5/execution.json)"), "{out}");
    assert!(out.contains("config=0xc0 "), "{out}");
    let o = run(&["list", "--cpu", zen5, "--no-libpfm", "ls_"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(out.contains("ls_dispatch.ld_dispatch"), "{out}");
    let o = run(&["tma", "-l", "2", "--cpu", zen5, "--", "true"]);
    let out = text(&o.stdout) + &text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("de_no_dispatch_per_slot.backend_stalls"),
        "{out}"
    );
}

/// Failures while fetching perf's tables leave nothing: a dropped
/// connection in a table, a directory page the server does not have.
#[test]
fn perf_tables_failures_leave_nothing() {
    let Some(data) = linux_perf_events() else {
        return;
    };
    let x86 = data.join("x86");
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("events");
    let fetch = |server: &Server| {
        let url = server.url();
        pmx(
            &[
                "events",
                "fetch",
                "--cpu",
                "AuthenticAMD-25-11-1",
                "--from",
                &url,
                "--events-dir",
                dest.to_str().unwrap(),
            ],
            tmp.path(),
            &[],
        )
    };
    let server = Server::start(
        &x86,
        Faults {
            truncate: Some("amdzen4/pipeline.json".to_string()),
            ..Faults::default()
        },
    );
    let out = fetch(&server);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("amdzen4/pipeline.json") && stderr.contains("bytes"),
        "{stderr}"
    );
    assert_eq!(files_under(&dest), BTreeSet::new(), "files left behind");
    let server = Server::start(
        &x86,
        Faults {
            missing: Some("amdzen4/".to_string()),
            ..Faults::default()
        },
    );
    let out = fetch(&server);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}amdzen4/", server.url())) && stderr.contains("404"),
        "{stderr}"
    );
    assert_eq!(files_under(&dest), BTreeSet::new(), "files left behind");
}

#[test]
fn bad_flags_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["events", "fetch", "--cpu", "GenuineIntel-6"][..],
        &[
            "events",
            "fetch",
            "--cpu",
            "GenuineIntel-6-55-4",
            "--from",
            "ftp://example.invalid/",
        ],
        &["events", "fetch", "--cpu", "GenuineIntel-6-55-4", "--all"],
    ] {
        let out = pmx(args, tmp.path(), &[]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// Intel's tables and perf's share the cache: Intel's at its top, perf's
/// under x86/; after both fetches each CPU resolves from the cache.
#[test]
fn intel_and_perf_tables_share_the_cache() {
    let (Some(intel), Some(perf)) = (intel_perfmon(), linux_perf_events()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let intel_server = Server::start(&intel, Faults::default());
    let perf_server = Server::start(&perf.join("x86"), Faults::default());
    for (cpu, url) in [
        ("GenuineIntel-6-55-4", intel_server.url()),
        ("AuthenticAMD-25-11-1", perf_server.url()),
    ] {
        let out = pmx(
            &["events", "fetch", "--cpu", cpu, "--from", &url],
            tmp.path(),
            &[],
        );
        assert!(out.status.success(), "{cpu}: {}", text(&out.stderr));
    }
    let cache = tmp.path().join("cache/pmx/events");
    let files = files_under(&cache);
    assert!(
        files.contains("mapfile.csv") && files.contains("x86/mapfile.csv"),
        "{files:?}"
    );
    assert!(files.contains("x86/amdzen4/pipeline.json"), "{files:?}");
    for (cpu, event, config) in [
        (
            "GenuineIntel-6-55-4",
            "LONGEST_LAT_CACHE.MISS",
            "config=0x412e ",
        ),
        (
            "AuthenticAMD-25-11-1",
            "ls_dispatch.ld_dispatch",
            "config=0x129 ",
        ),
    ] {
        let o = pmx(
            &["explain", "--cpu", cpu, "--no-libpfm", event],
            tmp.path(),
            &[],
        );
        let out = text(&o.stdout);
        assert!(o.status.success(), "{cpu}: {}", text(&o.stderr));
        assert!(out.contains(config), "{cpu}: {out}");
    }
}
