//! Where job notices go: Slurm's `MailProg=` and `MailDomain=`, and gsched's own
//! `SmtpServer=`/`MailFrom=` (mail sent by the controller itself, no local MTA needed) and
//! `WebhookName=` lines (generic JSON, Slack and WeCom formats, for the whole cluster or
//! for some accounts).
//!
//! ```text
//! MailProg=/usr/bin/mail
//! MailDomain=example.org
//! SmtpServer=smtp.example.org:25
//! MailFrom=gsched@example.org
//! WebhookName=ops URL=https://hooks.slack.com/services/... Format=slack Events=FAIL,REQUEUE
//! WebhookName=ml URL=http://hooks.example.org/gsched Accounts=ml,vision
//! ```

use crate::mail::MailTypes;

/// The keys of a `WebhookName=` line (the first one opens it).
pub const WEBHOOK_KEYS: &[&str] = &["WebhookName", "URL", "Format", "Events", "Accounts"];

/// The default `MailProg` (Slurm's).
pub const DEFAULT_MAIL_PROG: &str = "/bin/mail";

/// The notification settings of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyConfig {
    /// `MailProg=`; `None` = [`DEFAULT_MAIL_PROG`].
    pub mail_prog: Option<String>,
    /// `MailDomain=`: appended to a user name when `--mail-user` is not given.
    pub mail_domain: Option<String>,
    /// `SmtpServer=host[:port]` (gsched): send mail over SMTP instead of running MailProg.
    pub smtp_server: Option<(String, u16)>,
    /// `MailFrom=` (gsched): the sender of SMTP mail; default `gsched@<host>`.
    pub mail_from: Option<String>,
    pub webhooks: Vec<Webhook>,
}

impl NotifyConfig {
    /// The program that sends mail when no SMTP server is set.
    pub fn mail_prog(&self) -> &str {
        self.mail_prog.as_deref().unwrap_or(DEFAULT_MAIL_PROG)
    }

    /// Sets a global key this module owns (`canon` is the canonical key name).
    pub fn global(&mut self, canon: &str, value: &str) -> Result<(), String> {
        let nonempty = |v: &str| {
            if v.trim().is_empty() {
                Err("expected a value".to_string())
            } else {
                Ok(v.trim().to_string())
            }
        };
        match canon {
            "MailProg" => self.mail_prog = Some(nonempty(value)?),
            "MailDomain" => self.mail_domain = Some(nonempty(value)?),
            "MailFrom" => {
                let v = nonempty(value)?;
                if !v.contains('@') {
                    return Err(format!("\"{v}\" is not a mail address (user@domain)"));
                }
                self.mail_from = Some(v);
            }
            "SmtpServer" => self.smtp_server = Some(parse_host_port(value, 25)?),
            _ => return Err(format!("{canon} is not a notification setting")),
        }
        Ok(())
    }

    /// Parses one `WebhookName=` line (its pairs, in order).
    pub fn webhook_line(&mut self, pairs: &[(String, String)]) -> Result<(), String> {
        let mut name = None;
        let mut url = None;
        let mut format = WebhookFormat::Generic;
        let mut events = MailTypes(MailTypes::END | MailTypes::FAIL);
        let mut accounts = Vec::new();
        for (k, v) in pairs {
            let key = k.to_ascii_lowercase();
            match key.as_str() {
                "webhookname" => {
                    if v.is_empty() {
                        return Err("WebhookName: expected a name".into());
                    }
                    name = Some(v.clone());
                }
                "url" => {
                    if !(v.starts_with("http://") || v.starts_with("https://")) {
                        return Err(format!("URL: \"{v}\" must start with http:// or https://"));
                    }
                    url = Some(v.clone());
                }
                "format" => {
                    format = match v.to_ascii_lowercase().as_str() {
                        "generic" | "json" => WebhookFormat::Generic,
                        "slack" => WebhookFormat::Slack,
                        "wecom" => WebhookFormat::WeCom,
                        _ => {
                            return Err(format!(
                                "Format: \"{v}\" is not one of generic, slack, wecom"
                            ))
                        }
                    }
                }
                "events" => {
                    let unknown = MailTypes::unknown_words(v);
                    if !unknown.is_empty() {
                        return Err(format!(
                            "Events: \"{}\" is not a --mail-type word (BEGIN, END, FAIL, REQUEUE, TIME_LIMIT, ALL, ...)",
                            unknown.join(",")
                        ));
                    }
                    events = MailTypes::parse(v).ok_or_else(|| {
                        format!("Events: \"{v}\" is not a list of --mail-type words (BEGIN, END, FAIL, REQUEUE, TIME_LIMIT, ALL, ...)")
                    })?
                }
                "accounts" => {
                    accounts = v
                        .split(',')
                        .map(|a| a.trim().to_ascii_lowercase())
                        .filter(|a| !a.is_empty())
                        .collect()
                }
                _ => {
                    return Err(format!(
                        "unknown key \"{k}\" on a WebhookName line (valid: WebhookName, URL, Format, Events, Accounts)"
                    ))
                }
            }
        }
        let name = name.ok_or("WebhookName: expected a name")?;
        if self.webhooks.iter().any(|w| w.name == name) {
            return Err(format!("WebhookName: \"{name}\" is defined twice"));
        }
        let url = url.ok_or_else(|| format!("WebhookName={name}: URL= is required"))?;
        self.webhooks.push(Webhook {
            name,
            url,
            format,
            events,
            accounts,
        });
        Ok(())
    }
}

