//! Judging a search step's evidence: the rule shared by the assessor (is
//! the step done?), the reformulator (is there anything left to try?), the
//! verifier (how complete is the brief?) and the synthesizer (which
//! sentences may back a section?), so all four agree.
//!
//! A sentence of a result scoring at least [`MIN_SCORE`] backs a
//! sub-question when
//! - its note is on the goal's subject ([`Topic::on_topic`]) and, when the
//!   goal names alternatives, names one of them somewhere;
//! - it is a statement: no question, and no cue of a deferral, of no
//!   result, of a byline or of an option set aside ([`Cue`]);
//! - it names no one else: a name the notes capitalise that the goal does
//!   not mention, with none the goal does, makes it about that other party;
//! - and it covers the sub-question by measure ([`coverage`]): a dimension
//!   by its words in the sentence together with its heading and the note's
//!   title (the sentence naming some of it, or giving a figure under a
//!   heading that names it), a question by its clauses.

use serde_json::Value;
use stepwise_core::{Constraints, RunState, Step};
use stepwise_tools::text::cues::Cue;
use stepwise_tools::text::{has_any_cue, mentions, sentences, stem, words};

use super::MIN_SCORE;
use super::asked::Asked;
use super::relevance::{DIMENSION_SHARE, Lexicon, Topic, content, coverage};
use super::search::{Hit, hits};

/// The query a step searched for.
pub(crate) fn query_of(step: &Step) -> String {
    step.args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// How a quote ranks, higher first: a figure a question of quantity asks
/// for, the share of the sub-question it covers (per mille), whether it
/// names an alternative, how many of the goal's subject words it holds (a
/// cost section on adopting RAG leads with RAG's cost), whether it gives a
/// figure.
pub(crate) type Rank = (bool, usize, bool, usize, bool);

/// One sentence that may back a claim, with what ranks it.
#[derive(Debug, Clone)]
pub(crate) struct Quote {
    pub(crate) note_id: String,
    pub(crate) sentence: String,
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

/// A list item's pieces: a passage joins a note's lines, so its bullets
/// ("- a - b") follow one another inside one "sentence".
fn items(sentence: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for part in sentence
        .split(" - ")
        .flat_map(|p| p.split(" * "))
        .flat_map(|p| p.split(" • "))
    {
        let item = part.trim().trim_start_matches(['-', '*', '•']).trim();
        if !item.is_empty() {
            out.push(item);
        }
    }
    out
}

/// Whether a sentence states something: not a question, and no cue that it
/// defers, holds no result, is a byline or sets an option aside.
fn is_statement(sentence: &str) -> bool {
    !sentence.trim_end().ends_with(['?', '？'])
        && !has_any_cue(
            sentence,
            &[Cue::Deferral, Cue::NoResult, Cue::Byline, Cue::SetAside],
        )
}

/// What a question counts, when it asks "how many X" (X's stem) or "몇 X".
fn counted(question: &str) -> Option<String> {
    let lower = question.to_lowercase();
    if let Some(at) = lower.find("how many ") {
        let noun = lower[at + "how many ".len()..]
            .split(|c: char| !c.is_alphanumeric())
            .next()?;
        return (!noun.is_empty()).then(|| stem(noun));
    }
    let ws: Vec<&str> = lower.split_whitespace().collect();
    let at = ws.iter().position(|w| *w == "몇")?;
    let unit: String = ws.get(at + 1)?.chars().take(1).collect();
    (!unit.is_empty()).then_some(unit)
}

/// Whether a sentence gives a count of `what`: a number beside it.
fn gives_count(sentence: &str, what: &str) -> bool {
    let has_digit = sentence.chars().any(|c| c.is_ascii_digit());
    has_digit
        && (mentions(&words(sentence), what)
            || sentence.match_indices(what).any(|(i, _)| {
                sentence[..i]
                    .trim_end()
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_digit())
            }))
}

/// The clauses of a question: split at commas and at "and" before a
/// question word, so each part must be answered on its own.
fn facets(question: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in question.split([',', ';', '?']) {
        let mut rest = part;
        while let Some(at) = [
            " and who ",
            " and what ",
            " and how ",
            " and which ",
            " and when ",
        ]
        .iter()
        .filter_map(|w| rest.find(w))
        .min()
        {
            out.push(rest[..at].to_owned());
            rest = &rest[at + 5..];
        }
        out.push(rest.to_owned());
    }
    out.retain(|f| !content(f).is_empty());
    out
}

/// How the offline roles read a run: the corpus's words, what the goal asks
/// and its topic.
#[derive(Debug)]
pub(crate) struct Lens<'a> {
    pub(crate) lexicon: &'a Lexicon,
    pub(crate) asked: Asked,
    pub(crate) topic: Topic,
    /// The goal as written: the overview step's description.
    goal: String,
    /// The goal, lowercased, to tell its own names from others.
    goal_lower: String,
}

