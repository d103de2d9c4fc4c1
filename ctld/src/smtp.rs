//! A minimal SMTP client (RFC 5321) for `SmtpServer=`: one message per connection, plain
//! text, no TLS or authentication — what a site relay on the controller's network takes.
//! It exists so that notices need no mail program or MTA on the controller host.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// This host's name (for `EHLO` and the default sender).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Sends one message from `from` to `to`.
pub fn send(
    host: &str,
    port: u16,
    from: &str,
    to: &str,
    subject: &str,
    body: &str,
) -> Result<(), String> {
    let stream = TcpStream::connect((host, port)).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(TIMEOUT)).ok();
    stream.set_write_timeout(Some(TIMEOUT)).ok();
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    let mut w = stream;
    expect(&mut reader, 220, "greeting")?;
    let me = hostname();
    command(&mut w, &mut reader, &format!("EHLO {me}"), 250)?;
    command(&mut w, &mut reader, &format!("MAIL FROM:<{from}>"), 250)?;
    command(&mut w, &mut reader, &format!("RCPT TO:<{to}>"), 250)?;
    command(&mut w, &mut reader, "DATA", 354)?;
    let mut msg = String::new();
    msg.push_str(&format!("From: {from}\r\nTo: {to}\r\n"));
    msg.push_str(&format!("Subject: {}\r\n", header_safe(subject)));
    msg.push_str(&format!("Date: {}\r\n", rfc2822_now()));
    msg.push_str("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n");
    msg.push_str("Auto-Submitted: auto-generated\r\n\r\n");
    for line in body.lines() {
        // Dot-stuffing: a line starting with '.' gets another.
        if line.starts_with('.') {
            msg.push('.');
        }
        msg.push_str(line);
        msg.push_str("\r\n");
    }
    msg.push_str(".\r\n");
    w.write_all(msg.as_bytes()).map_err(|e| e.to_string())?;
    expect(&mut reader, 250, "end of data")?;
    let _ = w.write_all(b"QUIT\r\n");
    Ok(())
}

fn command(
    w: &mut TcpStream,
    r: &mut BufReader<TcpStream>,
    line: &str,
    code: u16,
) -> Result<(), String> {
    w.write_all(format!("{line}\r\n").as_bytes())
        .map_err(|e| format!("{line}: {e}"))?;
    expect(r, code, line)
}

/// Reads a (possibly multi-line) reply and checks its code.
fn expect(r: &mut BufReader<TcpStream>, code: u16, what: &str) -> Result<(), String> {
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).map_err(|e| format!("{what}: {e}"))?;
        if n == 0 {
            return Err(format!("{what}: the server closed the connection"));
        }
        let got: u16 = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
        if line.as_bytes().get(3) == Some(&b'-') {
            continue;
        }
        if got != code {
            return Err(format!("{what}: {}", line.trim_end()));
        }
        return Ok(());
    }
}

fn header_safe(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// The current time as RFC 2822 wants it, in UTC.
fn rfc2822_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = gsched_proto::units::civil_from_days(days);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    format!(
        "{wd}, {d:02} {mon} {y} {:02}:{:02}:{:02} +0000",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A scripted SMTP server: records what the client sent.
    fn server() -> (u16, std::thread::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let mut log = String::new();
            w.write_all(b"220 test ESMTP\r\n").unwrap();
            let mut data = false;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap() == 0 {
                    break;
                }
                log.push_str(&line);
                if data {
                    if line == ".\r\n" {
                        data = false;
                        w.write_all(b"250 queued\r\n").unwrap();
                    }
                    continue;
                }
                let reply: &[u8] = if line.starts_with("EHLO") {
                    b"250-test\r\n250 8BITMIME\r\n"
                } else if line.starts_with("DATA") {
                    data = true;
                    b"354 go\r\n"
                } else if line.starts_with("QUIT") {
                    w.write_all(b"221 bye\r\n").unwrap();
                    break;
                } else {
                    b"250 ok\r\n"
                };
                w.write_all(reply).unwrap();
            }
            log
        });
        (port, h)
    }

    #[test]
    fn sends_one_message() {
        let (port, h) = server();
        send(
            "127.0.0.1",
            port,
            "gsched@h",
            "ada@example.org",
            "Slurm Job_id=1 Name=x Began, Queued time 00:00:01",
            "A=1\n.dot",
        )
        .unwrap();
        let log = h.join().unwrap();
        assert!(log.contains("MAIL FROM:<gsched@h>\r\n"), "{log}");
        assert!(log.contains("RCPT TO:<ada@example.org>\r\n"), "{log}");
        assert!(
            log.contains("Subject: Slurm Job_id=1 Name=x Began, Queued time 00:00:01\r\n"),
            "{log}"
        );
        assert!(log.contains("\r\nA=1\r\n..dot\r\n.\r\n"), "{log}");
        assert!(rfc2822_now().ends_with(" +0000"));
    }

    #[test]
    fn refusals_are_errors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(b"554 no service\r\n").unwrap();
        });
        let e = send("127.0.0.1", port, "a@b", "c@d", "s", "").unwrap_err();
        assert!(e.contains("554 no service"), "{e}");
        h.join().unwrap();
    }
}
