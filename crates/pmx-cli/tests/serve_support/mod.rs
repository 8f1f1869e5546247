//! What the `pmx serve` tests share: starting the daemon on a free
//! loopback port, HTTP exchanges, and a strict OpenMetrics reader.
// Each test target uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PMX: &str = env!("CARGO_BIN_EXE_pmx");

/// A running `pmx serve`, killed on drop.
pub struct Daemon {
    pub child: Child,
    pub addr: String,
    pub log: mpsc::Receiver<String>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// The daemon has logged, since the last look, a line containing
    /// each of `wanted`.
    pub fn assert_logged(&self, wanted: &[&str]) {
        let lines: Vec<String> = self.log.try_iter().collect();
        for w in wanted {
            assert!(lines.iter().any(|l| l.contains(w)), "{lines:?}");
        }
    }
}

pub fn start(args: &[&str]) -> Daemon {
    start_at("127.0.0.1:0", args)
}

/// A daemon listening on `listen`.
pub fn start_at(listen: &str, args: &[&str]) -> Daemon {
    let mut child = Command::new(PMX)
        .arg("serve")
        .args(["--listen", listen])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pmx serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest.split('/').next().unwrap().to_string();
                    return Daemon {
                        child,
                        addr,
                        log: rx,
                    };
                }
                seen.push(line);
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("pmx serve did not start: {seen:?}");
            }
        }
    }
}

/// A response read to its end: (status, head, body bytes); status 0
/// when there is none.
pub fn split_response(raw: &[u8]) -> (u16, String, Vec<u8>) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        head,
        raw.get(end + 4..).unwrap_or_default().to_vec(),
    )
}

/// Send `request` on a fresh connection and read until the server
/// closes it (or `timeout` passes between reads): (status, head, body
/// bytes); status 0 when the connection failed or closed without one.
pub fn exchange(addr: &str, request: &[u8], timeout: Duration) -> (u16, String, Vec<u8>) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, String::new(), Vec::new());
    };
    s.set_read_timeout(Some(timeout)).unwrap();
    if s.write_all(request).is_err() {
        return (0, String::new(), Vec::new());
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    split_response(&raw)
}

/// One HTTP exchange on a fresh connection: (status, headers, body).
pub fn http(addr: &str, request: &[u8]) -> (u16, String, String) {
    let (status, head, body) = exchange(addr, request, Duration::from_secs(20));
    (status, head, String::from_utf8_lossy(&body).to_string())
}

/// The request line and headers of `GET /debug/pprof/profile?QUERY`,
/// answered then closed.
pub fn profile_request(query: &str) -> String {
    format!("GET /debug/pprof/profile?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
}

/// A profile fetched within `timeout`: (status, head, body bytes).
pub fn profile(addr: &str, query: &str, timeout: Duration) -> (u16, String, Vec<u8>) {
    exchange(addr, profile_request(query).as_bytes(), timeout)
}

/// The `perf_event` fds `pid` holds open.
pub fn perf_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().contains("perf_event"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Poll `/metrics` until the samples starting with `name` add up to
/// `want` (at most `within`); whether they did.
pub fn wait_for(addr: &str, name: &str, want: f64, within: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < within {
        if quick_sum(&scrape(addr, false), name) == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

pub fn scrape(addr: &str, openmetrics: bool) -> String {
    let accept = if openmetrics {
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n"
    } else {
        ""
    };
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n");
    let (status, head, body) = http(addr, req.as_bytes());
    assert_eq!(status, 200, "{head}");
    if openmetrics {
        assert!(
            head.contains(
                "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            ),
            "{head}"
        );
    } else {
        assert!(
            head.contains("Content-Type: text/plain; version=0.0.4"),
            "{head}"
        );
    }
    body
}

/// A sample: metric name, labels, value.
pub type Sample = (String, BTreeMap<String, String>, f64);

pub fn valid_name(n: &str) -> bool {
    let mut b = n.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_' || c == b':')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
}

/// A strict reading of OpenMetrics 1.0 text as pmx writes it: families
/// declared once with TYPE before their samples, sample names matching the
/// family type (counter `_total`, info `_info`), UNIT matching the name
/// suffix, label syntax and escapes, unique label sets, counters ≥ 0, and
/// `# EOF` last.
pub fn parse_openmetrics(text: &str) -> Result<Vec<Sample>, String> {
    let body = text
        .strip_suffix("# EOF\n")
        .ok_or("does not end with '# EOF\\n'")?;
    if body.contains("# EOF") {
        return Err("# EOF before the end".into());
    }
    let mut out = Vec::new();
    let mut families: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    let mut seen_series: std::collections::BTreeSet<String> = Default::default();
    for (n, line) in body.lines().enumerate() {
        let err = |m: &str| format!("line {}: {m}: {line}", n + 1);
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kw, name, arg) = (parts.next(), parts.next(), parts.next());
            let name = name.ok_or_else(|| err("metadata without a name"))?;
            match kw {
                Some("TYPE") => {
                    let t = arg.ok_or_else(|| err("TYPE without a type"))?;
                    if ![
                        "counter",
                        "gauge",
                        "info",
                        "histogram",
                        "summary",
                        "stateset",
                        "gaugehistogram",
                        "unknown",
                    ]
                    .contains(&t)
                    {
                        return Err(err("unknown type"));
                    }
                    if !valid_name(name) {
                        return Err(err("bad family name"));
                    }
                    if families.insert(name.to_string(), t.to_string()).is_some() {
                        return Err(err("family declared twice"));
                    }
                    current = Some((name.to_string(), t.to_string()));
                }
                Some("HELP") | Some("UNIT") => {
                    let cur = current
                        .as_ref()
                        .ok_or_else(|| err("metadata before TYPE"))?;
                    if cur.0 != name {
                        return Err(err("metadata of another family"));
                    }
                    if kw == Some("UNIT") {
                        let unit = arg.ok_or_else(|| err("UNIT without a unit"))?;
                        if !name.ends_with(&format!("_{unit}")) {
                            return Err(err("family name does not end with its unit"));
                        }
                    }
                }
                _ => return Err(err("unknown comment")),
            }
            continue;
        }
        let (fam, ty) = current
            .as_ref()
            .ok_or_else(|| err("sample before any TYPE"))?;
        let (series, value) = line.rsplit_once(' ').ok_or_else(|| err("no value"))?;
        let (name, labels_text) = match series.find('{') {
            Some(i) => {
                let l = series[i + 1..]
                    .strip_suffix('}')
                    .ok_or_else(|| err("unclosed labels"))?;
                (&series[..i], Some(l))
            }
            None => (series, None),
        };
        let expected = match ty.as_str() {
            "counter" => format!("{fam}_total"),
            "info" => format!("{fam}_info"),
            _ => fam.clone(),
        };
        if name != expected && !(ty == "counter" && name == format!("{fam}_created")) {
            return Err(err(&format!("sample name is not {expected}")));
        }
        let mut labels = BTreeMap::new();
        if let Some(mut l) = labels_text {
            while !l.is_empty() {
                let eq = l.find("=\"").ok_or_else(|| err("label without =\""))?;
                let lname = &l[..eq];
                if !valid_name(lname) || lname.contains(':') {
                    return Err(err("bad label name"));
                }
                let mut val = String::new();
                let mut chars = l[eq + 2..].char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some((_, '\\')) => val.push('\\'),
                            Some((_, '"')) => val.push('"'),
                            Some((_, 'n')) => val.push('\n'),
                            _ => return Err(err("bad escape")),
                        },
                        '"' => {
                            end = Some(eq + 2 + i + 1);
                            break;
                        }
                        '\n' => return Err(err("newline in a label value")),
                        c => val.push(c),
                    }
                }
                let end = end.ok_or_else(|| err("unterminated label value"))?;
                if labels.insert(lname.to_string(), val).is_some() {
                    return Err(err("label twice"));
                }
                l = &l[end..];
                if let Some(rest) = l.strip_prefix(',') {
                    l = rest;
                    if l.is_empty() {
                        return Err(err("trailing comma"));
                    }
                } else if !l.is_empty() {
                    return Err(err("junk after a label"));
                }
            }
        }
        let v: f64 = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| err("bad value"))?,
        };
        if ty == "counter" && (v.is_nan() || v < 0.0) {
            return Err(err("negative or NaN counter"));
        }
        if !seen_series.insert(series.to_string()) {
            return Err(err("series twice"));
        }
        out.push((name.to_string(), labels, v));
    }
    Ok(out)
}

