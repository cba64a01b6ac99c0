//! The standard-terms dictionary and the four look-ups over it: search by
//! term, classify into a domain group, index candidates, and resolving a
//! non-standard abbreviation word by word.
//!
//! A term is made of standard words (환자 + 식별 + 번호); its abbreviation is
//! theirs joined by `_` (PTNT_IDNT_NO) and its domain group follows its class
//! word, the last one (번호). `dictionary.json` beside this crate is built in;
//! `--dictionary FILE` reads another of the same shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The dictionary shipped with the example.
pub(crate) const BUILT_IN: &str = include_str!("../dictionary.json");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Dictionary {
    #[serde(default)]
    #[allow(dead_code)]
    about: String,
    domain_groups: Vec<DomainGroup>,
    words: Vec<Word>,
    terms: Vec<Term>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DomainGroup {
    name: String,
    name_en: String,
    data_type: String,
    index_candidate: bool,
    index_rule: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Word {
    name: String,
    name_en: String,
    abbreviation: String,
    #[serde(default)]
    variants: Vec<String>,
    /// The domain group of terms that end in this word (a class word).
    #[serde(default)]
    class_of: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Term {
    name: String,
    name_en: String,
    abbreviation: String,
    words: Vec<String>,
    domain_group: String,
    index_hint: IndexHint,
    #[serde(default)]
    aliases: Vec<String>,
    definition: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IndexHint {
    /// `primary key`, `foreign key`, `B-tree`, `composite` or `none`.
    index: String,
    note: String,
}

/// Lower case, words split on `_`, `-`, spaces and camelCase humps, joined by `_`.
pub(crate) fn normalise(term: &str) -> String {
    segments(term).join("_")
}

/// The words of a column name: `patIdntNo`, `pat_idnt_no` and `PAT-IDNT NO`
/// all give `pat`, `idnt`, `no`.
pub(crate) fn segments(term: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in term.trim().chars() {
        if c == '_' || c == '-' || c == '.' || c.is_whitespace() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

impl Dictionary {
    /// Reads a dictionary and checks it: every term's words exist, its
    /// abbreviation is theirs joined, its domain group is known.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let dict: Self = serde_json::from_str(text).map_err(|e| e.to_string())?;
        dict.check()?;
        Ok(dict)
    }

    /// The built-in dictionary.
    pub(crate) fn built_in() -> Result<Self, String> {
        Self::parse(BUILT_IN).map_err(|e| format!("the built-in dictionary: {e}"))
    }

    fn check(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for term in &self.terms {
            let mut abbreviations = Vec::new();
            for w in &term.words {
                match self.word(w) {
                    Some(word) => abbreviations.push(word.abbreviation.as_str()),
                    None => problems.push(format!("{}: unknown word {w}", term.name)),
                }
            }
            let joined = abbreviations.join("_");
            if abbreviations.len() == term.words.len() && joined != term.abbreviation {
                problems.push(format!(
                    "{}: abbreviation {} is not its words' {joined}",
                    term.name, term.abbreviation
                ));
            }
            if self.domain(&term.domain_group).is_none() {
                problems.push(format!(
                    "{}: unknown domain group {}",
                    term.name, term.domain_group
                ));
            }
        }
        for word in &self.words {
            if let Some(d) = &word.class_of
                && self.domain(d).is_none()
            {
                problems.push(format!("word {}: unknown domain group {d}", word.name));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        (self.terms.len(), self.words.len(), self.domain_groups.len())
    }

    fn word(&self, name: &str) -> Option<&Word> {
        self.words.iter().find(|w| w.name == name)
    }

    fn domain(&self, name: &str) -> Option<&DomainGroup> {
        self.domain_groups.iter().find(|d| d.name == name)
    }

    /// The term a text names exactly, and how: by its abbreviation, its
    /// Korean or English standard name, or one of its known aliases.
    fn exact(&self, text: &str) -> Option<(&Term, &'static str)> {
        let norm = normalise(text);
        let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if norm.is_empty() {
            return None;
        }
        self.terms.iter().find_map(|t| {
            if normalise(&t.abbreviation) == norm {
                Some((t, "abbreviation"))
            } else if t.name == squeezed {
                Some((t, "standard name"))
            } else if normalise(&t.name_en) == norm {
                Some((t, "English name"))
            } else if t.aliases.iter().any(|a| normalise(a) == norm) {
                Some((t, "alias"))
            } else {
                None
            }
        })
    }

    fn term_json(&self, t: &Term) -> Value {
        json!({
            "standard_name": t.name,
            "standard_name_en": t.name_en,
            "abbreviation": t.abbreviation,
            "domain_group": t.domain_group,
            "definition": t.definition,
        })
    }

    /// `search_standardization_docs`: for each term, the standard terms it
    /// names (exactly: abbreviation, standard name, English name or alias).
    pub(crate) fn search(&self, terms: &[String]) -> Value {
        let mut results = Vec::new();
        let mut matched = Vec::new();
        let mut unmatched = Vec::new();
        for term in terms {
            let matches: Vec<Value> = match self.exact(term) {
                Some((t, how)) => {
                    matched.push(t.abbreviation.clone());
                    let mut m = self.term_json(t);
                    m["matched_on"] = json!(how);
                    vec![m]
                }
                None => {
                    unmatched.push(term.clone());
                    Vec::new()
                }
            };
            results.push(json!({"term": term, "matches": matches}));
        }
        json!({"results": results, "matched": matched, "unmatched": unmatched})
    }

    /// `classify_domain_group`: each term's domain group, from the
    /// dictionary, or else from its class word (its last word).
    pub(crate) fn classify(&self, terms: &[String]) -> Value {
        let mut results = Vec::new();
        let mut unclassified = Vec::new();
        for term in terms {
            let found = match self.exact(term) {
                Some((t, _)) => self.domain(&t.domain_group).map(|d| {
                    (
                        Some(t),
                        d,
                        format!("dictionary: {} is a {} term", t.abbreviation, d.name),
                    )
                }),
                None => self.class_word(term).and_then(|(w, seg)| {
                    let d = self.domain(w.class_of.as_deref()?)?;
                    Some((
                        None,
                        d,
                        format!(
                            "class word: `{seg}` is {} ({}), the class word of {}",
                            w.abbreviation, w.name, d.name
                        ),
                    ))
                }),
            };
            match found {
                Some((t, d, basis)) => results.push(json!({
                    "term": term,
                    "abbreviation": t.map(|t| t.abbreviation.as_str()),
                    "standard_name": t.map(|t| t.name.as_str()),
                    "domain_group": d.name,
                    "domain_group_en": d.name_en,
                    "data_type": d.data_type,
                    "basis": basis,
                })),
                None => unclassified.push(term.clone()),
            }
        }
        json!({"results": results, "unclassified": unclassified})
    }

    /// The class word a non-standard term ends in, if any.
    fn class_word(&self, term: &str) -> Option<(&Word, String)> {
        let last = segments(term).pop()?;
        self.words
            .iter()
            .filter(|w| w.class_of.is_some())
            .find(|w| word_matches(w, &last))
            .map(|w| (w, last))
    }

    /// `lookup_index_candidates`: whether each term's column should be
    /// indexed, and how: the term's own hint, else its domain group's rule.
    pub(crate) fn index_candidates(&self, terms: &[String]) -> Value {
        let mut results = Vec::new();
        let mut candidates = Vec::new();
        let mut unknown = Vec::new();
        for term in terms {
            let Some((t, _)) = self.exact(term) else {
                unknown.push(term.clone());
                continue;
            };
            let Some(d) = self.domain(&t.domain_group) else {
                unknown.push(term.clone());
                continue;
            };
            let candidate = t.index_hint.index != "none";
            if candidate {
                candidates.push(t.abbreviation.clone());
            }
            results.push(json!({
                "term": term,
                "abbreviation": t.abbreviation,
                "standard_name": t.name,
                "domain_group": d.name,
                "candidate": candidate,
                "index": t.index_hint.index,
                "reason": t.index_hint.note,
                "domain_rule": d.index_rule,
            }));
        }
        json!({"results": results, "candidates": candidates, "unknown": unknown})
    }

    /// `lookup_abbreviation`: a non-standard column name read word by word
    /// (`pat` is PTNT, 환자), and the standard terms those words make.
    pub(crate) fn abbreviation(&self, terms: &[String]) -> Value {
        let mut results = Vec::new();
        let mut resolved = Vec::new();
        let mut unresolved = Vec::new();
        for term in terms {
            let segs = segments(term);
            let mut readings: Vec<Value> = Vec::new();
            let mut options: Vec<Vec<&Word>> = Vec::new();
            for seg in &segs {
                let words: Vec<&Word> = self.words_for(seg);
                readings.push(json!({
                    "segment": seg,
                    "words": words.iter().map(|w| json!({
                        "abbreviation": w.abbreviation, "name": w.name, "name_en": w.name_en,
                    })).collect::<Vec<_>>(),
                }));
                options.push(words);
            }
            let mut candidates: Vec<Value> = Vec::new();
            if !options.is_empty() && options.iter().all(|o| !o.is_empty()) {
                for combo in combinations(&options, 64) {
                    let abbr: Vec<&str> = combo.iter().map(|w| w.abbreviation.as_str()).collect();
                    let abbr = abbr.join("_");
                    if let Some(t) = self.terms.iter().find(|t| t.abbreviation == abbr) {
                        let basis: Vec<String> = segs
                            .iter()
                            .zip(&combo)
                            .map(|(s, w)| format!("{s} → {} ({})", w.abbreviation, w.name))
                            .collect();
                        let mut c = self.term_json(t);
                        c["basis"] = json!(basis.join(", "));
                        candidates.push(c);
                    }
                }
            }
            match candidates.as_slice() {
                [only] => {
                    if let Some(a) = only["abbreviation"].as_str() {
                        resolved.push(a.to_owned());
                    }
                }
                _ => unresolved.push(term.clone()),
            }
            results.push(json!({"term": term, "segments": readings, "candidates": candidates}));
        }
        json!({"results": results, "resolved": resolved, "unresolved": unresolved})
    }

    /// The standard words a segment may stand for: its abbreviation, a
    /// known variant or the English word itself; failing those, an
    /// abbreviation written as a subsequence of the English word with its
    /// first letter (`ptnt` in `patient`).
    fn words_for(&self, seg: &str) -> Vec<&Word> {
        let exact: Vec<&Word> = self.words.iter().filter(|w| word_matches(w, seg)).collect();
        if !exact.is_empty() {
            return exact;
        }
        if seg.chars().count() < 3 {
            return Vec::new();
        }
        self.words
            .iter()
            .filter(|w| is_abbreviation_of(seg, &w.name_en))
            .collect()
    }
}

fn word_matches(w: &Word, seg: &str) -> bool {
    w.abbreviation.eq_ignore_ascii_case(seg)
        || w.name_en.eq_ignore_ascii_case(seg)
        || w.name == seg
        || w.variants.iter().any(|v| v.eq_ignore_ascii_case(seg))
}

/// `seg` keeps the first letter of `word` and the rest of its letters in order.
fn is_abbreviation_of(seg: &str, word: &str) -> bool {
    let word: Vec<char> = word
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    let mut seg = seg.chars();
    let Some(first) = seg.next() else {
        return false;
    };
    if word.first() != Some(&first) {
        return false;
    }
    let mut rest = word[1..].iter();
    seg.all(|c| rest.any(|w| *w == c))
}

/// Every choice of one item per slot, at most `cap` of them.
fn combinations<'a>(options: &[Vec<&'a Word>], cap: usize) -> Vec<Vec<&'a Word>> {
    let mut out: Vec<Vec<&Word>> = vec![Vec::new()];
    for slot in options {
        let mut next = Vec::new();
        for prefix in &out {
            for w in slot {
                if next.len() >= cap {
                    break;
                }
                let mut p = prefix.clone();
                p.push(*w);
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// A list of terms, lists flattened: `["a", ["b", "c"]]` is `a, b, c`.
/// Blank terms are dropped; the first occurrence of each is kept.
pub(crate) fn flatten_terms(value: &Value) -> Result<Vec<String>, String> {
    fn walk(v: &Value, out: &mut Vec<String>) -> Result<(), String> {
        match v {
            Value::String(s) => {
                let s = s.trim();
                if !s.is_empty() && !out.iter().any(|o| o == s) {
                    out.push(s.to_owned());
                }
                Ok(())
            }
            Value::Array(items) => items.iter().try_for_each(|i| walk(i, out)),
            other => Err(format!("a term must be text, not {other}")),
        }
    }
    let mut out = Vec::new();
    match value {
        Value::Array(_) => walk(value, &mut out)?,
        _ => return Err("`terms` must be a list".to_owned()),
    }
    Ok(out)
}

/// The domain groups, for the server's instructions.
pub(crate) fn domain_summary(dict: &Dictionary) -> String {
    let by: BTreeMap<&str, &str> = dict
        .domain_groups
        .iter()
        .map(|d| (d.name.as_str(), d.name_en.as_str()))
        .collect();
    by.iter()
        .map(|(k, v)| format!("{k} ({v})"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn dict() -> Dictionary {
        Dictionary::built_in().unwrap()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_built_in_dictionary_is_consistent_and_a_few_dozen_terms() {
        let d = dict();
        let (terms, words, groups) = d.counts();
        assert!((30..=60).contains(&terms), "{terms}");
        assert!(words >= terms / 2 && groups >= 8);
        let mut abbreviations: Vec<&str> =
            d.terms.iter().map(|t| t.abbreviation.as_str()).collect();
        abbreviations.sort_unstable();
        abbreviations.dedup();
        assert_eq!(abbreviations.len(), terms, "abbreviations are unique");
        // Aliases never name two terms.
        for t in &d.terms {
            for a in &t.aliases {
                let (found, _) = d.exact(a).unwrap();
                assert_eq!(found.abbreviation, t.abbreviation, "alias {a}");
            }
        }
    }

    #[test]
    fn segments_split_snake_kebab_and_camel_case() {
        assert_eq!(segments("patIdntNo"), ["pat", "idnt", "no"]);
        assert_eq!(segments("PAT-IDNT no"), ["pat", "idnt", "no"]);
        assert_eq!(segments(" admission_date "), ["admission", "date"]);
        assert_eq!(normalise("AdmissionDate"), "admission_date");
    }

    #[test]
    fn search_finds_by_alias_abbreviation_and_either_name_and_lists_the_rest() {
        let out = dict().search(&strings(&[
            "patient_id",
            "ADMS_DT",
            "입원 번호",
            "discharge date",
            "pat_idnt_no",
        ]));
        assert_eq!(
            out["matched"],
            json!(["PTNT_IDNT_NO", "ADMS_DT", "ADMS_NO", "DSCH_DT"])
        );
        assert_eq!(out["unmatched"], json!(["pat_idnt_no"]));
        assert_eq!(out["results"][4]["matches"], json!([]));
        assert_eq!(out["results"][0]["matches"][0]["matched_on"], "alias");
    }

    #[test]
    fn abbreviation_reads_a_non_standard_name_word_by_word() {
        let out = dict().abbreviation(&strings(&["pat_idnt_no", "ptnt_nm", "xyz_qq"]));
        assert_eq!(out["resolved"], json!(["PTNT_IDNT_NO", "PTNT_NM"]));
        assert_eq!(out["unresolved"], json!(["xyz_qq"]));
        assert_eq!(
            out["results"][0]["candidates"][0]["basis"],
            "pat → PTNT (환자), idnt → IDNT (식별), no → NO (번호)"
        );
        // A subsequence of the English word, with its first letter.
        assert!(is_abbreviation_of("dschrg", "discharge"));
        assert!(!is_abbreviation_of("schrg", "discharge"));
    }

    #[test]
    fn classify_uses_the_dictionary_then_the_class_word() {
        let out = dict().classify(&strings(&["ADMS_DT", "surgery_end_dt", "foo"]));
        assert_eq!(out["results"][0]["domain_group"], "일자");
        assert_eq!(out["results"][1]["domain_group"], "일자");
        assert!(out["results"][1]["abbreviation"].is_null());
        assert_eq!(out["unclassified"], json!(["foo"]));
    }

    #[test]
    fn index_candidates_follow_each_terms_hint() {
        let out = dict().index_candidates(&strings(&["ADMS_NO", "PTNT_NM", "nope"]));
        assert_eq!(out["candidates"], json!(["ADMS_NO"]));
        assert_eq!(out["results"][0]["index"], "primary key");
        assert_eq!(out["results"][1]["candidate"], false);
        assert_eq!(out["unknown"], json!(["nope"]));
    }

    #[test]
    fn terms_lists_are_flattened_and_deduplicated() {
        let v = json!([["A", "B"], "C", ["A"], " "]);
        assert_eq!(flatten_terms(&v).unwrap(), ["A", "B", "C"]);
        assert!(flatten_terms(&json!("A")).is_err());
        assert!(flatten_terms(&json!([1])).is_err());
    }
}
