//! What `stepwise runs` (and `runs prune`) select runs by: statuses checked
//! against the real ones, ages like `30m` or `7d`, a goal substring.

use chrono::{DateTime, Duration, Utc};
use stepwise_core::{RunStatus, RunSummary};

/// A status as `stepwise runs` prints it (`needs_review`, …); `-` may
/// stand for `_`.
pub(crate) fn status(text: &str) -> Result<RunStatus, String> {
    let wanted = text.trim().to_ascii_lowercase().replace('-', "_");
    RunStatus::ALL
        .into_iter()
        .find(|s| s.as_str() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown status; expected one of: {}", names.join(", "))
        })
}

/// An age: a whole number and a unit, `s`, `m`, `h`, `d` or `w` (`90s`,
/// `30m`, `2h`, `7d`, `2w`); several add up (`1h30m`). A small parser
/// rather than a dependency for five units.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    const HOW: &str = "expected a duration such as 30m, 2h, 7d or 1h30m (units: s, m, h, d, w)";
    let text = text.trim();
    if text.is_empty() {
        return Err(HOW.to_owned());
    }
    let mut total = Duration::zero();
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().map_err(|_| HOW.to_owned())?;
        digits.clear();
        let part = match c {
            's' => Duration::try_seconds(n),
            'm' => Duration::try_minutes(n),
            'h' => Duration::try_hours(n),
            'd' => Duration::try_days(n),
            'w' => Duration::try_weeks(n),
            _ => None,
        };
        total = part
            .and_then(|p| total.checked_add(&p))
            .ok_or_else(|| HOW.to_owned())?;
    }
    if !digits.is_empty() {
        return Err(HOW.to_owned()); // a number without its unit
    }
    Ok(total)
}

/// The instant `age` before `now`, or the earliest one there is.
pub(crate) fn ago(now: DateTime<Utc>, age: Duration) -> DateTime<Utc> {
    now.checked_sub_signed(age)
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// What a listing keeps: every field is "any" when unset.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    /// Any of these statuses (none: any status).
    pub(crate) statuses: Vec<RunStatus>,
    /// Started at or after this.
    pub(crate) since: Option<DateTime<Utc>>,
    /// The goal holds this, ignoring case.
    pub(crate) goal: Option<String>,
}

impl Filter {
    /// Whether `run` is kept.
    pub(crate) fn keeps(&self, run: &RunSummary) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&run.status))
            && self.since.is_none_or(|since| run.started_at >= since)
            && self
                .goal
                .as_ref()
                .is_none_or(|g| run.goal.to_lowercase().contains(&g.to_lowercase()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_add_up() {
        assert_eq!(duration("30m"), Ok(Duration::minutes(30)));
        assert_eq!(duration("2h"), Ok(Duration::hours(2)));
        assert_eq!(duration("7d"), Ok(Duration::days(7)));
        assert_eq!(duration("2w"), Ok(Duration::weeks(2)));
        assert_eq!(duration("90s"), Ok(Duration::seconds(90)));
        assert_eq!(duration("1h30m"), Ok(Duration::minutes(90)));
        assert_eq!(duration(" 0d "), Ok(Duration::zero()));
        for bad in [
            "",
            "30",
            "m",
            "3x",
            "1.5h",
            "-2h",
            "99999999999999999999d",
            "1h 30m",
        ] {
            assert!(duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn statuses_are_the_real_ones() {
        for s in RunStatus::ALL {
            assert_eq!(status(s.as_str()), Ok(s));
        }
        assert_eq!(status("Needs-Review"), Ok(RunStatus::NeedsReview));
        let err = status("done").unwrap_err();
        assert!(err.contains("awaiting_approval"), "{err}");
    }
}