pub fn samples(text: &str) -> Vec<Sample> {
    parse_openmetrics(text).unwrap_or_else(|e| panic!("not valid OpenMetrics: {e}\n{text}"))
}

/// The `name` samples whose labels include `want`.
fn matching<'a>(
    s: &'a [Sample],
    name: &'a str,
    want: &'a [(&str, &str)],
) -> impl Iterator<Item = &'a Sample> {
    s.iter().filter(move |(n, l, _)| {
        n == name
            && want
                .iter()
                .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
    })
}

/// Sum of `name` samples whose labels include `want`.
pub fn sum(s: &[Sample], name: &str, want: &[(&str, &str)]) -> f64 {
    matching(s, name, want).map(|(_, _, v)| v).sum()
}

/// The label sets of `name` samples whose labels include `want`.
pub fn series(s: &[Sample], name: &str, want: &[(&str, &str)]) -> Vec<BTreeMap<String, String>> {
    matching(s, name, want).map(|(_, l, _)| l.clone()).collect()
}

/// A keep-alive HTTP/1.1 client: many requests on one connection.
pub struct KeepAlive {
    s: TcpStream,
    buf: Vec<u8>,
}

impl KeepAlive {
    pub fn connect(addr: &str) -> std::io::Result<KeepAlive> {
        let s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        s.set_nodelay(true)?;
        Ok(KeepAlive { s, buf: Vec::new() })
    }

    /// `GET path`; the status and body, or why the exchange failed
    /// (a reset, a close, a malformed answer).
    pub fn get(&mut self, path: &str) -> Result<(u16, String), String> {
        let req = format!("GET {path} HTTP/1.1\r\nHost: pmx\r\n\r\n");
        self.s
            .write_all(req.as_bytes())
            .map_err(|e| e.to_string())?;
        self.response()
    }

    /// Read one response (after the request was written).
    pub fn response(&mut self) -> Result<(u16, String), String> {
        let mut chunk = [0u8; 16384];
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("connection closed before a response".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("reading the head: {e}")),
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).to_string();
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("no status: {head}"))?;
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("no Content-Length: {head}"))?;
        while self.buf.len() < end + len {
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("connection closed in the body".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("reading the body: {e}")),
            }
        }
        let body = String::from_utf8_lossy(&self.buf[end..end + len]).to_string();
        self.buf.drain(..end + len);
        Ok((status, body))
    }

    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.s
    }
}

/// Raise this process's soft limit on open files to its hard limit (the
/// tests that open hundreds of connections).
pub fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        r.rlim_cur
    }
}

/// The resident set of a process, in kB.
pub fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The value of an unlabelled or labelled sample line starting with
/// `prefix` (a quick look, no full parse), summed over matching lines.
pub fn quick_sum(body: &str, prefix: &str) -> f64 {
    body.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}
