//! What a goal asks for: the dimensions a brief must cover, each named as
//! the user wrote it, and the alternatives it compares.
//!
//! Dimensions come from the constraints (`required_sections`, then
//! `comparison_dimensions`, merged, never one replacing the other) and from
//! lists the goal spells out itself:
//!
//! - after a cue: "Consider cost, latency and compliance", "Compare Kafka and
//!   SQS on cost and throughput", "… in terms of cost and risk";
//! - after a colon: "Brief the board: cost, timeline, risks";
//! - in Korean, before the verb that asks for them: "생산성, 비용, 보안을
//!   검토하라", "비용과 보안 측면에서".
//!
//! Alternatives — "Kafka, RabbitMQ or SQS", "RAG or fine-tuning", the things
//! before "on" in "compare A and B on …" — are *entities*: what each section
//! compares, never sections of their own. Anything else in the goal is
//! context: it shapes the searches but makes no section.

use stepwise_core::{Constraints, Goal, RunState};
use stepwise_tools::notes::stem::{is_hangul, mentions, stem, words};

/// A goal's dimensions and entities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked {
    /// The dimensions, as written, in order, without duplicates.
    pub dimensions: Vec<String>,
    /// The alternatives compared, as written.
    pub entities: Vec<String>,
}

/// English words that introduce a list of dimensions, lowercase. A cue
/// marked strong also introduces a single dimension ("Focus on cost.").
const CUES: &[(&str, bool)] = &[
    ("consider", true),
    ("considering", true),
    ("compare", false),
    ("comparing", false),
    ("evaluate", false),
    ("assess", false),
    ("weigh up", false),
    ("weigh", false),
    ("cover", true),
    ("covering", true),
    ("look at", false),
    ("looking at", false),
    ("focus on", true),
    ("focusing on", true),
    ("examine", false),
    ("review", false),
    ("discuss", false),
    ("address", false),
    ("including", true),
    ("include", true),
    ("in terms of", true),
    ("with respect to", true),
    ("especially", true),
    ("particularly", true),
    ("taking into account", true),
    ("account for", true),
    ("what about", true),
    ("how about", true),
    ("and what about", true),
];

/// Words that split a compare-list into what is compared and on what.
const ON: &[&str] = &[
    " on ",
    " in terms of ",
    " across ",
    " by ",
    " for ",
    " against ",
];

/// Korean verbs (stems) that ask for what comes before them; task words
/// to relevance too ([`super::relevance::is_task_word`]).
pub(crate) const KO_VERBS: &[&str] = &[
    "검토",
    "비교",
    "고려",
    "평가",
    "분석",
    "정리",
    "살펴",
    "조사",
    "확인",
    "다뤄",
    "설명",
    "따져",
    "짚어",
    "알아봐",
    "알아보",
];

/// Words that make a Korean list a question between alternatives ("A와 B
/// 중 어느 쪽이 나은지"), not a list of dimensions.
const KO_WHICH: &[&str] = &["어느", "어떤", "나은지", "좋은지", "나을지", "맞을지"];

/// Korean words that say "in terms of" after a list.
const KO_ASPECTS: &[&str] = &["측면", "관점", "기준", "면에서", "중심", "위주"];

/// Korean words that end a question about what comes before them ("비용이랑
/// 품질은 어떤가요?", "… 일정은 괜찮아요?"): how-is-it words, dropped before
/// the list is read.
const KO_HOW_IS: &[&str] = &["어떤가", "어떤지", "어때", "어떻", "어떠", "괜찮"];

/// Leading words an item loses ("the cost" → "cost").
const LEADING: &[&str] = &[
    "the ",
    "its ",
    "their ",
    "our ",
    "your ",
    "each option's ",
    "both ",
    "and ",
    "or ",
    "also ",
    "how ",
    "what ",
    "any ",
];

