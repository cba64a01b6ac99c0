//! Judging a search step's evidence: the rule shared by the assessor (is
//! the step done?), the reformulator (is there anything left to try?), the
//! verifier (how complete is the brief?) and the synthesizer (which sentences
//! may back a section?), so all four agree.
//!
//! A `search_notes` step meets its criteria when one of its results scores
//! at least [`MIN_SCORE`] and holds a sentence that is about the step's
//! sub-question (see [`relevance`](super::relevance)) in a note on the goal's
//! topic. The sub-question is the step's description — a dimension, the goal,
//! or whatever a user's plan says — never the query, so a reworded search is
//! judged by what it was for.

use serde_json::Value;
use stepwise_core::{Constraints, RunState, Step};
use stepwise_tools::notes::stem::{mentions, words};

use super::MIN_SCORE;
use super::asked::Asked;
use super::relevance::{
    BEST_SHARE, GOAL_SHARE, Lexicon, Topic, Wording, about_dimension, answerable, content,
    coverage, facets, heading_names,
};
use super::search::{Hit, hits, sentences};
use super::sentence::{bullet_items, holds_any, is_name_word, is_quotable, unbulleted};

/// The query a step searched for.
pub(crate) fn query_of(step: &Step) -> String {
    step.args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A sentence and its stems, computed once for every rule that reads them.
struct Said<'a> {
    text: &'a str,
    wording: Wording,
}

impl<'a> Said<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            wording: Wording::of(text),
        }
    }

    /// Its stems.
    fn words(&self) -> &[String] {
        &self.wording.stems
    }

    /// Whether it gives a figure.
    fn has_figure(&self) -> bool {
        self.text.chars().any(|c| c.is_ascii_digit())
    }
}

/// A question clause and the share of its weight a passage covers.
type FacetCover<'f> = (&'f [String], f64);

/// Whether a "sentence" is the note's title, or a header line carrying it
/// ("Subject: Re: broker running costs - … From: …"); a long title only, so
/// that "Costs rose 5%." in a note titled "Costs" is still a sentence.
fn repeats_title(sentence: &str, title: &str) -> bool {
    sentence == title || (title.chars().count() >= 24 && sentence.contains(title))
}

/// How a quote ranks (see [`Quote::rank`]).
pub(crate) type Rank = (usize, usize, usize, usize, usize);

/// Words of a question that asks for a quantity ("how many", "얼마").
const QUANTITY_CUES: &[&str] = &[
    "how many",
    "how much",
    "how long",
    "how fast",
    "what share",
    "what percentage",
    "what proportion",
    "what fraction",
    "what rate",
    "what did",
    "share of",
    "percentage",
    "rate",
    "얼마",
    "몇",
    "비율",
];

/// Whether a question asks for a quantity.
fn asks_quantity(question: &str) -> bool {
    holds_any(question, QUANTITY_CUES)
}

/// What a question counts: the noun after "how many" (as its stem), or
/// the Korean unit after 몇 ("몇 명이 왔나" → 명).
fn counted(question: &str) -> Option<Counted> {
    let lower = question.to_lowercase();
    let which_won = lower.starts_with("which ") && lower.contains(" won");
    if which_won || holds_any(&lower, WINNER_ASKED) {
        return Some(Counted::Winner {
            this_year: holds_any(&lower, THIS_YEAR),
        });
    }
    if let Some(at) = lower.find("how many ") {
        let noun = lower[at + "how many ".len()..]
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .filter(|w| !w.is_empty())?;
        return Some(Counted::Noun(stepwise_tools::notes::stem::stem(noun)));
    }
    let words: Vec<&str> = lower.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "몇")?;
    let unit: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| !['이', '가', '을', '를', '은', '는', '의', '?'].contains(c))
        .collect();
    (!unit.is_empty()).then_some(Counted::Unit(unit))
}

/// Words of a question that asks who won ("who won the relay?", "어느 반이
/// 이겼나", "우승한 팀은").
const WINNER_ASKED: &[&str] = &["who won", "이겼", "우승"];
/// Words (stems) by which an English sentence names a winner, and the
/// Korean ones, found inside words.
const WINNER_NAMED: &[&str] = &["won", "winner", "beat"];
const WINNER_NAMED_KO: &[&str] = &["이겼", "우승", "1위"];
/// Words that date a question or a sentence this year, or last.
const THIS_YEAR: &[&str] = &["this year", "올해", "금년"];
const LAST_YEAR: &[&str] = &["last year", "작년", "지난해"];

