//! Splitting a note into passages: the units that are scored and quoted.
//!
//! A passage is a paragraph (text between blank lines). Search results quote
//! passages, so they should be short enough to read in a report but long
//! enough to carry a claim with its context: a paragraph longer than
//! [`MAX_PASSAGE_CHARS`] is cut at sentence ends into chunks of at most that
//! size (a single longer sentence stays whole rather than being cut mid-claim).
//! Markdown headings are not passages of their own — a heading alone says
//! little, and the note's title is scored separately (see
//! [`search`](super::search)).

/// Paragraphs longer than this many characters are split into sentences.
pub const MAX_PASSAGE_CHARS: usize = 600;

/// The passages of `text`, in order, trimmed. Never empty for a text with any
/// non-blank content: a note that is only headings yields those headings.
pub fn split_passages(text: &str) -> Vec<String> {
    split_sections(text).into_iter().map(|(p, _)| p).collect()
}

/// The passages of `text` with the heading each falls under (the nearest
/// Markdown heading above it, if any), so a passage can be judged by the
/// section it is in ("## Durability" over a paragraph that never says it).
pub fn split_sections(text: &str) -> Vec<(String, Option<String>)> {
    let paragraphs = paragraphs(text);
    let mut passages = Vec::new();
    let mut heading: Option<String> = None;
    for paragraph in &paragraphs {
        if let Some(h) = heading_text(paragraph) {
            heading = Some(h.to_owned());
            continue;
        }
        if paragraph.chars().count() <= MAX_PASSAGE_CHARS {
            passages.push((paragraph.clone(), heading.clone()));
        } else {
            passages.extend(
                pack_sentences(&sentences(paragraph))
                    .into_iter()
                    .map(|p| (p, heading.clone())),
            );
        }
    }
    if passages.is_empty() {
        // Only headings: better to search them than to make the note unfindable.
        passages = paragraphs.into_iter().map(|p| (p, None)).collect();
    }
    passages
}

/// Whether `line` is a Markdown ATX heading (`# Title` … `###### Title`).
pub fn is_heading(line: &str) -> bool {
    heading_text(line).is_some()
}

/// The text of an ATX heading line, without the `#` markers.
pub fn heading_text(line: &str) -> Option<&str> {
    let line = line.trim();
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None; // `#hashtag`, not a heading
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// Blocks of text separated by blank lines, each with its lines joined by a
/// single space (line breaks inside a paragraph are layout, not content).
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            flush(&mut current, &mut out);
        } else if is_heading(line) {
            // A heading ends the paragraph before it even without a blank line.
            flush(&mut current, &mut out);
            out.push(line.to_owned());
        } else {
            current.push(line);
        }
    }
    flush(&mut current, &mut out);
    out
}

fn flush(current: &mut Vec<&str>, out: &mut Vec<String>) {
    if !current.is_empty() {
        out.push(current.join(" "));
        current.clear();
    }
}

/// Sentences of a paragraph: cut after `.`, `!`, `?` (or their full-width
/// forms) followed by whitespace, and after `。`. Each is a verbatim
/// substring, so a quote of it can be checked against the source. A period
/// that ends a number in a dotted date (`2025. 3. 30.`), a list number at a
/// sentence's start (`1. …`), an initial (`J. Kim`) or an abbreviation
/// ([`ABBREVIATIONS`]) ends no sentence.
pub fn sentences(paragraph: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = paragraph.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = i + c.len_utf8();
        let boundary = match c {
            '。' => true,
            '!' | '?' | '！' | '？' => chars.peek().is_none_or(|&(_, n)| n.is_whitespace()),
            '.' => {
                chars.peek().is_none_or(|&(_, n)| n.is_whitespace())
                    && !period_inside(&paragraph[start..i], &paragraph[end..])
            }
            _ => false,
        };
        if boundary {
            let sentence = paragraph[start..end].trim();
            if !sentence.is_empty() {
                out.push(sentence);
            }
            start = end;
        }
    }
    let tail = paragraph[start..].trim();
    if !tail.is_empty() {
        out.push(tail);
    }
    out
}

/// Words whose period abbreviates (lowercase, without the period).
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "no", "approx", "mr", "ms", "dr", "st",
];