impl<'a> Lens<'a> {
    /// The lens for a run.
    pub(crate) fn new(lexicon: &'a Lexicon, state: &RunState) -> Self {
        Self::for_goal(lexicon, &state.goal, &state.constraints)
    }

    /// The lens for a goal and its constraints.
    pub(crate) fn for_goal(lexicon: &'a Lexicon, goal: &str, constraints: &Constraints) -> Self {
        let asked = Asked::from_parts(goal, constraints);
        let topic = Topic::of(lexicon, goal, &asked);
        Lens {
            lexicon,
            asked,
            topic,
            goal: goal.to_owned(),
            goal_lower: goal.to_lowercase(),
        }
    }

    /// Whether a note mentions one of the goal's names.
    fn note_names_an_entity(&self, note_id: &str) -> bool {
        let Some(at) = self.lexicon.corpus().position(note_id) else {
            return false;
        };
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        self.topic.entities.iter().any(|e| {
            e.iter()
                .all(|t| self.lexicon.users(t).binary_search(&at).is_ok())
        })
    }

    /// Whether a sentence names another party than the goal's: a name the
    /// goal does not mention, and none it does.
    fn names_another(&self, sentence: &str, stems: &[String]) -> bool {
        !self.topic.entities.is_empty()
            && !self.topic.names_an_entity(stems)
            && self
                .lexicon
                .names_in(sentence)
                .iter()
                .any(|n| !self.topic.is_entity_word(n) && !self.goal_lower.contains(n.as_str()))
    }

    /// Whether search step `step` looks into `question`: it was planned for
    /// it, or its description names the dimension.
    pub(crate) fn searches(&self, step: &Step, question: &str) -> bool {
        step.tool == "search_notes"
            && (step.description == question || self.dimensions_of(step).contains(&question))
    }

    /// The dimensions asked that step `step` is about.
    pub(crate) fn dimensions_of(&self, step: &Step) -> Vec<&str> {
        self.asked
            .dimensions_named_by(&step.description, &self.goal)
    }

    /// Judges a search step's output against `question`, which it searches.
    pub(crate) fn judge_for(&self, _step: &Step, question: &str, output: &Value) -> Judgement {
        self.judge_question(question, output)
    }