/// What a count is of (see [`counted`]).
enum Counted {
    /// An English noun's stem: "how many *people*".
    Noun(String),
    /// A Korean counter: "몇 *명*".
    Unit(String),
    /// Who won (this year, when the question says so): answered only by a
    /// sentence naming a winner, not by any sentence about the contest.
    Winner { this_year: bool },
}

impl Counted {
    /// Whether a sentence gives such a count: a figure with the noun, or a
    /// number the Korean counter follows ("22명").
    fn given_by(&self, sentence: &Said<'_>) -> bool {
        match self {
            Counted::Noun(n) => sentence.has_figure() && mentions(sentence.words(), n),
            Counted::Winner { this_year } => {
                let text = sentence.text;
                // Whole stems: "won" is not "wonderful".
                let names = (sentence.words().iter()).any(|w| WINNER_NAMED.contains(&w.as_str()))
                    || holds_any(text, WINNER_NAMED_KO);
                names && !(*this_year && holds_any(text, LAST_YEAR))
            }
            Counted::Unit(u) => {
                let text = sentence.text;
                text.match_indices(u.as_str()).any(|(i, _)| {
                    text[..i]
                        .trim_end()
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_ascii_digit())
                })
            }
        }
    }

    /// Whether a question's clause (its stems) is the one that counts.
    fn in_facet(&self, facet: &[String]) -> bool {
        match self {
            Counted::Noun(n) => facet.iter().any(|w| w == n),
            Counted::Unit(_) | Counted::Winner { .. } => true,
        }
    }
}

/// One sentence that may back a claim, with what ranks it.
#[derive(Debug, Clone)]
pub(crate) struct Quote {
    pub(crate) note_id: String,
    pub(crate) sentence: String,
    /// Higher first: whether it gives a figure a question of quantity asks
    /// for, how many of the question's words it holds, whether it names the
    /// goal's subject, how much of the goal's context it shares (a cost
    /// section on adopting RAG leads with RAG's cost, not the other
    /// option's), whether it gives a figure at all.
    pub(crate) rank: Rank,
}

/// What a search step's output shows.
#[derive(Debug, Clone)]
pub(crate) struct Judgement {
    /// Results scoring at least [`MIN_SCORE`].
    pub(crate) good: Vec<Hit>,
    /// Their sentences about the sub-question, in retrieval order.
    pub(crate) quotes: Vec<Quote>,
    /// The sub-question, as a person would name it.
    pub(crate) question: String,
    /// The dimension it asks about, if it is one.
    pub(crate) dimension: Option<String>,
}

impl Judgement {
    /// Whether the step meets its acceptance criteria.
    pub(crate) fn met(&self) -> bool {
        !self.quotes.is_empty()
    }

    /// The notes that back it.
    pub(crate) fn notes(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for q in &self.quotes {
            if !ids.contains(&q.note_id.as_str()) {
                ids.push(&q.note_id);
            }
        }
        ids
    }

    /// Why it does not meet them, for a person.
    pub(crate) fn shortfall(&self, query: &str) -> String {
        match &self.dimension {
            Some(d) => format!("no passage mentions {d}"),
            None if self.good.is_empty() => {
                format!("no passage scored >= {MIN_SCORE} for {query:?}")
            }
            None => format!("no passage answers {:?}", self.question),
        }
    }
}

/// How the offline roles read a run: the corpus's words, what the goal asks
/// and its topic.
#[derive(Debug)]
pub(crate) struct Lens<'a> {
    pub(crate) lexicon: &'a Lexicon,
    pub(crate) asked: Asked,
    pub(crate) topic: Topic,
    /// The goal, lowercased, to tell its own names from others.
    goal_lower: String,
    /// The goal as written: the overview step's description.
    goal: String,
    /// What the goal says the choice replaces ("to replace SignUpSpot",
    /// "한빛이를 대체할"), as stems: the status quo, not an option.
    replaced: Vec<String>,
    /// Whether the goal weighs the status quo itself ("Should we replace
    /// Registrar?", "keep Registrar or …"): then what is in place now is
    /// evidence too.
    weighs_status_quo: bool,
}

