//! What a goal asks for: the dimensions a brief must cover, each named as
//! the user wrote it, and the names it mentions (the alternatives).
//!
//! Dimensions come from the constraints (`required_sections`, then
//! `comparison_dimensions`, merged) and from a list the goal spells out:
//! after a colon or a dash ("Brief the board: cost, timeline, risks"),
//! after an English list word ("Consider …", "… on cost and latency"), or
//! in Korean before one ("비용, 보안을 검토하라", "비용과 보안 측면에서").
//! The list words are data ([`Cue::List`]). A list is read item by item and
//! ends at the first item that is a clause rather than a noun phrase.

use stepwise_core::{Constraints, Goal, RunState};
use stepwise_tools::text::cues::{Cue, find, is_cue_word, tokens};
use stepwise_tools::text::{is_hangul, mentions, words};

/// A goal's dimensions and the names it mentions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked {
    /// The dimensions, as written, in order, without duplicates.
    pub dimensions: Vec<String>,
    /// Names the goal mentions (capitalised names, Korean alternatives).
    pub entities: Vec<String>,
}

/// Most words a dimension has; a longer item is a clause.
const MAX_ITEM_WORDS: usize = 5;

/// Words that make an English item a clause, not a noun phrase.
const CLAUSE_WORDS: &[&str] = &[
    "which", "what", "how", "who", "whether", "is", "are", "should", "does", "do",
];

/// Leading words an English item loses ("the cost" → "cost").
const LEADING: &[&str] = &[
    "the", "its", "their", "our", "your", "and", "or", "both", "each",
];

/// Korean particles after which a list joins its next item (비용과 품질).
const KO_JOINERS: &[&str] = &["이랑", "과", "와", "랑"];

/// Korean particles that end a phrase before a list (업체를, 두 곳은).
const KO_CASE: &[&str] = &[
    "에서는",
    "에서",
    "으로",
    "를",
    "을",
    "는",
    "은",
    "가",
    "로",
    "냐",
];

impl Asked {
    /// What `goal` asks, with its constraints.
    pub fn of(goal: &Goal) -> Self {
        Self::from_parts(&goal.goal, &goal.constraints)
    }

    /// What a run's goal asks.
    pub fn of_state(state: &RunState) -> Self {
        Self::from_parts(&state.goal, &state.constraints)
    }

    pub(crate) fn from_parts(goal: &str, c: &Constraints) -> Self {
        let mut asked = Asked::default();
        for d in c.required_sections.iter().chain(&c.comparison_dimensions) {
            asked.add_dimension(d);
        }
        for clause in clauses(goal) {
            for d in list_in(&clause) {
                asked.add_dimension(&d);
            }
        }
        asked.entities = names_in(goal);
        asked
    }

    /// Adds a dimension unless one with the same words is there already.
    fn add_dimension(&mut self, raw: &str) {
        let d = raw
            .trim()
            .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace());
        let key = words(d);
        if !key.is_empty() && !self.dimensions.iter().any(|x| words(x) == key) {
            self.dimensions.push(d.to_owned());
        }
    }

    /// The dimensions a search step of someone else's plan is about: its
    /// description is the dimension, or names every word of it. The goal
    /// itself is about none: it is the overview.
    pub(crate) fn dimensions_named_by(&self, description: &str, goal: &str) -> Vec<&str> {
        if let Some(d) = self.dimension_of(description) {
            return vec![d];
        }
        if description == goal {
            return Vec::new();
        }
        let ws = words(description);
        self.dimensions
            .iter()
            .filter(|d| {
                let terms = words(d);
                !terms.is_empty() && terms.iter().all(|t| mentions(&ws, t))
            })
            .map(String::as_str)
            .collect()
    }

    /// The dimension a sub-question (a step description) was planned for.
    pub fn dimension_of(&self, description: &str) -> Option<&str> {
        self.dimensions
            .iter()
            .find(|d| d.as_str() == description)
            .map(String::as_str)
    }
}

