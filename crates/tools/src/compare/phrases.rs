//! Figures in context: a sentence's figures with what they measure (the
//! measured phrase), their conditions and their subjects.

use std::collections::{BTreeMap, BTreeSet};

use crate::text::stem::{is_hangul, words};

use super::entities::{Vocabulary, companies_in, entity_of, korean_subject, named_in};
use super::markers::{Marker, markers};
use super::tokens::{Kind, Token, clauses, lex};
use super::units::{Reading, Unit, readings};
use super::words::{fw, list, listed};

/// Content words nearest a figure that make up its measured phrase.
const PHRASE_WORDS: usize = 5;

/// A word of a measured phrase: its stem and where it stands.
#[derive(Debug, Clone)]
pub(super) struct PhraseWord {
    pub(super) stem: String,
    pub(super) at: usize,
}

/// A figure with what it measures.
#[derive(Debug, Clone)]
pub(super) struct Figure {
    /// The tokens of the figure itself: its number, unit and rate.
    pub(super) span: (usize, usize),
    pub(super) value: f64,
    pub(super) approx: bool,
    pub(super) bound: bool,
    pub(super) unit: Unit,
    pub(super) qualifiers: BTreeSet<&'static str>,
    pub(super) periods: BTreeSet<String>,
    pub(super) settings: BTreeSet<&'static str>,
    /// Named subjects, lowercased, with their spelling.
    pub(super) entities: BTreeMap<String, String>,
    /// The Korean topic or subject noun nearest before the figure.
    pub(super) subject: Option<String>,
    /// The words nearest the figure: what it measures.
    pub(super) phrase: Vec<PhraseWord>,
    /// Every content word of its part of the clause and of the clauses
    /// framing the sentence: a word here that the other sentence lacks may
    /// name a different thing ("for the night shift").
    pub(super) scope: Vec<PhraseWord>,
}

/// A sentence with its figures.
#[derive(Debug)]
pub(super) struct Statement {
    pub(super) note_id: String,
    pub(super) sentence: String,
    pub(super) tokens: Vec<Token>,
    /// Every content word of the sentence, as stems.
    pub(super) words: Vec<String>,
    pub(super) figures: Vec<Figure>,
    /// The subjects its note's title names ("Load test report: MSK and SQS").
    pub(super) title_entities: BTreeSet<String>,
    /// The companies among them ("(주)물빛스포츠 — … 제안서").
    pub(super) title_companies: BTreeSet<String>,
}

/// Reads a sentence of the note `note_id` titled `title`, telling names
/// from common words by how the inputs write them ([`Vocabulary`]): a
/// capitalised first word the inputs also write in lowercase ("Latency",
/// "Fine") is a common word.
pub(super) fn statement(
    note_id: &str,
    title: &str,
    sentence: &str,
    vocabulary: &Vocabulary,
) -> Statement {
    let tokens = lex(sentence);
    let figures = figures(&tokens, &vocabulary.lowercase);
    Statement {
        note_id: note_id.to_owned(),
        sentence: sentence.to_owned(),
        words: words(sentence),
        tokens,
        figures,
        title_entities: named_in(title, vocabulary),
        title_companies: companies_in(title, vocabulary),
    }
}

/// A lexed sentence and what its figures are read against.
struct Reader<'a> {
    tokens: &'a [Token],
    marks: BTreeMap<usize, Marker>,
    clause_of: Vec<usize>,
    /// Tokens some figure consumed (units, scales, rates).
    used: BTreeSet<usize>,
    lowercase: &'a BTreeSet<String>,
    /// Tokens of clauses without a figure: they frame every figure of the
    /// sentence ("In the load test, …", "Over three years, …").
    context: Vec<usize>,
    /// Of those, the clauses that are not a source frame ("According to
    /// the data team, …"): their words are part of what is measured.
    own_context: Vec<usize>,
}

/// Words that open a clause naming where a figure comes from, not what it
/// measures.
const SOURCE_OPENERS: &str = "according based as per citing following";

/// Korean endings that close a source frame: "데이터팀이 다시 집계한 결과",
/// "일지를 모아 보니", "자기 팀 집계로는", "보고서에 따르면".
const KOREAN_FRAME_ENDS: &str = "결과 보니 따르면 의하면 로는 보면";

/// Whether a token closes a frame before the figure: a Korean source frame,
/// or English "that" ("the data team found that 27% …").
fn ends_frame(t: &Token) -> bool {
    t.kind == Kind::Word
        && (t.lower == "that" || list(KOREAN_FRAME_ENDS).any(|e| t.lower.ends_with(e)))
}

