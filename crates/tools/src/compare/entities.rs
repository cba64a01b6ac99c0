//! Entities: the named subjects of a sentence or a title, told from
//! common words by how the inputs write them.

use std::collections::{BTreeMap, BTreeSet};

use crate::text::stem::stem;
use crate::text::tokenize::{is_cjk, is_stop_word};

use super::markers::{Marker, markers};
use super::tokens::{Kind, Token, lex};
use super::words::{fw, hangul_word, list, listed};

/// How the inputs write their words, for telling names from common words.
#[derive(Debug, Default)]
pub(super) struct Vocabulary {
    /// Words written in lowercase somewhere.
    pub(super) lowercase: BTreeSet<String>,
    /// Words (lowercased) written capitalised inside a sentence somewhere:
    /// names the notes use ("on Kafka", "the Seoul office").
    pub(super) names: BTreeSet<String>,
    /// Korean companies some sentence or title names by their marker
    /// ("(주)한솔유니폼"): a title naming one bare ("평택2공장 통화 메모
    /// (한솔유니폼 사용 경험)") names that subject.
    pub(super) companies: BTreeSet<String>,
}

impl Vocabulary {
    pub(super) fn of<'a>(sentences: impl Iterator<Item = &'a str> + Clone) -> Self {
        let lowercase = sentences
            .clone()
            .flat_map(|s| s.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| w.chars().next().is_some_and(char::is_lowercase) && !w.chars().any(is_cjk))
            .map(str::to_owned)
            .collect();
        let names = sentences
            .flat_map(lex)
            .filter(|t| {
                t.kind == Kind::Word
                    && !t.initial
                    && t.text.chars().next().is_some_and(char::is_uppercase)
            })
            .map(|t| t.lower)
            .collect();
        Self {
            lowercase,
            names,
            companies: BTreeSet::new(),
        }
    }

    /// Also learns the companies `texts` name by their marker.
    pub(super) fn with_companies<'a>(mut self, texts: impl Iterator<Item = &'a str>) -> Self {
        self.companies = texts.flat_map(crate::notes::company_names).collect();
        self
    }
}

/// The subjects a title names, lowercased. Titles capitalise common words
/// ("Pilot Results", "Support metrics review"), and one wrongly taken for a
/// name would keep its note from every comparison, so only strong signs
/// count: an acronym or inner capital ("RAG", "MSK", "RabbitMQ"), a name
/// the notes capitalise inside sentences, or a Korean organisation name.
pub(super) fn named_in(title: &str, vocabulary: &Vocabulary) -> BTreeSet<String> {
    // An email's subject tags ("[위탁 TF] …", "[External] …") file the
    // message; they name no subject of it.
    let mut title = title.trim_start();
    while let Some(rest) = title.strip_prefix('[').and_then(|r| r.split_once(']')) {
        title = rest.1.trim_start();
    }
    let tokens = lex(title);
    let marks = markers(&tokens);
    let strong = |t: &Token| {
        let inner = t.text.chars().skip(1).any(char::is_uppercase);
        let digit = t.text.chars().any(|c| c.is_ascii_digit());
        inner || digit || hangul_word(&t.text) || vocabulary.names.contains(&t.lower)
    };
    let mut named: BTreeSet<String> = (0..tokens.len())
        .filter(|j| tokens.get(*j).is_some_and(strong))
        .filter_map(|j| entity_of(&tokens, j, &marks, &vocabulary.lowercase))
        .map(|(key, _)| key)
        .collect();
    // A company the title names, by its marker ("대성관광(주) 제안서 요약")
    // or bare where some note gives the marker ("평택 통화 메모 (한솔유니폼
    // 사용 경험)"): the vocabulary's companies include the titles' own.
    named.extend(companies_in(title, vocabulary));
    // A title headed by a name before its colon or dash ("Northfield
    // Mechanical: proposal summary"): capitalised words no passage writes
    // in lower case.
    let head = title
        .split([':', '—', '–'])
        .next()
        .filter(|h| h.len() < title.len())
        .unwrap_or("");
    let head_words: Vec<&str> = head.split_whitespace().collect();
    let capitalised = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
    if (1..=3).contains(&head_words.len()) && head_words.iter().all(|w| capitalised(w)) {
        for w in head_words {
            let lower = w.to_lowercase();
            if lower.chars().all(char::is_alphanumeric)
                && !vocabulary.lowercase.contains(&lower)
                && !is_stop_word(&lower)
                && !listed(fw().not_entities, &lower)
                && !listed(fw().months, &lower)
            {
                named.insert(lower);
            }
        }
    }
    named
}

