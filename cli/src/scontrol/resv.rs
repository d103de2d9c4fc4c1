//! `scontrol create|update|delete|show reservation` and `scontrol reboot`, in Slurm's words.

use super::{kw, Out, Session};
use gsched_proto::resv::{
    RebootNextState, RebootRequest, ReservationAction, ReservationInfo, ReservationSpec,
};
use gsched_proto::units;

/// A time as `StartTime=`/`EndTime=`/`MigrateBy=` take it: Slurm's forms (`now+30minutes`,
/// `YYYY-MM-DDTHH:MM[:SS]`, `HH:MM`, ...), plus `+30min` for `now+30min`.
pub fn parse_when(v: &str, now: i64) -> Result<i64, String> {
    let v = v.trim();
    let v = match v.strip_prefix('+') {
        Some(rest) => format!("now+{rest}"),
        None => v.to_string(),
    };
    gsched_proto::begin::parse_begin(&v, now).map_err(|e| e.to_string())
}

/// `Duration=`: minutes or Slurm's time forms; `UNLIMITED` is refused (a maintenance window
/// ends).
fn parse_duration(v: &str) -> Result<u32, String> {
    match units::parse_time_minutes(v) {
        Ok(Some(m)) if m > 0 => Ok(m),
        Ok(_) => Err(format!("invalid Duration {v}: a reservation needs an end")),
        Err(e) => Err(e.to_string()),
    }
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// A reservation in `scontrol show reservation`'s layout.
pub fn format_reservation(r: &ReservationInfo, now: i64, one_liner: bool) -> String {
    let le = if one_liner { " " } else { "\n   " };
    let time = crate::common::make_time_str;
    let nodes = gsched_proto::hostlist::compress(&r.nodes);
    let flags = if r.flags.is_empty() {
        "SPEC_NODES".to_string()
    } else {
        format!("{},SPEC_NODES", r.flags.join(","))
    };
    let users = if r.users.is_empty() {
        "(null)".to_string()
    } else {
        r.users.join(",")
    };
    format!(
        "ReservationName={} StartTime={} EndTime={} Duration={}{le}Nodes={nodes} NodeCnt={} CoreCnt={} Features=(null) PartitionName=(null) Flags={flags}{le}TRES=cpu={}{le}Users={users} Groups=(null) Accounts=(null) Licenses=(null) State={} BurstBuffer=(null) Watts=n/a{le}MaxStartDelay=(null)\n",
        r.name,
        time(r.start_time),
        time(r.end_time),
        units::format_secs_scontrol((r.end_time - r.start_time).max(0) as u64),
        r.nodes.len(),
        r.cpus,
        r.cpus,
        r.state(now),
    )
}

impl Session<'_> {
    /// The `Key=Value` words of a reservation command.
    fn resv_spec(&self, out: &mut Out, args: &[String]) -> Option<ReservationSpec> {
        let mut spec = ReservationSpec::default();
        for a in args {
            let Some((tag, val)) = a.split_once('=') else {
                out.err(format!("Invalid input: {a}  Request aborted"));
                return None;
            };
            let bad = |out: &mut Out, e: String| {
                out.err(format!("Invalid {tag} value: {val} ({e})"));
                out.stderr.push("Request aborted".into());
            };
            if kw(tag, "ReservationName", 3) {
                spec.name = Some(val.to_string());
            } else if kw(tag, "StartTime", 1) {
                match parse_when(val, self.now) {
                    Ok(t) => spec.start_time = Some(t),
                    Err(e) => {
                        bad(out, e);
                        return None;
                    }
                }
            } else if kw(tag, "EndTime", 1) {
                match parse_when(val, self.now) {
                    Ok(t) => spec.end_time = Some(t),
                    Err(e) => {
                        bad(out, e);
                        return None;
                    }
                }
            } else if kw(tag, "Duration", 1) {
                match parse_duration(val) {
                    Ok(m) => spec.duration_min = Some(m),
                    Err(e) => {
                        bad(out, e);
                        return None;
                    }
                }
            } else if kw(tag, "Nodes", 1) {
                spec.nodes = Some(val.to_string());
            } else if kw(tag, "Flags", 2) {
                spec.flags = Some(list(val));
            } else if kw(tag, "Users", 1) {
                spec.users = Some(list(val));
            } else {
                out.err(format!(
                    "{}: error: reservation option {tag}= is not supported by gsched yet (supported: ReservationName, StartTime, EndTime, Duration, Nodes, Flags, Users)",
                    self.prog
                ));
                return None;
            }
        }
        Some(spec)
    }

    /// `scontrol create reservation ...`.
    pub(super) fn create(&self, out: &mut Out, args: &[String]) {
        let Some(what) = args.first() else {
            return self.complain(out, "too few arguments for keyword:create");
        };
        let (tag, first) = match what.split_once('=') {
            Some((t, _)) => (t, Some(what.clone())),
            None => (what.as_str(), None),
        };
        if !(kw(tag, "reservation", 3) || kw(tag, "reservationname", 3)) {
            return out.err(format!(
                "{}: error: create {tag} is not supported by gsched yet (only reservations)",
                self.prog
            ));
        }
        let words: Vec<String> = first.into_iter().chain(args[1..].iter().cloned()).collect();
        let Some(spec) = self.resv_spec(out, &words) else {
            return;
        };
        let Some(api) = self.connect(out) else { return };
        match api.reservation_action(&ReservationAction::Create(spec)) {
            Ok(name) => out.print(&format!("Reservation created: {name}\n")),
            Err(e) => self.perror(out, "Error creating the reservation", &e),
        }
    }

    /// `scontrol update ReservationName=...`.
    pub(super) fn update_reservation(&self, out: &mut Out, args: &[String]) {
        let Some(spec) = self.resv_spec(out, args) else {
            return;
        };
        if spec.name.is_none() {
            return out.err("ReservationName= must be given");
        }
        let Some(api) = self.connect(out) else { return };
        match api.reservation_action(&ReservationAction::Update(spec)) {
            Ok(_) => out.print("Reservation updated.\n"),
            Err(e) => self.perror(out, "Error updating the reservation", &e),
        }
    }

    /// `scontrol delete ReservationName=NAME` (or `delete reservation NAME`).
    pub(super) fn delete(&self, out: &mut Out, args: &[String]) {
        let name = match args {
            [one] => match one.split_once('=') {
                Some((t, v)) if kw(t, "ReservationName", 3) => Some(v.to_string()),
                _ => None,
            },
            [t, v] if kw(t, "reservation", 3) || kw(t, "ReservationName", 3) => Some(v.clone()),
            _ => None,
        };
        let Some(name) = name else {
            return out.err(format!(
                "{}: error: delete takes ReservationName=NAME (other entities are not supported by gsched yet)",
                self.prog
            ));
        };
        let Some(api) = self.connect(out) else { return };
        if let Err(e) = api.reservation_action(&ReservationAction::Delete { name }) {
            self.perror(out, "Error deleting the reservation", &e);
        }
    }

    /// `scontrol show reservation [NAME]`.
    pub(super) fn show_reservations(&self, out: &mut Out, name: Option<&str>) {
        let Some(api) = self.connect(out) else { return };
        let r = match api.reservations() {
            Ok(r) => r,
            Err(e) => return self.perror(out, "slurm_load_reservations error", &e),
        };
        let shown: Vec<&ReservationInfo> = r
            .reservations
            .iter()
            .filter(|x| name.is_none_or(|n| x.name == n))
            .collect();
        match (shown.is_empty(), name) {
            (true, Some(n)) => {
                out.print(&format!("Reservation {n} not found\n"));
                out.fail();
            }
            (true, None) => out.print("No reservations in the system\n"),
            _ => {
                for x in shown {
                    out.print(&format_reservation(x, r.now, self.flags.one_liner));
                    if !self.flags.one_liner {
                        out.print("\n");
                    }
                }
            }
        }
    }

    /// `scontrol reboot [ASAP] [nextstate=resume|down] [reason=...] [NODES|ALL]`.
    pub(super) fn reboot(&self, out: &mut Out, args: &[String]) {
        let mut req = RebootRequest {
            names: Vec::new(),
            asap: false,
            next_state: RebootNextState::Resume,
            reason: None,
        };
        for a in args {
            if a.eq_ignore_ascii_case("ASAP") {
                req.asap = true;
            } else if let Some((t, v)) = a.split_once('=') {
                if kw(t, "nextstate", 1) {
                    req.next_state = if v.eq_ignore_ascii_case("resume") {
                        RebootNextState::Resume
                    } else if v.eq_ignore_ascii_case("down") {
                        RebootNextState::Down
                    } else {
                        return out.err(format!("Invalid nextstate value: {v} (RESUME or DOWN)"));
                    };
                } else if kw(t, "reason", 1) {
                    req.reason = Some(v.trim_matches('"').to_string());
                } else {
                    return out.err(format!("Invalid input: {a}"));
                }
            } else {
                req.names.push(a.clone());
            }
        }
        if req.names.is_empty() {
            // Slurm requires the node list (or ALL).
            return out.err("Missing node list. Specify ALL|<NodeList>");
        }
        let Some(api) = self.connect(out) else { return };
        if let Err(e) = api.reboot(&req) {
            self.perror(out, "scontrol_reboot_nodes error", &e);
        }
    }
}
