//! What a quotable sentence looks like: a statement, not a byline, a date
//! line, a table row, an agenda item or a sentence cut short at "Mr.";
//! list items that reached us as one run of text split into their items;
//! and whether a sentence names something by name.

/// The items of a bulleted list that reached us as one line ("- 모델: … -
/// 차량 가격: …", a list without full stops): each item is a claim of its
/// own. Anything else is itself.
pub(crate) fn bullet_items(sentence: &str) -> Vec<&str> {
    let Some(marker) = ["- ", "* "].into_iter().find(|m| sentence.starts_with(m)) else {
        return vec![sentence];
    };
    let separator = format!(" {marker}");
    let mut out = Vec::new();
    let mut rest = sentence;
    while let Some(at) = rest
        .get(2..)
        .and_then(|r| r.find(&separator))
        .map(|i| i + 2)
    {
        out.push(rest[..at].trim());
        rest = rest[at + 1..].trim_start();
    }
    out.push(rest.trim());
    out
}

/// A sentence without the list marker it had in the note ("- **Kafka**: …"
/// → "**Kafka**: …"), so the brief's own bullet is the only one. What is
/// left is still verbatim from the note.
pub(crate) fn unbulleted(sentence: &str) -> &str {
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

/// Words that are capitalised without being names.
const NOT_NAMES: &[&str] = &[
    "I",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Q1",
    "Q2",
    "Q3",
    "Q4",
];

/// Whether a word looks like a product or brand name: capitalised Latin
/// with a lowercase rest ("iPad", "Surface", "PubSub"), or an acronym.
pub(crate) fn is_name_word(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    word.chars().count() >= 2
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && (first.is_ascii_uppercase() || word.chars().skip(1).any(|c| c.is_ascii_uppercase()))
        && word.chars().any(|c| c.is_ascii_alphabetic())
        && !NOT_NAMES.contains(&word)
}

/// Month and weekday names, capitalised in any title without being names.
const CALENDAR: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Whether a word is a month or a weekday.
pub(crate) fn is_calendar_word(word: &str) -> bool {
    CALENDAR.contains(&word.to_lowercase().as_str())
}

/// Whether a sentence states something: it ends like a sentence (a full
/// stop, or a Korean ending such as 다/요), not like a byline, a date line
/// or a table row ("정보보안팀, 5월 28일", "From: Aisha Okafor").
pub(crate) fn is_statement(sentence: &str) -> bool {
    let end = sentence
        .trim_end_matches(['"', '\'', '”', '’', ')', '*', '_'])
        .chars()
        .last();
    let last_word = sentence.split_whitespace().last().unwrap_or_default();
    matches!(
        end,
        Some('.' | '!' | '?' | '。' | '다' | '요' | '음' | '함' | '임' | '됨')
    ) && sentence.split_whitespace().count() >= 3
        && !ABBREVIATIONS.contains(&last_word)
        && !defers(sentence)
        && !excludes_itself(sentence)
        && !lists_attendees(sentence)
}

/// Line heads of a meeting's list of who came ("Present: Dana Whitcomb
/// (Director, Grounds Services), Hector Ruiz (fleet and equipment
/// supervisor)"): job titles, not statements about a dimension.
const ATTENDEE_HEADS: &[&str] = &[
    "present:",
    "attendees:",
    "attending:",
    "in attendance:",
    "participants:",
    "apologies:",
    "absent:",
    "참석:",
    "참석자:",
    "참석자 :",
    "불참:",
];

/// Whether a line lists who attended a meeting ("- **Present:** …" too).
fn lists_attendees(sentence: &str) -> bool {
    let lower = sentence
        .trim_start_matches(['-', '*', '•', ' ', '#'])
        .trim_start_matches("**")
        .to_lowercase();
    ATTENDEE_HEADS.iter().any(|h| lower.starts_with(h))
}

/// Words whose full stop does not end a sentence: a "sentence" ending in
/// one was cut short ("… cost per device (Mr.").
const ABBREVIATIONS: &[&str] = &[
    "Mr.", "(Mr.", "Mrs.", "(Mrs.", "Ms.", "(Ms.", "Dr.", "(Dr.", "St.", "vs.", "e.g.", "i.e.",
    "etc.", "approx.", "No.", "p.",
];

/// Phrases that put a topic off rather than say anything about it: "will
/// be discussed at the next meeting", "asked that it be put on the agenda",
/// "다음 회의에서 논의하기로 했다", a promise to send the figures later.
const DEFERRALS: &[&str] = &[
    "on the agenda",
    "will be discussed",
    "to be discussed",
    "at the next meeting",
    "for the next meeting",
    "to be decided",
    "will follow up",
    "action item",
    "be taken up",
    "be discussed",
    "be revisited",
    "will revisit",
    "come back to",
    "will send",
    "will get back",
    "보내기로",
    "보내 주기로",
    "알려 주기로",
    "따로 정하기로",
    "추후 정하기로",
    "다루지 않",
    "논의하기로",
    "다음 회의",
    "추후 논의",
    "논의할 예정",
    "안건으로",
    "next time",
    "we'll discuss",
    "we will discuss",
    "will discuss",
    "'ll go through",
    "will go through",
    "will pull together",
    "decision meeting",
    "will report back",
    "다음에 논의",
    "추후 검토",
    "확인하기로",
    "답하기로",
    "before the committee discusses",
    "wants to wait for",
    "내기로",
    "제출하기로",
    "넣지 않았",
    "포함하지 않았",
    "will bring",
    "will demo",
    "actions:",
    "**actions.**",
    "next steps:",
    "says nothing about",
    "say nothing about",
    "before anyone draws conclusions",
    "before drawing conclusions",
    "다음 주에 정리",
    "달라고 요청",
    "please send",
    "to the next meeting",
    "'ll bring",
    "write-up comes",
    "when the trial ends",
    "once the trial ends",
    "묻기로",
    "물어보기로",
    "판단하기로",
    "보고 정하기로",
    "다시 정하기로",
    "뒤에 정하기로",
    "후에 정하기로",
    "정리하기로",
    "가져오기로",
    "보고드리겠",
    "확인한 뒤",
    "비교하지 않",
    "not compared",
    "is parked",
    "are parked",
    "parked until",
    "no view from me",
    "no view on",
    "can't speak to",
    "couldn't speak to",
    "cannot speak to",
    "didn't get into",
    "did not get into",
    "not dealt with",
    "asked that it wait",
    "will be looked at",
    "be looked at once",
    "적지 않았",
    "밝히지 않았",
    "제시하지 않았",
    "didn't give a",
    "did not give a",
    "받아 오자",
    "물어보자",
    "알아보자",
    "확인하자",
    "따로 물어보",
    "다루기로",
    "before anyone argues",
    "before anyone decides",
    "didn't come up",
    "did not come up",
    "never came up",
    "haven't looked at",
    "have not looked at",
    "is a question for the",
    "are a question for the",
    "still being worked out",
    "write-up will follow",
    "couldn't say",
    "could not say",
    "couldn't talk about",
    "could not talk about",
    "참고하기로",
    "나오면 다시",
    "나오면 같이",
    "다시 논의한다",
    "다시 논의하기",
    "고쳐 오기로",
    "다시 확인하고",
    "잘 모른다",
    "소관이라",
    "뒤에 보기로",
    "will check with",
    "'ll check with",
];

/// Phrases by which a sentence says two figures disagree without giving
/// them ("보고서와 학생회 집계에서 다르다는 지적"): a remark on the evidence,
/// not evidence.
const DISAGREEMENT_REMARKS: &[&str] = &[
    "다르다는",
    "차이가 난다는",
    "맞지 않는다는",
    "do not match",
    "don't match",
    "did not match",
    "numbers differ",
    "figures differ",
    "to be reconciled",
    "do not agree",
    "don't agree",
    "do not say the same thing",
    "don't say the same thing",
    "does not match",
    "doesn't match",
    "don't line up",
    "do not line up",
    "서로 다르",
    "서로 맞지",
];

/// Whether a text holds one of `cues`, case aside.
pub(crate) fn holds_any(text: &str, cues: &[&str]) -> bool {
    let lower = text.to_lowercase();
    cues.iter().any(|c| lower.contains(c))
}

/// Phrases by which a text puts itself outside the decision: "separate
/// from the street light conversion", "이번 EMR 검토 대상이 아니다".
const SELF_EXCLUSIONS: &[&str] = &[
    "separate from the",
    "not part of this",
    "not part of the",
    "out of scope",
    "outside the scope",
    "대상이 아니다",
    "대상이 아니며",
    "대상에서 제외",
    "별도로 진행",
    "별개의 사업",
    "별개 사업",
    "에서 뺐다",
    "에서 빼기로",
    "후보에서 제외",
    "검토에서 제외했",
    "심사에서 제외",
    "과는 다른 사업",
    "와는 다른 사업",
    "a different project",
    "a separate project",
    "not for this project",
    "isn't part of either",
    "is not part of either",
    "does not touch the",
    "doesn't touch the",
    "nothing here involves",
    "does not involve the",
    "doesn't involve the",
];

/// Phrases by which a note's opening sets its subject aside ("was set
/// aside in January"); in the middle of a note, "rules out RabbitMQ" is a
/// claim, so these count only where a note says what it is about.
const SET_ASIDE: &[&str] = &[
    "set aside",
    "ruled out",
    "was excluded",
    "were excluded",
    "제외했다",
    "제외하기로",
    "제외된",
    "별개",
    "not shortlisted",
    "not pursuing",
    "not be pursued",
];

/// Phrases by which a party leaves the running: the outgoing incumbent
/// "is not bidding again", "재입찰에도 나오지 않는다".
const WITHDRAWS: &[&str] = &[
    "not bidding again",
    "not rebidding",
    "not re-bidding",
    "will not bid",
    "won't bid",
    "재입찰에 나오지 않",
    "입찰에도 나오지 않",
    "입찰에 참여하지 않",
];

/// Whether `sentence` (`raw` without its list marker) may be quoted: a
/// statement, or a list item of three words or more, that neither defers
/// its topic nor puts itself outside the decision.
/// Words for a meeting's refreshments: with a meeting named, a sentence
/// about them ("회의 도시락 비용 18만 원은 총무팀 운영비로 처리했다") is
/// about the meeting, not the decision.
const REFRESHMENTS: &[&str] = &[
    "다과",
    "도시락",
    "간식",
    "snacks",
    "refreshments",
    "catering",
    "coffee",
    "pizza",
    "sandwiches",
];

/// Words that name a meeting.
const MEETINGS: &[&str] = &["회의", "meeting", "committee", "session"];

/// Whether a sentence is about the meeting's own refreshments.
fn about_refreshments(sentence: &str) -> bool {
    holds_any(sentence, REFRESHMENTS) && holds_any(sentence, MEETINGS)
}

/// How a sentence books an expense to one of the organisation's own budget
/// lines ("billed to the DPW engineering line", "사무국 운영비에서 낸다"): a
/// remark on who pays for the review, the trip or the plotter, not on what
/// an option costs.
const BOOKED_TO: &[&str] = &[
    "billed to the",
    "charged to the",
    "paid out of the",
    "paid from the",
    "운영비에서 낸다",
    "운영비에서 냈다",
    "운영비로 처리",
    "운영비로 충당",
    "예산에서 낸다",
    "예산에서 냈다",
];

pub(crate) fn is_quotable(raw: &str, sentence: &str) -> bool {
    if about_refreshments(sentence) || holds_any(sentence, BOOKED_TO) {
        return false;
    }
    // A list item states its fact without a full stop.
    let item = sentence.len() < raw.len()
        && sentence.split_whitespace().count() >= 3
        && !defers(sentence)
        && !excludes_itself(sentence);
    is_statement(sentence) || item
}

/// Words by which a sentence speaks of what is in place now ("지금 한빛이
/// 유지보수 계약은 12월에 끝나고", "our current contract"), as Korean stems
/// and English phrases (lower case).
const STATUS_QUO_KO: &[&str] = &["지금", "현재", "기존", "현행"];
const STATUS_QUO_EN: &[&str] = &[
    "currently",
    "the current ",
    "our current ",
    "our existing ",
    "the existing ",
    "the old system",
    "today we ",
];

/// Whether a sentence (its text and its stems) speaks of what is in place
/// now: the status quo, not the options (when it names none of them; see
/// the judge).
pub(crate) fn about_the_status_quo(sentence: &str, stems: &[String]) -> bool {
    holds_any(sentence, STATUS_QUO_EN) || stems.iter().any(|w| STATUS_QUO_KO.contains(&w.as_str()))
}

/// Phrases by which a length of time is someone's effort, not time that
/// passes ("about 5 working days of Sam's time", "ten days of effort").
const EFFORT: &[&str] = &[
    "'s time",
    "’s time",
    "of effort",
    "of staff time",
    "person-days",
    "person days",
    "man-days",
    "공수",
];

/// Whether a sentence gives a length of time as effort spent.
pub(crate) fn speaks_of_effort(sentence: &str) -> bool {
    holds_any(sentence, EFFORT)
}

/// How a sentence says an option was dropped: "Surge valves on the existing
/// furrows were discussed and set aside", "Kiosko was ruled out".
const DROPPED: &[&str] = &[
    " were discussed and set aside",
    " was discussed and set aside",
    " were set aside",
    " was set aside",
    " were ruled out",
    " was ruled out",
    " were dropped",
    " was dropped",
    " are dropped",
    " is dropped",
    " were excluded",
    " was excluded",
    " were not shortlisted",
    " was not shortlisted",
];

/// Words one of which every [`DROPPED`] phrase holds, each a whole search
/// term's worth of ASCII letters: a note none of whose search terms
/// contains one of them has no sentence saying something was dropped.
pub(crate) const DROPPED_WORDS: &[&str] = &["aside", "ruled", "dropped", "excluded", "shortlisted"];

/// Korean endings by which a sentence says an option was dropped from the
/// decision ("이번 검토에서 제외했다"); "전용회선 제외" (excluding) is not one.
const KO_DROPPED: &[&str] = &[
    "회의에서 제외",
    "제외 결정",
    "빼기로 했다",
    "빼기로 함",
    "후보에서 뺀다",
    "후보에서 뺐다",
    "제외했다",
    "제외됐다",
    "제외되었다",
    "제외하기로",
    "제외한다",
    "제외합니다",
];

/// The search terms one of which every [`KO_DROPPED`] ending holds (search
/// splits Korean into character bigrams).
pub(crate) const KO_DROPPED_WORDS: &[&str] = &["제외", "빼기", "뺀다", "뺐다"];

/// Quote marks a Korean note puts around a name.
const QUOTES: &[(char, char)] = &[
    ('\'', '\''),
    ('‘', '’'),
    ('"', '"'),
    ('“', '”'),
    ('「', '」'),
];

/// The name a Korean sentence saying an option was dropped puts in quotes
/// ("민간 공유자전거 업체 '휙'이 낸 협약 방식은 … 제외했다" → 휙); none when
/// it quotes nothing, since a name cannot be told from the words around it.
pub(crate) fn dropped_korean_name(sentence: &str) -> Option<String> {
    if !KO_DROPPED.iter().any(|e| sentence.contains(e)) {
        return None;
    }
    QUOTES
        .iter()
        .find_map(|&(open, close)| {
            let (_, rest) = sentence.split_once(open)?;
            let (name, _) = rest.split_once(close)?;
            let name = name.trim();
            (!name.is_empty() && name.chars().count() <= 20).then(|| name.to_owned())
        })
        // Or the company it names ("(주)온담푸드는 … 이번 검토에서 제외했다").
        .or_else(|| {
            stepwise_tools::notes::company_names(sentence)
                .into_iter()
                .next()
        })
        // Or the one word it opens with as its topic ("스캔밀은 제외한다."),
        // not a phrase ending in a common noun ("스마트도서관 안은").
        .or_else(|| {
            let first = unbulleted(sentence).split_whitespace().next()?;
            let name = first
                .strip_suffix('은')
                .or_else(|| first.strip_suffix('는'))?;
            (name.chars().count() >= 3 && name.chars().all(stepwise_tools::notes::stem::is_hangul))
                .then(|| name.to_owned())
        })
}

/// Words that end the name of a dropped option ("Surge valves *on* the
/// existing furrows").
const NAME_ENDS: &[&str] = &[
    "on", "for", "from", "in", "at", "with", "to", "by", "of", "as", "and", "or",
];

/// The option a sentence says was dropped, as its first words up to a
/// preposition (at most three): "Surge valves", "Self-service kiosks".
pub(crate) fn dropped_option(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    if lower.len() != sentence.len() {
        return None; // lowercasing moved byte offsets: no safe cut
    }
    let at = DROPPED.iter().filter_map(|c| lower.find(c)).min()?;
    let name: Vec<&str> = unbulleted(&sentence[..at])
        .split_whitespace()
        .take_while(|w| !NAME_ENDS.contains(&w.to_lowercase().as_str()))
        .take(3)
        .collect();
    (!name.is_empty()).then(|| name.join(" "))
}

/// Whether a sentence says it is outside the decision.
pub(crate) fn excludes_itself(sentence: &str) -> bool {
    holds_any(sentence, SELF_EXCLUSIONS)
}

/// Whether a note's title or opening puts the note outside the decision.
/// A sentence that sets aside an option it names ("한누리관광은 … 제외하기로
/// 했다", "Kiosko was ruled out") reports a decision about that option, not
/// about the note: minutes that open with it go on about the others.
/// A Korean option may be named by the sentence before ("한누리관광은 …
/// 없다. 견적은 … 제외하기로 했다").
pub(crate) fn out_of_scope(opening: &str) -> bool {
    let sentences = stepwise_tools::notes::sentences(opening);
    sentences.iter().enumerate().any(|(i, s)| {
        let names_option = || {
            dropped_option(s).is_some()
                || dropped_korean_name(s).is_some()
                || i.checked_sub(1).is_some_and(|p| {
                    dropped_korean_name(&format!("{} {s}", sentences[p])).is_some()
                })
        };
        holds_any(s, SELF_EXCLUSIONS) || holds_any(s, SET_ASIDE) && !names_option()
    })
}

/// Headings of a note's to-do list or open questions (lower case).
const AGENDA_HEADINGS: &[&str] = &[
    "actions",
    "action items",
    "next steps",
    "to do",
    "to-do",
    "open questions",
    "follow-up",
    "follow-ups",
    "할 일",
    "후속 조치",
    "향후 과제",
    "남은 질문",
    "다음 회의",
];

/// Whether a heading heads a to-do list or open questions, whose lines
/// assign or defer work rather than report it.
pub(crate) fn is_agenda_heading(heading: &str) -> bool {
    let h = heading
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    AGENDA_HEADINGS.iter().any(|a| h == *a)
}

/// Whether a text says its subject was set aside ("We are not pursuing
/// it", "이번 검토에서 제외했다").
pub(crate) fn sets_aside(text: &str) -> bool {
    holds_any(text, SET_ASIDE)
}

/// Whether a text says its subject is out of the running: set aside, or
/// withdrawn by itself ([`WITHDRAWS`]). Not for a note's own opening, which
/// may say so of an incumbent it is not about (see [`sets_aside`]).
pub(crate) fn out_of_the_running(text: &str) -> bool {
    sets_aside(text) || holds_any(text, WITHDRAWS)
}

/// Whether a sentence only defers its topic, or only remarks that figures
/// it does not give disagree.
pub(crate) fn defers(sentence: &str) -> bool {
    holds_any(sentence, DEFERRALS)
        || (holds_any(sentence, DISAGREEMENT_REMARKS)
            && !sentence.chars().any(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dropped_phrase_holds_a_word_its_search_terms_keep() {
        for phrase in DROPPED {
            assert!(DROPPED_WORDS.iter().any(|w| phrase.contains(w)), "{phrase}");
        }
        // A word inside a longer piece, or one a plural ending follows,
        // is still inside the search term that piece becomes.
        for w in DROPPED_WORDS {
            assert!(w.bytes().all(|b| b.is_ascii_lowercase()), "{w}");
            for text in [
                (*w).to_owned(),
                format!("X{w}s"),
                format!("{w}ies"),
                format!("{w}es"),
            ] {
                let terms = stepwise_tools::notes::tokenize(&text);
                assert!(terms.iter().any(|t| t.contains(w)), "{text}: {terms:?}");
            }
        }
    }

    #[test]
    fn list_items_split_and_lose_their_markers() {
        assert_eq!(
            bullet_items("- 모델: DS-11 - 가격: 2억 원 - 주행거리: 약 700km"),
            ["- 모델: DS-11", "- 가격: 2억 원", "- 주행거리: 약 700km"]
        );
        assert_eq!(bullet_items("Cost - about $5."), ["Cost - about $5."]);
        assert_eq!(unbulleted("- **Kafka**: 42,000/s."), "**Kafka**: 42,000/s.");
        assert_eq!(unbulleted("2. Second step."), "Second step.");
    }

    #[test]
    fn only_statements_are_quoted() {
        for (sentence, quotable) in [
            ("The pilot cut energy use by 48 percent.", true),
            ("시범 기간에 보안 사고는 없었다.", true),
            ("정보보안팀, 5월 28일", false),
            (
                "Finance memo with the four-year cost per device (Mr.",
                false,
            ),
            (
                "Teacher training will be discussed at the next meeting.",
                false,
            ),
            ("운전기사 교육 계획은 다음 회의에서 논의하기로 했다.", false),
            (
                "- Present: Dana Whitcomb (Director), Hector Ruiz (fleet and equipment supervisor).",
                false,
            ),
            (
                "**Attendees:** Ana Ruiz (cost analyst), Ben Ode (support lead).",
                false,
            ),
            ("참석자: 한지원 대리(수질 담당), 배수진 주임.", false),
            (
                "Maribel's booking trial runs this week; she'll bring the results to the next meeting.",
                false,
            ),
            (
                "강사 운영 방안은 설명회에서 업체에 직접 묻기로 했다.",
                false,
            ),
            (
                "Ruth asked that labor be taken up at the March meeting.",
                false,
            ),
            (
                "가용성 목표치는 따로 정하기로 하고, 이번 회의에서는 다루지 않았다.",
                false,
            ),
            ("Costs.", false),
            (
                "별도로 진행 중인 PACS 사업의 비용은 9억 원이며, 이번 검토 대상이 아니다.",
                false,
            ),
            (
                "The throughput target rules out RabbitMQ on that hardware.",
                true,
            ),
            (
                "Members asked about battery life; Halvard will send its discharge curves.",
                false,
            ),
            (
                "배식 속도에 대한 근거 자료는 다온이 다음 주에 보내기로 했다.",
                false,
            ),
            (
                "We'll discuss customer support next time, once the reference calls are done.",
                false,
            ),
            (
                "시범 운영 점심 대기 시간이 보고서와 학생회 집계에서 다르다는 지적이 있었다.",
                false,
            ),
            (
                "**Actions.** Gemma: written roadside terms from Northway; build slot from ColdRoute.",
                false,
            ),
            ("설치 일정은 시설팀 소관이라 제가 잘 모른다.", false),
            ("기구 품질은 시연회 뒤에 보기로 했다.", false),
            (
                "On refund handling, Omar will check with the finance office.",
                false,
            ),
            (
                "Nothing here involves the harbour booking system; it is the café's till.",
                false,
            ),
        ] {
            assert_eq!(is_statement(sentence), quotable, "{sentence}");
        }
    }

    #[test]
    fn an_opening_that_sets_a_named_option_aside_keeps_its_note_in() {
        // Minutes that open by dropping one bidder go on about the others.
        assert!(!out_of_scope(
            "한누리관광은 25인승 이상만 운영해서 노선에 들어갈 수 없다. \
             견적은 가장 낮았지만 제외하기로 했다."
        ));
        assert!(!out_of_scope(
            "Kiosko was ruled out in March. The rest is on the two finalists."
        ));
        // A note that sets itself, or an unnamed option, aside is out.
        assert!(out_of_scope("이 공사는 이번 검토 대상이 아니다."));
        assert!(out_of_scope("Separate from the street light conversion."));
        assert!(out_of_scope("견적은 가장 낮았지만 제외하기로 했다."));
        // A party that withdraws is out of the running, but that alone does
        // not put a note (a kickoff that says so of the incumbent) out of scope.
        let withdrew = "Bellweather's contract ends 30 April and they are not bidding again.";
        assert!(out_of_the_running(withdrew));
        assert!(!out_of_scope(withdrew));
        assert!(out_of_the_running("한길은 재입찰에도 나오지 않는다."));
        assert!(!out_of_the_running("Ridgeline will bid on the lots too."));
    }

    #[test]
    fn meetings_refreshments_and_to_do_lists_are_not_evidence() {
        let snack = "회의 도시락 비용 18만 원은 총무팀 운영비로 처리했다.";
        assert!(!is_quotable(snack, snack));
        // Who pays for the trip or the review, from the organisation's budget.
        for booked in [
            "오늘 차고지 두 곳을 다녀온 유류비 24,000원은 사무국 운영비에서 낸다.",
            "Our fee for this review was $6,800, billed to the DPW engineering line.",
        ] {
            assert!(!is_quotable(booked, booked), "{booked}");
        }
        let price = "학생 정식 4,500원, 교직원 정식 6,000원";
        assert!(is_quotable(&format!("- {price}"), price));
        for heading in ["할 일", "Actions", "**Next steps**", "남은 질문"] {
            assert!(is_agenda_heading(heading), "{heading}");
        }
        for heading in ["가격", "Schedule", "추진 일정"] {
            assert!(!is_agenda_heading(heading), "{heading}");
        }
    }

    #[test]
    fn a_dropped_option_is_named_by_its_first_words() {
        assert_eq!(
            dropped_option(
                "Surge valves on the existing furrows were discussed and set aside; members said no."
            )
            .as_deref(),
            Some("Surge valves")
        );
        assert_eq!(
            dropped_option("- Self-service kiosks from Kiosko were discussed and set aside.")
                .as_deref(),
            Some("Self-service kiosks")
        );
        assert_eq!(
            dropped_option("The throughput target rules out RabbitMQ."),
            None
        );
    }

    #[test]
    fn a_korean_dropped_option_is_named_by_its_quotes() {
        assert_eq!(
            dropped_korean_name(
                "민간 공유자전거 업체 '휙'이 낸 협약 방식은 요금 인상이 예상되어 이번 검토에서 제외했다."
            )
            .as_deref(),
            Some("휙")
        );
        assert_eq!(
            dropped_korean_name("클라우드 이전 안은 약 132억 원이다 (전용회선 제외)."),
            None
        );
        assert_eq!(
            dropped_korean_name("스마트도서관 안은 이번 검토에서 제외했다."),
            None
        );
        assert_eq!(
            dropped_korean_name("1. 스캔밀은 제외한다. 결제 금액에 붙는 수수료가 너무 크다.")
                .as_deref(),
            Some("스캔밀")
        );
        assert_eq!(
            dropped_korean_name(
                "(주)온담푸드는 학생 식권을 5,500원으로 제시해 상한을 넘었고, 이번 검토에서 제외했다."
            )
            .as_deref(),
            Some("온담푸드")
        );
    }

    #[test]
    fn names_are_capitalised_or_acronyms() {
        assert!(is_name_word("iPad"));
        assert!(is_name_word("SQS"));
        assert!(is_name_word("Surface"));
        assert!(!is_name_word("battery"));
        assert!(!is_name_word("May"));
        assert!(!is_name_word("42"));
    }
}