/// Most words a dimension may have; a longer item is a clause, not a dimension.
const MAX_DIMENSION_WORDS: usize = 5;

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
            let (dimensions, entities) = lists_in(&clause);
            for d in dimensions {
                asked.add_dimension(&d);
            }
            for e in entities {
                if !asked.entities.iter().any(|x| x.eq_ignore_ascii_case(&e)) {
                    asked.entities.push(e);
                }
            }
        }
        asked
    }

    /// Adds a dimension unless one with the same words is there already
    /// ("Cost" from a section and "costs" from the goal are one).
    fn add_dimension(&mut self, raw: &str) {
        let d = clean_item(raw);
        if d.is_empty() || words(&d).is_empty() {
            return;
        }
        let key = words(&d);
        if !self.dimensions.iter().any(|x| words(x) == key) {
            self.dimensions.push(d);
        }
    }

    /// The dimensions a search step of someone else's plan (a model's, a
    /// user's `--plan`) is about: its description is the dimension, or names
    /// every content word of it ("Find the fuel and energy costs" is about
    /// cost). The goal itself names every dimension and is about none: it is
    /// the overview.
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
                let terms = super::relevance::content(d);
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
    let chars: Vec<char> = goal.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next_is_space = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        let end = matches!(c, '?' | '!' | ';' | '\n') || (c == '.' && next_is_space) || (c == '。');
        if end {
            if !current.trim().is_empty() {
                out.push(current.trim().to_owned());
            }
            current.clear();
        } else {
            current.push(c);
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// The dimensions and entities one clause lists.
fn lists_in(clause: &str) -> (Vec<String>, Vec<String>) {
    let mut dimensions = Vec::new();
    let mut entities = alternatives(clause);
    if let Some((_, after)) = clause.split_once(':') {
        // "…: 누리봇이 답변 정확도에서 정말 하나로챗보다 낫고, 도입 비용은
        // 3년에 얼마나 들어": Korean question parts, read whole.
        let parts: Vec<&str> = after.split([',', '?']).collect();
        let read: Vec<Option<String>> = parts
            .iter()
            .map(|p| asked_in_korean_question(p, &mut entities))
            .collect();
        if read.iter().any(Option::is_some) {
            for (part, d) in parts.iter().zip(read) {
                match d {
                    Some(d) => dimensions.push(d),
                    None => {
                        dimensions.extend(split_items(part).into_iter().filter(|i| is_short(i)))
                    }
                }
            }
            return (dedup(dimensions), dedup(entities));
        }
        let mut items = split_items(after);
        // "A or B: which is better on fees, payout speed and support?": the
        // first item loses the question that leads into the list.
        if let Some(first) = items.first_mut() {
            *first = after_question_lead(first);
        }
        // "Quick one: is A really better than B on X, and what's the Y going
        // to look like?": an item that is a question gives what it asks about.
        let items: Vec<String> = items
            .into_iter()
            .filter_map(|i| {
                if is_short(&i) {
                    Some(i)
                } else {
                    asked_in_question(&i, &mut entities)
                }
            })
            .collect();
        if items.len() >= 2 || (items.len() == 1 && is_short(&items[0])) {
            dimensions.extend(items);
        }
        return (dimensions, dedup(entities));
    }
    if let Some((what, on)) = compare_after_subject(clause) {
        // "How do Northway and ColdRoute compare on A and B?"
        let compared = split_items(&what);
        if compared.len() >= 2 {
            entities.extend(compared.into_iter().filter(|e| is_short(e)));
        }
        dimensions.extend(split_items(&on).into_iter().filter(|i| is_short(i)));
        return (dimensions, dedup(entities));
    }
    if let Some((list, strong, compare)) = after_cue(clause) {
        // "Compare / weigh / evaluate A and B on (in terms of) X and Y".
        let (what, on) = if compare || !strong {
            split_on(&list)
        } else {
            (None, list)
        };
        if let Some(what) = &what {
            entities.extend(split_items(what).into_iter().filter(|e| is_short(e)));
        }
        let items = split_items(&on);
        let named = items.iter().filter(|i| is_name(i)).count();
        if compare && what.is_none() && named * 2 > items.len() {
            // "Compare Kafka, RabbitMQ and SQS": the alternatives themselves.
            entities.extend(items);
        } else if items.len() >= 2 || (strong && items.len() == 1 && is_short(&items[0])) {
            dimensions.extend(items.into_iter().filter(|i| is_short(i)));
        }
        return (dimensions, dedup(entities));
    }
    if let Some(list) = korean_list(clause) {
        // "전기버스와 수소버스를 주행거리와 소음 (측면에서)": the object before
        // the list is what is compared, the list after it the dimensions.
        let words: Vec<&str> = list.split_whitespace().collect();
        // The object (을/를) or, failing that, the topic (은/는: "A와 B는 X와
        // Y 면에서 어떻게 다른가") before the list.
        let marked = |ends: [char; 2]| {
            words
                .iter()
                .rposition(|w| w.ends_with(ends) && w.chars().count() >= 3)
        };
        let list = match marked(['을', '를']).or_else(|| marked(['은', '는'])) {
            Some(at) if at + 1 < words.len() => {
                let object = words[..=at].join(" ");
                let object = object.trim_end_matches(['을', '를', '은', '는']);
                let compared = split_items(object);
                if compared.len() >= 2 {
                    entities.extend(compared);
                }
                words[at + 1..].join(" ")
            }
            _ => list,
        };
        // "청우비엠에스냐 누리시설관리냐, …": the alternatives, asked as a choice;
        // set off by a dash ("A냐 B냐 — X와 Y를"), the choice ends at the dash.
        let asks_choice =
            |i: &str| !i.trim().is_empty() && i.split_whitespace().all(|w| w.ends_with('냐'));
        let mut items = split_items(&list);
        if let Some(first) = items.first_mut()
            && let Some((choice, rest)) = DASHES.iter().find_map(|d| first.split_once(d))
            && asks_choice(choice)
        {
            let (choice, rest) = (choice.trim().to_owned(), rest.trim().to_owned());
            *first = rest;
            items.insert(0, choice);
        }
        let (choice, items): (Vec<String>, Vec<String>) =
            items.into_iter().partition(|i| asks_choice(i));
        for c in choice {
            entities.extend(
                c.split_whitespace()
                    .map(|w| w.trim_end_matches('냐').trim_end_matches('이').to_owned()),
            );
        }
        if let Some((ents, dims)) = korean_of_split(&items) {
            entities.extend(ents);
            dimensions.extend(dims);
        } else {
            dimensions.extend(items.into_iter().filter(|i| is_short(i)));
        }
        return (dimensions, dedup(entities));
    }
    // No list: a plain question may still ask about one dimension per part
    // ("Is A's response time good enough, and what will each cost us?").
    for part in clause.split(", ") {
        if let Some(d) = asked_in_question(part, &mut entities)
            .or_else(|| asked_in_korean_question(part, &mut entities))
        {
            dimensions.push(d);
        }
    }
    (dimensions, dedup(entities))
}

/// Dashes that set a lead-in off from a list.
const DASHES: &[&str] = &["—", "–", " - "];

/// Words a Korean question part loses before it is read.
const KO_QUESTION_LEADS: &[&str] = &["그리고", "또", "또는", "근데", "그런데", "그럼"];

/// Words by which a Korean question asks what something costs ("구청 부담
/// 비용은 어느 쪽이 덜 *들어*", "도입 비용은 3년에 얼마나 *들어*"); "달의
/// 중력은 얼마인가" and "A는 B와 C 중 어느 쪽을 도입해야 할까" ask about none.
const KO_HOW_MUCH: &[&str] = &[" 들어", " 들까", " 드는", " 드나", " 듭니까", " 들어가"];

/// "얼마나", "얼마쯤", "얼마정도": how much, as in "위탁 비용은 대충
/// 얼마쯤 나올까요" ("얼마인가" asks what a value is, not what it costs).
fn asks_how_much(word: &str) -> bool {
    ["얼마나", "얼마쯤", "얼마정도"].contains(&word)
}

/// A Korean word without its last particle, if it ends with one of `ends`.
fn without_ending<'a>(word: &'a str, ends: &[&str]) -> Option<&'a str> {
    ends.iter().find_map(|e| {
        word.strip_suffix(e)
            .filter(|rest| rest.chars().count() >= 1)
    })
}

/// The words of a Korean phrase that ends at `words[end]` (its topic or
/// subject, which loses its particle), back to the word before it that
/// ends a phrase of its own ("누리가", "싸다는데", "3년에").
fn phrase_ending_at(words: &[&str], end: usize) -> String {
    const ENDS: &[&str] = &[
        "이", "가", "은", "는", "을", "를", "에", "고", "데", "며", "면", "서",
    ];
    let start = words[..end]
        .iter()
        .rposition(|w| ENDS.iter().any(|e| w.ends_with(e)))
        .map_or(0, |i| i + 1);
    let mut dim: Vec<&str> = words[start..=end].to_vec();
    if let Some(last) = dim.last_mut() {
        *last = without_ending(last, &["은", "는", "이", "가"]).unwrap_or(last);
    }
    dim.join(" ")
}

