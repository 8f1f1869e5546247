//! A small, strict HTTP/1.1 server side: enough for scrapers, nothing more.
//!
//! [`read_request`] reads one request head (request line and headers) from
//! a connection, within limits: at most [`MAX_HEAD`] bytes and
//! [`MAX_HEADERS`] header lines, all of it within the head deadline. It
//! never reads a body: a request that announces one is answered and the
//! connection closed. Errors map to status codes ([`HttpError::status`]):
//! malformed → 400, too large → 431, too slow → 408, unknown version → 505.

use std::io::{self, Read, Write};
use std::time::Instant;

/// Largest request head accepted (request line + headers), in bytes.
pub const MAX_HEAD: usize = 8 * 1024;
/// Most header lines accepted.
pub const MAX_HEADERS: usize = 64;

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Method (`GET`).
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// The query string (after `?`, before `#`; empty when none).
    pub query: String,
    /// HTTP/1.1 (else 1.0).
    pub http11: bool,
    /// The `Accept` header.
    pub accept: Option<String>,
    /// The connection should stay open after the response.
    pub keep_alive: bool,
    /// The request announces a body (Content-Length > 0 or
    /// Transfer-Encoding), which is never read.
    pub has_body: bool,
}

/// Why a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The client closed the connection before sending anything.
    Closed,
    /// The head is not HTTP.
    Malformed(&'static str),
    /// The head or a header count is over the limits.
    TooLarge,
    /// The head did not arrive in time (after some bytes came).
    Timeout,
    /// Idle keep-alive connection timed out with nothing sent.
    Idle,
    /// Not HTTP/1.0 or 1.1.
    Version,
    /// The connection failed.
    Io(String),
}

impl HttpError {
    /// The status to answer with, or `None` when the connection is just
    /// closed.
    pub fn status(&self) -> Option<(u16, &'static str)> {
        match self {
            HttpError::Closed | HttpError::Idle | HttpError::Io(_) => None,
            HttpError::Malformed(_) => Some((400, "Bad Request")),
            HttpError::TooLarge => Some((431, "Request Header Fields Too Large")),
            HttpError::Timeout => Some((408, "Request Timeout")),
            HttpError::Version => Some((505, "HTTP Version Not Supported")),
        }
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Where the request head in `buf` ends (after its empty line), if it is
/// all there.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    // CRLF CRLF, or bare LF LF (tolerated).
    for i in 0..buf.len() {
        if buf[i] == b'\n' {
            if buf.get(i + 1) == Some(&b'\n') {
                return Some(i + 2);
            }
            if buf.get(i + 1) == Some(&b'\r') && buf.get(i + 2) == Some(&b'\n') {
                return Some(i + 3);
            }
        }
    }
    None
}

/// Read one request head from `conn`, using `buf` for bytes already read
/// (keep-alive) and leaving in it the bytes after the head. `idle_until`
/// bounds the wait for the first byte; once a byte has come, the whole
/// head must arrive by `head_until`'s deadline, counted from then
/// (`head_timeout`). `set_timeout` sets the socket's read timeout.
pub fn read_request<S: Read>(
    conn: &mut S,
    buf: &mut Vec<u8>,
    idle_until: Instant,
    head_timeout: std::time::Duration,
    set_timeout: &mut dyn FnMut(&mut S, std::time::Duration) -> io::Result<()>,
) -> Result<Request, HttpError> {
    let mut started: Option<Instant> = if buf.is_empty() {
        None
    } else {
        Some(Instant::now())
    };
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = head_end(buf) {
            if end > MAX_HEAD {
                return Err(HttpError::TooLarge);
            }
            let head: Vec<u8> = buf.drain(..end).collect();
            return parse_head(&head);
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::TooLarge);
        }
        let deadline = match started {
            Some(t) => t + head_timeout,
            None => idle_until,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(if started.is_some() {
                HttpError::Timeout
            } else {
                HttpError::Idle
            });
        }
        set_timeout(conn, deadline - now).map_err(|e| HttpError::Io(e.to_string()))?;
        match conn.read(&mut chunk) {
            Ok(0) => {
                return Err(if buf.is_empty() {
                    HttpError::Closed
                } else {
                    HttpError::Malformed("connection closed in the middle of the request")
                })
            }
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                started.get_or_insert_with(Instant::now);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(HttpError::Io(e.to_string())),
        }
    }
}