impl<'a> Reader<'a> {
    fn new(
        tokens: &'a [Token],
        readings: &[Reading],
        marks: BTreeMap<usize, Marker>,
        lowercase: &'a BTreeSet<String>,
    ) -> Self {
        let clause_of = clauses(tokens);
        let used = readings
            .iter()
            .flat_map(|r| r.used.iter().copied())
            .collect();
        let with_figures: BTreeSet<usize> = readings
            .iter()
            .filter_map(|r| clause_of.get(r.at).copied())
            .collect();
        let context: Vec<usize> = (0..tokens.len())
            .filter(|j| !with_figures.contains(&clause_of[*j]))
            .collect();
        // Clauses whose figure comes after a frame that ends in them ("로
        // 보면 2024년 이직률은 41%"): a frame split by a parenthesis
        // ("인력 현황표(2024년 1~12월)로 보면") began in the clauses before.
        let framed_from: BTreeSet<usize> = readings
            .iter()
            .filter(|r| {
                let c = clause_of[r.at];
                (0..r.start).any(|j| clause_of[j] == c && tokens.get(j).is_some_and(ends_frame))
            })
            .map(|r| clause_of[r.at])
            .collect();
        let last_clause = clause_of.last().copied().unwrap_or(0);
        let valued: BTreeSet<usize> = readings
            .iter()
            .filter(|r| !r.bound)
            .map(|r| clause_of[r.at])
            .collect();
        let source = |c: usize| {
            let words: Vec<&Token> = (0..tokens.len())
                .filter(|j| clause_of[*j] == c)
                .filter_map(|j| tokens.get(j).filter(|t| t.kind == Kind::Word))
                .collect();
            let opens = words
                .first()
                .is_some_and(|t| listed(SOURCE_OPENERS, &t.lower));
            // The next clause with a figure opens with the rest of a frame.
            // (A bound or a range, "1~12월", is no figure to stop at.)
            let frame_goes_on = (c + 1..=last_clause)
                .find(|n| valued.contains(n))
                .is_some_and(|n| framed_from.contains(&n));
            opens || words.last().is_some_and(|t| ends_frame(t)) || frame_goes_on
        };
        let own_context = context
            .iter()
            .copied()
            .filter(|j| !source(clause_of[*j]))
            .collect();
        Self {
            tokens,
            marks,
            clause_of,
            used,
            lowercase,
            context,
            own_context,
        }
    }

    fn entity(&self, j: usize) -> Option<(String, String)> {
        if self.used.contains(&j) {
            return None;
        }
        entity_of(self.tokens, j, &self.marks, self.lowercase)
    }

    fn entities(&self, positions: &[usize]) -> BTreeMap<String, String> {
        positions.iter().filter_map(|j| self.entity(*j)).collect()
    }

    /// The markers at `positions` that `pick` keeps.
    fn marked<T: Ord>(
        &self,
        positions: &[usize],
        pick: impl Fn(&Marker) -> Option<T>,
    ) -> BTreeSet<T> {
        positions
            .iter()
            .filter_map(|j| self.marks.get(j))
            .filter_map(pick)
            .collect()
    }

    /// Tokens of the figure's clause that belong to it (they are nearer it
    /// than any other figure of the clause), and of those, the ones after a
    /// frame closed before it.
    fn segment(&self, r: &Reading, anchors: &[(usize, usize)]) -> (Vec<usize>, Vec<usize>) {
        let clause = self.clause_of[r.at];
        let segment: Vec<usize> = (0..self.tokens.len())
            .filter(|j| {
                self.clause_of[*j] == clause && nearest_anchor(anchors, *j, clause) == Some(r.at)
            })
            .collect();
        let frame_end = segment
            .iter()
            .copied()
            .filter(|j| *j < r.start && self.tokens.get(*j).is_some_and(ends_frame))
            .max();
        let own = segment
            .iter()
            .copied()
            .filter(|j| frame_end.is_none_or(|f| *j > f))
            .collect();
        (segment, own)
    }

    /// Whether `clause` follows a Korean clause ending in a connective
    /// (-며, -고) and a comma: the same subject goes on.
    fn joined_to_previous(&self, clause: usize) -> bool {
        let Some(first) = (0..self.tokens.len()).find(|j| self.clause_of[*j] == clause) else {
            return false;
        };
        // The break that opened this clause, and the word before it.
        let before = first
            .checked_sub(1)
            .and_then(|j| self.tokens.get(j))
            .filter(|t| t.kind == Kind::Word);
        let at_break = self
            .tokens
            .get(first)
            .is_some_and(|t| matches!(t.kind, Kind::Break(',')));
        at_break
            && before.is_some_and(|t| {
                t.text.chars().any(is_hangul) && (t.text.ends_with('며') || t.text.ends_with('고'))
            })
    }