/// The dimension one part of a plain Korean question asks about, in a
/// shape we know (and the alternatives it compares, into `entities`):
/// - "A가 X에서 (정말) B보다 낫고" → X (A and B compared);
/// - "A가 B보다 X이 (정말) 짧은 거야" → X;
/// - "X은 (3년에) 얼마나 들어", "X은 어느 쪽이 덜 들어" → X.
fn asked_in_korean_question(part: &str, entities: &mut Vec<String>) -> Option<String> {
    let text = part.trim().trim_end_matches(['?', '.', '!', '？']).trim();
    if !text.chars().any(is_hangul) {
        return None;
    }
    let mut words: Vec<&str> = text.split_whitespace().collect();
    while words.first().is_some_and(|w| KO_QUESTION_LEADS.contains(w)) {
        words.remove(0);
    }
    const SUBJECT: &[&str] = &["이", "가"];
    const TOPIC: &[&str] = &["은", "는"];
    let than = words
        .iter()
        .position(|w| w.ends_with("보다") && w.chars().count() > 2);
    let mut compared = |name: &str| {
        if !name.is_empty() && is_short(name) {
            entities.push(name.to_owned());
        }
    };
    let found: Option<String> = if let Some(than) = than
        && let Some(on) = words[..than]
            .iter()
            .rposition(|w| w.ends_with("에서") && w.chars().count() > 2)
    {
        // "누리봇이 답변 정확도에서 정말 하나로챗보다 낫고".
        let from = words[..on]
            .iter()
            .position(|w| without_ending(w, SUBJECT).is_some())
            .map_or(0, |i| {
                compared(without_ending(words[i], SUBJECT).unwrap_or(words[i]));
                i + 1
            });
        compared(words[than].trim_end_matches("보다"));
        let mut dim: Vec<&str> = words[from..=on].to_vec();
        if let Some(last) = dim.last_mut() {
            *last = last.trim_end_matches("에서");
        }
        Some(dim.join(" "))
    } else if let Some(than) = than
        && let Some(end) = words[than + 1..]
            .iter()
            .position(|w| {
                without_ending(w, SUBJECT)
                    .or_else(|| without_ending(w, TOPIC))
                    .is_some()
            })
            .map(|i| i + than + 1)
        && end + 1 < words.len()
    {
        // "그린볼트가 모아에너지보다 설치 공사 기간이 정말 짧은 거야".
        if let Some(subject) = words[..than]
            .iter()
            .rev()
            .find_map(|w| without_ending(w, SUBJECT))
        {
            compared(subject);
        }
        compared(words[than].trim_end_matches("보다"));
        let mut dim: Vec<&str> = words[than + 1..=end].to_vec();
        if let Some(last) = dim.last_mut() {
            *last = without_ending(last, SUBJECT)
                .or_else(|| without_ending(last, TOPIC))
                .unwrap_or(last);
        }
        Some(dim.join(" "))
    } else if let Some(than) = than
        && let Some(end) = words[..than]
            .iter()
            .rposition(|w| without_ending(w, TOPIC).is_some())
    {
        // "청소 품질은 청우보다 떨어지지 않는지".
        compared(words[than].trim_end_matches("보다"));
        Some(phrase_ending_at(&words, end))
    } else if let Some(verb) = words.iter().position(|w| {
        KO_HOW_MUCH.iter().any(|q| format!(" {w}").starts_with(q)) || asks_how_much(w)
    }) && let Some(end) = words[..verb]
        .iter()
        .rposition(|w| without_ending(w, TOPIC).is_some())
        .or_else(|| {
            words[..verb]
                .iter()
                .rposition(|w| without_ending(w, SUBJECT).is_some())
        })
    {
        // "도입 비용은 3년에 얼마나 들어", "누리가 싸다는데 용역 비용이 정말
        // 덜 드는지".
        Some(phrase_ending_at(&words, end))
    } else {
        None
    };
    let found = clean_item(&found?);
    (!found.is_empty() && is_short(&found)).then_some(found)
}

/// Leads a question part loses before it is read.
const QUESTION_LEADS: &[&str] = &["and ", "also ", "but ", "so ", "honestly ", "then "];

/// "what's the X going to look like": leads and tails around the dimension.
const WHAT_WILL_LEADS: &[&str] = &[
    "what's the ",
    "what is the ",
    "what will the ",
    "what would the ",
    "how will the ",
    "how would the ",
    // The same after an item lost its "what " (see LEADING).
    "will the ",
    "would the ",
    "is the ",
];
const WHAT_WILL_TAILS: &[&str] = &[
    " going to look like",
    " looking like",
    " look like",
    " going to be",
    " be like",
    " work out",
];

/// "which one gets the X under …": leads before the dimension.
const WHICH_GETS: &[&str] = &[
    "which one gets the ",
    "which gets the ",
    "which one has the better ",
    "which has the better ",
    "which one keeps the ",
    "which keeps the ",
];

/// Words after which a dimension asked "good enough" about ends.
const PURPOSE_BREAKS: &[&str] = &[" to ", " for ", " in ", " when ", " if "];

/// "cost" as a verb asked about: what each option will cost.
const COST_ASKED: &[&str] = &[
    " going to cost",
    " does each cost",
    " does it cost",
    " do they cost",
    " will it cost",
    " would it cost",
    " will each cost",
    " would each cost",
    " will they cost",
    " would they cost",
];