/// Whether a period followed by whitespace stays inside its sentence:
/// `before` is the sentence so far, `after` the text after the period.
fn period_inside(before: &str, after: &str) -> bool {
    let word = before
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or_default();
    let word = word.trim_start_matches(['(', '[']);
    let next = after.trim_start().chars().next();
    let digits = !word.is_empty() && word.chars().all(|c| c.is_ascii_digit());
    let lower = word.to_lowercase();
    let lower = lower.as_str();
    // 2025. 3. 30. — a number followed by another number, or a number
    // closing a dotted run of numbers; a list number opening the sentence.
    let dotted_run = || {
        let mut parts = before.trim_end().rsplit(char::is_whitespace);
        parts.next();
        parts.next().is_some_and(|p| {
            let n = p.trim_start_matches('(');
            n.strip_suffix('.')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
    };
    (digits && (next.is_some_and(|c| c.is_ascii_digit()) || dotted_run()))
        || (digits && word.len() <= 2 && before.trim() == word)
        || (word.chars().count() == 1 && word.chars().all(char::is_uppercase))
        || ABBREVIATIONS.contains(&lower)
}

/// Greedily joins consecutive sentences into chunks of at most
/// [`MAX_PASSAGE_CHARS`] characters.
fn pack_sentences(sentences: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut chunk = String::new();
    let mut chunk_chars = 0;
    for sentence in sentences {
        let len = sentence.chars().count();
        if !chunk.is_empty() && chunk_chars + 1 + len > MAX_PASSAGE_CHARS {
            out.push(std::mem::take(&mut chunk));
            chunk_chars = 0;
        }
        if !chunk.is_empty() {
            chunk.push(' ');
            chunk_chars += 1;
        }
        chunk.push_str(sentence);
        chunk_chars += len;
    }
    if !chunk.is_empty() {
        out.push(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_are_passages_and_headings_are_not() {
        let text = "# Title\n\nFirst line\ncontinues here.\n\n## Section\nSecond paragraph.\n";
        assert_eq!(
            split_passages(text),
            ["First line continues here.", "Second paragraph."]
        );
    }

    #[test]
    fn passages_know_their_heading() {
        let text = "# Title\n\nIntro.\n\n## Durability\n\nDrops from 1 m.\n";
        assert_eq!(
            split_sections(text),
            [
                ("Intro.".to_owned(), Some("Title".to_owned())),
                ("Drops from 1 m.".to_owned(), Some("Durability".to_owned())),
            ]
        );
    }

    #[test]
    fn a_note_of_only_headings_is_still_searchable() {
        assert_eq!(split_passages("# Only a title\n"), ["# Only a title"]);
        assert!(split_passages(" \n\n").is_empty());
    }

    #[test]
    fn heading_detection() {
        assert_eq!(heading_text("## Costs ##"), Some("Costs"));
        assert_eq!(heading_text("#"), Some(""));
        assert_eq!(heading_text("#hashtag"), None);
        assert_eq!(heading_text("####### seven"), None);
        assert_eq!(heading_text("plain"), None);
    }

    #[test]
    fn long_paragraphs_are_cut_at_sentence_ends() {
        let sentence = "This sentence is about retrieval latency and cost. ";
        let paragraph = sentence.repeat(30);
        let passages = split_passages(&paragraph);
        assert!(passages.len() > 1);
        for p in &passages {
            assert!(p.chars().count() <= MAX_PASSAGE_CHARS, "{p}");
            assert!(p.ends_with('.'));
        }
        assert_eq!(passages.join(" "), paragraph.trim());
    }

    #[test]
    fn korean_sentences_split_on_periods() {
        assert_eq!(
            sentences("비용이 든다. 지연이 짧다! 3.5초? 끝"),
            ["비용이 든다.", "지연이 짧다!", "3.5초?", "끝"]
        );
        assert_eq!(sentences("检索。增强。"), ["检索。", "增强。"]);
    }

    #[test]
    fn dates_list_numbers_and_abbreviations_stay_whole() {
        assert_eq!(
            sentences("계약 기간: 2년 (2025. 3. 30.) - 단가 조정: 연 1회. 다음 문장."),
            [
                "계약 기간: 2년 (2025. 3. 30.) - 단가 조정: 연 1회.",
                "다음 문장."
            ]
        );
        assert_eq!(
            sentences("2025. 3. 30. 회의에서 정했다. 끝."),
            ["2025. 3. 30. 회의에서 정했다.", "끝."]
        );
        assert_eq!(
            sentences("1. Price is $4. 2. Support is 24/7."),
            ["1. Price is $4.", "2. Support is 24/7."]
        );
        assert_eq!(
            sentences("See No. 4, e.g. the pump, vs. the valve. J. Kim agreed. Done."),
            [
                "See No. 4, e.g. the pump, vs. the valve.",
                "J. Kim agreed.",
                "Done."
            ]
        );
        assert_eq!(
            sentences("It rose 12. Then fell."),
            ["It rose 12.", "Then fell."]
        );
    }
}
