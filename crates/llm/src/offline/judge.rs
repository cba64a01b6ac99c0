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
use stepwise_core::{RunState, Step};
use stepwise_tools::notes::stem::{mentions, words};

use super::MIN_SCORE;
use super::asked::Asked;
use super::relevance::{Lexicon, Topic, about_dimension, about_goal, content};
use super::search::{Hit, hits, sentences};

/// The query a step searched for.
pub(crate) fn query_of(step: &Step) -> String {
    step.args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A sentence without the list marker it had in the note ("- **Kafka**: …"
/// → "**Kafka**: …"), so the brief's own bullet is the only one. What is
/// left is still verbatim from the note.
fn unbulleted(sentence: &str) -> &str {
    let mut s = sentence.trim();
    loop {
        let rest = s
            .strip_prefix("- ")
            .or_else(|| s.strip_prefix("* "))
            .or_else(|| s.strip_prefix("+ "))
            .or_else(|| s.strip_prefix("• "))
            .or_else(|| {
                let digits = s.chars().take_while(char::is_ascii_digit).count();
                (digits > 0 && digits < 4)
                    .then(|| {
                        s[digits..]
                            .strip_prefix(". ")
                            .or_else(|| s[digits..].strip_prefix(") "))
                    })
                    .flatten()
            });
        match rest {
            Some(r) => s = r.trim_start(),
            None => return s,
        }
    }
}

/// Whether a sentence states something: it ends like a sentence (a full
/// stop, or a Korean ending such as 다/요), not like a byline, a date line
/// or a table row ("정보보안팀, 5월 28일", "From: Aisha Okafor").
fn is_statement(sentence: &str) -> bool {
    let end = sentence
        .trim_end_matches(['"', '\'', '”', '’', ')', '*', '_'])
        .chars()
        .last();
    matches!(
        end,
        Some('.' | '!' | '?' | '。' | '다' | '요' | '음' | '함' | '임' | '됨')
    ) && sentence.split_whitespace().count() >= 3
}

/// One sentence that may back a claim, with what ranks it.
#[derive(Debug, Clone)]
pub(crate) struct Quote {
    pub(crate) note_id: String,
    pub(crate) sentence: String,
    /// Higher first: how many of the question's words it holds, whether it
    /// names the goal's subject, how much of the context it shares.
    pub(crate) rank: (usize, usize, usize),
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
        if self.good.is_empty() {
            format!("no passage scored >= {MIN_SCORE} for {query:?}")
        } else {
            format!("no passage mentions {}", self.question)
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
    goal: String,
}

impl<'a> Lens<'a> {
    /// The lens for a run.
    pub(crate) fn new(lexicon: &'a Lexicon, state: &RunState) -> Self {
        let asked = Asked::of_state(state);
        let topic = Topic::of(&state.goal, &asked);
        Lens {
            lexicon,
            asked,
            topic,
            goal: state.goal.clone(),
        }
    }

    /// Whether a sentence of `note_id` is about the sub-question `description`.
    fn about(&self, description: &str, sentence: &[String], note_id: &str) -> bool {
        if !self.lexicon.on_topic(&self.topic, note_id) {
            return false;
        }
        if let Some(d) = self.asked.dimension_of(description) {
            return about_dimension(self.lexicon, d, sentence, note_id);
        }
        if description == self.goal {
            return about_goal(self.lexicon, &self.topic, sentence, note_id);
        }
        // A user's own sub-question: judged by its own words.
        let own = Topic {
            goal: content(description),
            ..Topic::default()
        };
        about_goal(self.lexicon, &own, sentence, note_id)
    }

    /// The words that rank a sentence for `description`.
    fn question_words(&self, description: &str) -> Vec<String> {
        match self.asked.dimension_of(description) {
            Some(d) => content(d),
            None => content(description),
        }
    }

    /// Judges one search step's output against its sub-question.
    pub(crate) fn judge(&self, step: &Step, output: &Value) -> Judgement {
        let good: Vec<Hit> = hits(output)
            .into_iter()
            .filter(|h| h.score >= MIN_SCORE)
            .collect();
        let question = self.question_words(&step.description);
        let subject: Vec<String> = self.topic.entities.first().cloned().unwrap_or_default();
        let mut quotes: Vec<Quote> = Vec::new();
        for hit in &good {
            for passage in &hit.passages {
                for sentence in sentences(passage) {
                    let sentence = unbulleted(sentence);
                    if !is_statement(sentence)
                        || (!hit.title.is_empty() && sentence.contains(hit.title.as_str()))
                        || quotes
                            .iter()
                            .any(|q| q.sentence == sentence && q.note_id == hit.note_id)
                    {
                        continue;
                    }
                    let ws = words(sentence);
                    if !self.about(&step.description, &ws, &hit.note_id) {
                        continue;
                    }
                    let count =
                        |terms: &[String]| terms.iter().filter(|t| mentions(&ws, t)).count();
                    let names_subject = usize::from(
                        !subject.is_empty() && subject.iter().all(|t| mentions(&ws, t)),
                    );
                    quotes.push(Quote {
                        note_id: hit.note_id.clone(),
                        sentence: sentence.to_owned(),
                        rank: (count(&question), names_subject, count(&self.topic.context)),
                    });
                }
            }
        }
        Judgement {
            good,
            quotes,
            question: self
                .asked
                .dimension_of(&step.description)
                .unwrap_or(&step.description)
                .to_owned(),
        }
    }
}