    fn figure(&self, r: &Reading, anchors: &[(usize, usize)]) -> Figure {
        let clause = self.clause_of[r.at];
        let in_clause: Vec<usize> = (0..self.tokens.len())
            .filter(|j| self.clause_of[*j] == clause)
            .collect();
        let (segment, own) = self.segment(r, anchors);
        let clause_rest: Vec<usize> = in_clause
            .iter()
            .copied()
            .filter(|j| own.first().is_none_or(|f| j >= f))
            .collect();
        let mut entities = self.entities(&own);
        if entities.is_empty() {
            entities = self.entities(&clause_rest);
        }
        if entities.is_empty() {
            entities = self.entities(&self.own_context);
        }
        // "둔산 센터의 평균 근속은 27개월이며, 이직률은 32%였다": a Korean
        // clause joined to the one before by a connective ending (-며, -고)
        // and naming no subject goes on with that clause's.
        if entities.is_empty() && self.joined_to_previous(clause) {
            let earlier: Vec<usize> = (0..self.tokens.len())
                .filter(|j| self.clause_of[*j] + 1 == clause)
                .collect();
            entities = self.entities(&earlier);
        }
        // A Korean source frame before the figure may name its subject ("둔산
        // 센터 인력 현황표로 보면 …"); an English one opens with a capital
        // that names nothing ("According to …").
        if entities.is_empty() {
            let sources: Vec<usize> = self
                .context
                .iter()
                .copied()
                .filter(|j| !self.own_context.contains(j))
                .collect();
            entities = self.entities(&sources);
            entities.retain(|key, _| key.chars().any(is_hangul));
        }
        let skip = |j: &usize| {
            self.used.contains(j) || self.marks.contains_key(j) || self.entity(*j).is_some()
        };
        let mut phrase = phrase_words(self.tokens, &own, r, &skip);
        if phrase.len() < 2 {
            phrase.extend(phrase_words(self.tokens, &self.own_context, r, &skip));
            phrase.truncate(PHRASE_WORDS);
        }
        let scope: Vec<PhraseWord> = own
            .iter()
            .chain(&self.own_context)
            .filter(|j| !skip(j))
            .filter_map(|&at| {
                let stem = content_stem(self.tokens.get(at)?)?;
                Some(PhraseWord { stem, at })
            })
            .collect();
        let framing: Vec<usize> = segment.iter().chain(&self.context).copied().collect();
        let around: Vec<usize> = in_clause.iter().chain(&self.context).copied().collect();
        let rate = self.marked(&framing, |m| match m {
            Marker::Rate(rate) => Some(*rate),
            _ => None,
        });
        let unit = match rate.first() {
            Some(rate) if !r.unit.key.contains('/') => r
                .unit
                .clone()
                .per(Some(((*rate).to_owned(), (*rate).to_owned()))),
            _ => r.unit.clone(),
        };
        Figure {
            span: (r.start, r.end),
            value: r.value,
            approx: r.approx,
            bound: r.bound,
            unit,
            qualifiers: self.marked(&framing, |m| match m {
                Marker::Qualifier(q) => Some(*q),
                _ => None,
            }),
            periods: self.marked(&around, |m| match m {
                Marker::Period(p) => Some(p.clone()),
                _ => None,
            }),
            settings: self.marked(&around, |m| match m {
                Marker::Setting(s) => Some(*s),
                _ => None,
            }),
            entities,
            subject: korean_subject(self.tokens, &own, r.start),
            phrase,
            scope,
        }
    }
}

/// The figures of a lexed sentence, each with its measured phrase,
/// qualifiers, periods, settings, entities and Korean subject.
pub(super) fn figures(tokens: &[Token], lowercase: &BTreeSet<String>) -> Vec<Figure> {
    let marks = markers(tokens);
    let readings = readings(tokens, &marks);
    let reader = Reader::new(tokens, &readings, marks, lowercase);
    let anchors: Vec<(usize, usize)> = readings
        .iter()
        .map(|r| (r.at, reader.clause_of[r.at]))
        .collect();
    readings
        .iter()
        .map(|r| reader.figure(r, &anchors))
        .collect()
}

/// The figure a token belongs to: the nearest one in its clause (a tie goes
/// to the later one — a Korean subject comes before its figure).
fn nearest_anchor(anchors: &[(usize, usize)], j: usize, clause: usize) -> Option<usize> {
    anchors
        .iter()
        .filter(|(_, c)| *c == clause)
        .min_by_key(|(at, _)| (at.abs_diff(j), usize::MAX - at))
        .map(|(at, _)| *at)
}

/// A word's stem, unless it is a stop word, filler or a lone particle.
fn content_stem(t: &Token) -> Option<String> {
    if t.kind != Kind::Word {
        return None;
    }
    words(&t.text).into_iter().find(|s| !listed(fw().filler, s))
}

/// The content words of `positions` nearest the figure, at most
/// [`PHRASE_WORDS`] distinct stems.
fn phrase_words(
    tokens: &[Token],
    positions: &[usize],
    figure: &Reading,
    skip: &dyn Fn(&usize) -> bool,
) -> Vec<PhraseWord> {
    let mut candidates: Vec<(usize, PhraseWord)> = positions
        .iter()
        .filter(|j| !skip(j))
        .filter_map(|&j| {
            let s = content_stem(tokens.get(j)?)?;
            let distance = if j < figure.start {
                figure.start - j
            } else {
                j.saturating_sub(figure.end)
            };
            Some((distance, PhraseWord { stem: s, at: j }))
        })
        .collect();
    candidates.sort_by_key(|(d, w)| (*d, w.at));
    let mut out: Vec<PhraseWord> = Vec::new();
    for (_, w) in candidates {
        if out.len() < PHRASE_WORDS && !out.iter().any(|o| o.stem == w.stem) {
            out.push(w);
        }
    }
    out
}