/// The goal's clauses: split at sentence ends.
fn clauses(goal: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = goal.chars().peekable();
    while let Some(c) = chars.next() {
        let end = matches!(c, '?' | '!' | ';' | '\n' | '。')
            || (c == '.' && chars.peek().is_none_or(|n| n.is_whitespace()));
        if end {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    out.push(current);
    out.into_iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect()
}

/// The dimensions one clause lists: after its last colon or dash, else
/// around its list word; none when no list reads as noun phrases.
fn list_in(clause: &str) -> Vec<String> {
    let korean = clause.chars().any(is_hangul);
    let after_mark = || {
        [":", " — ", " - ", " – "]
            .iter()
            .filter_map(|mark| {
                clause
                    .rfind(mark)
                    .map(|at| items_of(&clause[at + mark.len()..], korean))
            })
            .find(|items| !items.is_empty())
    };
    let spans = find(clause, Cue::List);
    if korean {
        // A colon list first ("업체 검토: 비용, 위생"); else the list ends
        // at the first list word: "…을 따져 비교하라".
        if let Some(items) = after_mark() {
            return items;
        }
        let Some(&(start, _)) = spans.first() else {
            return Vec::new();
        };
        let ws: Vec<&str> = clause[..start].split_whitespace().collect();
        let last = ws.len().saturating_sub(1);
        // It starts after the last phrase a case particle ends; a word
        // before a comma is an item, whatever it ends with.
        let from = ws[..last]
            .iter()
            .rposition(|w| !w.ends_with(',') && KO_CASE.iter().any(|p| w.ends_with(p)))
            .map_or(0, |i| i + 1);
        return items_of(&ws[from..].join(" "), true);
    }
    // A list word first ("… - weigh up cost and risk"), else a colon list.
    // "on" lists dimensions only after a comparison ("compare A and B on",
    // "better than B on"), not in "run X on the code".
    let compares = |start: usize| {
        tokens(&clause[..start])
            .iter()
            .any(|t| is_cue_word(&t.stem, Cue::Task))
    };
    spans
        .iter()
        .rev()
        .filter(|&&(start, end)| &clause[start..end] != "on" || compares(start))
        .map(|&(_, end)| items_of(&clause[end..], false))
        .find(|items| !items.is_empty())
        .or_else(after_mark)
        .unwrap_or_default()
}

/// The items of a list, up to the first that is not a noun phrase.
fn items_of(list: &str, korean: bool) -> Vec<String> {
    let mut pieces: Vec<String> = list
        .split([',', '、', '/', '·'])
        .map(str::to_owned)
        .collect();
    // In "a, b and c" only the last piece joins two; without commas, all.
    if let Some(last) = pieces.pop() {
        pieces.extend(split_joined(&last, korean));
    }
    let mut out = Vec::new();
    for p in pieces {
        let item = clean(&p, korean);
        if item.is_empty() {
            continue;
        }
        if !is_noun_phrase(&item, korean) {
            break;
        }
        out.push(item);
    }
    out
}

/// A piece split at "and"/"or" (English) or at a joining particle (Korean).
fn split_joined(piece: &str, korean: bool) -> Vec<String> {
    if !korean {
        let spaced = format!(" {} ", piece.trim());
        return spaced
            .split(" and ")
            .flat_map(|p| p.split(" or "))
            .flat_map(|p| p.split(" & "))
            .map(str::to_owned)
            .collect();
    }
    let mut out = vec![String::new()];
    for w in piece.split_whitespace() {
        let joined = KO_JOINERS.iter().find_map(|j| {
            w.strip_suffix(j)
                .filter(|rest| rest.chars().count() >= 2 && rest.chars().all(is_hangul))
        });
        if let Some(last) = out.last_mut() {
            last.push(' ');
            last.push_str(joined.unwrap_or(w));
        }
        if joined.is_some() {
            out.push(String::new());
        } else if w == "및" {
            if let Some(last) = out.last_mut() {
                let trimmed = last.trim_end().trim_end_matches('및').to_owned();
                *last = trimmed;
            }
            out.push(String::new());
        }
    }
    out
}

/// An item without punctuation, leading articles (English) or its final
/// particle (Korean: 보호를 → 보호).
fn clean(raw: &str, korean: bool) -> String {
    let t = raw
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric() && c != ')');
    let mut ws: Vec<&str> = t.split_whitespace().collect();
    if korean {
        if let Some(last) = ws.last_mut() {
            *last = KO_CASE
                .iter()
                .chain(&["의", "이"])
                .find_map(|p| last.strip_suffix(p).filter(|r| r.chars().count() >= 2))
                .unwrap_or(last);
        }
    } else {
        while ws
            .first()
            .is_some_and(|w| LEADING.contains(&w.to_lowercase().as_str()))
        {
            ws.remove(0);
        }
    }
    ws.join(" ")
}

/// Whether an item reads as a noun phrase: short, and for English
/// without clause words.
fn is_noun_phrase(item: &str, korean: bool) -> bool {
    let ws: Vec<String> = item.split_whitespace().map(str::to_lowercase).collect();
    !ws.is_empty()
        && ws.len() <= MAX_ITEM_WORDS
        && (korean || !ws.iter().any(|w| CLAUSE_WORDS.contains(&w.as_str())))
        && !words(item).is_empty()
}

/// The names a goal mentions: runs of capitalised words (not the word
/// opening a clause unless a name follows it as an alternative: "Canvas or
/// D2L"), and Korean alternatives ("A와 B 중", "A냐 B냐").
fn names_in(goal: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let add = |name: &str, out: &mut Vec<String>| {
        let name = name.trim_matches(|c: char| !c.is_alphanumeric());
        if !name.is_empty() && !out.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            out.push(name.to_owned());
        }
    };
    for clause in clauses(goal) {
        let ws: Vec<&str> = clause.split_whitespace().collect();
        let capital = |w: &str| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            w.chars().next().is_some_and(char::is_uppercase) && !w.chars().any(is_hangul)
        };
        let mut run: Vec<&str> = Vec::new();
        for (i, w) in ws.iter().enumerate() {
            let opens = i == 0
                && !ws.get(1).is_some_and(|n| {
                    ["or", "vs", "vs.", "and", "versus"].contains(n) || capital(n)
                });
            let part = capital(w) && !opens;
            if part {
                run.push(w.trim_end_matches("'s").trim_end_matches("’s"));
            }
            let ends = !part || w.ends_with([',', ':', '?', ')']) || w.ends_with("'s");
            if ends && !run.is_empty() {
                add(&run.join(" "), &mut out);
                run.clear();
            }
        }
        if !run.is_empty() {
            add(&run.join(" "), &mut out);
        }
        for (i, w) in ws.iter().enumerate() {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '(' && c != ')');
            let bare = w.replace("(주)", "");
            if let Some(x) = bare
                .strip_suffix("이냐")
                .or_else(|| bare.strip_suffix("냐"))
            {
                add(x, &mut out);
            }
            let joined = KO_JOINERS.iter().find_map(|j| bare.strip_suffix(j));
            let then_which = ws
                .get(i + 2)
                .is_some_and(|n| n.starts_with('중') || n.starts_with("가운데"));
            if let (Some(x), true, Some(y)) = (joined, then_which, ws.get(i + 1)) {
                add(x, &mut out);
                add(&clean(&y.replace("(주)", ""), true), &mut out);
            }
        }
    }
    out.retain(|n| n.chars().count() >= 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(goal: &str) -> Asked {
        Asked::from_parts(goal, &Constraints::default())
    }

    #[test]
    fn lists_after_a_cue_a_colon_or_on() {
        assert_eq!(
            asked("Should we adopt X or Y? Consider cost, data migration, teacher training and data privacy.").dimensions,
            ["cost", "data migration", "teacher training", "data privacy"]
        );
        assert_eq!(
            asked("Canvas or D2L Brightspace as our next LMS: accessibility, faculty training, data privacy").dimensions,
            ["accessibility", "faculty training", "data privacy"]
        );
        assert_eq!(
            asked("Compare Ledgerline and Classmere on cost and data migration.").dimensions,
            ["cost", "data migration"]
        );
        assert_eq!(
            asked("Weigh A against B in terms of cost and staff training.").dimensions,
            ["cost", "staff training"]
        );
        assert_eq!(
            asked("Compare on EHR and phone integration, cost and uptime").dimensions,
            ["EHR and phone integration", "cost", "uptime"]
        );
    }

    #[test]
    fn a_list_ends_at_a_clause() {
        assert_eq!(
            asked("Before they meet: is A really better than B on image quality, and which one gets the backlog under 18 months?").dimensions,
            ["image quality"]
        );
        assert!(
            asked("Which donor CRM should we adopt?")
                .dimensions
                .is_empty()
        );
    }

    #[test]
    fn korean_lists_before_the_list_word() {
        assert_eq!(
            asked("어느 업체로 도입해야 하는가? 비용, 사용 편의성, 연결 안정성, 개인정보 보호를 검토하라.").dimensions,
            ["비용", "사용 편의성", "연결 안정성", "개인정보 보호"]
        );
        assert_eq!(
            asked("한끼푸드와 다온푸드서비스를 배식 속도와 위생 측면에서 비교해 줘.").dimensions,
            ["배식 속도", "위생"]
        );
        assert_eq!(
            asked("수영장 위탁 업체를 정하자. 위탁 운영비와 안전 요원 배치를 따져 보라.")
                .dimensions,
            ["위탁 운영비", "안전 요원 배치"]
        );
        assert_eq!(
            asked("통학 차량 위탁 업체 비교: 차량 상태, 동승 보호자, 개인정보 보호").dimensions,
            ["차량 상태", "동승 보호자", "개인정보 보호"]
        );
    }

    #[test]
    fn names_and_alternatives() {
        assert_eq!(
            asked("Should we move order events to Kafka, RabbitMQ or SQS?").entities,
            ["Kafka", "RabbitMQ", "SQS"]
        );
        assert_eq!(
            asked("TicketLoom or Gatehouse? Consider cost.").entities,
            ["TicketLoom", "Gatehouse"]
        );
        let ko = asked("가람시는 메디온과 헬스브릿지 중 어느 업체로 도입해야 하는가?").entities;
        assert_eq!(ko, ["메디온", "헬스브릿지"]);
        assert_eq!(
            asked("늘봄모빌케어냐 다온센터냐, 위생을 따져 보자.").entities,
            ["늘봄모빌케어", "다온센터"]
        );
    }

    #[test]
    fn constraints_merge_with_the_goal() {
        let c = Constraints {
            required_sections: vec!["Cost".into()],
            comparison_dimensions: vec!["latency".into()],
            ..Constraints::default()
        };
        let a = Asked::from_parts("Compare A and B on costs and risk.", &c);
        assert_eq!(a.dimensions, ["Cost", "latency", "risk"]);
    }
}