/// The dimension one part of a plain question asks about, if it asks
/// about one in a shape we know (and the alternatives it compares, into
/// `entities`):
/// - "is A really better than B on X", "does A beat B on X" → X (A and B
///   compared);
/// - "… - the X - …" → X;
/// - "is A's X good enough (for …)" → X; "A good enough on X (to …)" → X;
/// - "what's the X going to look like" → X;
/// - "what's each of them going to cost us" → cost.
fn asked_in_question(part: &str, entities: &mut Vec<String>) -> Option<String> {
    let mut text = part.trim().trim_end_matches(['?', '.', '!']).trim();
    if text.to_lowercase().len() != text.len() {
        return None;
    }
    loop {
        let lower = text.to_lowercase();
        let Some(lead) = QUESTION_LEADS.iter().find(|l| lower.starts_with(**l)) else {
            break;
        };
        text = text[lead.len()..].trim_start();
    }
    let lower = text.to_lowercase();
    let until_break = |from: usize| -> String {
        let rest = &lower[from..];
        let end = PURPOSE_BREAKS
            .iter()
            .filter_map(|b| rest.find(b))
            .min()
            .unwrap_or(rest.len());
        text[from..from + end].trim().to_owned()
    };
    // "do the nurses get calls faster with A than B - the call response
    // workflow - and …": a phrase set off by dashes names what is asked.
    let between_dashes = [" - ", " – ", " — "].iter().find_map(|dash| {
        let pieces: Vec<&str> = text.split(dash).collect();
        let named = pieces.get(1)?.trim();
        let named = named.strip_prefix("the ").unwrap_or(named);
        is_short(named).then(|| named.to_owned())
    });
    // "is A really better than B on X", "does A really beat B on X".
    let than = [
        " than ",
        " beats ",
        " beat ",
        " outperforms ",
        " outperform ",
    ]
    .iter()
    .find_map(|c| lower.find(c).map(|at| (at, c.len())));
    let found = if between_dashes.is_some() {
        between_dashes
    } else if let Some((than, than_len)) = than
        && let Some(on) = lower[than..].find(" on ").map(|i| i + than)
    {
        // The two sides: the subject (after its verb) and the than-object.
        let subject = text[..than]
            .split_whitespace()
            .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
            .collect::<Vec<_>>()
            .join(" ");
        let object = text[than + than_len..on].trim();
        for side in [subject.as_str(), object] {
            if !side.is_empty() && is_short(side) && is_name(side) {
                entities.push(side.to_owned());
            }
        }
        Some(until_break(on + " on ".len()))
    } else if let Some((at, cue)) = [" good enough on ", " worth it on "]
        .iter()
        .find_map(|c| lower.find(c).map(|at| (at, *c)))
    {
        Some(until_break(at + cue.len()))
    } else if let Some(at) = lower.find(" good enough")
        && let Some(own) = lower[..at].rfind("'s ")
    {
        Some(text[own + "'s ".len()..at].trim().to_owned())
    } else if let Some(lead) = WHAT_WILL_LEADS.iter().find(|l| lower.starts_with(**l))
        && let Some(tail) = WHAT_WILL_TAILS
            .iter()
            .filter_map(|t| lower.rfind(t))
            .filter(|at| *at >= lead.len())
            .min()
    {
        Some(text[lead.len()..tail].trim().to_owned())
    } else if let Some(lead) = WHICH_GETS.iter().find(|l| lower.starts_with(**l)) {
        // "which one gets the backlog conversion time under 18 months".
        let rest = &lower[lead.len()..];
        let end = [" under ", " below ", " within ", " down ", " to ", " for "]
            .iter()
            .filter_map(|b| rest.find(b))
            .min()
            .unwrap_or(rest.len());
        Some(text[lead.len()..lead.len() + end].trim().to_owned())
    } else if COST_ASKED.iter().any(|c| lower.contains(c)) {
        Some("cost".to_owned())
    } else {
        None
    };
    let found = clean_item(&found?);
    (!found.is_empty() && is_short(&found)).then_some(found)
}

/// An item without a leading question ("which is better on fees" →
/// "fees"): what follows the last "on", "for" or "in terms of" after a
/// question word.
fn after_question_lead(item: &str) -> String {
    let lower = item.to_lowercase();
    let asks = ["which ", "what ", "how ", "who "]
        .iter()
        .any(|q| lower.starts_with(q));
    if !asks {
        return item.to_owned();
    }
    [" in terms of ", " on ", " for "]
        .iter()
        .filter_map(|m| lower.rfind(m).map(|at| at + m.len()))
        .max()
        .map_or_else(|| item.to_owned(), |at| item[at..].trim().to_owned())
}

fn dedup(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !i.is_empty() && !out.iter().any(|o| o.eq_ignore_ascii_case(&i)) {
            out.push(i);
        }
    }
    out
}

/// The text after a cue word at the start of a clause or after a comma:
/// (list, the cue is strong, the cue is "compare").
fn after_cue(clause: &str) -> Option<(String, bool, bool)> {
    let lower = clause.to_lowercase();
    if lower.len() != clause.len() {
        return None; // lowercasing changed byte offsets: no safe cut
    }
    let mut best: Option<(usize, usize, bool, bool)> = None;
    for (cue, strong) in CUES {
        let mut from = 0;
        while let Some(at) = lower[from..].find(cue).map(|i| i + from) {
            from = at + cue.len();
            let before_ok = at == 0
                || lower[..at].ends_with(' ')
                    && (lower[..at].trim_end().is_empty()
                        || lower[..at].trim_end().ends_with([',', '-', '–', '—'])
                        || lower[..at]
                            .split_whitespace()
                            .last()
                            .is_some_and(|w| matches!(w, "please" | "and" | "also" | "to")));
            let after_ok = lower[from..].starts_with(' ');
            if before_ok && after_ok && best.is_none_or(|(b, ..)| at < b) {
                best = Some((at, from, *strong, cue.starts_with("compar")));
            }
        }
    }
    let (_, end, strong, compare) = best?;
    Some((clause[end..].trim().to_owned(), strong, compare))
}

/// Verbs that, after what they compare, introduce the dimensions: "How do
/// A and B compare on …", "… differ in …".
const COMPARED_ON: &[&str] = &[
    " compare on ",
    " compare in terms of ",
    " compare with respect to ",
    " compare for ",
    " differ on ",
    " differ in ",
    " stack up on ",
    " fare on ",
];

/// "How do Northway and ColdRoute compare on breakdown response and
/// insurance" → ("Northway and ColdRoute", "breakdown response and insurance").
fn compare_after_subject(clause: &str) -> Option<(String, String)> {
    let lower = clause.to_lowercase();
    if lower.len() != clause.len() {
        return None;
    }
    let (at, verb) = COMPARED_ON
        .iter()
        .filter_map(|v| lower.find(v).map(|at| (at, *v)))
        .min()?;
    let mut what = &clause[..at];
    for lead in [
        "how do ",
        "how does ",
        "how would ",
        "how will ",
        "how did ",
    ] {
        if what.to_lowercase().starts_with(lead) {
            what = &what[lead.len()..];
            break;
        }
    }
    Some((
        what.trim().to_owned(),
        clause[at + verb.len()..].trim().to_owned(),
    ))
}

/// "Kafka and SQS on cost and latency" → (Some("Kafka and SQS"), "cost and latency").
fn split_on(list: &str) -> (Option<String>, String) {
    let lower = list.to_lowercase();
    if lower.len() == list.len() {
        for on in ON {
            if let Some(at) = lower.find(on) {
                return (
                    Some(list[..at].to_owned()),
                    list[at + on.len()..].to_owned(),
                );
            }
        }
    }
    (None, list.to_owned())
}