    /// The questions a search step answers: the dimensions it searches,
    /// else its own description.
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
        self.judge_question(&step.description, output)
    }

    fn judge_question(&self, description: &str, output: &Value) -> Judgement {
        let good: Vec<Hit> = hits(output)
            .into_iter()
            .filter(|h| h.score >= MIN_SCORE)
            .collect();
        let dimension = self.asked.dimension_of(description);
        let facets: Vec<(Vec<String>, Option<String>)> = match dimension {
            Some(d) => {
                let terms = content(d);
                vec![(if terms.is_empty() { words(d) } else { terms }, None)]
            }
            None => facets(description)
                .iter()
                .map(|f| {
                    let terms: Vec<String> = content(f)
                        .into_iter()
                        .filter(|t| !self.topic.is_entity_word(t))
                        .collect();
                    (terms, counted(f))
                })
                .filter(|(t, _)| !t.is_empty())
                .collect(),
        };
        let mut quotes: Vec<Quote> = Vec::new();
        for hit in &good {
            let note = hit.note_id.as_str();
            let title = self.lexicon.title(note);
            // A note titled for the dimension (or for the step's own
            // question), in notes on the subject, is on it even when it does
            // not repeat the subject's words.
            let titled = self.topic.corpus_on_subject()
                && !self.lexicon.excluded(note)
                && facets
                    .iter()
                    .any(|(t, _)| coverage(self.lexicon, t, title) >= DIMENSION_SHARE);
            if !(self.topic.on_topic(self.lexicon, note) || titled)
                || (!self.topic.entities.is_empty() && !self.note_names_an_entity(note))
            {
                continue;
            }
            for passage in &hit.passages {
                let heading = self.lexicon.heading(note, passage).unwrap_or_default();
                // A passage under a heading on another asked dimension is
                // evidence on that one.
                if let Some(d) = dimension
                    && self.heading_is_another_dimension(heading, d)
                {
                    continue;
                }
                let frame = format!("{heading} {title}");
                // What the heading and title alone cover of each facet.
                let framing: Vec<f64> = facets
                    .iter()
                    .map(|(terms, _)| coverage(self.lexicon, terms, &frame))
                    .collect();
                for sentence in sentences(passage).into_iter().flat_map(items) {
                    if sentence == title.trim() || !is_statement(sentence) {
                        continue;
                    }
                    if quotes
                        .iter()
                        .any(|q| q.sentence == sentence && q.note_id == note)
                    {
                        continue;
                    }
                    let stems = words(sentence);
                    if self.names_another(sentence, &stems) {
                        continue;
                    }
                    let figure = sentence.chars().any(|c| c.is_ascii_digit());
                    let mut best: Option<(f64, bool)> = None;
                    for ((terms, count), framing) in facets.iter().zip(&framing) {
                        let own = coverage(self.lexicon, terms, sentence);
                        // A line that is only the sub-question's name says nothing.
                        let beyond = stems
                            .iter()
                            .any(|s| !terms.iter().any(|t| mentions(std::slice::from_ref(s), t)));
                        let framed = coverage(self.lexicon, terms, &format!("{sentence} {frame}"));
                        let by_frame = figure && *framing >= DIMENSION_SHARE;
                        let ok = beyond
                            && ((own > 0.0 && framed >= DIMENSION_SHARE) || by_frame)
                            && count.as_ref().is_none_or(|c| gives_count(sentence, c));
                        if ok && best.is_none_or(|(b, _)| framed > b) {
                            best = Some((framed, count.is_some()));
                        }
                    }
                    let Some((share, quantity)) = best else {
                        continue;
                    };
                    quotes.push(Quote {
                        note_id: note.to_owned(),
                        sentence: sentence.to_owned(),
                        rank: (
                            quantity && figure,
                            (share * 1000.0) as usize,
                            self.topic.names_an_entity(&stems),
                            self.topic
                                .subject
                                .iter()
                                .filter(|t| mentions(&stems, t))
                                .count(),
                            figure,
                        ),
                    });
                }
            }
        }
        // A question is answered by the sentences that cover most of it:
        // at least the share of what the best one covers.
        if dimension.is_none() {
            let best = quotes.iter().map(|q| q.rank.1).max().unwrap_or(0);
            quotes.retain(|q| q.rank.1 as f64 >= DIMENSION_SHARE * best as f64);
        }
        Judgement {
            good,
            quotes,
            dimension: dimension.map(str::to_owned),
            question: dimension.unwrap_or(description).to_owned(),
        }
    }

    /// Whether a heading names another asked dimension and not `d`.
    fn heading_is_another_dimension(&self, heading: &str, d: &str) -> bool {
        if heading.is_empty() {
            return false;
        }
        let names = |x: &str| coverage(self.lexicon, &content(x), heading) >= DIMENSION_SHARE;
        !names(d) && self.asked.dimensions.iter().any(|o| o != d && names(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_and_not() {
        assert!(is_statement("Alpha costs $4,200 a year."));
        assert!(!is_statement("What does Alpha cost?"));
        assert!(!is_statement("Cost waits until the next meeting."));
        assert!(!is_statement("Vendor support didn't come up."));
        assert!(!is_statement("참석자: 김민지, 박서준"));
    }

    #[test]
    fn bullets_are_items() {
        assert_eq!(
            items("- Price: $4 - Support: 24/7"),
            ["Price: $4", "Support: 24/7"]
        );
        assert_eq!(items("Plain sentence."), ["Plain sentence."]);
    }

    #[test]
    fn counts_and_facets() {
        assert_eq!(
            counted("How many people came to the lunch?").as_deref(),
            Some("peopl")
        );
        assert!(gives_count("About 40 people came.", "peopl"));
        assert!(!gives_count("After 34 years, Doris retires.", "peopl"));
        assert_eq!(counted("몇 명이 왔나?").as_deref(), Some("명"));
        assert!(gives_count("직원 52명이 참가했다.", "명"));
        assert_eq!(
            facets("How many people came to the lunch, and who gave the longest speech?").len(),
            2
        );
    }
}