/// Words by which a goal asks whether to keep what is in place.
const KEEP: &[&str] = &[
    "keep ",
    "stay with",
    "stick with",
    "유지할",
    "계속 쓸",
    "계속 사용",
];

/// Words by which a Korean goal asks whether to replace what is in place.
const KO_WHETHER_TO_REPLACE: &[&str] = &["교체할지", "교체해야", "바꿀지", "바꿔야 할"];

/// Whether a goal weighs the status quo: it asks whether to keep it, or
/// whether to replace it ("Should the district replace Registrar?"), not
/// which option replaces it ("Which vendor should replace Keystone?",
/// "A or B to replace C", "C를 대체할 …").
fn weighs_status_quo(goal: &str) -> bool {
    let lower = goal.to_lowercase();
    let asks_whether = ["should ", "whether ", "do we ", "is it time"]
        .iter()
        .any(|w| lower.contains(w))
        && !["which ", "what "].iter().any(|w| lower.starts_with(w));
    holds_any(goal, KEEP)
        || holds_any(goal, KO_WHETHER_TO_REPLACE)
        || (asks_whether
            && lower.contains("replace")
            && !lower.contains("to replace")
            && !lower.contains("replacing"))
}

/// The names a goal says its choice replaces: the word after "replace" or
/// "replacing", the word before "를 대체할" or "을 대신할" (as stems).
fn replaced_in(goal: &str) -> Vec<String> {
    let said: Vec<&str> = goal.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in said.iter().enumerate() {
        let lower = w.to_lowercase();
        if ["replace", "replacing", "replaces"].contains(&lower.as_str())
            && let Some(next) = said[i + 1..]
                .iter()
                .find(|w| !["the", "our", "its", "their"].contains(&w.to_lowercase().as_str()))
            && is_name_word(next.trim_matches(|c: char| !c.is_alphanumeric()))
        {
            out.push(stepwise_tools::notes::stem::stem(
                next.trim_matches(|c: char| !c.is_alphanumeric()),
            ));
        }
        if (w.starts_with("대체") || w.starts_with("대신"))
            && let Some(prev) = i.checked_sub(1).and_then(|p| said.get(p))
            && let Some(name) = ["를", "을"].iter().find_map(|m| prev.strip_suffix(m))
            && name.chars().count() >= 2
        {
            out.push(stepwise_tools::notes::stem::stem(name));
        }
    }
    out
}

impl<'a> Lens<'a> {
    /// The lens for a run.
    pub(crate) fn new(lexicon: &'a Lexicon, state: &RunState) -> Self {
        Self::for_goal(lexicon, &state.goal, &state.constraints)
    }

    /// The lens for a goal and its constraints.
    pub(crate) fn for_goal(lexicon: &'a Lexicon, goal: &str, constraints: &Constraints) -> Self {
        let asked = Asked::from_parts(goal, constraints);
        let topic = Topic::of(goal, &asked);
        let replaced = replaced_in(goal);
        Lens {
            lexicon,
            asked,
            topic,
            goal_lower: goal.to_lowercase(),
            goal: goal.to_owned(),
            weighs_status_quo: weighs_status_quo(goal),
            replaced,
        }
    }

    /// The clauses of a non-dimension sub-question the notes could answer
    /// (none for a dimension).
    fn facets_of(&self, description: &str) -> Vec<Vec<String>> {
        if self.asked.dimension_of(description).is_some() {
            return Vec::new();
        }
        facets(description)
            .into_iter()
            .filter(|f| answerable(self.lexicon, f))
            .collect()
    }