/// The companies a title names, by their marker ("대성관광(주) 제안서 요약")
/// or bare where some note gives the marker ("평택 통화 메모 (한솔유니폼
/// 사용 경험)"): the vocabulary's companies include the titles' own.
pub(super) fn companies_in(title: &str, vocabulary: &Vocabulary) -> BTreeSet<String> {
    vocabulary
        .companies
        .iter()
        .filter(|c| title.contains(c.as_str()))
        .map(|name| stem(&name.to_lowercase()))
        .collect()
}

/// A named subject at `j`: an acronym or a name with inner capitals
/// ("SQS", "RabbitMQ", "A100"), a capitalised word inside a sentence
/// ("Kafka", "English"), or a capitalised first word that the inputs never
/// write in lowercase and that is not a label ("Headline:").
pub(super) fn entity_of(
    tokens: &[Token],
    j: usize,
    marks: &BTreeMap<usize, Marker>,
    lowercase: &BTreeSet<String>,
) -> Option<(String, String)> {
    let t = tokens.get(j).filter(|t| t.kind == Kind::Word)?;
    if matches!(
        marks.get(&j),
        Some(Marker::Period(_) | Marker::Qualifier(_))
    ) {
        return None;
    }
    if hangul_word(&t.text) {
        return korean_entity(tokens, j).map(|e| (e.clone(), e));
    }
    let mut letters = t.text.chars().filter(|c| c.is_alphabetic());
    let first_upper = letters.next().is_some_and(char::is_uppercase);
    let inner_upper = letters.any(char::is_uppercase);
    let digit = t.text.chars().any(|c| c.is_ascii_digit());
    if !first_upper && !inner_upper {
        return None;
    }
    if listed(fw().not_entities, &t.lower) || listed(fw().months, &t.lower) {
        return None;
    }
    let name = inner_upper || (first_upper && digit) || !t.initial || {
        let label = tokens
            .get(j + 1)
            .is_some_and(|n| n.kind == Kind::Break(':'));
        !label
            && !is_stop_word(&t.lower)
            && !lowercase.contains(&t.lower)
            && marks.get(&j).is_none()
    };
    name.then(|| (t.lower.clone(), t.text.clone()))
}

/// A Korean name at `j` (Hangul has no capitals): a compound ending in an
/// organisation noun with at least two syllables before it ("고객지원팀"),
/// or the word right before a separate organisation noun ("서울 지점").
fn korean_entity(tokens: &[Token], j: usize) -> Option<String> {
    let s = stem(&tokens.get(j)?.lower);
    let compound = list(fw().korean_org_nouns).any(|o| {
        s.strip_suffix(o)
            .is_some_and(|rest| rest.chars().count() >= 2)
    });
    let before_org = tokens
        .get(j + 1)
        .filter(|n| !n.glued && n.kind == Kind::Word)
        .is_some_and(|n| listed(fw().korean_org_nouns, &stem(&n.lower)));
    (compound || before_org).then_some(s)
}

/// The Korean topic or subject noun nearest before `start` in the clause:
/// a word ending in 은/는/이/가 whose stem keeps two syllables ("대화는" →
/// "대화", "카프카는" → "카프카"; not "없이", not "파일럿에서는").
pub(super) fn korean_subject(tokens: &[Token], clause: &[usize], start: usize) -> Option<String> {
    const ADVERBIAL: &[&str] = &[
        "에는",
        "에서는",
        "으로는",
        "로는",
        "와는",
        "과는",
        "보다는",
        "까지는",
        "부터는",
        "에게는",
    ];
    clause.iter().rev().filter(|j| **j < start).find_map(|&j| {
        let t = tokens
            .get(j)
            .filter(|t| t.kind == Kind::Word && hangul_word(&t.lower))?;
        let w = t.lower.as_str();
        if ADVERBIAL.iter().any(|a| w.ends_with(a)) {
            return None;
        }
        let noun = ['은', '는', '이', '가']
            .iter()
            .find_map(|m| w.strip_suffix(*m))
            .filter(|n| n.chars().count() >= 2)?;
        Some(stem(noun))
    })
}