/// Alternatives joined by "or", "vs" or "versus": "Kafka, RabbitMQ or SQS",
/// "RAG or fine-tuning", Korean "A와 B 중".
fn alternatives(clause: &str) -> Vec<String> {
    let mut out = Vec::new();
    for sep in [" or ", " vs. ", " vs ", " versus ", " 또는 "] {
        let Some(at) = clause.find(sep) else { continue };
        let before = &clause[..at];
        let after = &clause[at + sep.len()..];
        // Before: the comma-separated items ending right here; the first
        // item is only its last word(s) ("move events to Kafka").
        let mut items: Vec<String> = before.split(',').map(|s| s.trim().to_owned()).collect();
        if let Some(first) = items.first_mut() {
            *first = tail_words(first);
        }
        // "Which agency should localize Brightplan, Verbatim or Kestrel?":
        // asked which one, the words before the first comma are the verb
        // and its object, not an alternative ("localize Brightplan").
        let which = clause
            .split_whitespace()
            .next()
            .is_some_and(|w| matches!(w.to_lowercase().as_str(), "which" | "who"));
        if which
            && items.len() >= 2
            && items[0]
                .split_whitespace()
                .any(|w| w.chars().next().is_some_and(char::is_lowercase))
        {
            items.remove(0);
        }
        let last = head_words(after);
        items.push(last);
        out.extend(
            items
                .into_iter()
                .map(|i| clean_item(&i))
                .filter(|i| !i.is_empty()),
        );
    }
    // "A, B, C 중에서": 중 as a word of its own, not 중심 or 중요.
    let words: Vec<&str> = clause.split_whitespace().collect();
    if let Some(at) = words
        .iter()
        .position(|w| *w == "중" || w.starts_with("중에"))
    {
        // The list starts after the clause's subject or object ("서하구는
        // 공공자전거 서하바이크를 시설관리공단 직영과 민간 위탁 중").
        let from = words[..at]
            .iter()
            .rposition(|w| w.chars().count() >= 2 && w.ends_with(['은', '는', '을', '를']))
            .map_or(0, |i| i + 1);
        let items = split_items(&words[from..at].join(" "));
        if items.len() >= 2 {
            out.extend(items);
        }
    }
    dedup(out)
}

/// Words that end a noun phrase when reading forwards.
const PHRASE_BREAKS: &[&str] = &[
    "for", "to", "in", "on", "at", "with", "from", "by", "as", "when", "if", "because", "so",
    "that", "which", "who", "instead", "than", "and", "or", "is", "are", "was", "should", "would",
    "could", "will", "can", "do", "does",
];