    /// Whether a sentence of `note_id` is about the sub-question
    /// `description`: a dimension by the sentence's own words and `frame`
    /// (its passage's title and heading); the goal or
    /// a user's question by its passage — `covered`, the passage's best
    /// facet coverage, against `best`, the best of any passage retrieved —
    /// with the sentence holding one of the facet's words or a figure.
    fn about(
        &self,
        description: &str,
        sentence: &Said<'_>,
        frame: &Wording,
        facet: Option<FacetCover<'_>>,
        best: f64,
        note_id: &str,
    ) -> bool {
        if !self.lexicon.on_topic(&self.topic, note_id) || self.names_another(sentence) {
            return false;
        }
        let ws = sentence.words();
        if let Some(d) = self.asked.dimension_of(description) {
            // Evidence on a dimension says something checkable: a figure,
            // or what it says of an alternative (in it, or in what frames
            // it). "회의 다과 비용은 학생처 운영비로 처리했다" (a meeting's
            // snacks) names the cost and says nothing of the decision.
            let of_an_alternative = self.topic.names_an_entity(ws)
                || self.topic.names_an_entity(&frame.stems)
                || self.lexicon.names_an_entity_in(&self.topic, note_id);
            // A note that names no alternative and shares little with the
            // rest (the charity run's "Entry costs £15") is no evidence.
            if !of_an_alternative
                && !self.topic.entities.is_empty()
                && !self.lexicon.cohesive(note_id)
            {
                return false;
            }
            // What is in place now, said of no alternative ("지금 한빛이
            // 유지보수 계약은 12월에 끝나고"), is the status quo.
            if !self.weighs_status_quo
                && !self.topic.names_an_entity(ws)
                && (super::sentence::about_the_status_quo(sentence.text, ws)
                    || self.replaced.iter().any(|r| mentions(ws, r)))
            {
                return false;
            }
            // Days of someone's time are effort, not a turnaround.
            if super::relevance::measures_elapsed_time(d)
                && super::sentence::speaks_of_effort(sentence.text)
            {
                return false;
            }
            // A line that is only the dimension's name ("Job turnaround
            // time." on an agenda) says nothing about it.
            let named = words(d);
            if !sentence.has_figure() && !ws.is_empty() && ws.iter().all(|w| named.contains(w)) {
                return false;
            }
            let anchored =
                sentence.has_figure() || self.topic.entities.is_empty() || of_an_alternative;
            return anchored
                && about_dimension(
                    self.lexicon,
                    d,
                    &sentence.wording,
                    frame,
                    note_id,
                    of_an_alternative,
                );
        }
        if !self.lexicon.cohesive(note_id) && !self.topic.names_an_entity(ws) {
            return false;
        }
        // "How many people came to the lunch?" is answered by a count of
        // people, not by any sentence about the lunch with a number in it.
        let count = counted(description);
        facet.is_some_and(|(facet, covered)| {
            covered >= GOAL_SHARE
                && covered >= BEST_SHARE * best
                && (facet.iter().any(|t| mentions(ws, t)) || sentence.has_figure())
                && count
                    .as_ref()
                    .is_none_or(|c| !c.in_facet(facet) || c.given_by(sentence))
        })
    }