/// Parse a request head (request line, headers, the empty line).
pub fn parse_head(head: &[u8]) -> Result<Request, HttpError> {
    let text = std::str::from_utf8(head).map_err(|_| HttpError::Malformed("not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => (m, t, v),
        _ => {
            return Err(HttpError::Malformed(
                "request line is not METHOD TARGET VERSION",
            ))
        }
    };
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(HttpError::Malformed("bad method"));
    }
    if !target.starts_with('/') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(HttpError::Malformed("bad request target"));
    }
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        v if v.starts_with("HTTP/") => return Err(HttpError::Version),
        _ => return Err(HttpError::Malformed("bad HTTP version")),
    };
    let mut accept = None;
    let mut connection: Option<String> = None;
    let mut has_body = false;
    let mut count = 0;
    for line in lines {
        if line.is_empty() {
            continue;
        }
        count += 1;
        if count > MAX_HEADERS {
            return Err(HttpError::TooLarge);
        }
        let (name, value) = line
            .split_once(':')
            .ok_or(HttpError::Malformed("header line without ':'"))?;
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(HttpError::Malformed("bad header name"));
        }
        let value = value.trim();
        if name.eq_ignore_ascii_case("accept") {
            accept = Some(match accept {
                Some(a) => format!("{a}, {value}"),
                None => value.to_string(),
            });
        } else if name.eq_ignore_ascii_case("connection") {
            connection = Some(value.to_ascii_lowercase());
        } else if name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .parse()
                .map_err(|_| HttpError::Malformed("bad Content-Length"))?;
            has_body |= n > 0;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            has_body = true;
        }
    }
    let keep_alive = match connection.as_deref() {
        Some(c) if c.split(',').any(|t| t.trim() == "close") => false,
        Some(c) if c.split(',').any(|t| t.trim() == "keep-alive") => true,
        _ => http11,
    } && !has_body;
    let target = target.split('#').next().unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        http11,
        accept,
        keep_alive,
        has_body,
    })
}

/// A response to write.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Reason phrase.
    pub reason: &'static str,
    /// Content type.
    pub content_type: &'static str,
    /// Extra header lines (`Allow: GET, HEAD`).
    pub headers: Vec<String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A plain-text response.
    pub fn text(status: u16, reason: &'static str, body: &str) -> Response {
        Response {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// Write it; without the body for HEAD. `keep_alive` decides the
    /// `Connection` header.
    pub fn write_to<W: Write>(
        &self,
        w: &mut W,
        head_only: bool,
        keep_alive: bool,
    ) -> io::Result<()> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n",
            self.status,
            self.reason,
            self.content_type,
            self.body.len(),
            if keep_alive { "keep-alive" } else { "close" }
        )
        .into_bytes();
        for h in &self.headers {
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if !head_only {
            out.extend_from_slice(&self.body);
        }
        w.write_all(&out)?;
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse(s: &str) -> Result<Request, HttpError> {
        parse_head(s.as_bytes())
    }

    #[test]
    fn good_requests() {
        let r = parse(
            "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: application/openmetrics-text\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/metrics", "x=1"));
        assert!(r.keep_alive && r.http11 && !r.has_body);
        assert_eq!(r.accept.as_deref(), Some("application/openmetrics-text"));
        let r = parse("HEAD / HTTP/1.0\n\n").unwrap();
        assert!(!r.keep_alive);
        let r = parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
        assert!(!r.keep_alive);
        let r = parse("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n").unwrap();
        assert!(r.has_body && !r.keep_alive);
    }

    #[test]
    fn bad_requests() {
        for bad in [
            "GARBAGE\r\n\r\n",
            "GET /metrics\r\n\r\n",
            "GET  /metrics HTTP/1.1\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET metrics HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "GET / FTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(parse(bad), Err(HttpError::Malformed(_))),
                "{bad:?} → {:?}",
                parse(bad)
            );
        }
        assert_eq!(parse("GET / HTTP/2.0\r\n\r\n"), Err(HttpError::Version));
        assert!(matches!(
            parse_head(b"GET /\xff HTTP/1.1\r\n\r\n"),
            Err(HttpError::Malformed(_))
        ));
        let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(
            parse(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
            Err(HttpError::TooLarge)
        );
    }

    #[test]
    fn reading_with_limits() {
        let mut noop = |_: &mut &[u8], _: Duration| Ok(());
        let far = Instant::now() + Duration::from_secs(5);
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        let mut src: &[u8] = big.as_bytes();
        let mut buf = Vec::new();
        assert_eq!(
            read_request(&mut src, &mut buf, far, Duration::from_secs(5), &mut noop),
            Err(HttpError::TooLarge)
        );
        // Two pipelined requests on one connection.
        let two = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
        let mut src: &[u8] = two.as_bytes();
        let mut buf = Vec::new();
        let a = read_request(&mut src, &mut buf, far, Duration::from_secs(5), &mut noop).unwrap();
        let b = read_request(&mut src, &mut buf, far, Duration::from_secs(5), &mut noop).unwrap();
        assert_eq!((a.path.as_str(), b.path.as_str()), ("/a", "/b"));
        assert_eq!(
            read_request(&mut src, &mut buf, far, Duration::from_secs(5), &mut noop),
            Err(HttpError::Closed)
        );
        let mut src: &[u8] = b"GET / HT";
        let mut buf = Vec::new();
        assert!(matches!(
            read_request(&mut src, &mut buf, far, Duration::from_secs(5), &mut noop),
            Err(HttpError::Malformed(_))
        ));
    }
}