/// The first words of `text` up to a preposition or verb ("SQS for order
/// events" → "SQS"), at most three.
fn head_words(text: &str) -> String {
    text.split_whitespace()
        .take_while(|w| !PHRASE_BREAKS.contains(&w.to_lowercase().as_str()))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last word(s) of `text` back to a preposition or verb ("Should we
/// move events to Kafka" → "Kafka"), at most three.
fn tail_words(text: &str) -> String {
    let mut words: Vec<&str> = text
        .split_whitespace()
        .rev()
        .take_while(|w| {
            let l = w.to_lowercase();
            !PHRASE_BREAKS.contains(&l.as_str())
                && !matches!(
                    l.as_str(),
                    "use"
                        | "adopt"
                        | "choose"
                        | "pick"
                        | "move"
                        | "we"
                        | "our"
                        | "team"
                        | "between"
                )
        })
        .take(3)
        .collect();
    words.reverse();
    words.join(" ")
}

/// A Korean clause's list: the text before "을/를 <verb>" or before
/// "측면에서", when it has at least two items; or the clause itself when it
/// is only a list ending in 은/는 ("비용과 보안은?").
fn korean_list(clause: &str) -> Option<String> {
    let words: Vec<&str> = clause.split_whitespace().collect();
    for (i, w) in words.iter().enumerate().skip(1) {
        let asks = KO_VERBS.iter().any(|v| w.starts_with(v));
        // "A와 B는 X와 Y에서 어떻게 다른가?": the list before "어떻게 다른가".
        let differs = *w == "어떻게"
            && words.get(i + 1).is_some_and(|n| {
                ["다르", "다른", "달라", "차이"]
                    .iter()
                    .any(|d| n.starts_with(d))
            });
        let aspect = differs || KO_ASPECTS.iter().any(|a| w.starts_with(a));
        if !(asks || aspect) {
            continue;
        }
        let list = without_object_marker(&words[..i].join(" "));
        // "A와 B 중 비용과 위생을": the dimensions follow the alternatives;
        // "A와 B 중 어느 쪽이 나은지": there are none.
        let list = match list.rfind(" 중 ") {
            Some(at) => list[at + " 중 ".len()..].to_owned(),
            None => list,
        };
        if list
            .split_whitespace()
            .any(|w| KO_WHICH.iter().any(|q| w.starts_with(q)))
        {
            continue;
        }
        let items = split_items(&list);
        if items.len() >= 2 {
            return Some(list);
        }
    }
    // "고용 승계와 메뉴 만족도는?": a clause that is only a list, its last
    // item marked as the topic, asks about each ("What about A and B?"),
    // politely too ("… 상태는요?", "… 품질은 어떤가요?").
    let mut words = words;
    if words.len() > 2
        && words
            .last()
            .is_some_and(|w| KO_HOW_IS.iter().any(|h| w.starts_with(h)))
    {
        words.pop();
    }
    let last = words.last()?;
    let last = last.strip_suffix('요').unwrap_or(last);
    let topic = last
        .strip_suffix('는')
        .or_else(|| last.strip_suffix('은'))?;
    let list = format!("{} {topic}", words[..words.len() - 1].join(" "));
    let items = split_items(list.trim());
    (words.len() <= 2 * MAX_DIMENSION_WORDS
        && items.len() >= 2
        && items.iter().all(|i| is_short(i)))
    .then(|| list.trim().to_owned())
}

/// A list before its verb or aspect word without the marker it ends in: one
/// 을/를, else one 의 — never a 의 that belongs to the noun, as in 편의 or
/// 회의 (the word keeps two syllables at least).
fn without_object_marker(list: &str) -> String {
    if let Some(rest) = list.strip_suffix('을').or_else(|| list.strip_suffix('를')) {
        return rest.to_owned();
    }
    match list.strip_suffix('의') {
        Some(rest)
            if rest
                .split_whitespace()
                .last()
                .is_some_and(|w| w.chars().count() >= 2) =>
        {
            rest.to_owned()
        }
        _ => list.to_owned(),
    }
}

/// "파인튜닝과 RAG의 월 운영 비용": alternatives, then the dimension after the
/// last "의".
fn korean_of_split(items: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let last = items.last()?;
    let (left, right) = last.rsplit_once("의 ")?;
    let mut entities: Vec<String> = items[..items.len() - 1].to_vec();
    entities.push(left.to_owned());
    Some((
        entities.into_iter().map(|e| clean_item(&e)).collect(),
        vec![clean_item(right)],
    ))
}

/// Splits a list at commas, "and", "or", "&", "as well as", 및, 그리고, and the
/// Korean "와/과" at a word end; each item cleaned.
fn split_items(list: &str) -> Vec<String> {
    // "total cost, EHR and phone integration, vendor service and infection
    // control": in a list with commas, "and" joins the last two items; an
    // "and" inside an earlier item is part of it.
    let commas: Vec<&str> = list.split([',', '、']).collect();
    let last = commas.len() - 1;
    let mut parts: Vec<String> = commas
        .iter()
        .enumerate()
        .flat_map(|(i, part)| {
            if i < last {
                return vec![(*part).to_owned()];
            }
            part.split(" and ")
                .flat_map(|p| p.split(" & "))
                .map(str::to_owned)
                .collect()
        })
        .collect();
    for sep in [
        "·",
        "ㆍ",
        " or ",
        " against ",
        " versus ",
        " vs. ",
        " vs ",
        " as well as ",
        " 및 ",
        " 그리고 ",
        " 또는 ",
    ] {
        parts = parts
            .iter()
            .flat_map(|p| p.split(sep).map(str::to_owned).collect::<Vec<_>>())
            .collect();
    }
    // "비용과 보안", "납기랑 정전기 방지": a word-final 와/과/랑 joins two
    // items (이랑 loses its 이 with the particles, in clean_item).
    let parts: Vec<String> = parts
        .into_iter()
        .flat_map(|p| {
            let mut out = Vec::new();
            let mut current: Vec<&str> = Vec::new();
            for w in p.split_whitespace() {
                let joins = (w.ends_with('와') || w.ends_with('과') || w.ends_with('랑'))
                    && w.chars().count() >= 3;
                if joins {
                    let cut = w.char_indices().last().map_or(w.len(), |(i, _)| i);
                    current.push(&w[..cut]);
                    out.push(current.join(" "));
                    current.clear();
                } else {
                    current.push(w);
                }
            }
            if !current.is_empty() {
                out.push(current.join(" "));
            }
            out
        })
        .collect();
    let mut items: Vec<String> = parts
        .iter()
        .map(|p| clean_item(p))
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(first) = items.first_mut() {
        *first = trim_korean_context(first);
    }
    items
}

/// Drops leading Korean context from a list's first item ("도입 시 생산성"
/// → "생산성"): words up to one that ends a phrase (시, 때, 에서, 는, 은, …).
fn trim_korean_context(item: &str) -> String {
    let words: Vec<&str> = item.split_whitespace().collect();
    let cut = words.iter().rposition(|w| {
        w.chars().count() == 1 && w.chars().all(is_hangul)
            || ["에서", "에는", "에서는", "때", "경우", "대해", "위해"]
                .iter()
                .any(|e| w.ends_with(e))
    });
    match cut {
        Some(i) if i + 1 < words.len() => words[i + 1..].join(" "),
        _ => item.to_owned(),
    }
}

/// An item without list bullets, leading articles, trailing punctuation or
/// a trailing Korean particle.
fn clean_item(raw: &str) -> String {
    let mut item = raw
        .trim()
        .trim_start_matches(['-', '*', '•', '·'])
        .trim()
        .trim_end_matches(|c: char| !c.is_alphanumeric() && c != ')')
        .trim()
        .to_owned();
    loop {
        let lower = item.to_lowercase();
        let Some(lead) = LEADING.iter().find(|l| lower.starts_with(**l)) else {
            break;
        };
        if lower.len() != item.len() {
            break;
        }
        item = item[lead.len()..].trim().to_owned();
    }
    // Korean: the last word loses its particle (보안을 → 보안).
    if let Some(last) = item.split_whitespace().last()
        && last.chars().any(is_hangul)
    {
        let stripped = stem(last);
        if stripped != last && !stripped.is_empty() {
            let cut = item.len() - last.len();
            item = format!("{}{stripped}", &item[..cut]);
        }
    }
    item
}

/// Short enough to be a dimension or an entity.
fn is_short(item: &str) -> bool {
    let n = item.split_whitespace().count();
    (1..=MAX_DIMENSION_WORDS).contains(&n)
}

/// Written like a name: capitalised or an acronym, in Latin script.
fn is_name(item: &str) -> bool {
    item.split_whitespace().all(|w| {
        w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            || w.chars().any(|c| c.is_ascii_uppercase()) && w.len() <= 6
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(goal: &str) -> Asked {
        Asked::from_parts(goal, &Constraints::default())
    }

    #[test]
    fn an_and_inside_an_earlier_item_is_part_of_it() {
        let a = asked(
            "Should we replace Ravel? Consider total cost, EHR and phone integration, vendor service and infection control.",
        );
        assert_eq!(
            a.dimensions,
            [
                "total cost",
                "EHR and phone integration",
                "vendor service",
                "infection control"
            ]
        );
        let a = asked("Compare Kafka, RabbitMQ and SQS on cost and latency.");
        assert_eq!(a.dimensions, ["cost", "latency"]);
    }

    #[test]
    fn a_cue_lists_the_dimensions() {
        let a = asked(
            "Should we move order events to Kafka, RabbitMQ or SQS? Consider cost, throughput and staff training.",
        );
        assert_eq!(a.dimensions, ["cost", "throughput", "staff training"]);
        assert_eq!(a.entities, ["Kafka", "RabbitMQ", "SQS"]);
        // After a dash, and "weigh up" as one cue.
        let a = asked("Vantry or Quillon to replace Vetlink - weigh up cost and client reminders.");
        assert_eq!(a.dimensions, ["cost", "client reminders"]);
    }

    #[test]
    fn compare_on_splits_entities_from_dimensions() {
        let a = asked("Compare Kafka, RabbitMQ and SQS on cost, latency and vendor lock-in");
        assert_eq!(a.dimensions, ["cost", "latency", "vendor lock-in"]);
        assert_eq!(a.entities, ["Kafka", "RabbitMQ", "SQS"]);
        let a = asked("Compare Kafka and SQS.");
        assert!(a.dimensions.is_empty());
        assert_eq!(a.entities, ["Kafka", "SQS"]);
        let a = asked("Weigh TicketLoom against Gatehouse in terms of cost and staff training.");
        assert_eq!(a.dimensions, ["cost", "staff training"]);
        assert_eq!(a.entities, ["TicketLoom", "Gatehouse"]);
    }

    #[test]
    fn a_question_between_alternatives_is_no_list_of_dimensions() {
        let a = asked("세탁 위탁 업체로 크린웨이메디와 한결린넨 중 어느 쪽이 나은지 정리해 줘.");
        assert!(a.dimensions.is_empty(), "{a:?}");
        let a = asked(
            "린넨 세탁을 크린웨이메디에 맡길까, 한결린넨에 맡길까? 비용과 감염 관리를 따져 봐 줘.",
        );
        assert_eq!(a.dimensions, ["비용", "감염 관리"]);
    }

    #[test]
    fn a_colon_list_led_by_a_question() {
        let a = asked(
            "Finch Pay or Orbipay: which is better on fees, payout speed and customer support?",
        );
        assert_eq!(a.dimensions, ["fees", "payout speed", "customer support"]);
        assert_eq!(a.entities, ["Finch Pay", "Orbipay"]);
    }

    #[test]
    fn asked_which_the_verb_and_its_object_are_no_alternative() {
        let a = asked(
            "Which agency should localize Brightplan, Verbatim Localization or Kestrel Language Services? Consider cost and turnaround.",
        );
        assert_eq!(
            a.entities,
            ["Verbatim Localization", "Kestrel Language Services"]
        );
        let a = asked("Should we use Kafka, RabbitMQ or SQS? Consider cost.");
        assert_eq!(a.entities, ["Kafka", "RabbitMQ", "SQS"]);
    }

    #[test]
    fn how_do_they_compare_on() {
        let a = asked("How do Northway and ColdRoute compare on breakdown response and insurance?");
        assert_eq!(a.dimensions, ["breakdown response", "insurance"]);
        assert_eq!(a.entities, ["Northway", "ColdRoute"]);
        let a = asked("한빛이벤트와 누리문화기획은 지역 상인 참여와 교통 면에서 어떻게 다른가?");
        assert_eq!(a.dimensions, ["지역 상인 참여", "교통"]);
        assert_eq!(a.entities, ["한빛이벤트", "누리문화기획"]);
        let a = asked("큐브스캔 S7과 오로라 i5는 사후 지원과 개인정보 보호 면에서 어떻게 다른가?");
        assert_eq!(a.dimensions, ["사후 지원", "개인정보 보호"]);
        assert_eq!(a.entities, ["큐브스캔 S7", "오로라 i5"]);
    }

    #[test]
    fn a_colon_list_and_a_single_strong_cue() {
        assert_eq!(
            asked("Brief the board on the new lights: cost, glare, maintenance").dimensions,
            ["cost", "glare", "maintenance"]
        );
        assert_eq!(
            asked("Should we adopt RAG? Focus on the cost.").dimensions,
            ["cost"]
        );
        assert_eq!(
            asked("Drip or pivot for the co-op? What about crop yield and labor?").dimensions,
            ["crop yield", "labor"]
        );
    }

    #[test]
    fn no_list_no_dimensions() {
        for goal in [
            "Write a brief on the Q3 rollout of the RAG assistant.",
            "What is the latency budget to first token, and what did the pilot measure at p95?",
            "How many support agents will be laid off in 2025 because of the assistant?",
        ] {
            assert!(
                asked(goal).dimensions.is_empty(),
                "{goal}: {:?}",
                asked(goal)
            );
        }
        assert_eq!(
            asked("Should support use RAG or fine-tuning?").entities,
            ["RAG", "fine-tuning"]
        );
    }

    #[test]
    fn plain_questions_ask_about_one_dimension_a_part() {
        let a = asked(
            "Quick one before the board meeting: is ShiftHarbor really better than Larderline on volunteer sign-up experience, and what's the subscription cost going to look like?",
        );
        assert_eq!(
            a.dimensions,
            ["volunteer sign-up experience", "subscription cost"]
        );
        assert_eq!(a.entities, ["ShiftHarbor", "Larderline"]);
        let a = asked(
            "Honestly, is Ridgeline's response time good enough for a 3 a.m. storm, and what's each of them going to cost us?",
        );
        assert_eq!(a.dimensions, ["response time", "cost"]);
        let a = asked(
            "Is Quillon Practice good enough on data migration to justify it over Vantry, and what does each cost us?",
        );
        assert_eq!(a.dimensions, ["data migration", "cost"]);
        let a = asked(
            "Before the VP meeting: is Meridian's testing room really worth it on exam integrity, and what will the per-exam cost look like next to ProctorLane?",
        );
        assert_eq!(a.dimensions, ["exam integrity", "per-exam cost"]);
        let a = asked(
            "Before the Commissioners meet: is Quillmark really better than Ledgerline on image quality, and which one gets the backlog conversion time under 18 months?",
        );
        assert_eq!(a.dimensions, ["image quality", "backlog conversion time"]);
        let a = asked(
            "부시장 보고 전에 급하게 하나만: 누리봇이 답변 정확도에서 정말 하나로챗보다 낫고, 도입 비용은 3년에 얼마나 들어?",
        );
        assert_eq!(a.dimensions, ["답변 정확도", "도입 비용"]);
        assert_eq!(a.entities, ["누리봇", "하나로챗"]);
        let a = asked(
            "팀장님 보고 전에 급하게 하나만: 그린볼트가 모아에너지보다 설치 공사 기간이 정말 짧은 거야? 그리고 구청 부담 비용은 어느 쪽이 덜 들어?",
        );
        assert_eq!(a.dimensions, ["설치 공사 기간", "구청 부담 비용"]);
        assert_eq!(a.entities, ["그린볼트", "모아에너지"]);
        let a = asked(
            "위원회 전에 간단히요: 누리가 싸다는데 용역 비용이 정말 덜 드는지, 그리고 청소 품질은 청우보다 떨어지지 않는지 궁금해요.",
        );
        assert_eq!(a.dimensions, ["용역 비용", "청소 품질"]);
        let a = asked("청우비엠에스냐 누리시설관리냐, 청소 품질과 인력 운영을 따져 봐 주세요.");
        assert_eq!(a.dimensions, ["청소 품질", "인력 운영"]);
        assert_eq!(a.entities, ["청우비엠에스", "누리시설관리"]);
        let a = asked("노을핏렌탈이냐 청솔스포츠냐 — 설치 일정과 기구 품질을 중심으로 따져 보자.");
        assert_eq!(a.dimensions, ["설치 일정", "기구 품질"]);
        assert_eq!(a.entities, ["노을핏렌탈", "청솔스포츠"]);
        let a = asked(
            "Quick one: do the nurses get calls faster with CareBeacon than WardLink - the call response workflow - and what's the total cost looking like over five years?",
        );
        assert_eq!(a.dimensions, ["call response workflow", "total cost"]);
        let a = asked(
            "Quick one: does Kestrel really beat Tundra on alarm escalation, and what's the five-year cost going to look like?",
        );
        assert_eq!(a.dimensions, ["alarm escalation", "five-year cost"]);
        assert_eq!(a.entities, ["Kestrel", "Tundra"]);
        let a = asked(
            "위원회 전에 하나만요: 다온이 늘봄보다 일정 조율이 정말 나은 건가요? 그리고 위탁 비용은 대충 얼마쯤 나올까요?",
        );
        assert_eq!(a.dimensions, ["일정 조율", "위탁 비용"]);
        // A question about no dimension asks about none.
        for goal in [
            "Which broker should we choose?",
            "달의 표면 중력은 얼마인가?",
            "한빛시청은 누리봇과 하나로챗 중 어느 쪽을 도입해야 할까?",
            "What is the capital of Mars?",
            "Is Ridgeline good enough?",
        ] {
            assert!(asked(goal).dimensions.is_empty(), "{goal}");
        }
    }

    #[test]
    fn korean_lists_before_the_verb() {
        let a =
            asked("재택근무를 전사로 확대해야 하는가? 생산성, 비용, 보안, 직원 만족도를 검토하라.");
        assert_eq!(a.dimensions, ["생산성", "비용", "보안", "직원 만족도"]);
        let a = asked("원격근무 도입 시 생산성, 비용과 보안을 비교하라");
        assert_eq!(a.dimensions, ["생산성", "비용", "보안"]);
        let a = asked("비용과 보안 측면에서 두 방안을 평가하라");
        assert_eq!(a.dimensions, ["비용", "보안"]);
        let a = asked("원격근무를 확대해야 할까? 생산성과 보안, 채용을 중심으로 비교해 줘.");
        assert_eq!(a.dimensions, ["생산성", "보안", "채용"]);
        assert!(a.entities.is_empty(), "{:?}", a.entities);
        let a = asked("자동화 설비, 인력 충원, 외주 중에서 무엇이 나은가? 비용과 안전을 검토하라.");
        assert_eq!(a.entities, ["자동화 설비", "인력 충원", "외주"]);
        assert_eq!(a.dimensions, ["비용", "안전"]);
        let a = asked(
            "서하구는 공공자전거 서하바이크를 공단 직영과 민간 위탁 중 어느 방식으로 운영해야 하는가?",
        );
        assert_eq!(a.entities, ["공단 직영", "민간 위탁"]);
        let a = asked("학생식당을 다온푸드서비스에 맡기면 어떨까? 고용 승계와 메뉴 만족도는?");
        assert_eq!(a.dimensions, ["고용 승계", "메뉴 만족도"]);
        let a = asked("작업복을 한솔유니폼으로 하면 어때? 납기랑 정전기 방지는?");
        assert_eq!(a.dimensions, ["납기", "정전기 방지"]);
        let a = asked("세이프원시큐리티와 한결경비는 인력 안정성과 배상 책임에서 어떻게 다른가?");
        assert_eq!(a.dimensions, ["인력 안정성", "배상 책임"]);
        assert_eq!(a.entities, ["세이프원시큐리티", "한결경비"]);
        let a = asked("비용을 어떻게 줄일까?");
        assert!(a.dimensions.is_empty(), "{:?}", a.dimensions);
        let a = asked("비용이랑 소음은?");
        assert_eq!(a.dimensions, ["비용", "소음"]);
        let a = asked("통학 차량을 초록길에 맡기면 어때요? 비용이랑 차량 상태는요?");
        assert_eq!(a.dimensions, ["비용", "차량 상태"]);
        let a = asked("메아리로 가면 어때요? 비용이랑 상담 품질은 어떤가요?");
        assert_eq!(a.dimensions, ["비용", "상담 품질"]);
        let a = asked("그냥 다온으로 가면 어때요? 비용이랑 설치 일정은 괜찮아요?");
        assert_eq!(a.dimensions, ["비용", "설치 일정"]);
        // 편의 and 회의 end in 의 as nouns, not as a marker.
        let a = asked("강사 운영, 장애인 편의를 검토하라.");
        assert_eq!(a.dimensions, ["강사 운영", "장애인 편의"]);
        let a = asked("두 업체는 강사 운영과 장애인 편의 면에서 어떻게 다른가?");
        assert_eq!(a.dimensions, ["강사 운영", "장애인 편의"]);
        let a = asked("비용과 보안의 측면에서 평가하라");
        assert_eq!(a.dimensions, ["비용", "보안"]);
        let a = asked("업체를 확정해야 한다. 비용과 피크 대응 위주로 정리해 줘.");
        assert_eq!(a.dimensions, ["비용", "피크 대응"]);
        let a = asked("서하구는 공공자전거를 직영해야 하는가?");
        assert!(a.dimensions.is_empty(), "{:?}", a.dimensions);
        let a = asked("EMR 인프라 교체안을 비용·응답 속도·탄소 배출 기준으로 평가해 줘.");
        assert_eq!(a.dimensions, ["비용", "응답 속도", "탄소 배출"]);
        let a = asked("전기버스와 수소버스를 주행거리와 소음 측면에서 비교해 줘.");
        assert_eq!(a.dimensions, ["주행거리", "소음"]);
        assert_eq!(a.entities, ["전기버스", "수소버스"]);
    }

    #[test]
    fn constraints_merge_with_the_goal() {
        let c = Constraints {
            required_sections: vec!["Risks".into()],
            comparison_dimensions: vec!["cost".into(), "latency".into()],
            ..Constraints::default()
        };
        let a = Asked::from_parts("Compare A and B. Consider costs and compliance.", &c);
        assert_eq!(a.dimensions, ["Risks", "cost", "latency", "compliance"]);
    }

    #[test]
    fn bullets_and_punctuation_are_not_part_of_a_name() {
        let c = Constraints {
            comparison_dimensions: vec!["- Latency".into(), "cost.".into()],
            ..Constraints::default()
        };
        assert_eq!(Asked::from_parts("x y", &c).dimensions, ["Latency", "cost"]);
    }
}