    /// Whether a sentence is about another named thing than the goal's
    /// alternatives: when the goal compares named options, a sentence that
    /// names something else by name (an option not asked, "the iPad") and
    /// none of them is evidence on that other thing.
    fn names_another(&self, sentence: &Said<'_>) -> bool {
        if self.asked.entities.is_empty() || self.topic.names_an_entity(sentence.words()) {
            return false;
        }
        let goal = self.goal_lower.as_str();
        let words: Vec<&str> = sentence.text.split_whitespace().collect();
        // Each word bare: no punctuation around it, no possessive.
        let bare = |w: &'_ str| -> String {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .trim_end_matches("'s")
                .trim_end_matches("’s")
                .to_owned()
        };
        // A word that opens the sentence, or follows a label ("**Price.**
        // Business plan …", "Note: Teams …"), is capitalised as a first word;
        // one capitalised inside too (TaskHub) is a name wherever it stands.
        let opens = |i: usize, w: &str| {
            let first = i == 0
                || words[i - 1]
                    .trim_end_matches(['*', '_'])
                    .ends_with(['.', ':']);
            let camel = w.chars().skip(1).any(|c| c.is_ascii_uppercase())
                && w.chars().any(|c| c.is_ascii_lowercase());
            first && !camel
        };
        words
            .iter()
            .map(|w| bare(w))
            .enumerate()
            .filter(|(i, w)| !opens(*i, w))
            .any(|(_, w)| is_name_word(&w) && !goal.contains(&w.to_lowercase()))
    }

    /// The words that rank a sentence for `description`.
    fn question_words(&self, description: &str) -> Vec<String> {
        match self.asked.dimension_of(description) {
            Some(d) => super::relevance::dimension_terms(d),
            None => content(description),
        }
    }

    /// Whether search step `step` looks into `question` (a dimension asked,
    /// or a sub-question of its own): it was planned for it, or — in a plan
    /// the offline planner did not write — its description names the
    /// dimension (see [`Asked::dimensions_named_by`]).
    pub(crate) fn searches(&self, step: &Step, question: &str) -> bool {
        step.tool == "search_notes"
            && (step.description == question || self.dimensions_of(step).contains(&question))
    }

    /// The dimensions asked that step `step` is about (none: a sub-question
    /// of its own, or the overview).
    pub(crate) fn dimensions_of(&self, step: &Step) -> Vec<&str> {
        self.asked
            .dimensions_named_by(&step.description, &self.goal)
    }

    /// Judges a search step's output against `question`, which it
    /// [`searches`](Self::searches): as if planned for it, so a dimension's
    /// sentences are judged by the dimension's rules, not the step's wording.
    pub(crate) fn judge_for(&self, step: &Step, question: &str, output: &Value) -> Judgement {
        if step.description == question {
            return self.judge(step, output);
        }
        let mut planned = step.clone();
        question.clone_into(&mut planned.description);
        self.judge(&planned, output)
    }

    /// The questions a search step answers, for the assessor: the
    /// dimensions it [`searches`](Self::searches), else its own description.
    pub(crate) fn questions_of(&self, step: &Step) -> Vec<String> {
        let named = self.dimensions_of(step);
        if named.is_empty() {
            vec![step.description.clone()]
        } else {
            named.into_iter().map(str::to_owned).collect()
        }
    }

    /// Judges one search step's output against its sub-question.
    pub(crate) fn judge(&self, step: &Step, output: &Value) -> Judgement {
        let good: Vec<Hit> = hits(output)
            .into_iter()
            .filter(|h| h.score >= MIN_SCORE)
            .collect();
        let question = self.question_words(&step.description);
        // One alternative is the goal's subject ("Should we adopt RAG?");
        // several are compared, none ahead of the others.
        let subject: Vec<String> = match self.topic.entities.as_slice() {
            [only] => only.clone(),
            _ => Vec::new(),
        };
        let facets = self.facets_of(&step.description);
        let dimension = self.asked.dimension_of(&step.description);
        let quantity = dimension.is_none() && asks_quantity(&step.description);
        // What frames each passage, its best facet and that facet's
        // coverage; the best coverage of all.
        let views: Vec<Vec<(Wording, Option<FacetCover<'_>>)>> = good
            .iter()
            .map(|hit| {
                hit.passages
                    .iter()
                    .map(|p| {
                        let frame = self.lexicon.frame(&hit.note_id, p);
                        let ws = words(p);
                        let facet = facets
                            .iter()
                            .map(|f| (f.as_slice(), coverage(self.lexicon, f, &ws, &frame.stems)))
                            .max_by(|a, b| a.1.total_cmp(&b.1));
                        (frame, facet)
                    })
                    .collect()
            })
            .collect();
        let best = views
            .iter()
            .flatten()
            .filter_map(|(_, facet)| facet.map(|(_, c)| c))
            .fold(0.0, f64::max);
        let mut quotes: Vec<Quote> = Vec::new();
        for (hit, hit_views) in good.iter().zip(&views) {
            for (passage, (frame, facet)) in hit.passages.iter().zip(hit_views) {
                if let Some(h) = self.lexicon.heading(&hit.note_id, passage) {
                    // Under "Actions" or "할 일" a line assigns work, it does
                    // not report any ("김혜원: 3년 계약 기준 비용 비교").
                    if super::sentence::is_agenda_heading(h) {
                        continue;
                    }
                    // A passage under a heading that names another asked
                    // dimension and not this one ("**단가.**" under 감염
                    // 관리) is evidence on that one.
                    if let Some(d) = dimension {
                        let heading = Wording::of(h);
                        if !heading_names(&heading, d)
                            && self
                                .asked
                                .dimensions
                                .iter()
                                .any(|other| other != d && heading_names(&heading, other))
                        {
                            continue;
                        }
                    }
                }
                for raw in sentences(passage).into_iter().flat_map(bullet_items) {
                    let sentence = unbulleted(raw);
                    if !is_quotable(raw, sentence)
                        || repeats_title(sentence, &hit.title)
                        || quotes
                            .iter()
                            .any(|q| q.sentence == sentence && q.note_id == hit.note_id)
                    {
                        continue;
                    }
                    let said = Said::new(sentence);
                    if !self.about(&step.description, &said, frame, *facet, best, &hit.note_id) {
                        continue;
                    }
                    let ws = said.words();
                    let figure = said.has_figure();
                    let count = |terms: &[String]| terms.iter().filter(|t| mentions(ws, t)).count();
                    let names_subject =
                        usize::from(!subject.is_empty() && subject.iter().all(|t| mentions(ws, t)));
                    quotes.push(Quote {
                        note_id: hit.note_id.clone(),
                        sentence: sentence.to_owned(),
                        rank: (
                            usize::from(quantity && figure),
                            count(&question),
                            names_subject,
                            count(&self.topic.context),
                            usize::from(figure),
                        ),
                    });
                }
            }
        }
        Judgement {
            good,
            quotes,
            dimension: dimension.map(str::to_owned),
            question: dimension.unwrap_or(&step.description).to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_long_title_makes_a_line_a_header() {
        let long = "Re: broker running costs - numbers for the decision meeting";
        assert!(repeats_title(
            &format!("Subject: {long} From: Aisha Okafor To: Jonas Weber"),
            long
        ));
        assert!(repeats_title("Costs", "Costs"));
        assert!(!repeats_title("Costs rose 5% in May.", "Costs"));
    }

    #[test]
    fn questions_of_quantity() {
        assert!(asks_quantity("What share of chats were resolved?"));
        assert!(asks_quantity("해결률은 얼마였나?"));
        assert!(!asks_quantity("Should we adopt RAG?"));
    }

    #[test]
    fn the_status_quo_is_weighed_only_when_the_goal_weighs_it() {
        let weighs = weighs_status_quo;
        assert!(weighs(
            "Should the district replace Registrar? Consider cost."
        ));
        assert!(weighs("Keep Registrar or move to Ledgerline?"));
        assert!(weighs("지금 시스템을 교체해야 할까?"));
        assert!(!weighs(
            "ProctorLane or Meridian to replace the Calloway Hall Testing Center: cost"
        ));
        assert!(!weighs("Which payroll vendor should replace Keystone?"));
        assert!(!weighs(
            "한빛이를 대체할 민원 챗봇, 누리봇과 하나로챗 비교: 비용"
        ));
        assert!(!weighs("Which vendor should we choose? Consider cost."));
        assert_eq!(replaced_in("한빛이를 대체할 민원 챗봇"), ["한빛"]);
    }

    #[test]
    fn a_count_is_answered_by_a_count_of_what_it_asks() {
        let people = counted("How many people came to the lunch?").unwrap();
        assert!(people.given_by(&Said::new("About 40 people came.")));
        assert!(!people.given_by(&Said::new("After 34 years at the counter, Doris retires.")));
        assert!(!people.given_by(&Said::new("Many people came.")));
        let ko = counted("체육대회에 몇 명이 왔나?").unwrap();
        assert!(ko.given_by(&Said::new("직원 52명이 참가했다.")));
        assert!(!ko.given_by(&Said::new("오후 3시에 시작한다.")));
        assert!(counted("Should we adopt RAG?").is_none());
    }

    #[test]
    fn who_won_is_answered_by_a_winner_of_the_year_asked() {
        let won = counted("Who won the relay at this year's sports day?").unwrap();
        assert!(won.given_by(&Said::new("Team Blue won the relay by two seconds.")));
        assert!(!won.given_by(&Said::new("The relay starts at 3 pm on the field.")));
        assert!(!won.given_by(&Said::new("Last year Team Red won the relay.")));
        let ko = counted("올해 체육대회에서 어느 부서가 이겼나?").unwrap();
        assert!(ko.given_by(&Said::new("민원과가 줄다리기에서 1위를 했다.")));
        assert!(!ko.given_by(&Said::new("작년에는 세무과가 우승했다.")));
        assert!(!ko.given_by(&Said::new("체육대회는 오후 2시에 시작한다.")));
        let which = counted("Which team won the quiz?").unwrap();
        assert!(which.given_by(&Said::new("The winner was the night shift.")));
    }
}