/// How a webhook's body is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookFormat {
    /// A JSON object with the job's fields.
    Generic,
    /// `{"text": ...}` (Slack incoming webhooks).
    Slack,
    /// `{"msgtype": "text", "text": {"content": ...}}` (WeCom group robots).
    WeCom,
}

/// One `WebhookName=` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub name: String,
    pub url: String,
    pub format: WebhookFormat,
    /// The events it is told about (`Events=`, `--mail-type` words; default `END,FAIL`).
    pub events: MailTypes,
    /// Only jobs of these accounts (`Accounts=`); empty = every job.
    pub accounts: Vec<String>,
}

impl Webhook {
    /// Whether a job of `account` is reported here.
    pub fn covers(&self, account: Option<&str>) -> bool {
        self.accounts.is_empty()
            || account.is_some_and(|a| self.accounts.iter().any(|x| x.eq_ignore_ascii_case(a)))
    }
}

fn parse_host_port(value: &str, default_port: u16) -> Result<(String, u16), String> {
    let v = value.trim();
    if v.is_empty() {
        return Err("expected host[:port]".into());
    }
    match v.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => {
            let port = p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("\"{p}\" is not a port number"))?;
            Ok((h.to_string(), port))
        }
        _ => Ok((v.to_string(), default_port)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        text.split_whitespace()
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    #[test]
    fn globals_and_webhooks() {
        let mut n = NotifyConfig::default();
        assert_eq!(n.mail_prog(), "/bin/mail");
        n.global("MailProg", "/usr/bin/mailx").unwrap();
        n.global("SmtpServer", "mx.example.org").unwrap();
        assert_eq!(n.smtp_server, Some(("mx.example.org".into(), 25)));
        n.global("SmtpServer", "127.0.0.1:2525").unwrap();
        assert_eq!(n.smtp_server, Some(("127.0.0.1".into(), 2525)));
        assert!(n.global("SmtpServer", "h:x").is_err());
        assert!(n.global("MailFrom", "nobody").is_err());
        n.webhook_line(&pairs(
            "WebhookName=ops URL=https://h/x Format=slack Events=FAIL Accounts=ML,cv",
        ))
        .unwrap();
        let w = &n.webhooks[0];
        assert_eq!(w.format, WebhookFormat::Slack);
        assert!(w.events.has(MailTypes::FAIL) && !w.events.has(MailTypes::END));
        assert!(w.covers(Some("ml")) && !w.covers(Some("bio")) && !w.covers(None));
        n.webhook_line(&pairs("WebhookName=all URL=http://h/y"))
            .unwrap();
        assert!(n.webhooks[1].covers(None));
        for (bad, why) in [
            ("WebhookName=ops URL=http://h", "defined twice"),
            ("WebhookName=x", "URL= is required"),
            ("WebhookName=x URL=ftp://h", "must start with http"),
            ("WebhookName=x URL=http://h Format=xml", "not one of"),
            ("WebhookName=x URL=http://h Events=SOMETIMES", "Events:"),
            ("WebhookName=x URL=http://h Color=red", "unknown key"),
        ] {
            let e = n.webhook_line(&pairs(bad)).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
